"""The installed package is found even from a folder holding a checkout named `fieldsim`
(a clone in ~/fieldsim, a script run from ~): no empty namespace package shadows it."""
import os
import pathlib
import subprocess
import sys

import fieldsim


def test_a_clone_folder_in_the_working_directory_does_not_shadow_the_package(tmp_path):
    repo_root = pathlib.Path(fieldsim.__file__).parent.parent
    os.symlink(repo_root, tmp_path / "fieldsim")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    out = subprocess.run([sys.executable, "-c", "import fieldsim; print(callable(fieldsim.init))"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "True"
