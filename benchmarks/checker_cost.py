"""What the access-rule checker (fieldsim.checks) costs, next to what compiling costs.

    python benchmarks/checker_cost.py [--rounds 5] [--reps 20] [--out benchmarks/results_checker.json]

Takes: the benchmark kernels (mpm88's four, ad_gravity's compute_U, diffmpm's five step
kernels), compiled cold (offline cache off), in `rounds` fresh inits (medians over rounds are
reported). For each kernel it times, median of `reps`:

* `summarize`: the kernel's effect table;
* `KernelCheck`: its summary plus rules 1 and 2 judged symbolically (what a Tape makes once per
  compiled kernel and keeps on it);
* `judge`: re-judging the flagged pairs with one launch's argument values;
* `Tape first launch`: a fresh Tape's first launch of the kernel given its KernelCheck (the
  per-access boxes built, the launch checked, recorded); and, for the differentiable kernels,
  `Tape per launch`: one more launch on a Tape that already holds one (the steady cost);

and, for diffmpm, what the checks cost per optimisation iteration (`tape_pass`: the Tape's
checker for every launch of one forward, those of its `grad_replaced` unit inside its unit,
and the checks of the user backward's `kernel.grad(s)` calls), on a thread's first Tape and on
a Tape repeating the previous one's launches (`checks.tape_memo`), beside a whole iteration and
a forward on and off a Tape. The one-off cost (`KernelCheck` + first `TapeState.launch`: what a
Tape pays the first time it sees a kernel) is compared with the kernel's compile time
(frontend + LLVM, from the runtime's compile_s) and, for differentiable kernels, with its
forward and adjoint compile times together.

Guarantees: analysis only, run on the kernels' real IR and real argument values; kernels
whose launches the rules refuse (mpm88 reads and then writes x in one kernel: it is not a
differentiable program) get `summarize`/`KernelCheck`/`judge` timings only.
"""
import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "examples", "simulation"))

import fieldsim as ti
from fieldsim.ad.tape import _CheckerAdapter
from fieldsim.checks import KernelCheck, TapeState, summarize
from fieldsim.checks.tape_rules import check_index_ranges
from fieldsim.errors import AccessRuleError
from fieldsim.lang import runtime

try:
    from fieldsim.checks.tape_rules import check_grad_launch
except ImportError:  # code before it (baselines)
    check_grad_launch = None


def timed(fn, reps):
    out = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def compile_time(launch):
    rt = runtime.get()
    before = rt.stats["compile_s"]
    launch()
    return rt.stats["compile_s"] - before


def ir_of(kernel):
    ck = next(iter(kernel._cache.values()))
    return ck.ir


def kernels():
    """(name, kernel, args, launch, grad launch or None, differentiable)."""
    import ad_gravity as g
    import diffmpm as d
    import mpm88 as m
    m.setup(8192, 128)
    m.reset()
    for k in ("clear_grid", "particle_to_grid", "update_grid", "grid_to_particle"):
        yield f"mpm88.{k}", getattr(m, k), (), None
    g.setup(2048)
    g.x.from_numpy(g.initial_state(2048)[0])
    yield "gravity.compute_U", g.compute_U, (), lambda: g.compute_U.grad()
    d.setup()
    d.init_state()
    yield "diffmpm.compute_actuation", d.compute_actuation, (0,), lambda: d.compute_actuation.grad(0)
    yield "diffmpm.clear_grid", d.clear_grid, (), lambda: d.clear_grid.grad()
    yield "diffmpm.p2g", d.p2g, (0,), lambda: d.p2g.grad(0)
    yield "diffmpm.grid_op", d.grid_op, (), lambda: d.grid_op.grad()
    yield "diffmpm.g2p", d.g2p, (0,), lambda: d.g2p.grad(0)


def _grad_check(ck, name, values):
    """What a user's `kernel.grad(*values)` judges before its adjoint runs (the runtime's
    `launch_adjoint`): its rules and index ranges with these values."""
    rules = ck.analyses.check
    if check_grad_launch is not None:
        check_grad_launch(rules, ck.ir, name, values)
    else:  # code before check_grad_launch (baselines)
        rules.run(values)
        check_index_ranges(rules, ck.ir, name, values)


