"""The simulation examples are Taichi programs: run each one's source under real Taichi.

Each script in examples/simulation/ is copied to a temporary directory with its import line
`import fieldsim as ti` changed to `import taichi as ti` and nothing else, then run in a
subprocess with a tiny size; the test checks that it exits cleanly and that what it returns
(losses, positions, energies) is finite.

Which Python: `FIELDSIM_TAICHI_PYTHON` (a Python with `taichi` installed, e.g. a separate venv:
`python3 -m venv /tmp/tivenv && /tmp/tivenv/bin/pip install taichi==1.7.4 numpy matplotlib tqdm`),
else this interpreter. Taichi is an optional peer, never a dependency: when that Python cannot
`import taichi` the tests are skipped, and that is the only reason they skip.

`diffmpm_checkpoint.py` is left out on purpose: `ti.ad.checkpoint` is fieldsim's own (beyond
Taichi); `test_checkpoint_example_is_the_only_fieldsim_only_one` keeps that list honest.
"""
import json
import os
import pathlib
import subprocess
import sys

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples" / "simulation"
TAICHI_PYTHON = os.environ.get("FIELDSIM_TAICHI_PYTHON", sys.executable)

# the tiniest runs that still exercise every kernel (and the Tape for the optimisers)
TINY = {
    "mpm88": ["--quick", "--frames", "2", "--substeps", "5"],
    "ad_gravity": ["--quick", "--n", "8", "--steps", "3", "--frame-every", "1"],
    "diffmpm": ["--quick", "--iters", "2", "--steps", "16"],
    "mass_spring": ["--quick", "--iters", "2", "--steps", "20"],
    "billiards": ["--quick", "--iters", "2", "--steps", "30"],
    "wave": ["--quick", "--iters", "2", "--steps", "8", "--n", "16"],
}
FIELDSIM_ONLY = {"diffmpm_checkpoint"}

# Run in the subprocess: main(argv) with the tiny size, then its scalar and array results as
# JSON (non-finite values survive as the strings "nan"/"inf", so the parent can see them).
_DRIVER = r"""
import json, sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import importlib
m = importlib.import_module(sys.argv[2])
import taichi  # the script must have used the real one
assert m.ti is taichi, m.ti
r = m.main(sys.argv[3:])
out = {}
for k, v in r.items():
    if isinstance(v, (bool, str)) or k in ("frames", "params"):
        continue
    try:
        a = np.asarray(v, dtype=np.float64)
    except (TypeError, ValueError):
        continue
    out[k] = [repr(float(e)) for e in a.ravel()]
out["n_frames"] = [repr(float(len(r.get("frames", []))))]
print("RESULT " + json.dumps(out))
"""


def _taichi_available():
    try:
        done = subprocess.run([TAICHI_PYTHON, "-c", "import taichi"], capture_output=True, check=False,
                              timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


@pytest.fixture(scope="module")
def taichi_examples(tmp_path_factory):
    if not _taichi_available():
        pytest.skip(f"taichi is not importable by {TAICHI_PYTHON} (set FIELDSIM_TAICHI_PYTHON)")
    d = tmp_path_factory.mktemp("taichi_examples")
    for src in EXAMPLES.glob("*.py"):
        text = src.read_text()
        (d / src.name).write_text(text.replace("import fieldsim as ti", "import taichi as ti"))
    return d


def test_checkpoint_example_is_the_only_fieldsim_only_one():
    # every script is either run under Taichi below or listed as fieldsim-only, and the
    # fieldsim-only ones really use something beyond Taichi
    names = {p.stem for p in EXAMPLES.glob("*.py") if not p.stem.startswith("_")}
    assert names == set(TINY) | FIELDSIM_ONLY
    for name in FIELDSIM_ONLY:
        assert "ti.ad.checkpoint(" in (EXAMPLES / f"{name}.py").read_text()
    for name in TINY:  # the only change made for Taichi is this import line
        assert "import fieldsim as ti\n" in (EXAMPLES / f"{name}.py").read_text(), name


@pytest.mark.parametrize("name", sorted(TINY))
def test_example_runs_under_taichi(taichi_examples, tmp_path, name):
    argv = TINY[name] + ["--out", str(tmp_path / name)]
    env = dict(os.environ, TI_OFFLINE_CACHE="0", MPLBACKEND="Agg", PYTHONPATH="")
    done = subprocess.run([TAICHI_PYTHON, "-c", _DRIVER, str(taichi_examples), name, *argv],
                          capture_output=True, text=True, timeout=900, env=env, check=False,
                          cwd=str(tmp_path))
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    line = [ln for ln in done.stdout.splitlines() if ln.startswith("RESULT ")][-1]
    result = {k: [float(e) for e in v] for k, v in json.loads(line[7:]).items()}
    assert result["n_frames"][0] >= 1
    checked = [k for k in ("losses", "final_loss", "positions", "energies") if k in result]
    assert checked, sorted(result)
    for k in checked:
        assert all(abs(e) < float("inf") for e in result[k]), (k, result[k][:8])
    if "losses" in result:  # an optimiser: its Tape produced a usable gradient step
        assert len(result["losses"]) >= 2
