"""Runtime-indexed local vectors: a BVH-style stack traversal, fieldsim against Taichi 1.7.4,
and the sizes from which fieldsim keeps such a vector as a stack array (scalarize_arrays:
ARRAY_MIN_ENTRIES for one written at runtime indices, READ_ONLY_MIN_ENTRIES for one only read).

    python benchmarks/local_arrays.py [--rounds 5] [--reps 20] [--taichi-python PATH]
                                      [--baseline-root DIR] [--sweep] [--out FILE.json]

`bvh`: a complete binary tree of 2^15 leaf intervals (sorted random numbers, built in numpy),
internal nodes holding the union of their children; each of 65,536 queries counts the leaves
its interval [q - r, q + r] overlaps by a depth-first walk with a 64-entry local stack
(`stack = ti.Vector([0] * 64)`, `stack[sp] = child`, `node = stack[sp]`), one query per thread
of a parallel loop. Its checksum (the sum of the counts, an integer) must be equal in every
backend. `--sweep` also times a kernel that updates a local vector of n = 2 ... 16 entries at
runtime indices (`v[(j * 7 + i) % n] += j`) in fieldsim with arrays (as built) and with the
select chain (`keeps_array` patched), to place the threshold; and one that only reads such a
vector (made from data, then `acc += v[(j * 7 + i) % n] * j`).

Every measurement is a fresh process (this file with `--worker`), the backends alternating
within each round; reported: the medians over rounds of each process's median kernel time,
the machine and the load (1-minute load average before and after).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

LEAVES = 1 << 15
QUERIES = 1 << 16
STACK = 64


def _bvh_worker(ti):
    import numpy as np
    rng = np.random.default_rng(7)
    lo = np.sort(rng.random(LEAVES)).astype(np.float32)
    hi = (lo + rng.random(LEAVES).astype(np.float32) * 2e-4).astype(np.float32)
    nodes = 2 * LEAVES - 1  # heap order: children of k are 2k+1, 2k+2; leaves from LEAVES-1
    blo, bhi = np.zeros(nodes, np.float32), np.zeros(nodes, np.float32)
    blo[LEAVES - 1:], bhi[LEAVES - 1:] = lo, hi
    for k in range(LEAVES - 2, -1, -1):
        blo[k] = min(blo[2 * k + 1], blo[2 * k + 2])
        bhi[k] = max(bhi[2 * k + 1], bhi[2 * k + 2])
    box_lo, box_hi = ti.field(ti.f32, nodes), ti.field(ti.f32, nodes)
    box_lo.from_numpy(blo)
    box_hi.from_numpy(bhi)
    query = ti.field(ti.f32, QUERIES)
    query.from_numpy(rng.random(QUERIES).astype(np.float32))
    count = ti.field(ti.i32, QUERIES)

    @ti.kernel
    def traverse(r: ti.f32):
        for q in range(QUERIES):
            a, b = query[q] - r, query[q] + r
            stack = ti.Vector([0] * STACK)
            sp = 1
            hits = 0
            while sp > 0:
                sp -= 1
                node = stack[sp]
                if box_lo[node] <= b and box_hi[node] >= a:
                    if node >= LEAVES - 1:
                        hits += 1
                    else:
                        stack[sp] = 2 * node + 1
                        stack[sp + 1] = 2 * node + 2
                        sp += 2
            count[q] = hits

    return lambda: traverse(1e-3), lambda: int(count.to_numpy().astype(np.int64).sum())


def _sweep_worker(ti, kind, n):
    import numpy as np
    out = ti.field(ti.f32, 1 << 16)

    @ti.kernel
    def update():
        for i in range(1 << 16):
            v = ti.Vector([0.0] * n)
            for j in range(64):
                v[(j * 7 + i) % n] += j
            out[i] = v[i % n] + v[(i + 1) % n]

    @ti.kernel
    def read():
        for i in range(1 << 16):
            v = ti.Vector([ti.cos(i * 0.1 + k) for k in range(n)])
            acc = 0.0
            for j in range(64):
                acc += v[(j * 7 + i) % n] * j
            out[i] = acc

    return (update if kind == "update" else read), \
        lambda: float(out.to_numpy().astype(np.float64).sum())


def worker(args):
    backend, what = args.worker
    if backend == "taichi":
        import taichi as ti
    else:
        import fieldsim as ti
        if what != "bvh":  # (a baseline tree may predate local arrays)
            import fieldsim.ir.passes.scalarize_arrays as choice
            # the select chain, or a stack array, at every size
            choice.keeps_array = lambda entries, written: "array" in what
    ti.init(arch=ti.cpu, cpu_max_num_threads=args.threads, offline_cache=False)
    if what == "bvh":
        run, checksum = _bvh_worker(ti)
    else:
        form, n = what.split(":")  # update-array:8, read-select:3, ...
        run, checksum = _sweep_worker(ti, form.split("-")[0], int(n))
    t0 = time.perf_counter()
    run()
    ti.sync()
    first = time.perf_counter() - t0
    times = []
    for _ in range(args.reps):
        t0 = time.perf_counter()
        run()
        ti.sync()
        times.append(time.perf_counter() - t0)
    print(json.dumps({"first_s": first, "median_ms": 1e3 * statistics.median(times),
                      "checksum": checksum()}))


def _measure(python, root, backend, what, args):
    env = dict(os.environ, TI_ARCH="x64", PYTHONPATH=root or os.environ.get("PYTHONPATH", ""))
    cmd = [python, os.path.abspath(__file__), "--worker", backend, what, "--reps", str(args.reps),
           "--threads", str(args.threads)]
    out = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env, timeout=900)
    lines = [ln for ln in out.stdout.splitlines() if ln.startswith("{")]
    if out.returncode or not lines:
        raise RuntimeError(f"{backend} {what} failed:\n{out.stdout[-2000:]}\n{out.stderr[-2000:]}")
    return json.loads(lines[-1])


def _columns(args) -> list[tuple]:
    """(label, python, PYTHONPATH root, backend, what) of each measurement of a round."""
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    cols = [("fieldsim bvh", sys.executable, here, "fieldsim", "bvh")]
    if args.baseline_root:
        cols.append(("baseline bvh", sys.executable, args.baseline_root, "fieldsim", "bvh"))
    if args.taichi_python:
        cols.append(("taichi bvh", args.taichi_python, None, "taichi", "bvh"))
    if args.sweep:
        for kind in ("update", "read"):
            for n in (2, 3, 4, 6, 8, 12, 16, 32, 64):
                for form in ("array", "select"):
                    cols.append((f"{kind} {form} n={n}", sys.executable, here, "fieldsim",
                                 f"{kind}-{form}:{n}"))
    return cols


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs=2)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--taichi-python", default=os.environ.get("TAICHI_PYTHON"))
    ap.add_argument("--baseline-root")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return
    load_before = os.getloadavg()[0]
    cols = _columns(args)
    samples: dict[str, list] = {c[0]: [] for c in cols}
    for _ in range(args.rounds):
        for label, python, root, backend, what in cols:
            samples[label].append(_measure(python, root, backend, what, args))
    rows = []
    for label, got in samples.items():
        sums = {g["checksum"] for g in got}
        rows.append({"what": label, "median_ms": statistics.median(g["median_ms"] for g in got),
                     "first_s": statistics.median(g["first_s"] for g in got),
                     "checksum": sorted(sums)})
    result = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
              "machine": f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores",
              "load_1min": [load_before, os.getloadavg()[0]], "threads": args.threads,
              "rounds": args.rounds, "reps": args.reps, "rows": rows}
    print("| kernel | median (ms) | first call (s) | checksum |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['what']} | {r['median_ms']:.3f} | {r['first_s']:.3f} | {r['checksum']} |")
    print(f"load {result['load_1min']}, {result['date']}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
