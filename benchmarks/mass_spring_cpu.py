"""CPU time of one mass-spring iteration (issue #13), per backend, and fieldsim's breakdown.

    python benchmarks/mass_spring_cpu.py [--rounds 5] [--iters 9] [--baseline-root DIR]
                                         [--taichi-python PATH] [--warp-python PATH]
                                         [--out benchmarks/results_mass_spring_cpu.json]

Takes: `programs.mass_spring_iter` (examples/simulation/mass_spring.py as it trains: one
forward + backward on a Tape, 600 steps, 5 launches per step) for fieldsim (this checkout, and
`--baseline-root DIR`, an export of another commit, when given), Taichi 1.7.4 and Warp
(`warp_programs.mass_spring_iter`, its CPU device), each from its own interpreter
(`--taichi-python` / `--warp-python`, default $TAICHI_PYTHON / $WARP_PYTHON; left out when it
cannot import them). Each round starts one fresh process per backend, alternating, with a
filled offline cache (compile excluded); a process times `--iters` warm iterations.

Reported (median over rounds of each process's median): CPU time (`time.process_time`: all
threads of the process, so a loaded machine's waiting is not counted) and wall time per
iteration, and for fieldsim the split of an iteration into the forward without a Tape, the
forward recorded on a Tape (launches + access-rule checks) and the Tape's backward (adjoint
replay), with the launches per iteration. Stdout table and JSON in `--out`.
"""
import argparse
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
EXAMPLES = os.path.join(ROOT, "examples", "simulation")


def _timed(fn, iters):
    wall, cpu = [], []
    for _ in range(iters):
        t0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append((time.perf_counter() - t0) * 1e3)
        cpu.append((time.process_time() - c0) * 1e3)
    return statistics.median(cpu), statistics.median(wall)


def worker(backend, iters, cache):
    sys.path[:0] = [HERE, EXAMPLES]
    if backend == "warp":
        os.environ["WARP_CACHE_PATH"] = cache
        import warp as wp
        wp.config.kernel_cache_dir = cache
        wp.config.quiet = True
        wp.init()
        import warp_programs
        step, sync = warp_programs.PROGRAMS["mass_spring_iter"]()[:2]
        step()
        sync()
        cpu, wall = _timed(lambda: (step(), sync()), iters)
        print(json.dumps({"cpu_ms": cpu, "wall_ms": wall}))
        return
    if backend == "taichi":
        import taichi
        sys.modules["fieldsim"] = taichi
    import fieldsim as ti
    ti.init(arch=ti.cpu, cpu_max_num_threads=os.cpu_count(), random_seed=0, offline_cache=True,
            offline_cache_file_path=cache)
    import programs
    step, sync = programs.PROGRAMS["mass_spring_iter"](ti)[:2]
    step()
    sync()
    cpu, wall = _timed(lambda: (step(), sync()), iters)
    out = {"cpu_ms": cpu, "wall_ms": wall}
    if backend != "taichi":
        import mass_spring as ms

        from fieldsim.lang import runtime
        rt = runtime.get()
        n0 = rt.stats["launches"]
        step()
        out["launches"] = rt.stats["launches"] - n0
        out["fwd_no_tape_cpu_ms"] = _timed(ms.forward_no_tape, iters)[0]
        tapes = []

        def record():
            ms.clear_accumulators()
            tape = ti.ad.Tape(loss=ms.loss)
            tape.__enter__()
            ms.forward()
            rt.tape = None  # stop recording; the backward runs below, timed on its own
            tapes.append(tape)

        out["fwd_tape_cpu_ms"] = _timed(record, iters)[0]
        out["backward_cpu_ms"] = _timed(lambda: tapes.pop().backward(ms.loss), iters)[0]
    print(json.dumps(out))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--iters", type=int, default=9)
    ap.add_argument("--baseline-root")
    ap.add_argument("--taichi-python", default=os.environ.get("TAICHI_PYTHON"))
    ap.add_argument("--warp-python", default=os.environ.get("WARP_PYTHON"))
    ap.add_argument("--out", default=os.path.join(HERE, "results_mass_spring_cpu.json"))
    args = ap.parse_args()
    warp_py = args.warp_python or args.taichi_python
    backends = [("fieldsim", sys.executable, ROOT)]
    if args.baseline_root:
        backends.append(("fieldsim-baseline", sys.executable, os.path.abspath(args.baseline_root)))
    for name, py, module in (("taichi", args.taichi_python, "taichi"), ("warp", warp_py, "warp")):
        if py and subprocess.run([py, "-c", f"import {module}"], check=False,
                                 capture_output=True).returncode == 0:
            backends.append((name, py, ROOT))
        else:
            print(f"note: {name} left out (no interpreter that imports {module})")
    caches = {name: tempfile.mkdtemp(prefix=f"fs-ms-{name}-") for name, _, _ in backends}
    load0 = os.getloadavg()[0]
    samples = {name: [] for name, _, _ in backends}
    for _ in range(args.rounds):
        for name, py, root in backends:
            env = dict(os.environ, PYTHONPATH=root)
            kind = "fieldsim" if name.startswith("fieldsim") else name
            res = subprocess.run([py, os.path.abspath(__file__), "--worker", kind, str(args.iters),
                                  caches[name]], check=False, env=env, capture_output=True,
                                 text=True)
            if res.returncode != 0:
                sys.exit(f"{name} failed:\n{res.stderr[-3000:]}")
            samples[name].append(json.loads(res.stdout.strip().splitlines()[-1]))
    result = {"_machine": {"cpu": platform.processor() or platform.machine(),
                           "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%dT%H:%M:%S"),
                           "load_1min": load0, "load_1min_after": os.getloadavg()[0],
                           "rounds": args.rounds, "iters": args.iters}}
    for name, runs in samples.items():
        result[name] = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
        result[name]["samples_cpu_ms"] = [r["cpu_ms"] for r in runs]
    peers = [result[p]["cpu_ms"] for p in ("taichi", "warp") if p in result]
    print(f"mass_spring_iter, {args.rounds} rounds, load {load0:.2f} -> {os.getloadavg()[0]:.2f}")
    print("| backend | CPU ms | wall ms | CPU / faster peer |")
    print("|---|---|---|---|")
    for name in samples:
        r = result[name]
        ratio = f"{r['cpu_ms'] / min(peers):.2f}" if peers else "-"
        print(f"| {name} | {r['cpu_ms']:.1f} | {r['wall_ms']:.1f} | {ratio} |")
    for name in samples:
        r = result[name]
        if "launches" in r:
            print(f"{name}: {r['launches']:.0f} launches per iteration; forward without Tape "
                  f"{r['fwd_no_tape_cpu_ms']:.1f} ms, forward on a Tape {r['fwd_tape_cpu_ms']:.1f} ms, "
                  f"backward {r['backward_cpu_ms']:.1f} ms (CPU)")
    with open(args.out, "w") as f:
        json.dump(result, f, indent=1)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        worker(sys.argv[2], int(sys.argv[3]), sys.argv[4])
    else:
        main()
