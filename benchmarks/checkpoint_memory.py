"""Peak memory of diffmpm: every step stored (diffmpm.py) vs checkpointed (diffmpm_checkpoint.py).

    python benchmarks/checkpoint_memory.py [--steps 4096] [--every 64] [--no-plain-4x]

Runs, each in a fresh process (after another process has filled the offline cache for it): plain diffmpm at N steps, checkpointed diffmpm at N and 4N steps
(every k steps kept), and, unless --no-plain-4x, plain diffmpm at 4N for contrast. Each process
first runs a 2-step warm-up (compiling every kernel and adjoint, or loading them from the offline
cache), records its peak RSS then (`baseline`: interpreter, numpy, LLVM, compiled code), starts
afresh (`fs.init`) at the real size and times one forward + backward (`ti.ad.Tape`).

Reported per run: the peak resident set size of the process (`getrusage(RUSAGE_SELF).ru_maxrss`,
which counts everything: field storage, the checkpoint's numpy copies, LLVM), the baseline, the
bytes of all fields (primal + gradient twins), what the checkpoint held (state copies in the
forward; most held at once in the backward) and the wall time. (`tracemalloc` would see the CPU
backend's field storage, which is numpy, but not LLVM's memory nor CUDA device memory, so the
process RSS is the measure used.) The checkpointed gradient at N steps is compared with the
plain one. Prints a Markdown table; writes benchmarks/checkpoint_memory.json.
"""
import argparse
import json
import os
import platform
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(HERE, "..", "examples", "simulation")


# ---- one measurement (in a fresh process) ----------------------------------------------------------
def worker(mode, steps, every, fp, compile_only=False):
    import resource

    import numpy as np

    sys.path.insert(0, EXAMPLES)
    import diffmpm as dm
    import diffmpm_checkpoint as ck

    import fieldsim as ti

    def run(n):
        ti.init(arch=ti.cpu, default_fp=getattr(ti, fp))
        if mode == "plain":
            dm.setup(dm.N_GRID, n)
            dm.set_params(*dm.initial_params(0))
            loss, gW, gb = dm.loss_and_grad()
            info = None
        else:
            ck.setup(dm.N_GRID, n)
            dm.set_params(*dm.initial_params(0))
            loss, gW, gb, info = ck.loss_and_grad(min(every, n))
        return loss, np.concatenate([gW.ravel(), gb]), info

    def rss():
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB

    if compile_only:  # fill the offline cache: the plain kernels' code depends on the field shapes
        run(2)  # the warm-up's own kernels
        if mode == "checkpoint":  # its kernels do not depend on the number of steps
            return
        ti.init(arch=ti.cpu, default_fp=getattr(ti, fp))
        dm.setup(dm.N_GRID, steps)
        with ti.ad.Tape(loss=dm.loss):  # one launch of each kernel
            dm.init_state()
            dm.compute_actuation(0)
            dm.advance(0)
            dm.compute_loss()
        return
    run(2)
    baseline = rss()
    t0 = time.perf_counter()
    loss, grad, info = run(steps)
    seconds = time.perf_counter() - t0
    out = {"mode": mode, "steps": steps, "every": every if info else None, "loss": loss,
           "grad": grad.tolist(), "seconds": seconds, "peak_rss_bytes": rss(),
           "baseline_rss_bytes": baseline, "field_bytes": ck.field_bytes(),
           "n_particles": dm.n_particles}
    if info is not None:
        out.update(n_snapshots=info.n_snapshots, snapshot_bytes=info.snapshot_bytes,
                   peak_backward_bytes=info.peak_backward_bytes)
    print(json.dumps(out))


# ---- driver --------------------------------------------------------------------------------------------
def measure(mode, steps, every, fp):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", mode, "--steps", str(steps),
           "--every", str(every), "--fp", fp]
    env = dict(os.environ, PYTHONPATH=os.path.join(HERE, "..") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    _run(cmd + ["--compile-only"], env)
    t0 = time.perf_counter()
    proc = _run(cmd, env)
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process_seconds"] = time.perf_counter() - t0
    return result


def _run(cmd, env):
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[1:])} failed:\n{proc.stderr[-3000:]}")
    return proc


def _mib(b):
    return "" if b is None else f"{b / 2**20:.1f}"


def table(runs):
    rows = [("| run | steps | every | peak RSS MiB | baseline RSS MiB | fields MiB | checkpoint copies MiB "
            "(forward / backward peak) | fwd+bwd s | loss |"),
            "|---|---|---|---|---|---|---|---|---|"]
    for r in runs:
        kept = (f"{_mib(r['snapshot_bytes'])} / {_mib(r['peak_backward_bytes'])}"
                if r["mode"] == "checkpoint" else "-")
        rows.append(f"| {r['mode']} | {r['steps']} | {r['every'] or '-'} | {_mib(r['peak_rss_bytes'])} | "
                    f"{_mib(r['baseline_rss_bytes'])} | {_mib(r['field_bytes'])} | {kept} | "
                    f"{r['seconds']:.1f} | {r['loss']:.6f} |")
    return "\n".join(rows)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=4096, help="N")
    ap.add_argument("--every", type=int, default=64)
    ap.add_argument("--fp", default="f32", choices=["f32", "f64"])
    ap.add_argument("--no-plain-4x", action="store_true", help="skip plain diffmpm at 4N steps")
    ap.add_argument("--worker", choices=["plain", "checkpoint"], help=argparse.SUPPRESS)
    ap.add_argument("--compile-only", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=os.path.join(HERE, "checkpoint_memory.json"))
    args = ap.parse_args(argv)
    if args.worker:
        return worker(args.worker, args.steps, args.every, args.fp, args.compile_only)

    n, k = args.steps, args.every
    plan = [("plain", n), ("checkpoint", n), ("checkpoint", 4 * n)]
    if not args.no_plain_4x:
        plan.append(("plain", 4 * n))
    runs = []
    for mode, steps in plan:
        print(f"  {mode} diffmpm, {steps} steps ...", file=sys.stderr, flush=True)
        runs.append(measure(mode, steps, k, args.fp))
    import numpy as np
    g_plain, g_ck = np.array(runs[0]["grad"]), np.array(runs[1]["grad"])
    grad_rel = float(np.abs(g_ck - g_plain).max() / np.abs(g_plain).max())
    summary = {
        "host": {"machine": platform.machine(), "cpus": os.cpu_count(), "python": platform.python_version()},
        "fp": args.fp, "n_particles": runs[0]["n_particles"], "N": n, "every": k,
        "checkpoint_vs_plain_grad_max_rel_diff": grad_rel,
        "runs": [{key: val for key, val in r.items() if key != "grad"} for r in runs],
    }
    print(table(runs))
    print(f"\n{runs[0]['n_particles']} particles, {args.fp}. Checkpointed vs plain gradient at {n} steps: "
          f"max |diff| / max |grad| = {grad_rel:.2e}")
    with open(args.out, "w") as fh:
        json.dump(summary, fh, indent=1)
    return summary


if __name__ == "__main__":
    main()
