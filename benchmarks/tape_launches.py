"""Per-launch cost on a Tape against the Tape's length (launches recorded), 100 to 10,000.

    python benchmarks/tape_launches.py [--lengths 100,1000,10000] [--rounds 3] [--no-collect]
                                       [--baseline-root DIR] [--out benchmarks/results_tape.json]

Takes: examples/simulation/mass_spring.py (5 launches per time step, all state time-indexed,
so every step launches each kernel with a new `t`), run for `length / 5` steps. For each length,
in a fresh process (kernels compiled and their checker summaries made on a one-step Tape before
timing: a one-off per kernel, which `checker_cost.py` measures), it times one forward off the Tape, then
the same forward on a first Tape (every (kernel, t) is new: the checker judges each) and on a
second Tape (the same argument values again: verdicts are reused). Reported per launch: the
median over rounds of each (wall time, and CPU time of the process, steadier under load), the
Tape's extra cost (on Tape minus off Tape), and the part of each Tape's time spent in
Python's full (generation 2) GC collections. Each timed forward
starts after a `gc.collect()` (unless `--no-collect`): compiling leaves garbage that makes one
full collection due, which would otherwise land in whichever phase runs next; with the
collect, a full collection inside a timed Tape is one that the Tape's own objects caused.
`--baseline-root DIR`: the same measurement with fieldsim from DIR (an export of another
commit), alternated with this checkout's in each round, so both see the same load.

Guarantees: fresh processes, alternated; the machine, date and load average go into `--out`
(JSON) and the table on stdout. "Flat" means the largest per-launch Tape cost over lengths is
at most 2x the smallest.
"""
import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def worker(steps: int, collect: bool):
    sys.path.insert(0, os.path.join(ROOT, "examples", "simulation"))
    import mass_spring as ms

    import fieldsim as ti
    ti.init(arch=ti.cpu, offline_cache=False, random_seed=0)
    ms.setup(steps)
    ms.set_params(ms.initial_params())
    ms.forward_no_tape()  # compile every kernel first
    ms.steps = 1  # and a one-step Tape: each kernel's checker summary is made once, not timed
    ms.clear_accumulators()
    with ti.ad.Tape(loss=ms.loss):
        ms.forward()
    ms.steps = steps
    launches = 5 * steps + 3
    full = _full_collections()
    if collect:
        gc.collect()
    c0, t0 = time.process_time(), time.perf_counter()
    ms.forward_no_tape()
    plain, plain_cpu = time.perf_counter() - t0, time.process_time() - c0
    out = {"launches": launches, "plain_us": plain / launches * 1e6,
           "plain_cpu_us": plain_cpu / launches * 1e6}
    for name in ("first_tape_us", "second_tape_us"):
        ms.clear_accumulators()
        with ti.ad.Tape(loss=ms.loss):
            if collect:  # start from no garbage: what the timed Tape leaves is its own
                gc.collect()
            full.clear()
            c0, t0 = time.process_time(), time.perf_counter()
            ms.forward()
            out[name] = (time.perf_counter() - t0) / launches * 1e6
            # CPU time too (all threads): on a loaded machine it leaves out the time this
            # process waited for a core, which wall time counts
            out[name.replace("_us", "_cpu_us")] = (time.process_time() - c0) / launches * 1e6
            # Python's full (generation 2) collections inside the timed forward: their count
            # and share of the time per launch (they walk every tracked object of the process)
            out[name.replace("_us", "_gc2")] = [len(full), sum(full) / launches * 1e6]
    out["tracked_objects"] = len(gc.get_objects())
    print(json.dumps(out))


def _full_collections() -> list:
    """A list that collects the duration of each full GC collection from now on."""
    times, start = [], [0.0]

    def cb(phase, info):
        if info["generation"] != 2:
            return
        if phase == "start":
            start[0] = time.perf_counter()
        else:
            times.append(time.perf_counter() - start[0])
    gc.callbacks.append(cb)
    return times


def run_one(root: str, steps: int, collect: bool) -> dict:
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", str(steps)]
    if not collect:
        cmd.append("--no-collect")
    # the worker imports fieldsim from `root` but runs this file's code and this checkout's example
    res = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lengths", default="100,300,1000,3000,10000")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline-root", default=None)
    ap.add_argument("--out", default=os.path.join(HERE, "results_tape.json"))
    ap.add_argument("--worker", type=int, default=None)
    ap.add_argument("--no-collect", action="store_true",
                    help="no gc.collect() before each timed forward (compilation's garbage "
                         "then makes a full collection land in whichever phase runs next)")
    args = ap.parse_args()
    if args.worker is not None:
        return worker(args.worker, not args.no_collect)
    roots = {"fieldsim": ROOT}
    if args.baseline_root:
        roots["baseline"] = os.path.abspath(args.baseline_root)
    lengths = [int(x) for x in args.lengths.split(",")]
    load0 = os.getloadavg()[0]
    samples = {(r, n): [] for r in roots for n in lengths}
    for _ in range(args.rounds):
        for n in lengths:
            for r, path in roots.items():
                steps = max(1, (n - 3) // 5)
                samples[(r, n)].append(run_one(path, steps, not args.no_collect))
    rows = []
    for r in roots:
        for n in lengths:
            s = samples[(r, n)]
            med = {k: statistics.median(x.get(k, float("nan")) for x in s)
                   for k in ("plain_us", "first_tape_us", "second_tape_us", "plain_cpu_us",
                             "first_tape_cpu_us", "second_tape_cpu_us")}
            gc2 = {k: statistics.median(x.get(k, [0, 0.0])[1] for x in s)
                   for k in ("first_tape_gc2", "second_tape_gc2")}
            rows.append({"code": r, "launches": s[0]["launches"], **med,
                         "first_extra_us": med["first_tape_us"] - med["plain_us"],
                         "second_extra_us": med["second_tape_us"] - med["plain_us"],
                         "first_gc2_us": gc2["first_tape_gc2"],
                         "second_gc2_us": gc2["second_tape_gc2"], "samples": s})
    meta = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load_before": load0, "load_after": os.getloadavg()[0], "rounds": args.rounds,
            "gc_collect_before_each_phase": not args.no_collect}
    print(f"{meta['date']}, {meta['cpus']} CPUs, load {load0:.1f} -> {meta['load_after']:.1f}, "
          f"medians of {args.rounds} alternated fresh processes (us per launch)")
    print("| code | launches | off Tape | first Tape | second Tape | first extra | second extra "
          "| full GC in first / second | CPU: off / first / second |")
    print("|---|---|---|---|---|---|---|---|---|")
    for row in rows:
        print(f"| {row['code']} | {row['launches']} | {row['plain_us']:.1f} | "
              f"{row['first_tape_us']:.1f} | {row['second_tape_us']:.1f} | "
              f"{row['first_extra_us']:.1f} | {row['second_extra_us']:.1f} | "
              f"{row['first_gc2_us']:.1f} / {row['second_gc2_us']:.1f} | "
              f"{row['plain_cpu_us']:.1f} / {row['first_tape_cpu_us']:.1f} / "
              f"{row['second_tape_cpu_us']:.1f} |")
    for r in roots:
        for k in ("first_tape_us", "second_tape_us", "first_tape_cpu_us", "second_tape_cpu_us"):
            v = [row[k] for row in rows if row["code"] == r]
            print(f"{r} {k}: max/min over lengths = {max(v) / min(v):.2f}")
    with open(args.out, "w") as f:
        json.dump({"meta": meta, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
