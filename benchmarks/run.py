"""Run fieldsim and Taichi (when importable) side by side, alternating, and print medians.

    python benchmarks/run.py [--rounds 5] [--programs mpm88_substep] [--taichi-python PATH]

Each measurement is a fresh process (so cold compiles are cold). Cached compile: a first process
fills an offline-cache directory, later processes are timed. Results go to stdout as a Markdown
table and to benchmarks/results.json.
"""
import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

from tqdm import tqdm

HERE = os.path.dirname(os.path.abspath(__file__))


def measure(python, backend, program, cache, env):
    out = subprocess.run([python, os.path.join(HERE, "_worker.py"), backend, program, cache],
                         capture_output=True, text=True, env=env, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def has_taichi(python):
    return subprocess.run([python, "-c", "import taichi"], capture_output=True).returncode == 0


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--programs", default="mpm88_substep")
    ap.add_argument("--taichi-python", default=sys.executable)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    args = ap.parse_args(argv)
    env = dict(os.environ, BENCH_THREADS=str(args.threads),
               PYTHONPATH=os.path.join(HERE, "..") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    backends = [("fieldsim", sys.executable)]
    if has_taichi(args.taichi_python):
        backends.append(("taichi", args.taichi_python))
    results = {}
    for program in args.programs.split(","):
        cache = tempfile.mkdtemp(prefix="fs-bench-cache-")
        for backend, py in backends:  # fill the offline caches once
            measure(py, backend, program, os.path.join(cache, backend), env)
        for _ in tqdm(range(args.rounds), desc=program):
            for backend, py in backends:  # alternate the two programs
                cold = measure(py, backend, program, "-", env)
                cached = measure(py, backend, program, os.path.join(cache, backend), env)
                r = results.setdefault((program, backend), {"cold": [], "cached": [], "warm": []})
                r["cold"].append(cold["compile_s"])
                r["cached"].append(cached["compile_s"])
                r["warm"].append(cold["warm_ms"])
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"threads={args.threads}, python {platform.python_version()}")
    print("| program | backend | warm step (ms) | cold compile (s) | cached compile (s) |")
    print("|---|---|---|---|---|")
    table = {}
    for (program, backend), r in results.items():
        med = {k: statistics.median(v) for k, v in r.items()}
        table[f"{program}/{backend}"] = med
        print(f"| {program} | {backend} | {med['warm']:.3f} | {med['cold']:.3f} | {med['cached']:.3f} |")
    for program in args.programs.split(","):
        a, b = table.get(f"{program}/fieldsim"), table.get(f"{program}/taichi")
        if a and b:
            print(f"| {program} | ratio fieldsim/taichi | {a['warm'] / b['warm']:.2f}x | "
                  f"{a['cold'] / b['cold']:.2f}x | {a['cached'] / max(b['cached'], 1e-9):.2f}x |")
    with open(os.path.join(HERE, "results.json"), "w") as f:
        json.dump(table, f, indent=1)


if __name__ == "__main__":
    main()
