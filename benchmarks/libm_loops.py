"""Loops of libm calls: `y[i] = exp(x[i])` (and log, sin, pow) over 2^20 f32 elements, fieldsim
against Taichi 1.7.4 and Warp on the CPU, fast-math on and off.

    python benchmarks/libm_loops.py [--rounds 5] [--n 1048576] [--threads 2]
                                    [--taichi-python PATH] [--warp-python PATH]
                                    [--out benchmarks/results_libm_loops.json]

Takes: four one-line kernels, the same source for fieldsim and Taichi (`sys.modules['fieldsim']`
is Taichi in its worker), and the same four as Warp kernels (`wp.launch(..., dim=n)`; Warp has no
fast-math switch: its row is given once). Each round runs one fresh process per (backend,
fast-math) pair, alternated so load drifts hit all alike; a process compiles the kernels, then
times 20 launches of each, five times, and keeps the median per launch. Reported: medians over
rounds in ms, fieldsim / Taichi and fieldsim / Warp, the largest difference in ulps from
float64 numpy over the outputs (fieldsim's fast mode calls glibc's libmvec: codegen/vector_math),
the machine, date and load (stdout table and JSON).
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
NAMES = ("exp", "log", "sin", "pow")


def _inputs(n):
    import numpy as np
    rng = np.random.default_rng(1)
    return rng.uniform(0.05, 8.0, n).astype(np.float32), rng.uniform(-2.0, 2.0, n).astype(np.float32)


def _ulps(got, name, a, b):
    import numpy as np
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = {"exp": np.exp(a64), "log": np.log(a64), "sin": np.sin(a64), "pow": a64 ** b64}[name]
    scale = np.spacing(np.abs(want).astype(np.float32)).astype(np.float64)
    return float((np.abs(got.astype(np.float64) - want) / scale).max())


def _time(launch, sync):
    samples = []
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(20):
            launch()
        sync()
        samples.append((time.perf_counter() - t0) / 20 * 1e3)
    return statistics.median(samples)


def worker(backend: str, fast: bool, n: int, threads: int):
    if backend == "taichi":
        import taichi
        sys.modules["fieldsim"] = taichi
    sys.path.insert(0, ROOT)
    import fieldsim as ti
    ti.init(arch=ti.cpu, offline_cache=False, fast_math=fast, cpu_max_num_threads=threads)
    a, b = ti.field(ti.f32, shape=n), ti.field(ti.f32, shape=n)
    y = ti.field(ti.f32, shape=n)

    def unary(fn):
        @ti.kernel
        def apply():
            for i in a:
                y[i] = fn(a[i])
        return apply

    @ti.kernel
    def k_pow():
        for i in a:
            y[i] = ti.pow(a[i], b[i])

    k_exp, k_log, k_sin = unary(ti.exp), unary(ti.log), unary(ti.sin)
    av, bv = _inputs(n)
    a.from_numpy(av)
    b.from_numpy(bv)
    out = {}
    for name, k in zip(NAMES, (k_exp, k_log, k_sin, k_pow)):
        k()
        ti.sync()
        out[name] = {"ms": _time(k, ti.sync), "ulps": _ulps(y.to_numpy(), name, av, bv)}
    print(json.dumps(out))


def warp_worker(n: int, threads: int):
    del threads  # Warp's CPU kernels run on one thread
    import warp as wp
    wp.config.quiet = True
    wp.init()

    @wp.kernel
    def k_exp(a: wp.array(dtype=float), b: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = wp.exp(a[i])

    @wp.kernel
    def k_log(a: wp.array(dtype=float), b: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = wp.log(a[i])

    @wp.kernel
    def k_sin(a: wp.array(dtype=float), b: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = wp.sin(a[i])

    @wp.kernel
    def k_pow(a: wp.array(dtype=float), b: wp.array(dtype=float), y: wp.array(dtype=float)):
        i = wp.tid()
        y[i] = wp.pow(a[i], b[i])

    av, bv = _inputs(n)
    a, b = wp.array(av, dtype=float, device="cpu"), wp.array(bv, dtype=float, device="cpu")
    y = wp.zeros(n, dtype=float, device="cpu")
    out = {}
    for name, k in zip(NAMES, (k_exp, k_log, k_sin, k_pow)):
        def launch(k=k):
            wp.launch(k, dim=n, inputs=[a, b, y], device="cpu")
        launch()
        wp.synchronize()
        out[name] = {"ms": _time(launch, wp.synchronize), "ulps": _ulps(y.numpy(), name, av, bv)}
    print(json.dumps(out))


def _run(python, args):
    env = dict(os.environ, PYTHONPATH=ROOT)
    proc = subprocess.run([python, os.path.abspath(__file__), "--worker", *args], check=False,
                          capture_output=True, text=True, env=env, timeout=600)
    if proc.returncode != 0:
        return None
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _usable(python, module):
    if not python:
        return False
    return subprocess.run([python, "-c", f"import {module}"], check=False,
                          capture_output=True).returncode == 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker", nargs="+")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=1 << 20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--taichi-python", default=os.environ.get("TAICHI_PYTHON"))
    ap.add_argument("--warp-python", default=os.environ.get("WARP_PYTHON"))
    ap.add_argument("--out", default=os.path.join(HERE, "results_libm_loops.json"))
    args = ap.parse_args()
    if args.worker:
        w = args.worker
        if w[0] == "warp":
            warp_worker(int(w[1]), int(w[2]))
        else:
            worker(w[0], w[1] == "1", int(w[2]), int(w[3]))
        return
    from tqdm import tqdm
    runs = [("fieldsim", sys.executable, fast) for fast in (True, False)]
    if _usable(args.taichi_python, "taichi"):
        runs += [("taichi", args.taichi_python, fast) for fast in (True, False)]
    if _usable(args.warp_python, "warp"):
        runs.append(("warp", args.warp_python, None))
    load_before = os.getloadavg()[0]
    results = {}
    for _ in tqdm(range(args.rounds), desc="rounds"):
        for backend, python, fast in runs:
            wargs = ["warp", str(args.n), str(args.threads)] if backend == "warp" else \
                [backend, "1" if fast else "0", str(args.n), str(args.threads)]
            got = _run(python, wargs)
            if got is not None:
                results.setdefault((backend, fast), []).append(got)
    table = {}
    for (backend, fast), rounds in results.items():
        key = backend if fast is None else f"{backend} {'fast' if fast else 'exact'}"
        table[key] = {name: {"ms": statistics.median(r[name]["ms"] for r in rounds),
                             "ulps": max(r[name]["ulps"] for r in rounds)} for name in NAMES}
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"{args.threads} threads, n = {args.n}; load {load_before:.1f} -> {os.getloadavg()[0]:.1f}")
    print("| run | " + " | ".join(f"{n} ms (max ulp)" for n in NAMES) + " |")
    print("|---|" + "---|" * len(NAMES))
    for key, row in table.items():
        print(f"| {key} | " + " | ".join(f"{row[n]['ms']:.3f} ({row[n]['ulps']:.1f})" for n in NAMES) + " |")
    for mode in ("fast", "exact"):
        fs_row, ti_row = table.get(f"fieldsim {mode}"), table.get(f"taichi {mode}")
        if fs_row and ti_row:
            print(f"fieldsim / Taichi, {mode}: " + ", ".join(
                f"{n} {fs_row[n]['ms'] / ti_row[n]['ms']:.2f}" for n in NAMES))
        if fs_row and table.get("warp"):
            print(f"fieldsim {mode} / Warp: " + ", ".join(
                f"{n} {fs_row[n]['ms'] / table['warp'][n]['ms']:.2f}" for n in NAMES))
    with open(args.out, "w") as f:
        json.dump({"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "n": args.n,
                   "threads": args.threads, "load": [load_before, os.getloadavg()[0]],
                   "table": table}, f, indent=1)


if __name__ == "__main__":
    main()
