"""LLVM's share of a cold compile, per kernel: parse, the optimisation pipeline, code generation.

    python benchmarks/llvm_compile_time.py [--baseline-root DIR] [--also NAME=DIR] [--rounds 5]
                                           [--programs gravity_fwd,gravity_adj,...]
                                           [--passes N] [--out FILE.json]

Takes: programs of benchmarks/programs.py. Each measurement is a fresh process with the offline
cache off that runs the program's first step, timing (per-thread CPU time: the machine is
shared) the parse, the pass pipeline and the code generation (instruction selection, register
allocation, object emission) of every module it compiles (`codegen.llvm_build`'s functions, or
in trees without it llvmlite's `parse_assembly`, `ModulePassManager.run`, `emit_object`), and
counting the optimised module's IR lines and vector-typed
instructions (`<N x ...>`). The `--baseline-root` tree and each `--also` tree (checkouts of
other commits) run the same programs with their own example sources; the trees alternate per
round, so a load drift hits all. Reported: per program and tree, medians over rounds of the
three times summed over the program's kernels, of the whole first step's CPU time (compiles,
then one run of the step), and per kernel. `--passes N` adds, from one extra run per tree,
LLVM's own pass timing (`-time-passes`): the N costliest passes. CPU time of the calling
thread: compiles run on it, except what runs on the backend's compile threads (the chunk
runner, built beside the first compile; a Tape's adjoints), which the LLVM columns count and
the whole step does not.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def worker(program, passes):
    sys.path.insert(0, HERE)
    import llvmlite.binding as llvm
    import programs

    import fieldsim as ti
    ti.init(arch=ti.cpu, offline_cache=False)
    records, overhead = [], [0.0]
    per_thread = {}  # thread id -> the module being timed on it (compile threads build too)

    def now():
        return per_thread.setdefault(threading.get_ident(), {})
    parse, run, emit = llvm.parse_assembly, llvm.ModulePassManager.run, llvm.TargetMachine.emit_object
    create_pb = llvm.create_pass_builder

    def timed_parse(text, *a, _parse=parse, **k):
        t0 = time.thread_time()
        mod = _parse(text, *a, **k)
        current = now()
        current.clear()
        current["thread"] = threading.current_thread().name
        lines = text.count("\n")
        # modules compiled without the pass pipeline (the chunk runner) keep these
        current.update(parse_s=time.thread_time() - t0, ir_in=lines, opt_s=0.0, ir_out=lines,
                       vector_instrs=0)
        for line in text.splitlines():
            if line.startswith("define "):
                current["name"] = line.split("@", 1)[1].split("(")[0]
                break
        return mod

    def timed_run(self, mod, pb, _run=run):
        t0 = time.thread_time()
        out = _run(self, mod, pb)
        t1 = time.thread_time()
        current = now()
        current["opt_s"] = t1 - t0
        text = str(mod)
        current["ir_out"] = text.count("\n")
        current["vector_instrs"] = sum(1 for ln in text.splitlines() if "= " in ln and " x " in ln)
        overhead[0] += time.thread_time() - t1  # not the program's: left out of step_s
        return out

    def timed_emit(self, mod, _emit=emit):
        t0 = time.thread_time()
        obj = _emit(self, mod)
        current = now()
        current["emit_s"] = time.thread_time() - t0
        current["obj_bytes"] = len(obj)
        records.append(dict(current))
        return obj

    def timing_pb(tm, pto):
        pb = create_pb(tm, pto)
        pb.start_pass_timing()
        pass_builders.append(pb)
        return pb
    pass_builders, reports = [], []
    llvm.parse_assembly = timed_parse
    llvm.ModulePassManager.run = timed_run
    llvm.TargetMachine.emit_object = timed_emit
    if passes:
        llvm.create_pass_builder = timing_pb
    try:  # trees with codegen.llvm_build call LLVM through it (without llvmlite's lock)
        from fieldsim.codegen import llvm_build
    except ImportError:
        llvm_build = None
    if llvm_build is not None:
        b_parse, b_optimise, b_emit, b_dispose = (llvm_build.parse, llvm_build.optimise,
                                                  llvm_build.emit, llvm_build.dispose)
        llvm_build.parse = lambda text, context: timed_parse(text, context, _parse=b_parse)
        llvm_build.optimise = lambda mod, *a: timed_run(None, mod, None, _run=lambda s, m, p:
                                                        b_optimise(m, *a))
        llvm_build.emit = lambda tm, mod: timed_emit(tm, mod, _emit=lambda t, m: b_emit(t, m))

        def dispose_timed(*objs):  # a timed pass builder's report, read before it is freed
            for obj in objs:
                if any(obj is pb for pb in pass_builders):
                    reports.append(obj.finish_pass_timing())
                    pass_builders[:] = [pb for pb in pass_builders if pb is not obj]
            b_dispose(*objs)
        llvm_build.dispose = dispose_timed
    step, sync = programs.PROGRAMS[program](ti)
    records.clear()  # compiles of the program's setup (a forward before its adjoint)
    overhead[0] = 0.0
    t0 = time.thread_time()
    step()
    sync()
    step_s = time.thread_time() - t0 - overhead[0]
    result = {"kernels": records, "step_s": step_s}
    if passes:
        result["passes"] = reports + [pb.finish_pass_timing() for pb in pass_builders]
    print("RESULT " + json.dumps(result))


def measure(program, root, passes=False):
    env = dict(os.environ)
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    env["FIELDSIM_OFFLINE_CACHE"] = "0"
    out = subprocess.run([sys.executable, __file__, "--worker", program]
                         + (["--passes", "1"] if passes else []),
                         capture_output=True, text=True, env=env, check=False)
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{program} under {root} failed:\n{out.stderr[-3000:]}")


def top_passes(reports, n):
    """The n costliest passes summed over modules, from LLVM's -time-passes reports."""
    row = re.compile(r"^\s*([\d.]+) \(\s*[\d.]+%\)\s+([\d.]+) \(\s*[\d.]+%\)\s+([\d.]+) "
                     r"\(\s*[\d.]+%\)\s+([\d.]+) \(\s*[\d.]+%\)\s+(.+)$")
    total = {}
    for rep in reports:
        for line in rep.splitlines():
            m = row.match(line)
            if m and m.group(5).strip() != "Total":
                name = re.sub(r" #\d+$", "", m.group(5).strip())  # one row per pass instance
                total[name] = total.get(name, 0.0) + float(m.group(3))
    return sorted(total.items(), key=lambda kv: -kv[1])[:n]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--worker")
    ap.add_argument("--programs", default="gravity_fwd,gravity_adj,mpm88_substep,mpm_pair_adj")
    ap.add_argument("--baseline-root")
    ap.add_argument("--also", action="append", default=[], metavar="NAME=DIR",
                    help="another tree to time alongside (repeatable)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--passes", type=int, default=0)
    ap.add_argument("--out")
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker, args.passes)
    from tqdm import tqdm
    trees = {"this": os.path.abspath(os.path.join(HERE, ".."))}
    if args.baseline_root:
        trees["baseline"] = os.path.abspath(args.baseline_root)
    for spec in args.also:
        name, _, root = spec.partition("=")
        trees[name] = os.path.abspath(root)
    progs = args.programs.split(",")
    load0 = os.getloadavg()[0]
    runs = {(p, t): [] for p in progs for t in trees}
    with tqdm(total=args.rounds * len(progs) * len(trees)) as bar:
        for _ in range(args.rounds):
            for p in progs:
                for t, root in trees.items():
                    runs[p, t].append(measure(p, root))
                    bar.update()
    load1 = os.getloadavg()[0]
    print(f"load {load0:.1f} -> {load1:.1f}; CPU ms, medians of {args.rounds}")
    print("| program | tree | parse | optimise | emit | LLVM total | whole first step | IR lines in -> out | vector instrs |")
    print("|---|---|---|---|---|---|---|---|---|")
    summary = {}
    for p in progs:
        for t in trees:
            rs = runs[p, t]
            med = {k: statistics.median(sum(r[k] for r in x["kernels"]) for x in rs)
                   for k in ("parse_s", "opt_s", "emit_s")}
            step = statistics.median(x["step_s"] for x in rs)
            ks = rs[0]["kernels"]
            summary[p, t] = dict(med, step_s=step)
            print(f"| {p} | {t} | {med['parse_s']*1e3:.1f} | {med['opt_s']*1e3:.1f} | "
                  f"{med['emit_s']*1e3:.1f} | {sum(med.values())*1e3:.1f} | {step*1e3:.1f} | "
                  f"{sum(k['ir_in'] for k in ks)} -> {sum(k['ir_out'] for k in ks)} | "
                  f"{sum(k['vector_instrs'] for k in ks)} |")
    print("\nper kernel (CPU ms, medians: optimise / emit; IR lines out)")
    for p in progs:
        for t in trees:
            rs = runs[p, t]
            n = len(rs[0]["kernels"])
            cells = []
            for i in range(n):
                name = rs[0]["kernels"][i].get("name", "?")[:40]
                o = statistics.median(x["kernels"][i]["opt_s"] for x in rs if len(x["kernels"]) == n)
                e = statistics.median(x["kernels"][i]["emit_s"] for x in rs if len(x["kernels"]) == n)
                cells.append(f"{name} {o*1e3:.1f}/{e*1e3:.1f} ({rs[0]['kernels'][i]['ir_out']})")
            print(f"{p} [{t}]: " + "; ".join(cells))
    if args.passes:
        for p in progs:
            for t, root in trees.items():
                rep = measure(p, root, passes=True)
                print(f"\n{p} [{t}] costliest passes (user+sys s, summed over modules):")
                for name, s in top_passes(rep.get("passes", []), args.passes):
                    print(f"  {s*1e3:7.1f} ms  {name}")
    if args.out:
        with open(args.out, "w") as f:
            json.dump({"load": [load0, load1], "rounds": args.rounds,
                       "runs": {f"{p}|{t}": v for (p, t), v in runs.items()}}, f, indent=1)


if __name__ == "__main__":
    main()