def tape_pass(clock=time.perf_counter, repeat=True):
    """The checks of one diffmpm iteration, made through the Tape's own entry points: the
    Tape's checker (`_CheckerAdapter.launch`) for each launch of the forward (those of the
    grad_replaced `advance` inside its `unit`), then the checks of the backward's own
    `kernel.grad(s)` calls (`advance_grad`). `repeat`: this Tape's launches repeat the previous
    Tape's (a training loop's second iteration on); else the first Tape of a thread.
    Returns (seconds of the Tape's launches, seconds of the backward's checks)."""
    import diffmpm as d
    cks = {n: next(iter(getattr(d, n)._cache.values())) for n in
           ("init_state", "compute_actuation", "clear_grid", "p2g", "grid_op", "g2p", "compute_loss")}
    if not repeat:
        runtime.get()._per_thread.tape_memo = None
    adapter = _CheckerAdapter(False)

    launch = adapter.launch
    (ki, ci), (ka, ca), (kc, cc), (kp, cp), (ko, co), (kg, cg), (kl, cl) = (
        (getattr(d, n), ck) for n, ck in cks.items())
    t0 = clock()
    launch(ki, ci, [])
    for s in range(d.steps):
        launch(ka, ca, [s])
        with adapter.unit("advance", None):
            launch(kc, cc, [], True)
            launch(kp, cp, [s], True)
            launch(ko, co, [], True)
            launch(kg, cg, [s], True)
    launch(kl, cl, [])
    t1 = clock()
    for s in reversed(range(d.steps)):
        _grad_check(cks["g2p"], "g2p", [s])
        _grad_check(cks["grid_op"], "grid_op", [])
        _grad_check(cks["p2g"], "p2g", [s])
    return t1 - t0, clock() - t1


def forward_on_tape():
    """Seconds of one diffmpm forward recorded on a Tape (checks, locations, recording)."""
    import diffmpm as d
    tape = ti.ad.Tape(loss=d.loss)
    tape.__enter__()
    t0 = time.perf_counter()
    d.forward()
    t = time.perf_counter() - t0
    tape.__exit__(None, None, None)
    return t


def first_launch(ir, name, values):
    """Seconds of a Tape's first launch of a kernel whose KernelCheck exists (boxes built)."""
    check = KernelCheck(ir)
    t0 = time.perf_counter()
    TapeState().launch(ir, name, check, values)
    return time.perf_counter() - t0


def one_kernel(name, k, kargs, grad, reps):
    """The row of one kernel: its compile times and what each check costs."""
    r = {"compile_s": compile_time(lambda: k(*kargs))}
    ir = ir_of(k)
    values = list(kargs)
    r["summarize_s"] = timed(lambda: summarize(ir), reps)
    r["kernelcheck_s"] = timed(lambda: KernelCheck(ir), reps)
    check = KernelCheck(ir)
    r["judge_s"] = timed(lambda: check.judge(values), reps)
    if grad is not None:
        ck = next(iter(k._cache.values()))
        ck.checked = True  # time the adjoint's compile without the check it would run
        r["adjoint_compile_s"] = compile_time(grad)
        r["tape_first_launch_s"] = statistics.median(first_launch(ir, name, values)
                                                     for _ in range(reps))

        def twice():
            st, check = TapeState(), KernelCheck(ir)
            st.launch(ir, name, check, values)
            t0 = time.perf_counter()
            try:
                st.launch(ir, name, check, values)
            except AccessRuleError:
                pass  # a kernel that reads what it writes: one launch per Tape only
            return time.perf_counter() - t0
        r["tape_per_launch_s"] = statistics.median(twice() for _ in range(reps))
    once = r["kernelcheck_s"] + r.get("tape_first_launch_s", r["judge_s"])
    r["checks_once_s"] = once
    r["ratio_to_compile"] = once / r["compile_s"]
    if "adjoint_compile_s" in r:
        r["ratio_to_fwd_plus_adj_compile"] = once / (r["compile_s"] + r["adjoint_compile_s"])
    return r


