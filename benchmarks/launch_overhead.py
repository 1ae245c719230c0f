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

`--arrays`: instead, kernels with 0, 1 and 3 `fs.types.ndarray()` arguments plus an f32 and a
vec3 argument, the arrays NumPy arrays, CPU torch tensors (where the interpreter has torch) and
`fs.ndarray`s, off a Tape and on one (`array_worker`); fieldsim, the baseline and Taichi.
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


ARRAY_KINDS = ("numpy", "torch", "ndarray")


def array_worker(launches: int, kinds=ARRAY_KINDS):
    """Per launch (us) of kernels taking 0, 1 and 3 `fs.types.ndarray()` arguments (plus an f32
    and a vec3 argument, passed as a Python float and an `fs.Vector`), the arrays bound to NumPy
    arrays, CPU torch tensors (when torch imports) and `fs.ndarray`s, outside a Tape and inside
    one (the forward launches only; the Tape's backward is not timed). Keys `nd{k}_{kind}` and
    `tape_nd{k}_{kind}`."""
    import fieldsim as ti
    ti.init(arch=ti.cpu, offline_cache=False, cpu_max_num_threads=1)
    x = ti.field(ti.f32, shape=8)
    loss = ti.field(ti.f32, shape=(), needs_grad=True)
    vec3 = ti.types.vector(3, ti.f32)
    arr = ti.types.ndarray()

    @ti.kernel
    def nd0(t: ti.f32, v: vec3):
        for i in range(1):
            x[i] = t + v[0]

    @ti.kernel
    def nd1(a: arr, t: ti.f32, v: vec3):
        for i in range(1):
            a[i] = t + v[0]

    @ti.kernel
    def nd3(a: arr, b: arr, c: arr, t: ti.f32, v: vec3):
        for i in range(1):
            a[i] = t + v[0] + b[i] + c[i]

    makers = {"numpy": lambda: __import__("numpy").zeros(8, dtype="float32"),
              "ndarray": lambda: ti.ndarray(ti.f32, shape=8)}
    try:
        import torch
        makers["torch"] = lambda: torch.zeros(8, dtype=torch.float32)
    except ImportError:
        pass
    v = ti.Vector([1.0, 2.0, 3.0])
    cases = [("nd0", nd0, ())]
    for kind in kinds:
        if kind in makers:
            a, b, c = (makers[kind]() for _ in range(3))
            cases += [(f"nd1_{kind}", nd1, (a,)), (f"nd3_{kind}", nd3, (a, b, c))]
    out = {}
    for name, k, arrays in cases:
        args = arrays + (0.5, v)
        k(*args)
        out[name] = _per_launch(k, args, launches)
        with _tape(ti, loss):  # compiled on the Tape once, before timing
            k(*args)
        n = max(launches // 10, 100)  # the Tape keeps every launch: fewer per sample
        out[f"tape_{name}"] = _per_launch(k, args, n, tape=lambda: _tape(ti, loss))
    print(json.dumps(out))


def _tape(ti, loss):
    import contextlib

    @contextlib.contextmanager
    def tape():
        t = ti.ad.Tape(loss=loss)
        t.__enter__()
        try:
            yield
        finally:
            with contextlib.suppress(Exception):  # the backward is not what is measured
                t.__exit__(None, None, None)
    return tape()


def _per_launch(k, args, launches, tape=None):
    samples = []
    for _ in range(5):
        if tape is None:
            t0 = time.perf_counter()
            for _ in range(launches):
                k(*args)
            samples.append((time.perf_counter() - t0) / launches * 1e6)
            continue
        with tape():
            t0 = time.perf_counter()
            for _ in range(launches):
                k(*args)
            samples.append((time.perf_counter() - t0) / launches * 1e6)
    return statistics.median(samples)


def taichi_worker(launches: int, fn=None):
    import taichi
    sys.modules["fieldsim"] = taichi  # the fieldsim worker's source, run by Taichi
    (fn or worker)(launches)


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
    ap.add_argument("--arrays", action="store_true",
                    help="time kernels with ndarray arguments (numpy, torch, fs.ndarray; off "
                         "and on a Tape) instead; no Warp")
    args = ap.parse_args()
    if args.worker:
        if args.arrays:
            return (taichi_worker(args.launches, array_worker) if args.worker == "taichi"
                    else array_worker(args.launches))
        return {"fieldsim": worker, "taichi": taichi_worker, "warp": warp_worker}[args.worker](
            args.launches)
    args.warp_python = args.warp_python or args.taichi_python
    roots = {"fieldsim": (ROOT, sys.executable, "fieldsim")}
    if args.baseline_root:
        roots["baseline"] = (os.path.abspath(args.baseline_root), sys.executable, "fieldsim")
    for peer, python in (("taichi", args.taichi_python), ("warp", args.warp_python)):
        if args.no_peers or (args.arrays and peer == "warp"):
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
                                  "--launches", str(args.launches)]
                                 + (["--arrays"] if args.arrays else []),
                                 env=env, capture_output=True, text=True, check=True)
            samples[r].append(json.loads(res.stdout.strip().splitlines()[-1]))
    meta = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load_before": load0, "load_after": os.getloadavg()[0], "rounds": args.rounds}
    print(f"{meta['date']}, {meta['cpus']} CPUs, load {load0:.1f} -> {meta['load_after']:.1f}, "
          f"medians of {args.rounds} alternated fresh processes (us per launch)")
    if args.arrays:
        rows = _array_table(samples)
    else:
        _launch_table(samples)
        rows = {r: {k: statistics.median(s[k] for s in samples[r]) for k in ("empty", "one_arg")}
                for r in roots}
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "rows": rows, "samples": samples}, f, indent=1)


def _array_table(samples):
    keys = [k for k in samples["fieldsim"][0]]
    rows = {r: {k: statistics.median(s[k] for s in ss if k in s) for k in keys
                if any(k in s for s in ss)} for r, ss in samples.items()}
    print("| case | " + " | ".join(rows) + " |")
    print("|---" * (len(rows) + 1) + "|")
    for k in keys:
        print(f"| {k} | " + " | ".join(f"{row[k]:.1f}" if k in row else "-"
                                       for row in rows.values()) + " |")
    return rows


def _launch_table(samples):
    rows = {r: {k: statistics.median(s[k] for s in ss) for k in ("empty", "one_arg")}
            for r, ss in samples.items()}
    print("| code | empty kernel | one-iteration kernel, one i32 argument |")
    print("|---|---|---|")
    for r, row in rows.items():
        print(f"| {r} | {row['empty']:.2f} | {row['one_arg']:.2f} |")


if __name__ == "__main__":
    main()
