"""`fs.tools.diagnose.main()` (Taichi's `ti.tools.diagnose`; also `python -m fieldsim
diagnose`): prints what fieldsim runs on, for bug reports: versions of Python, fieldsim, numpy,
llvmlite and its LLVM; the host CPU as LLVM sees it (name, vector features, cores); the compile
cache's state; whether a CUDA device answers and, if not, why; which optional packages are
installed; and whether a small kernel compiles and runs on the CPU, in a child process (so the
caller's fields and kernels are left alone). Returns 0 when that kernel ran, else 1.
"""
from __future__ import annotations

import importlib.metadata
import os
import platform
import subprocess
import sys
import tempfile

_OPTIONAL = ("torch", "jax", "ray", "pycuda", "cuda-bindings", "scipy", "matplotlib", "pillow",
             "pyevtk", "tqdm")
_VECTOR_FEATURES = ("sse4.2", "avx", "avx2", "fma", "avx512f", "neon", "sve")
_SELF_TEST = """
import fieldsim as fs
fs.init(arch=fs.cpu, offline_cache=False)
x = fs.field(fs.f32, shape=1000)
@fs.kernel
def fill():
    for i in x:
        x[i] = i * 0.5
fill()
assert abs(float(x.to_numpy().sum()) - 249750.0) < 1e-3
print("ok")
"""


def _version(dist: str) -> str:
    try:
        return importlib.metadata.version(dist)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cpu_lines() -> list[str]:
    import llvmlite.binding as llvm
    llvm.initialize_native_target()
    features = llvm.get_host_cpu_features()
    have = [f for f in _VECTOR_FEATURES if features.get(f)]
    llvm_version = ".".join(map(str, llvm.llvm_version_info))
    cpu = (f"cpu: {llvm.get_host_cpu_name()} ({llvm.get_process_triple()}), {os.cpu_count()} "
           f"logical cores, vector features: {' '.join(have) or 'none'}")
    return [f"llvmlite: {_version('llvmlite')} (LLVM {llvm_version})", cpu]


def _cache_line() -> str:
    from fieldsim.codegen import disk_cache
    i = disk_cache.info(None)
    state = "ok" if i["problem"] is None else f"NOT USED: {i['problem']}"
    return f"compile cache: {i['dir']}, {i['entries']} entries, {i['bytes']} bytes ({state})"


def _cuda_line() -> str:
    from fieldsim.codegen import cuda
    try:
        d = cuda.driver()
    except Exception as err:  # noqa: BLE001 - any reason the device is unusable is the answer
        return f"cuda: unavailable ({err})"
    return f"cuda: available ({type(d).__name__})"


def _self_test() -> tuple[bool, str]:
    # a file, not `-c`: kernels are compiled from their source text
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "fieldsim_self_test.py")
        with open(script, "w") as f:
            f.write(_SELF_TEST)
        try:
            r = subprocess.run([sys.executable, script], capture_output=True, text=True,
                               timeout=300, check=False)
        except subprocess.TimeoutExpired:
            return False, "timed out after 300 s"
    if r.returncode == 0 and r.stdout.strip().endswith("ok"):
        return True, "ok"
    return False, (r.stderr.strip().splitlines() or [f"exit status {r.returncode}"])[-1]


def main() -> int:
    """Print the diagnosis; 0 when a CPU kernel compiled and ran, else 1."""
    from fieldsim.version import __version__
    print("fieldsim system diagnose:")
    print(f"fieldsim: {__version__} ({os.path.dirname(os.path.dirname(os.path.abspath(__file__)))})")
    print(f"python: {sys.version.split()[0]} ({sys.executable})")
    print(f"platform: {platform.platform()}")
    print(f"numpy: {_version('numpy')}")
    for line in _cpu_lines() + [_cache_line(), _cuda_line()]:
        print(line)
    print("optional: " + ", ".join(f"{p} {_version(p)}" for p in _OPTIONAL))
    ok, detail = _self_test()
    print(f"cpu kernel: {detail}")
    return 0 if ok else 1
