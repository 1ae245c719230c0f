"""The API reference site builds with Sphinx with warnings as errors (`-W`).

It builds into a temporary folder (docs/site/ is what `README`'s command writes) and checks that
the pages exist and carry the docstrings: a public name's example and every guide.
"""
import pathlib
import subprocess
import sys

import sphinx  # noqa: F401  (the `dev` extra; scripts/_env.sh installs it)

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_site_builds_without_warnings(tmp_path):
    out = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                        "-d", str(tmp_path / "doctrees"), str(ROOT / "docs" / "reference"), str(out)],
                       capture_output=True, text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    api = (out / "api" / "fieldsim.html").read_text()
    assert 'id="fieldsim.Tape"' in api and "Record kernel launches for reverse-mode AD" in api
    assert "Element-wise sine" in api  # a factory-made function's docstring (fieldsim/_docstrings.py)
    for guide in ("porting", "access_rules", "checkpointing", "performance"):
        assert (out / f"{guide}.html").exists(), guide
