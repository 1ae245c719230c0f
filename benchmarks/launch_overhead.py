"""Launch overhead: the time of one launch of an empty kernel, and of a one-iteration kernel with a
scalar argument, called in a Python loop.

    python benchmarks/launch_overhead.py [--rounds 5] [--launches 20000]
                                         [--baseline-root DIR] [--out benchmarks/results_launch.json]
                                         [--taichi-python PATH] [--warp-python PATH] [--no-peers]

Takes: two kernels, `empty()` (no body) and `one(t: i32)` (a parallel loop of one iteration
writing `x[0] = t`), compiled before timing. Each round runs a fresh process per code under test
(this checkout, `--baseline-root DIR`, an export of another commit, when given, and the peers:
the same two kernels under Taichi 1.7.4 and under Warp (`wp.launch(..., dim=1)` on the CPU), from
`--taichi-python` / `--warp-python`, default $TAICHI_PYTHON / $WARP_PYTHON, left out with a note
when they cannot import taichi / warp), alternated so load drifts hit all alike; a process times `--launches` calls of each kernel, five times,
and keeps the median. Reported: the median over rounds, in microseconds per launch, the machine,
the date and the load average (stdout table and JSON in `--out`).
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def worker(launches: int):
    import fieldsim as ti
    ti.init(arch=ti.cpu, offline_cache=False)
    x = ti.field(ti.f32, shape=8)

    @ti.kernel
    def empty():
        pass

    @ti.kernel
    def one(t: ti.i32):
        for i in range(1):
            x[i] = t

    empty()
    one(1)
    out = {}
    for name, k, args in (("empty", empty, ()), ("one_arg", one, (3,))):
        samples = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(launches):
                k(*args)
            samples.append((time.perf_counter() - t0) / launches * 1e6)
        out[name] = statistics.median(samples)
    print(json.dumps(out))


def taichi_worker(launches: int):
    import taichi
    sys.modules["fieldsim"] = taichi  # the fieldsim worker's source, run by Taichi
    worker(launches)


def warp_worker(launches: int):
    import warp as wp
    wp.config.quiet = True
    wp.init()

    @wp.kernel(module="unique")
    def empty():
        pass

    @wp.kernel(module="unique")
    def one(x: wp.array(dtype=wp.float32), t: wp.int32):
        x[0] = float(t)

    x = wp.zeros(8, dtype=wp.float32, device="cpu")
    kernels = (("empty", empty, []), ("one_arg", one, [x, 3]))
    for _, k, args in kernels:
        wp.launch(k, dim=1, inputs=args, device="cpu")
    out = {}
    for name, k, args in kernels:
        samples = []
        for _ in range(5):
            t0 = time.perf_counter()
            for _ in range(launches):
                wp.launch(k, dim=1, inputs=args, device="cpu")
            samples.append((time.perf_counter() - t0) / launches * 1e6)
        out[name] = statistics.median(samples)
    print(json.dumps(out))


def can_import(python, module):
    return python and subprocess.run([python, "-c", f"import {module}"], capture_output=True,
                                     check=False).returncode == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--launches", type=int, default=20000)
    ap.add_argument("--baseline-root", default=None)
    ap.add_argument("--out", default=os.path.join(HERE, "results_launch.json"))
    ap.add_argument("--worker", nargs="?", const="fieldsim", choices=("fieldsim", "taichi", "warp"))
    ap.add_argument("--taichi-python", default=os.environ.get("TAICHI_PYTHON"))
    ap.add_argument("--warp-python", default=os.environ.get("WARP_PYTHON"),
                    help="default: $WARP_PYTHON, else the Taichi interpreter")
    ap.add_argument("--no-peers", action="store_true")
    args = ap.parse_args()
    if args.worker:
        return {"fieldsim": worker, "taichi": taichi_worker, "warp": warp_worker}[args.worker](
            args.launches)
    args.warp_python = args.warp_python or args.taichi_python
    roots = {"fieldsim": (ROOT, sys.executable, "fieldsim")}
    if args.baseline_root:
        roots["baseline"] = (os.path.abspath(args.baseline_root), sys.executable, "fieldsim")
    for peer, python in (("taichi", args.taichi_python), ("warp", args.warp_python)):
        if args.no_peers:
            break
        if can_import(python, peer):
            roots[peer] = (ROOT, python, peer)
        else:
            print(f"note: no {peer} (interpreter {python!r} cannot import it)", file=sys.stderr)
    load0 = os.getloadavg()[0]
    samples = {r: [] for r in roots}
    for _ in range(args.rounds):
        for r, (path, python, backend) in roots.items():
            env = dict(os.environ, PYTHONPATH=path + os.pathsep + os.environ.get("PYTHONPATH", ""))
            res = subprocess.run([python, os.path.abspath(__file__), "--worker", backend,
                                  "--launches", str(args.launches)],
                                 env=env, capture_output=True, text=True, check=True)
            samples[r].append(json.loads(res.stdout.strip().splitlines()[-1]))
    meta = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load_before": load0, "load_after": os.getloadavg()[0], "rounds": args.rounds}
    rows = {r: {k: statistics.median(s[k] for s in samples[r]) for k in ("empty", "one_arg")}
            for r in roots}
    print(f"{meta['date']}, {meta['cpus']} CPUs, load {load0:.1f} -> {meta['load_after']:.1f}, "
          f"medians of {args.rounds} alternated fresh processes (us per launch)")
    print("| code | empty kernel | one-iteration kernel, one i32 argument |")
    print("|---|---|---|")
    for r, row in rows.items():
        print(f"| {r} | {row['empty']:.2f} | {row['one_arg']:.2f} |")
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "rows": rows, "samples": samples}, f, indent=1)


if __name__ == "__main__":
    main()
