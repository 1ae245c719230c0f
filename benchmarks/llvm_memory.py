"""LLVM memory kept per compile (issue #12): resident memory growth per cycle, two workloads.

    python benchmarks/llvm_memory.py [--cycles 200] [--warmup 30] [--rounds 2]
                                     [--baseline-root DIR] [--out benchmarks/results_llvm_memory.json]

Workloads, each in a fresh process per (code under test, workload, cache setting):
- `init`: `fs.init()`, compile and launch three kernels (the same kernel objects every cycle,
  so each init compiles them anew), `fs.reset()`.
- `within`: one `fs.init()`; every cycle defines three new kernels (closures with a different
  constant, so each is new LLVM IR), launches them, and drops them.
with the offline cache off (every compile runs LLVM's O3 pipeline) and on (a fresh temporary
cache directory: `init` cycles after the first load objects from it).

A process runs `--warmup` cycles, then `--cycles` more, reading its resident set size from
/proc/self/statm after a `gc.collect()` each cycle; the growth per cycle is the least-squares
slope of those readings (steadier than first-vs-last: the allocator's heap grows in steps).
The code under test is this checkout and, with `--baseline-root DIR` (an export of another
commit, e.g. `git archive <commit> fieldsim | tar -x -C DIR`), that one too, alternated.
Reported: KB per cycle and ms per cycle (median over rounds), the machine, the load average.
"""
import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
PAGE = os.sysconf("SC_PAGE_SIZE")
WORKLOADS = ("init", "within")


def rss_kb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * PAGE / 1024


def make_kernels(fs, c: float):
    """Three kernels whose IR depends on `c`: an update, a reduction returning a value, and a
    2-D loop with a `while` (a task the scheduler treats differently)."""

    @fs.kernel
    def scale(x: fs.template()):
        for i in x:
            x[i] = x[i] * c + 1.0

    @fs.kernel
    def total(x: fs.template(), s: fs.f32) -> fs.f32:
        t = 0.0
        for i in x:
            t += x[i] * s + c
        return t

    @fs.kernel
    def grid(y: fs.template()):
        for i, j in y:
            k = 0
            while k < 3:
                y[i, j] += c * k
                k += 1

    return scale, total, grid


def worker(workload: str, cache: bool, cycles: int, warmup: int):
    from tqdm import tqdm

    import fieldsim as fs

    cache_dir = tempfile.mkdtemp(prefix="fs-llvmmem-") if cache else None
    opts = {"offline_cache": cache, "offline_cache_file_path": cache_dir} if cache else {
        "offline_cache": False}
    fixed = make_kernels(fs, 2.0)
    state = {}
    if workload == "within":
        fs.init(arch=fs.cpu, **opts)
        state["x"] = fs.field(fs.f32, shape=64)
        state["y"] = fs.field(fs.f32, shape=(8, 8))

    def cycle(n):
        if workload == "init":
            fs.init(arch=fs.cpu, **opts)
            x, y = fs.field(fs.f32, shape=64), fs.field(fs.f32, shape=(8, 8))
            kernels = fixed
        else:
            x, y = state["x"], state["y"]
            kernels = make_kernels(fs, 0.5 + n)
        scale, total, grid = kernels
        scale(x)
        total(x, 1.5)
        grid(y)
        if workload == "init":
            fs.reset()

    samples = []
    t0 = None
    for n in tqdm(range(warmup + cycles), desc=f"{workload} cache={'on' if cache else 'off'}",
                  file=sys.stderr, leave=False):
        if n == warmup:
            t0 = time.perf_counter()
        cycle(n)
        if n >= warmup:
            gc.collect()
            samples.append(rss_kb())
    elapsed = time.perf_counter() - t0
    slope = statistics.linear_regression(range(len(samples)), samples).slope
    print(json.dumps({"kb_per_cycle": slope, "ms_per_cycle": elapsed / cycles * 1e3,
                      "rss_mb_end": samples[-1] / 1024}))


def run_worker(root, workload, cache, cycles, warmup):
    env = dict(os.environ, PYTHONPATH=root, MPLBACKEND="Agg")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", workload,
           "--cache", "on" if cache else "off", "--cycles", str(cycles), "--warmup", str(warmup)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"worker failed ({root}, {workload}):\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--baseline-root", default=None)
    ap.add_argument("--workloads", default=",".join(WORKLOADS))
    ap.add_argument("--out", default=os.path.join(HERE, "results_llvm_memory.json"))
    ap.add_argument("--worker", choices=WORKLOADS)
    ap.add_argument("--cache", choices=("on", "off"), default="off")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.cache == "on", a.cycles, a.warmup)
        return
    codes = [("this", ROOT)] + ([("baseline", a.baseline_root)] if a.baseline_root else [])
    load0 = os.getloadavg()[0]
    raw: dict = {}
    for _ in range(a.rounds):
        for workload in a.workloads.split(","):
            for cache in (False, True):
                for name, root in codes:  # alternated, so load drifts hit both alike
                    r = run_worker(root, workload, cache, a.cycles, a.warmup)
                    key = f"{workload}/cache_{'on' if cache else 'off'}/{name}"
                    raw.setdefault(key, []).append(r)
                    print(f"{key:32s} {r['kb_per_cycle']:8.1f} KB/cycle "
                          f"{r['ms_per_cycle']:7.1f} ms/cycle", flush=True)
    result = {"_machine": {"cpu": platform.processor() or platform.machine(),
                           "cores": os.cpu_count(), "python": platform.python_version(),
                           "date": time.strftime("%Y-%m-%dT%H:%M:%S"), "load_1min": load0,
                           "load_1min_after": os.getloadavg()[0], "cycles": a.cycles,
                           "warmup": a.warmup, "rounds": a.rounds,
                           "baseline_root": a.baseline_root}}
    print(f"\n{'workload':32s} {'KB/cycle':>9s} {'ms/cycle':>9s}  (median of {a.rounds} rounds)")
    for key, rs in raw.items():
        kb = statistics.median(r["kb_per_cycle"] for r in rs)
        ms = statistics.median(r["ms_per_cycle"] for r in rs)
        result[key] = {"kb_per_cycle": kb, "ms_per_cycle": ms, "samples": rs}
        print(f"{key:32s} {kb:9.1f} {ms:9.1f}")
    with open(a.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    main()
