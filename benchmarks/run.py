"""Run fieldsim, Taichi and Warp (when importable) side by side, alternating, and print medians.

    python benchmarks/run.py [--rounds 5] [--programs mpm88_substep,gravity_fwd,...]
                             [--taichi-python PATH] [--warp-python PATH] [--threads N]
                             [--arch cpu] [--reps 30] [--out benchmarks/results.json]
                             [--baseline-root DIR] [--no-taichi] [--no-warp]

Takes: the programs of benchmarks/programs.py to time. fieldsim runs under this interpreter;
Taichi under `--taichi-python` (default: $TAICHI_PYTHON, else this interpreter), and is left out,
with a note, when that interpreter cannot import taichi. Warp (warp-lang 1.2 or later, on the
device `--arch` names: "cpu", or "cuda:0" for cuda, as Taichi's `ti.init(arch=...)`) runs
the programs of the same names in benchmarks/warp_programs.py under `--warp-python` (default:
$WARP_PYTHON, else the Taichi interpreter), left out likewise when it cannot import warp or has
no Warp version of a program. Neither is a dependency of the project: they live in their own
environment (BENCHMARKS.md says how to make one).

Same result: every worker reports the program's checksums after its first step (a loss, sums
of particle state or gradients; programs.CHECKSUMS, warp_programs.py); each backend's are
compared with fieldsim's (relative tolerance `--check-rtol`, default 1e-3: float32, different
summation orders), printed, and a mismatch makes the run exit with status 1 after the results
are written.

`--baseline-root DIR` adds a third column set, fieldsim as found in DIR (a checkout of another
commit), to measure a change of fieldsim itself.

Guarantees: every measurement is a fresh process (`_worker.py`), so a cold compile is cold;
per round, each backend runs once with its offline cache off (cold compile and warm step) and
once with an offline cache filled before the first round (cached compile, and a second warm
sample), the backends alternating so that load drifts hit all alike. fieldsim and Taichi get the
same thread count; Warp runs CPU kernels on one thread (it has no thread-count setting). Warp's
"offline cache" is its kernel cache (WARP_CACHE_PATH), an empty directory for the cold run.
Reported: medians over rounds, the machine, the date and the load (1-minute load average
before and after) as a Markdown table on stdout and as JSON in `--out`. For each
`X_fwd`/`X_adj` pair it also reports the adjoint/forward ratio of warm times.

Bytecode: the workers keep Python bytecode in a temporary `PYTHONPYCACHEPREFIX` (filled by the
cache-filling pass), even where the environment sets PYTHONDONTWRITEBYTECODE, because an
installed package has its `.pyc` files; otherwise a first compile would time the byte-compiling
of the lazily imported frontend (about 100 KB of source, 10-25 ms), not fieldsim.
`--no-bytecode-cache` keeps the environment as it is.
"""
import argparse
import datetime
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
    if backend == "fieldsim-baseline":  # fieldsim from another tree, first on PYTHONPATH
        backend, env = "fieldsim", dict(env, PYTHONPATH=env["BENCH_BASELINE_ROOT"] + os.pathsep
                                        + env["PYTHONPATH"])
    out = subprocess.run([python, os.path.join(HERE, "_worker.py"), backend, program, cache],
                         capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{backend} {program} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def version_of(python, module):
    code = (f"import {module}; v = {module}.__version__; "
            "print('.'.join(map(str, v)) if isinstance(v, tuple) else v)")
    out = subprocess.run([python, "-c", code],
                         capture_output=True, text=True, check=False)
    return out.stdout.strip().splitlines()[-1] if out.returncode == 0 and out.stdout.strip() else None


def machine():
    """CPU model, cores, load, date: what the numbers depend on."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version(),
            "date": datetime.datetime.now().isoformat(timespec="seconds"),
            "load_1min": os.getloadavg()[0]}


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--programs", default="mpm88_substep")
    ap.add_argument("--taichi-python", default=os.environ.get("TAICHI_PYTHON", sys.executable))
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--arch", default=os.environ.get("BENCH_ARCH", "cpu"))
    ap.add_argument("--reps", type=int, default=int(os.environ.get("BENCH_REPS", "30")),
                    help="warm steps timed per process (median taken)")
    ap.add_argument("--out", default=os.path.join(HERE, "results.json"))
    ap.add_argument("--baseline-root", help="also time the fieldsim package found in this "
                    "directory (e.g. a `git worktree` of an older commit) as fieldsim-baseline")
    ap.add_argument("--no-taichi", action="store_true")
    ap.add_argument("--warp-python", default=None,
                    help="interpreter with warp-lang (default: $WARP_PYTHON, else --taichi-python)")
    ap.add_argument("--no-warp", action="store_true")
    ap.add_argument("--check-rtol", type=float, default=1e-3)
    ap.add_argument("--no-bytecode-cache", action="store_true",
                    help="leave PYTHONDONTWRITEBYTECODE/PYTHONPYCACHEPREFIX as the environment has them")
    args = ap.parse_args(argv)
    programs = args.programs.split(",")
    env = dict(os.environ, BENCH_THREADS=str(args.threads), BENCH_ARCH=args.arch,
               BENCH_REPS=str(args.reps),
               PYTHONPATH=os.path.join(HERE, "..") + os.pathsep + os.environ.get("PYTHONPATH", ""))
    if not args.no_bytecode_cache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="fs-bench-pyc-")
    backends = [("fieldsim", sys.executable)]
    if args.baseline_root:
        env["BENCH_BASELINE_ROOT"] = os.path.abspath(args.baseline_root)
        backends.append(("fieldsim-baseline", sys.executable))
    taichi_version = None if args.no_taichi else version_of(args.taichi_python, "taichi")
    if taichi_version:
        backends.append(("taichi", args.taichi_python))
    else:
        print(f"note: no Taichi ({args.taichi_python} cannot import it, or --no-taichi); timing "
              "fieldsim alone (pass --taichi-python or set TAICHI_PYTHON)", file=sys.stderr)
    warp_python = args.warp_python or os.environ.get("WARP_PYTHON") or args.taichi_python
    warp_version = None if args.no_warp else version_of(warp_python, "warp")
    warp_names = set()
    if warp_version:
        backends.append(("warp", warp_python))
        warp_names = warp_programs_of(warp_python, env)
    elif not args.no_warp:
        print(f"note: no Warp ({warp_python} cannot import warp); pass "
              "--warp-python or set WARP_PYTHON", file=sys.stderr)
    meta = machine()
    meta.update(threads=args.threads, arch=args.arch, rounds=args.rounds, reps=args.reps,
                taichi=taichi_version, warp=warp_version,
                llvmlite=version_of(sys.executable, "llvmlite"),
                bytecode_cache=not args.no_bytecode_cache)
    results, checks = {}, {}
    for program in programs:
        cache = tempfile.mkdtemp(prefix="fs-bench-cache-")
        runs = [(b, py) for b, py in backends if b != "warp" or program in warp_names]
        for backend, py in runs:  # fill the offline caches once
            first = measure(py, backend, program, os.path.join(cache, backend), env)
            checks[(program, backend)] = first.get("check")
        for _ in tqdm(range(args.rounds), desc=program):
            for backend, py in runs:  # alternate the backends
                cold = measure(py, backend, program, "-", env)
                cached = measure(py, backend, program, os.path.join(cache, backend), env)
                r = results.setdefault((program, backend), {"cold": [], "cached": [], "warm": []})
                if cold.get("counted_compile_s") is not None:
                    r.setdefault("counted", []).append(cold["counted_compile_s"])
                    r.setdefault("first", []).append(cold["first_s"])
                r["cold"].append(cold["compile_s"])
                r["cached"].append(cached["compile_s"])
                r["warm"] += [cold["warm_ms"], cached["warm_ms"]]
    meta["load_1min_after"] = os.getloadavg()[0]
    table = {"_machine": meta}
    for (program, backend), r in results.items():
        table[f"{program}/{backend}"] = {k: statistics.median(v) for k, v in r.items()}
        table[f"{program}/{backend}"]["samples"] = r
        table[f"{program}/{backend}"]["check"] = checks.get((program, backend))
    print(f"machine: {meta['cpu']}, {meta['cores']} cores, threads={args.threads}, "
          f"arch={args.arch}, load {meta['load_1min']:.2f} -> {meta['load_1min_after']:.2f}, "
          f"{meta['date']}, taichi {taichi_version}, warp {warp_version}, "
          f"llvmlite {meta['llvmlite']}")
    print("| program | backend | warm step (ms) | cold compile (s) | cached compile (s) |")
    print("|---|---|---|---|---|")
    for program in programs:
        for backend, _ in backends:
            m = table.get(f"{program}/{backend}")
            if m:
                print(f"| {program} | {backend} | {m['warm']:.3f} | {m['cold']:.3f} | "
                      f"{m['cached']:.3f} |")
        a = table.get(f"{program}/fieldsim")
        peers = [table[k] for k in (f"{program}/taichi", f"{program}/warp") if k in table]
        if a and peers:
            cells = [ratio(a[k], min(p[k] for p in peers)) for k in ("warm", "cold", "cached")]
            print(f"| {program} | fieldsim/faster peer | {' | '.join(cells)} |")
        for other in ("taichi", "warp", "fieldsim-baseline"):
            b = table.get(f"{program}/{other}")
            if a and b:
                print(f"| {program} | fieldsim/{other} | "
                      + " | ".join(ratio(a[k], b[k]) for k in ("warm", "cold", "cached")) + " |")
    print_counted(table, programs)
    for program in programs:
        if program.endswith("_adj") and program[:-4] + "_fwd" in programs:
            for backend, _ in backends:
                fwd, adj = table.get(f"{program[:-4]}_fwd/{backend}"), table.get(f"{program}/{backend}")
                if not (fwd and adj):
                    continue
                print(f"adjoint/forward {program[:-4]} {backend}: {adj['warm'] / fwd['warm']:.2f}")
    bad = compare_checks(checks, programs, args.check_rtol)
    table["_machine"]["checks_ok"] = not bad
    with open(args.out, "w") as f:
        json.dump(table, f, indent=1)
    if bad:
        sys.exit(f"checksums differ from fieldsim's beyond rtol {args.check_rtol}: {bad}")


def print_counted(table, programs):
    """fieldsim's cold compile as its runtime counts it (`stats["compile_s"]`: frontend, reverse
    AD, lowering, LLVM), beside the baseline tree's: no warm step subtracted, so a baseline
    whose step is slow (gravity's adjoint at 620264e: 48 +- 8 ms) reads no noisier. And the
    cold first step itself (compile and run), what a user waits for."""
    rows = []
    for program in programs:
        a, b = table.get(f"{program}/fieldsim"), table.get(f"{program}/fieldsim-baseline")
        if a and "counted" in a:
            cells = [f"{a['counted']:.3f}", f"{a['first']:.3f}"]
            cells += [f"{b['counted']:.3f}", f"{b['first']:.3f}", ratio(a["counted"], b["counted"]),
                      ratio(a["first"], b["first"])] if b and "counted" in b else ["-"] * 4
            rows.append(f"| {program} | " + " | ".join(cells) + " |")
    if rows:
        print("cold compile counted by the runtime, and the cold first step (s, medians):")
        print("| program | fieldsim compile | fieldsim first step | baseline compile | "
              "baseline first step | compile ratio | first-step ratio |")
        print("|---|---|---|---|---|---|---|")
        print("\n".join(rows))


def ratio(a, b):
    """a/b, or "-" where b is zero: a compile time clamped at 0 (first step minus warm step
    below the noise) has no meaningful ratio."""
    return f"{a / b:.2f}x" if b > 0 else "-"


def warp_programs_of(python, env):
    """Names of the programs warp_programs.py has (a subprocess: Warp is not importable here)."""
    code = (f"import sys; sys.path.insert(0, {HERE!r}); import warp_programs; "
            "print(','.join(warp_programs.PROGRAMS))")
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env,
                         check=False)
    return set(out.stdout.strip().splitlines()[-1].split(",")) if out.returncode == 0 else set()


def compare_checks(checks, programs, rtol):
    """Print each backend's checksums beside fieldsim's; return the ones off by more than rtol."""
    bad = []
    print("checksums after the first step (relative difference to fieldsim):")
    for program in programs:
        ref = checks.get((program, "fieldsim")) or {}
        for (prog, backend), check in sorted(checks.items()):
            if prog != program or backend == "fieldsim" or not check:
                continue
            for name, value in check.items():
                if name not in ref:
                    continue
                rel = abs(value - ref[name]) / max(abs(ref[name]), 1e-30)
                ok = rel <= rtol
                print(f"  {program} {name}: fieldsim {ref[name]:.7g}, {backend} {value:.7g}, "
                      f"rel {rel:.1e} {'ok' if ok else 'MISMATCH'}")
                if not ok:
                    bad.append(f"{program}/{backend}/{name}")
    return bad


if __name__ == "__main__":
    main()
