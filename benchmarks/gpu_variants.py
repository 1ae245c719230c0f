"""Code-generation choices of the CUDA backend, measured side by side on one device.

    python benchmarks/gpu_variants.py [--rounds 3] [--reps 20] [--out results_gpu_variants.json]

Takes: a CUDA device. For each variant (class attributes of `fieldsim.codegen.ptx.CudaTarget`,
set for the whole process while that variant runs) it times gravity's energy kernel and its
adjoint at N=2048 and N=16384 (`gpu_measure.gravity`: medians of `--reps` synchronised
launches, each variant compiled in a fresh runtime), the variants taking turns for `--rounds`
rounds; it prints the medians over rounds and the energy each variant computes.

`--program p2g` instead times mpm88's scatter and gather at 2^21 particles (both particle
orders, `gpu_measure.mpm88_large`) with and without `vector_scatters`.

Variants: f32 `x / sqrt(q)` as `div.approx(sqrt.approx)` (`rsqrt_estimates` off), as
`x * rsqrt.approx(q)` (on), or with fast_rsqrt's Newton step on that (`refine_rsqrt`); each
with f32 subnormals flushed to zero under fast-math (`flush_subnormals`, Taichi's choice) and
without; and the defaults with 64-bit grid-stride counters (`narrow_counters` off).
Guarantees: timing only; restores the class attributes; writes only `--out`.
"""
import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import gpu_measure

from fieldsim.codegen.ptx import CudaTarget

VARIANTS = {
    f"{name}{'' if ftz else '_no_ftz'}": dict(attrs, flush_subnormals=ftz, narrow_counters=True)
    for name, attrs in (("div_sqrt", {"rsqrt_estimates": False, "refine_rsqrt": False}),
                        ("rsqrt", {"rsqrt_estimates": True, "refine_rsqrt": False}),
                        ("rsqrt_refined", {"rsqrt_estimates": True, "refine_rsqrt": True}))
    for ftz in (True, False)
}
# the defaults with 64-bit grid-stride counters (Target.narrow_counters off)
VARIANTS["rsqrt_wide_counters"] = dict(VARIANTS["rsqrt"], narrow_counters=False)
# `--program p2g`: mpm88's scatter at 2^21 particles with a 2D velocity's components added by
# one `red.global.add.v2.f32` (codegen.vector_scatters) or by one atomic each
P2G_VARIANTS = {"vector_scatters": {"vector_scatters": True},
                "scalar_scatters": {"vector_scatters": False}}


def run_variant(attrs, reps, measure=None):
    saved = {k: getattr(CudaTarget, k) for k in attrs}
    try:
        for k, v in attrs.items():
            setattr(CudaTarget, k, v)
        if measure is not None:
            return measure(reps)
        return [gpu_measure.gravity(n, reps) for n in (2048, 16384)]
    finally:
        for k, v in saved.items():
            setattr(CudaTarget, k, v)


def p2g_main(args):
    """Each variant's mpm88 kernels (both particle orders), taking turns for `--rounds`."""
    gpu_measure.init()
    copy = gpu_measure.bandwidth(args.reps)["device_copy_gbs"]
    samples = {name: [] for name in P2G_VARIANTS}
    for _ in range(args.rounds):
        for name, attrs in P2G_VARIANTS.items():
            samples[name].append(run_variant(attrs, args.reps, gpu_measure.mpm88_large))
    print(f"copy bandwidth {copy:.0f} GB/s")
    print("| variant | order | kernel | ms | access GB/s | of copy |")
    print("|---|---|---|---|---|---|")
    table = {}
    for name, runs in samples.items():
        for order in ("by_cell", "random"):
            for kernel in ("particle_to_grid", "grid_to_particle"):
                rows = [r[order]["kernels"][kernel] for r in runs]
                ms = statistics.median(r["ms"] for r in rows)
                gbs = rows[0]["access_bytes"] / ms / 1e6
                table[f"{name}/{order}/{kernel}"] = {"ms": ms, "access_gbs": gbs,
                                                     "of_copy": gbs / copy}
                print(f"| {name} | {order} | {kernel} | {ms:.4f} | {gbs:.0f} | {gbs / copy:.0%} |")
    with open(args.out, "w") as f:
        json.dump({"machine": gpu_measure.device_info(), "copy_gbs": copy,
                   "variants": P2G_VARIANTS, "medians": table, "samples": samples}, f, indent=1)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(HERE, "results_gpu_variants.json"))
    ap.add_argument("--program", choices=("gravity", "p2g"), default="gravity")
    args = ap.parse_args(argv)
    if args.program == "p2g":
        return p2g_main(args)
    samples = {name: [] for name in VARIANTS}
    for _ in range(args.rounds):
        for name, attrs in VARIANTS.items():
            samples[name].append(run_variant(attrs, args.reps))
    table = {}
    for name, runs in samples.items():
        for k, n in enumerate((2048, 16384)):
            rows = [r[k] for r in runs]
            table[f"{name}/{n}"] = {key: statistics.median(r[key] for r in rows)
                                    for key in ("fwd_ms", "adj_ms", "tape_step_ms")}
            table[f"{name}/{n}"]["U"] = rows[-1]["U"]
    print("| variant | N | forward (ms) | adjoint (ms) | Tape step (ms) | U |")
    print("|---|---|---|---|---|---|")
    for key, r in table.items():
        name, n = key.split("/")
        print(f"| {name} | {n} | {r['fwd_ms']:.4f} | {r['adj_ms']:.4f} | {r['tape_step_ms']:.4f} "
              f"| {r['U']:.7f} |")
    with open(args.out, "w") as f:
        json.dump({"machine": gpu_measure.device_info(), "variants": VARIANTS, "medians": table,
                   "samples": samples}, f, indent=1)


if __name__ == "__main__":
    main()