def one_round(reps):
    """All measurements once, after a fresh init (so every compile is cold)."""
    ti.init(arch=ti.cpu, offline_cache=False, random_seed=0)
    rows = {name: one_kernel(name, k, kargs, grad, reps) for name, k, kargs, grad in kernels()}
    import diffmpm as d
    d.loss_and_grad()  # every diffmpm kernel compiled
    d.loss_and_grad()  # and its adjoints
    tape = {}
    for repeat in (False, True):
        tag = "repeat" if repeat else "first"
        tape_pass(repeat=repeat)  # warm, as across a training run's Tapes
        samples = [tape_pass(repeat=repeat) for _ in range(5)]
        tape[f"{tag}_launches_s"] = statistics.median(a for a, _ in samples)
        tape[f"{tag}_grad_checks_s"] = statistics.median(b for _, b in samples)
        tape[f"{tag}_min_s"] = min(a + b for a, b in samples)
        # CPU time (one thread: all Python): steadier on a loaded machine
        tape[f"{tag}_cpu_s"] = statistics.median(sum(tape_pass(time.process_time, repeat))
                                                 for _ in range(3))
    its = [timed(d.loss_and_grad, 1) for _ in range(7)]
    tape.update(forward_on_tape_s=statistics.median(forward_on_tape() for _ in range(3)),
                forward_no_tape_s=timed(d.forward_no_tape, 3),
                iteration_s=statistics.median(its), iteration_min_s=min(its))
    rows["diffmpm_tape"] = tape
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=5, help="fresh inits; medians over them")
    ap.add_argument("--out", default=os.path.join(HERE, "results_checker.json"))
    args = ap.parse_args(argv)
    from tqdm import tqdm
    load = [os.getloadavg()[0]]
    rounds = [one_round(args.reps) for _ in tqdm(range(args.rounds), desc="rounds")]
    load.append(os.getloadavg()[0])
    rows = {name: {k: statistics.median(r[name][k] for r in rounds) for k in rounds[0][name]}
            for name in rounds[0]}
    tape = rows["diffmpm_tape"]
    print(f"diffmpm, one iteration: {tape['iteration_s'] * 1e3:.1f} ms (fastest "
          f"{tape['iteration_min_s'] * 1e3:.1f}); its forward {tape['forward_on_tape_s'] * 1e3:.0f} ms "
          f"on a Tape, {tape['forward_no_tape_s'] * 1e3:.0f} ms without")
    for tag, what in (("first", "first Tape"), ("repeat", "a Tape repeating the last one")):
        total = tape[f"{tag}_launches_s"] + tape[f"{tag}_grad_checks_s"]
        print(f"checks, {what}: Tape launches {tape[f'{tag}_launches_s'] * 1e3:.2f} ms + backward's "
              f"kernel.grad checks {tape[f'{tag}_grad_checks_s'] * 1e3:.2f} ms = {total * 1e3:.2f} ms "
              f"({tape[f'{tag}_cpu_s'] * 1e3:.2f} ms CPU; fastest {tape[f'{tag}_min_s'] * 1e3:.2f}): "
              f"{total / tape['iteration_s'] * 100:.1f}% of the iteration "
              f"(fastest/fastest {tape[f'{tag}_min_s'] / tape['iteration_min_s'] * 100:.1f}%)")
    print(f"load {load[0]:.2f} -> {load[1]:.2f}; medians of {args.rounds} rounds; times in ms; "
          "checks = KernelCheck (summarize included) + first TapeState.launch")
    print("| kernel | compile | adj. compile | summarize | KernelCheck | judge | Tape first launch "
          "| Tape per launch | checks / compile | checks / (fwd+adj compile) |")
    print("|---|---|---|---|---|---|---|---|---|---|")

    def ms(r, key):
        return f"{r[key] * 1e3:.2f}" if key in r else "-"
    for name, r in rows.items():
        if name == "diffmpm_tape":
            continue
        both = r.get("ratio_to_fwd_plus_adj_compile")
        print(f"| {name} | {ms(r, 'compile_s')} | {ms(r, 'adjoint_compile_s')} | "
              f"{ms(r, 'summarize_s')} | {ms(r, 'kernelcheck_s')} | {ms(r, 'judge_s')} | "
              f"{ms(r, 'tape_first_launch_s')} | {ms(r, 'tape_per_launch_s')} | "
              f"{r['ratio_to_compile'] * 100:.1f}% | {'-' if both is None else f'{both * 100:.1f}%'} |")
    with open(args.out, "w") as f:
        json.dump({"load": load, "median": rows, "rounds": rounds}, f, indent=1)


if __name__ == "__main__":
    main()
