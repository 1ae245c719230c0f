"""This machine's roofline, and where each benchmark kernel sits under it.

    python benchmarks/roofline.py [--threads N] [--reps 10] [--out benchmarks/results_roofline.json]

Takes: nothing but the machine. Measures, in this process (fieldsim with `--threads` CPU
threads, default all):

* f32 FMA peak: a fieldsim kernel of independent multiply-adds (128 chains per iteration of a
  parallel loop, no memory traffic in the inner loop), beside numpy's BLAS sgemm (2048^3) as
  the check on what the cores can do; the roofline's peak is the larger of the two;
* square root and division throughput (the divider): a fieldsim kernel summing `1/sqrt(x+k)`
  over an inner loop LLVM vectorizes, one square root and one division per element, no memory
  traffic; in G divider ops/s (a square root or a division each one op);
* memory bandwidth: fieldsim copy (`b[i] = a[i]`, 8 bytes per element) and triad
  (`a[i] = b[i] + s * c[i]`, 12 bytes) kernels on 64 MiB fields, beside numpy's copy;
* every kernel of the benchmark programs (benchmarks/programs.py: mpm88 substep, gravity
  N=2048 forward and adjoint, the diffmpm step pair forward and adjoint) timed with fieldsim's
  kernel profiler; its FLOPs and bytes per launch counted from its IR: each float arithmetic
  statement one FLOP (a transcendental too), each field load/store its element size, an
  atomic both, times the trip counts of the loops around it (both branches of an `if`
  counted: an upper bound; the columns a triangular nest skips are not counted), and its
  divider ops: float square roots and divisions, a division that shares its divisor with an
  earlier one in its block counted as the multiplication the fast-math lowering makes of it
  (codegen.shared_divisors), and an f32 division by a square root, with that square root where
  nothing else uses it, not counted: fast-math multiplies by a refined estimate, made on the
  FMA units (codegen.llvm_arith.fast_rsqrt). Memory
  bytes are those access bytes, except for a kernel whose fields fit in 4 MiB (they stay in
  cache): their footprint. A kernel whose loop bounds depend
  on arguments gets no count.

Reported per kernel: time per launch, GFLOP/s, GB/s, arithmetic intensity, the roofline bound
(the GFLOP/s it would reach at the slowest of three limits: FLOPs at the FMA peak, bytes at
the bandwidth, divider ops at the divider's throughput), the fraction of it reached, and what
limits it: `launch` (under 30 us per launch: fixed costs dominate), `atomics` (atomic traffic
is most of its bytes, and bandwidth is its limit), `bandwidth`, `divider` (square roots and
divisions: gravity's pair is one of each on a unit that does one 8-lane op every 5-6 cycles)
or `compute` (the FMA peak). Guarantees: analysis and
timing only; numbers are medians of `--reps` runs; the load average goes in the output.
"""
import argparse
import json
import os
import platform
import statistics
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from checker_cost import timed

import fieldsim as ti
from fieldsim.codegen.loopnest import ndrange_split, row_bound
from fieldsim.codegen.shared_divisors import shared_divisors
from fieldsim.ir.intexpr import trip_count
from fieldsim.ir.opdefs import Op

FLOAT_OPS = {Op.NEG, Op.ABS, Op.SQRT, Op.SIN, Op.COS, Op.TAN, Op.ASIN, Op.ACOS, Op.ATAN, Op.TANH,
             Op.EXP, Op.LOG, Op.FLOOR, Op.CEIL, Op.ROUND, Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW,
             Op.ATAN2, Op.MIN, Op.MAX}


def median_time(fn, reps):
    fn()  # warm: compile, page in
    return timed(fn, reps)


