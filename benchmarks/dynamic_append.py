"""Memory and time of appending to the cells of a dynamic node, fieldsim against Taichi.

Each run is its own process: a scalar f32 field under `dense(ti.i, N).dynamic(ti.j, L,
chunk_size=C)`; a kernel appends k values to every cell (parallel over cells), another reads
them back (a loop to each cell's `length()`). Reported per run: the resident memory the
appends added (VmRSS after the first append kernel minus before it: the compile of both
kernels is done first, on an empty list), the process's peak RSS, and the median over
`--repeats` launches of the append kernel (the list emptied between launches by a deactivate
kernel, not timed) and of the read kernel. Runs alternate between the variants, and the
medians of `--runs` runs are printed.

    python benchmarks/dynamic_append.py --taichi-python /tmp/tivenv/bin/python \\
        --tree new=/work/wt-x --tree old=/work/main

A `--tree name=PATH` runs fieldsim from that source tree (PYTHONPATH); without any, the
fieldsim this Python imports. Taichi runs on the CPU (TI_ARCH=x64).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r'''
import json, resource, sys, time
backend, N, L, C, k, repeats = sys.argv[1], *map(int, sys.argv[2:7])
if backend == "taichi":
    import taichi as ti
    ti.init(arch=ti.cpu)
else:
    import fieldsim as ti
    ti.init(arch=ti.cpu)

def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])

x = ti.field(ti.f32)
ti.root.dense(ti.i, N).dynamic(ti.j, L, chunk_size=C).place(x)

@ti.kernel
def append(k: ti.i32):
    for i in range(N):
        for q in range(k):
            x[i].append(i * 0.5 + q)

@ti.kernel
def clear():
    for i in range(N):
        x[i].deactivate()

@ti.kernel
def read() -> ti.f64:
    s = ti.f64(0.0)
    for i in range(N):
        for q in range(x[i].length()):
            s += x[i, q]
    return s

append(0); read(); clear(); ti.sync()
before = rss_kb()
append(k); ti.sync()
grown = rss_kb() - before
t_append, t_read = [], []
for _ in range(repeats):
    clear(); ti.sync()
    t = time.perf_counter(); append(k); ti.sync(); t_append.append(time.perf_counter() - t)
    t = time.perf_counter(); s = read(); t_read.append(time.perf_counter() - t)
exact = N * (N - 1) / 2 * 0.5 * k + N * k * (k - 1) / 2
print("RESULT " + json.dumps({"grown_mb": grown / 1024, "peak_mb": resource.getrusage(
    resource.RUSAGE_SELF).ru_maxrss / 1024, "append_ms": 1e3 * sorted(t_append)[len(t_append) // 2],
    "read_ms": 1e3 * sorted(t_read)[len(t_read) // 2], "sum_rel_err": abs(s - exact) / exact}))
'''

CASES = {  # name: (cells, slots per cell, chunk, appends per cell)
    "few-per-cell": (250_000, 2048, 64, 3),
    "full-cells": (8192, 256, 64, 256),  # 8 MB: fieldsim keeps it row-major
    "full-big": (65536, 256, 64, 256),  # 64 MB: a reservation, chunk-major in fieldsim
}


def run(python, env, backend, case, repeats):
    n, size, chunk, k = CASES[case]
    with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
        f.write(CHILD)  # kernels need their source in a file
    out = subprocess.run([python, f.name, backend, str(n), str(size), str(chunk), str(k),
                          str(repeats)], env=env, capture_output=True, text=True, check=False)
    os.unlink(f.name)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"{backend} {case} failed:\n{out.stderr[-2000:]}")
    return json.loads(lines[-1][7:])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--taichi-python", help="a Python with taichi (omit: fieldsim only)")
    p.add_argument("--tree", action="append", default=[], help="name=PATH of a fieldsim tree")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--case", action="append", choices=sorted(CASES))
    p.add_argument("--json", help="write the medians here")
    args = p.parse_args(argv)
    variants = [(name, sys.executable, dict(os.environ, PYTHONPATH=path), "fieldsim")
                for name, path in (t.split("=", 1) for t in args.tree)] or \
        [("fieldsim", sys.executable, dict(os.environ), "fieldsim")]
    if args.taichi_python:
        variants.append(("taichi", args.taichi_python, dict(os.environ, TI_ARCH="x64"), "taichi"))
    medians = {}
    for case in args.case or sorted(CASES):
        got = {name: [] for name, *_ in variants}
        for _ in range(args.runs):
            for name, python, env, backend in variants:
                got[name].append(run(python, env, backend, case, args.repeats))
        for name, results in got.items():
            med = {key: statistics.median(r[key] for r in results) for key in results[0]}
            medians[f"{case}/{name}"] = med
            print(f"{case:13s} {name:9s} grown {med['grown_mb']:8.1f} MB  peak "
                  f"{med['peak_mb']:8.1f} MB  append {med['append_ms']:8.2f} ms  read "
                  f"{med['read_ms']:8.2f} ms  sum rel err {med['sum_rel_err']:.1e}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(medians, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
