"""diffmpm (examples/simulation/diffmpm.py) under fieldsim and Taichi: time and memory per
optimisation iteration, the same program source under both.

    python benchmarks/diffmpm_bench.py [--rounds 3] [--iters 5] [--taichi-python PATH] [--full]
                                       [--baseline-root DIR]
                                       [--threads N] [--steps 512] [--out FILE]

Takes: rounds (fresh processes per backend, alternating fieldsim / Taichi) and iterations per
process. Each process: imports its backend (RSS read: the baseline), `init`s, builds the
example's fields, runs one iteration (compile + run: its excess over a warm iteration is the
compile time), then `iters` iterations, each split into forward (the Tape's recording pass)
and backward (the Tape's exit: the adjoints); peak RSS is read at the end.

Guarantees: reported numbers are medians over rounds of per-process medians over iterations;
memory: `mem_mib` is peak RSS (VmHWM) minus the RSS right after `import` (everything from
`init` on counts, compiled code and the JIT itself included); `mem_program_mib` is peak RSS
minus the RSS after `init` and one tiny kernel (`runtime_mib`), so it leaves out loading the
JIT, which Taichi does at import and fieldsim at its first compile, and counts the example
alone (its fields, kernels, Tape and matplotlib, which it imports).
Both backends get the same thread count and run the same example file, Taichi through
`sys.modules['fieldsim'] = taichi`.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, "..")


def rss_kib(key="VmRSS"):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def worker(backend, iters, steps, full=False):
    if backend == "taichi":
        import taichi
        sys.modules["fieldsim"] = taichi
    import fieldsim as ti
    base = rss_kib()
    sys.path.insert(0, os.path.join(ROOT, "examples", "simulation"))
    ti.init(arch=ti.cpu, cpu_max_num_threads=int(os.environ.get("BENCH_THREADS", os.cpu_count())),
            random_seed=0, offline_cache=False)
    tiny = ti.field(ti.f32, shape=4)

    @ti.kernel
    def touch():
        for i in tiny:
            tiny[i] += 1.0
    touch()  # the JIT runtime loaded (fieldsim loads LLVM on its first compile, Taichi on import)
    runtime_base = rss_kib()
    import diffmpm as d
    if full:  # DiffTaichi's size: 6418 particles on the 64^2 grid (diffmpm.FULL_SIZE)
        d.setup(**dict(d.FULL_SIZE, steps_=steps))
    else:
        d.setup(d.N_GRID, steps)
    W, b = d.initial_params(0)
    d.set_params(W, b)

    def one():
        tape = ti.ad.Tape(loss=d.loss)
        c0 = time.process_time()
        t0 = time.perf_counter()
        tape.__enter__()
        d.forward()
        ti.sync()
        t1 = time.perf_counter()
        tape.__exit__(None, None, None)
        ti.sync()
        t2 = time.perf_counter()
        cpu.append(time.process_time() - c0)
        return t1 - t0, t2 - t1

    cpu = []

    t0 = time.perf_counter()
    one()
    first = time.perf_counter() - t0
    fwd, bwd = zip(*[one() for _ in range(iters)])
    cpu = cpu[1:]  # the first iteration compiles
    peak = rss_kib("VmHWM")
    warm = statistics.median(f + b for f, b in zip(fwd, bwd))
    print(json.dumps({"backend": backend, "fwd_ms": statistics.median(fwd) * 1e3,
                      "bwd_ms": statistics.median(bwd) * 1e3, "iter_ms": warm * 1e3,
                      "iter_cpu_ms": statistics.median(cpu) * 1e3,
                      "compile_s": max(first - warm, 0.0), "base_mib": base / 1024,
                      "runtime_mib": runtime_base / 1024, "peak_mib": peak / 1024,
                      "mem_mib": (peak - base) / 1024,
                      "mem_program_mib": (peak - runtime_base) / 1024,
                      "loss": float(d.loss[None])}))


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--steps", type=int, default=512)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--taichi-python", default=os.environ.get("TAICHI_PYTHON", sys.executable))
    ap.add_argument("--out", default=os.path.join(HERE, "results_diffmpm.json"))
    ap.add_argument("--full", action="store_true", help="DiffTaichi's size: diffmpm.FULL_SIZE")
    ap.add_argument("--baseline-root", help="also time the fieldsim package found in this tree")
    ap.add_argument("--worker", choices=["fieldsim", "taichi"], help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.iters, args.steps, args.full)
    from tqdm import tqdm
    env = dict(os.environ, BENCH_THREADS=str(args.threads),
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    backends = [("fieldsim", sys.executable, env)]
    if args.baseline_root:
        backends.append(("fieldsim-baseline", sys.executable,
                         dict(env, PYTHONPATH=args.baseline_root + os.pathsep + env["PYTHONPATH"])))
    if subprocess.run([args.taichi_python, "-c", "import taichi"], capture_output=True,
                      check=False).returncode == 0:
        backends.append(("taichi", args.taichi_python, env))
    load = [os.getloadavg()[0]]
    runs: dict = {}
    for _ in tqdm(range(args.rounds), desc="diffmpm rounds"):
        for backend, py, benv in backends:
            kind = "fieldsim" if backend.startswith("fieldsim") else backend
            out = subprocess.run([py, os.path.abspath(__file__), "--worker", kind, "--iters",
                                  str(args.iters), "--steps", str(args.steps)]
                                 + (["--full"] if args.full else []),
                                 capture_output=True, text=True, env=benv, check=False)
            if out.returncode != 0:
                raise RuntimeError(f"{backend} failed:\n{out.stderr[-3000:]}")
            r = json.loads(out.stdout.strip().splitlines()[-1])
            r["backend"] = backend
            for k, v in r.items():
                if k != "backend":
                    runs.setdefault(backend, {}).setdefault(k, []).append(v)
    load.append(os.getloadavg()[0])
    med = {b: {k: statistics.median(v) for k, v in r.items()} for b, r in runs.items()}
    print(f"threads={args.threads}, steps={args.steps}, full={args.full}, rounds={args.rounds}, "
          f"iters={args.iters}, "
          f"load {load[0]:.2f} -> {load[1]:.2f}")
    cols = ["fwd_ms", "bwd_ms", "iter_ms", "iter_cpu_ms", "compile_s", "mem_mib", "mem_program_mib", "base_mib",
            "runtime_mib", "peak_mib", "loss"]
    print("| backend | " + " | ".join(cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for b, m in med.items():
        print(f"| {b} | " + " | ".join(f"{m[c]:.4g}" for c in cols) + " |")
    for other in ("taichi", "fieldsim-baseline"):
        if other in med:
            f, t = med["fieldsim"], med[other]
            print(f"| fieldsim/{other} | " + " | ".join(f"{f[c] / t[c]:.2f}x" if t[c] else "-"
                                                       for c in cols) + " |")
    with open(args.out, "w") as fh:
        json.dump({"load": load, "threads": args.threads, "median": med, "runs": runs}, fh, indent=1)


if __name__ == "__main__":
    main()
