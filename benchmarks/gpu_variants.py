"""Code-generation choices of the CUDA backend, measured side by side on one device.

    python benchmarks/gpu_variants.py [--rounds 3] [--reps 20] [--out results_gpu_variants.json]

Takes: a CUDA device. For each variant (class attributes of `fieldsim.codegen.ptx.CudaTarget`,
set for the whole process while that variant runs) it times gravity's energy kernel and its
adjoint at N=2048 and N=16384 (`gpu_measure.gravity`: medians of `--reps` synchronised
launches, each variant compiled in a fresh runtime), the variants taking turns for `--rounds`
rounds; it prints the medians over rounds and the energy each variant computes.

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


def run_variant(attrs, reps):
    saved = {k: getattr(CudaTarget, k) for k in attrs}
    try:
        for k, v in attrs.items():
            setattr(CudaTarget, k, v)
        return [gpu_measure.gravity(n, reps) for n in (2048, 16384)]
    finally:
        for k, v in saved.items():
            setattr(CudaTarget, k, v)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--out", default=os.path.join(HERE, "results_gpu_variants.json"))
    args = ap.parse_args(argv)
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
