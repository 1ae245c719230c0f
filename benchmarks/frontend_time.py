"""Frontend compile time: `KernelObj.build_ir` (frontend + offload) of the example kernels.

    python benchmarks/frontend_time.py [--baseline-root DIR] [--rounds 7] [--reps 20]
                                       [--programs mpm88_substep,mpm_pair_fwd,gravity_fwd]
                                       [--also NAME=DIR ...]
    PYTHONPATH=. python benchmarks/frontend_time.py --profile mpm88_substep [--reps 50]

Takes: programs of benchmarks/programs.py, with the example sources of `--baseline-root`
when given (this tree's otherwise): both trees run the same, older, source. Each worker is
a fresh process that runs the program's first step (compiling its kernels) with `build_ir`
wrapped, then calls every recorded `build_ir` again `--reps` times. Reported per program and
tree, as medians over rounds (the trees alternate, so load drifts hit both alike): `first`,
the per-thread CPU time of all first `build_ir` calls (what a user's first step pays, less
the import of the frontend's modules, which is timed apart just before: `import`), and
`again`, the per-thread CPU time of one more `build_ir` of every kernel (the source already
parsed: the frontend's own work, steadier), and the calling thread's CPU time of the whole
first step (every compile, backend included, then one run; the offline cache is off). CPU
time, not wall time: the machine is shared.
Bytecode is kept in a temporary PYTHONPYCACHEPREFIX filled by a first, untimed pass, as an
installed package has its `.pyc` files. `--profile` prints cProfile's top functions of the
repeated `build_ir` calls instead.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(program, reps, profile, bench_dir):
    sys.path.insert(0, bench_dir)  # its programs.py finds its own examples
    import programs

    import fieldsim as ti
    from fieldsim.lang.kernel import KernelObj
    ti.init(arch=ti.cpu, offline_cache=False)
    calls, first = [], []
    original = KernelObj.build_ir

    def recording(self, *args):
        t0 = time.thread_time()
        out = original(self, *args)
        first.append(time.thread_time() - t0)
        calls.append((self, args))
        return out
    KernelObj.build_ir = recording
    step, sync = getattr(programs, program)(ti)
    t0 = time.thread_time()
    import fieldsim.lang.frontend  # noqa: F401 - imported at the first compile: timed apart
    import_s = time.thread_time() - t0
    t0 = time.thread_time()
    step()
    sync()
    step_s = time.thread_time() - t0
    KernelObj.build_ir = original

    def again():
        for kernel, args in calls:
            original(kernel, *args)
    if profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(reps):
            again()
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(35)
        return
    samples = []
    for _ in range(reps):
        t0 = time.thread_time()
        again()
        samples.append(time.thread_time() - t0)
    print(json.dumps({"kernels": len(calls), "import": import_s, "first": sum(first),
                      "step": step_s,
                      "again": statistics.median(samples)}))


def run(root, bench_dir, program, reps, env):
    env = dict(env, PYTHONPATH=os.pathsep.join([root, env.get("PYTHONPATH", "")]))
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--worker", program,
                          "--reps", str(reps), "--bench-dir", bench_dir], capture_output=True, text=True, env=env,
                         check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{root} {program}:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--profile")
    ap.add_argument("--baseline-root")
    ap.add_argument("--also", action="append", default=[], metavar="NAME=DIR",
                    help="another tree to time (e.g. this branch before a change)")
    ap.add_argument("--bench-dir", default=HERE, help="where programs.py is (worker)")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--programs", default="mpm88_substep,mpm_pair_fwd,gravity_fwd")
    args = ap.parse_args()
    if args.worker or args.profile:
        worker(args.worker or args.profile, args.reps, bool(args.profile), args.bench_dir)
        return
    env = dict(os.environ, PYTHONPYCACHEPREFIX=tempfile.mkdtemp(prefix="fs-fe-pyc-"))
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    trees = {"this": os.path.join(HERE, "..")}
    if args.baseline_root:
        trees["baseline"] = args.baseline_root
    for spec in args.also:
        name, _, root = spec.partition("=")
        trees[name] = root
    bench_dir = os.path.join(args.baseline_root or os.path.join(HERE, ".."), "benchmarks")
    programs = args.programs.split(",")
    for root in trees.values():  # fills the bytecode cache; untimed
        for program in programs:
            run(root, bench_dir, program, 1, env)
    load = [os.getloadavg()[0]]
    results = {(t, p): [] for t in trees for p in programs}
    for _ in range(args.rounds):
        for program in programs:
            for tree, root in trees.items():
                results[tree, program].append(run(root, bench_dir, program, args.reps, env))
    load.append(os.getloadavg()[0])
    print(f"load {load[0]:.2f} -> {load[1]:.2f}, {args.rounds} rounds, {args.reps} reps")
    print("| program | tree | kernels | frontend import (ms CPU) | first build_ir (ms CPU) "
          "| again (ms CPU) | whole first step (ms CPU) |")
    print("|---|---|---|---|---|---|---|")
    for program in programs:
        for tree in trees:
            rs = results[tree, program]
            print(f"| {program} | {tree} | {rs[0]['kernels']} "
                  f"| {1e3 * statistics.median(r['import'] for r in rs):.2f} "
                  f"| {1e3 * statistics.median(r['first'] for r in rs):.2f} "
                  f"| {1e3 * statistics.median(r['again'] for r in rs):.2f} "
                  f"| {1e3 * statistics.median(r['step'] for r in rs):.1f} |")


if __name__ == "__main__":
    main()
