"""One measurement in a fresh process: `python _worker.py {fieldsim|taichi|warp} {program} {cache_dir|-}`.

Prints one JSON line: cold (or cached) compile time of the first substep, the median warm
time of one substep, and `check`: the program's checksums (programs.CHECKSUMS) read after the
first step. Taichi runs the same example source through `sys.modules['fieldsim']`; Warp runs
warp_programs.py (its kernel cache pointed at `cache_dir`, or at a fresh empty directory for
`-`, so that `-` is a cold compile).
"""
import json
import os
import statistics
import sys
import time

backend, program, cache = sys.argv[1], sys.argv[2], sys.argv[3]
threads = int(os.environ.get("BENCH_THREADS", os.cpu_count() or 1))
arch = os.environ.get("BENCH_ARCH", "cpu")


def timed(step, sync, checksum, setup_s=0.0, counted=None):
    """`counted()`: the compile seconds the program's runtime counted so far (fieldsim), or None."""
    before = counted() if counted else None
    t0 = time.perf_counter()
    step()
    sync()
    first = time.perf_counter() - t0 + setup_s
    counted_s = counted() - before if counted else None
    check = checksum() if checksum else None
    times = []
    for _ in range(int(os.environ.get("BENCH_REPS", "30"))):
        t0 = time.perf_counter()
        step()
        sync()
        times.append(time.perf_counter() - t0)
    warm = statistics.median(times)
    print(json.dumps({"backend": backend, "program": program, "first_s": first,
                      "compile_s": max(first - warm, 0.0), "warm_ms": warm * 1e3,
                      "counted_compile_s": counted_s,
                      "check": check}))


if backend == "warp":
    import tempfile
    kernel_cache = tempfile.mkdtemp(prefix="fs-bench-warp-") if cache == "-" else cache
    os.environ["WARP_CACHE_PATH"] = kernel_cache
    import warp as wp
    wp.config.kernel_cache_dir = kernel_cache
    wp.config.quiet = True
    wp.init()
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import warp_programs
    # Warp compiles a program's whole module (forward and adjoint kernels) at once, in the
    # program's set-up: warp_programs times that load, which counts as compile time
    prog = warp_programs.PROGRAMS[program]()
    timed(*prog, setup_s=warp_programs.COMPILE_S)
    if cache == "-":
        import shutil
        shutil.rmtree(kernel_cache, ignore_errors=True)
    sys.exit(0)
if backend == "taichi":
    import taichi
    sys.modules["fieldsim"] = taichi
import fieldsim as ti

root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "simulation")
sys.path.insert(0, root)
kw = {"arch": getattr(ti, arch), "cpu_max_num_threads": threads, "random_seed": 0}
if cache == "-":
    kw["offline_cache"] = False
else:
    kw["offline_cache"] = True
    kw["offline_cache_file_path"] = cache
ti.init(**kw)
t_start = time.perf_counter()
import programs

step, sync = programs.PROGRAMS[program](ti)[:2]
check = getattr(programs, "CHECKSUMS", {}).get(program)
# fieldsim counts its own compile time (reverse AD included) in `stats`: a compile measured
# without subtracting a noisy warm step (Taichi's has no such counter)
counted = None
if backend != "taichi":
    from fieldsim.lang import runtime as fs_runtime
    counted = lambda: fs_runtime.get().stats["compile_s"]
timed(step, sync, check and (lambda: check(ti)), counted=counted)
