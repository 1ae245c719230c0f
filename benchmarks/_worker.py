"""One measurement in a fresh process: `python _worker.py {fieldsim|taichi} {program} {cache_dir|-}`.

Prints one JSON line: cold (or cached) compile time of the first substep, and the median warm
time of one substep. Taichi runs the same example source through `sys.modules['fieldsim']`.
"""
import json
import os
import statistics
import sys
import time

backend, program, cache = sys.argv[1], sys.argv[2], sys.argv[3]
threads = int(os.environ.get("BENCH_THREADS", os.cpu_count() or 1))
arch = os.environ.get("BENCH_ARCH", "cpu")
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

step, sync = programs.PROGRAMS[program](ti)
t0 = time.perf_counter()
step()
sync()
first = time.perf_counter() - t0
times = []
for _ in range(int(os.environ.get("BENCH_REPS", "30"))):
    t0 = time.perf_counter()
    step()
    sync()
    times.append(time.perf_counter() - t0)
warm = statistics.median(times)
print(json.dumps({"backend": backend, "program": program, "first_s": first,
                  "compile_s": max(first - warm, 0.0), "warm_ms": warm * 1e3}))
