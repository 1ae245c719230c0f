"""`python -m fieldsim diagnose` (Taichi's `ti.tools.diagnose`): prints the environment and runs
a kernel in a child process."""
import subprocess
import sys

import llvmlite.binding as llvm


def test_diagnose_reports_the_machine_and_runs_a_kernel():
    r = subprocess.run([sys.executable, "-m", "fieldsim", "diagnose"], capture_output=True,
                       text=True, timeout=300, check=False)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert f"LLVM {'.'.join(map(str, llvm.llvm_version_info))}" in out
    assert f"cpu: {llvm.get_host_cpu_name()}" in out
    assert "compile cache: " in out and "cuda: " in out
    assert out.rstrip().endswith("cpu kernel: ok")