# ------------------------------------------------------------------------------- the machine
def fma_peak(reps):
    # 128 chains: LLVM's SLP vectorizer packs them into 8-16 vector registers, enough
    # independent FMAs in flight to cover the FMA latency on both units. With 16 chains (one
    # or two vectors, or scalars) the loop was latency-bound: 11-19 GFLOP/s where sgemm gets
    # 141 on the same Intel VM (BENCHMARKS.md, 2026-11-27)
    n, iters, chains = 1 << 14, 256, 128
    out = ti.field(ti.f32, shape=n)

    @ti.kernel
    def fma(iters: ti.i32):
        for i in range(n):
            x = ti.cast(i, ti.f32) * 1e-9
            acc = ti.Vector([x + 1e-3 * k for k in ti.static(range(chains))])
            for _ in range(iters):
                acc = acc * 0.9999 + 1e-6
            out[i] = acc.sum()

    t = median_time(lambda: (fma(iters), ti.sync()), reps)
    fieldsim = 2.0 * n * iters * chains / t / 1e9
    m = 2048
    a = np.random.default_rng(0).random((m, m), dtype=np.float32)
    b = a.T.copy()
    ts = median_time(lambda: a @ b, max(3, reps // 2))
    return {"fieldsim_fma_gflops": fieldsim, "numpy_sgemm_gflops": 2.0 * m ** 3 / ts / 1e9}


def divider_peak(reps):
    """G divider ops/s: one square root and one division per element of an inner loop LLVM
    vectorizes (a sum: fast-math lets it reassociate), elements independent."""
    n, iters = 1 << 12, 1 << 12
    out = ti.field(ti.f32, shape=n)

    @ti.kernel
    def divide(iters: ti.i32):
        for i in range(n):
            x = ti.cast(i, ti.f32) * 1e-6 + 1.0
            s = 0.0
            for k in range(iters):
                s += 1.0 / ti.sqrt(x + ti.cast(k, ti.f32))
            out[i] = s

    t = median_time(lambda: (divide(iters), ti.sync()), reps)
    return {"divider_gops": 2.0 * n * iters / t / 1e9}


def bandwidth(reps):
    n = 1 << 24
    a, b, c = (ti.field(ti.f32, shape=n) for _ in range(3))
    b.from_numpy(np.ones(n, np.float32))
    c.from_numpy(np.ones(n, np.float32))

    @ti.kernel
    def copy():
        for i in range(n):
            a[i] = b[i]

    @ti.kernel
    def triad(s: ti.f32):
        for i in range(n):
            a[i] = b[i] + s * c[i]

    tc = median_time(lambda: (copy(), ti.sync()), reps)
    tt = median_time(lambda: (triad(0.5), ti.sync()), reps)
    x, y = np.ones(n, np.float32), np.empty(n, np.float32)
    tn = median_time(lambda: np.copyto(y, x), reps)
    return {"copy_gbs": 8.0 * n / tc / 1e9, "triad_gbs": 12.0 * n / tt / 1e9,
            "numpy_copy_gbs": 8.0 * n / tn / 1e9}


# ---------------------------------------------------------------------------- kernel counts
def kernel_counts(body):
    """(flops, bytes, atomic bytes, divider ops) of a kernel's body as fast-math lowers it;
    None as `counts`."""
    shared = {}
    for task in body:
        if task.blocks:
            shared.update(shared_divisors(task))
    multiplied = {k for k, first in shared.items() if k != first}
    return counts(body, 1.0, multiplied | estimated_roots(body))


def estimated_roots(body) -> set:
    """ids of the f32 divisions by a square root, and of the square roots that only such
    divisions use: fast-math lowers them as a refined 1/sqrt estimate, no divider op."""
    from fieldsim.codegen.shared_divisors import divides_by_f32_root
    from fieldsim.ir.ir import walk
    stmts = list(walk(body))
    divs = {id(s) for s in stmts if divides_by_f32_root(s)}
    used_elsewhere = {id(a) for s in stmts if id(s) not in divs for a in s.args}
    return divs | ({id(s.args[1]) for s in stmts if id(s) in divs} - used_elsewhere)


def counts(block, mult=1.0, multiplied=frozenset()):
    """(flops, bytes, atomic bytes, divider ops) of a block run `mult` times; None when a trip
    count is not known statically. `multiplied`: ids of divisions lowered as multiplications
    by a shared reciprocal."""
    total = [0.0, 0.0, 0.0, 0.0]
    for s in block:
        if s.op == Op.FOR:
            trips = trip_count(s, ())
            if trips is None:
                return None
            inner = counts(s.body, mult * executed_trips(s, trips), multiplied)
            if inner is None:
                return None
            total = [a + b for a, b in zip(total, inner)]
            continue
        if s.op == Op.LOOP:
            return None
        for b in s.blocks:
            inner = counts(b, mult, multiplied)
            if inner is None:
                return None
            total = [a + b for a, b in zip(total, inner)]
        flops, nbytes, atomic, divs = _stmt_counts(s, multiplied)
        total = [a + mult * b for a, b in zip(total, (flops, nbytes, atomic, divs))]
    return tuple(total)


def _stmt_counts(s, multiplied):
    """(flops, bytes, atomic bytes, divider ops) of one execution of a statement."""
    if s.op in FLOAT_OPS and s.dtype is not None and s.dtype.is_float:
        divider = s.op in (Op.SQRT, Op.DIV) and id(s) not in multiplied
        return 1, 0, 0, int(divider)
    if s.op in (Op.LOAD, Op.STORE):
        return 0, s.attr.dtype.np.itemsize, 0, 0
    if s.op == Op.ATOMIC:
        field = s.attr[0]
        size = field.dtype.np.itemsize
        return int(field.dtype.is_float), 2 * size, 2 * size, 0
    return 0, 0, 0, 0


def executed_trips(loop, trips: int) -> int:
    """The iterations of a loop that run: all, except in a triangular nest
    (fieldsim.codegen.loopnest.row_bound), whose rows skip the columns where its `if` is false."""
    split = ndrange_split(loop) if loop.attr.parallel else None
    bound = row_bound(loop, split) if split is not None else None
    if bound is None:
        return trips
    side, delta = bound.side, bound.delta
    c = split.c
    if side == "lo":
        return sum(max(0, c - max(0, q + delta)) for q in range(trips // c))
    return sum(max(0, min(c, q + delta)) for q in range(trips // c))


CACHED = 4 << 20  # a kernel whose fields fit in this many bytes is counted as reading them once


def footprint(block) -> int:
    """Bytes of the fields a block accesses (their whole storage)."""
    from fieldsim.ir.ir import walk
    fields = {}
    for s in walk(block):
        if s.op in (Op.LOAD, Op.STORE):
            fields[id(s.attr)] = s.attr
        elif s.op == Op.ATOMIC:
            fields[id(s.attr[0])] = s.attr[0]
    return sum(int(np.prod(f.storage_shape)) * f.dtype.np.itemsize for f in fields.values())


def kernel_irs(module):
    """name -> IR of each compiled kernel (and `name.grad` -> its adjoint's) in a module."""
    from fieldsim.lang.kernel import KernelObj
    out = {}
    for k in vars(module).values():
        if isinstance(k, KernelObj):
            for ck in k._cache.values():
                out[k.__name__] = ck.ir
                if ck.adjoint is not None:
                    out[k.__name__ + ".grad"] = ck.adjoint[0]
    return out


def program_rows(reps, threads, fp_contract=False):
    import programs
    rows = []
    for prog, module_name in (("mpm88_substep", "mpm88"), ("gravity_fwd", "ad_gravity"),
                              ("gravity_adj", "ad_gravity"), ("mpm_pair_fwd", "diffmpm"),
                              ("mpm_pair_adj", "diffmpm")):
        ti.init(arch=ti.cpu, cpu_max_num_threads=threads, offline_cache=False, random_seed=0,
                kernel_profiler=True, fp_contract=fp_contract)
        step, sync = programs.PROGRAMS[prog](ti)
        step()
        sync()
        from fieldsim.lang import runtime
        rt = runtime.get()
        rt.profile.launches.clear()
        for _ in range(reps):
            step()
            sync()
        irs = kernel_irs(sys.modules[module_name])
        for name, times in rt.profile.by_kernel().items():
            c = kernel_counts(irs[name].body) if name in irs else None
            t = statistics.median(times)
            row = {"program": prog, "kernel": name, "us": t * 1e6}
            if c is not None:
                foot = footprint(irs[name].body)
                # fields that stay in cache (gravity's 16 KiB of positions, read N times) cost
                # memory traffic once: their footprint, not every access
                mem = min(c[1], foot) if foot <= CACHED else c[1]
                row.update(gflops=c[0] / t / 1e9, gbs=mem / t / 1e9, access_bytes=c[1],
                           memory_bytes=mem, footprint=foot,
                           divider_ops=c[3], gdivs=c[3] / t / 1e9,
                           intensity=c[0] / mem if mem else float("inf"),
                           atomic_share=c[2] / c[1] if c[1] else 0.0)
            rows.append(row)
    return rows


def classify(row, peak, bw, div_peak):
    """The row's roofline bound (GFLOP/s at its slowest limit) and what limits it."""
    if "gflops" not in row:
        row.update(bound=None, fraction=None, limit="launch" if row["us"] < 30 else "unknown")
        return row
    flops = row["gflops"] * row["us"] * 1e3  # per launch
    # seconds per launch at each limit alone
    times = {"compute": flops / (peak * 1e9), "bandwidth": row["memory_bytes"] / (bw * 1e9),
             "divider": row["divider_ops"] / (div_peak * 1e9)}
    slowest = max(times, key=times.get)
    row["bound"] = flops / times[slowest] / 1e9 if times[slowest] else None
    row["fraction"] = row["gflops"] / row["bound"] if row["bound"] else None
    if row["us"] < 30:
        row["limit"] = "launch"
    elif slowest == "bandwidth" and row["atomic_share"] > 0.5:
        row["limit"] = "atomics"
    else:
        row["limit"] = slowest
    return row


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--out", default=os.path.join(HERE, "results_roofline.json"))
    ap.add_argument("--fp-contract", action="store_true",
                    help="compile the benchmark kernels with fs.init(fp_contract=True)")
    args = ap.parse_args()
    load0 = os.getloadavg()[0]
    # the peak kernel's multiply-adds fused: the machine's FMA peak, whatever the programs use
    ti.init(arch=ti.cpu, cpu_max_num_threads=args.threads, offline_cache=False,
            fp_contract=True)
    machine = {**fma_peak(args.reps), **divider_peak(args.reps), **bandwidth(args.reps)}
    peak = max(machine["fieldsim_fma_gflops"], machine["numpy_sgemm_gflops"])
    bw = max(machine["copy_gbs"], machine["triad_gbs"], machine["numpy_copy_gbs"])
    div_peak = machine["divider_gops"]
    rows = [classify(r, peak, bw, div_peak)
            for r in program_rows(args.reps, args.threads, args.fp_contract)]
    meta = {"machine": platform.processor() or platform.machine(), "cpus": os.cpu_count(),
            "threads": args.threads, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "load_before": load0, "load_after": os.getloadavg()[0], "reps": args.reps}
    print(f"{meta['date']}, {meta['cpus']} CPUs, {args.threads} threads, load "
          f"{load0:.1f} -> {meta['load_after']:.1f}, medians of {args.reps}")
    print(f"f32 peak: fieldsim FMA kernel {machine['fieldsim_fma_gflops']:.1f} GFLOP/s, numpy "
          f"sgemm {machine['numpy_sgemm_gflops']:.1f} GFLOP/s -> roofline peak {peak:.1f}")
    print(f"divider: {div_peak:.2f} G square roots and divisions per second")
    print(f"bandwidth: fieldsim copy {machine['copy_gbs']:.1f} GB/s, triad "
          f"{machine['triad_gbs']:.1f} GB/s, numpy copy {machine['numpy_copy_gbs']:.1f} GB/s "
          f"-> roofline {bw:.1f} GB/s; ridge {peak / bw:.1f} FLOP/byte")
    print("| program | kernel | us/launch | GFLOP/s | GB/s | G div/s | FLOP/byte | "
          "bound GFLOP/s | of bound | of FMA peak | limit |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    def f(r, k, fmt):
        return format(r[k], fmt) if r.get(k) is not None else "-"
    for r in rows:
        print(f"| {r['program']} | {r['kernel']} | {r['us']:.1f} | {f(r, 'gflops', '.2f')} | "
              f"{f(r, 'gbs', '.2f')} | {f(r, 'gdivs', '.2f')} | {f(r, 'intensity', '.2f')} | "
              f"{f(r, 'bound', '.1f')} | {f(r, 'fraction', '.1%')} | "
              f"{r['gflops'] / peak if 'gflops' in r else 0:.1%} | {r['limit']} |")
    with open(args.out, "w") as fh:
        json.dump({"meta": meta, "machine": machine, "peak_gflops": peak, "bandwidth_gbs": bw,
                   "divider_gops": div_peak,
                   "kernels": rows}, fh, indent=1)


if __name__ == "__main__":
    main()
