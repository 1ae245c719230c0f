"""Wall time of N = 2, 4, 8 shot optimisations (examples/distributed/shots.py) run serially in
one process vs as Ray tasks on a local cluster of this machine's CPUs; writes
benchmarks/results_ray_sweep.json and prints a Markdown table.

    python benchmarks/ray_sweep_bench.py [--iters 40 --steps 100 --num-cpus 2 --repeats 2]

The serial time includes one setup and compile (a fresh process); the Ray time includes
starting the local cluster (`ray_init_s`, reported apart) but the cluster is started once for
all N. Each N runs in a fresh set of workers (ray.shutdown between Ns) so every Ray run pays
its workers' start and setup, as a new job on a cluster would.
"""
import argparse
import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SWEEP = os.path.join(HERE, "..", "examples", "distributed")


def _serial(n, iters, steps):
    code = (f"import sys, time; sys.path.insert(0, {SWEEP!r}); import ray_sweep as s; "
            "t = time.perf_counter(); "
            f"s.run_serial(s.configs({n}, {iters}, {steps}), progress=False); "
            "print(time.perf_counter() - t)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def _ray(n, iters, steps, num_cpus):
    code = (f"import sys, time; sys.path.insert(0, {SWEEP!r}); import ray_sweep as s; "
            f"t = time.perf_counter(); s.connect(None, {num_cpus}); t1 = time.perf_counter(); "
            f"s.run_ray(s.configs({n}, {iters}, {steps}), progress=False); "
            "print(t1 - t, time.perf_counter() - t1)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    init_s, run_s = map(float, out.stdout.strip().splitlines()[-1].split())
    return init_s, run_s


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--num-cpus", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    rows = []
    for n in (2, 4, 8):
        for rep in range(args.repeats):
            s = _serial(n, args.iters, args.steps)
            init_s, run_s = _ray(n, args.iters, args.steps, args.num_cpus)
            rows.append({"n": n, "repeat": rep, "serial_s": s, "ray_init_s": init_s, "ray_run_s": run_s,
                         "load1": os.getloadavg()[0]})
            print(rows[-1], flush=True)
    with open(os.path.join(HERE, "results_ray_sweep.json"), "w") as f:
        json.dump({"args": vars(args), "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                   "rows": rows}, f, indent=1)
    print("| N | serial (s) | Ray run (s) | Ray cluster start (s) |\n|---|---|---|---|")
    for n in (2, 4, 8):
        rs = sorted((r for r in rows if r["n"] == n), key=lambda r: r["serial_s"])
        med = rs[len(rs) // 2]
        print(f"| {n} | {med['serial_s']:.2f} | {med['ray_run_s']:.2f} | {med['ray_init_s']:.2f} |")


if __name__ == "__main__":
    main()
