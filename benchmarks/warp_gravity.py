"""Gravity N=2048 (examples/simulation/ad_gravity.py `compute_U`) in NVIDIA Warp on the CPU.

    /tmp/tivenv/bin/python benchmarks/warp_gravity.py [--n 2048] [--reps 30]

Takes: a Python with warp-lang (a benchmark environment only; Warp is never a dependency).
Runs the same potential U = sum_{i<j} -G m^2 / sqrt(|x_i - x_j|^2 + eps^2) as a Warp kernel
over an (n, n) launch grid with an atomic add into U, and its adjoint through `wp.Tape`.
Prints one JSON line: median forward and adjoint milliseconds (after a warm-up launch) and
the Warp version. Warp's CPU kernels run on one thread.
"""
import argparse
import json
import statistics
import time

import numpy as np
import warp as wp

G, EPS, TOTAL_MASS = 1.0, 2e-2, 1.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=2048)
    ap.add_argument("--reps", type=int, default=30)
    args = ap.parse_args()
    n = args.n
    mass = TOTAL_MASS / n
    coef = float(-G * mass * mass)
    eps2 = float(EPS * EPS)
    wp.init()

    @wp.kernel
    def compute_u(x: wp.array(dtype=wp.vec2), u: wp.array(dtype=float), c: float, e2: float):
        i, j = wp.tid()
        if i < j:
            r = x[i] - x[j]
            wp.atomic_add(u, 0, c / wp.sqrt(wp.dot(r, r) + e2))

    rng = np.random.default_rng(0)
    r = 0.3 * np.sqrt(rng.random(n))
    th = 2 * np.pi * rng.random(n)
    pos = (0.5 + np.stack([r * np.cos(th), r * np.sin(th)], 1)).astype(np.float32)
    x = wp.array(pos, dtype=wp.vec2, device="cpu", requires_grad=True)
    u = wp.zeros(1, dtype=float, device="cpu", requires_grad=True)

    def forward():
        u.zero_()
        wp.launch(compute_u, dim=(n, n), inputs=[x, u, coef, eps2], device="cpu")
        wp.synchronize()

    def adjoint():
        u.zero_()
        tape = wp.Tape()
        with tape:
            wp.launch(compute_u, dim=(n, n), inputs=[x, u, coef, eps2], device="cpu")
        tape.backward(loss=u)
        wp.synchronize()

    def median_ms(fn):
        fn()
        ts = []
        for _ in range(args.reps):
            t0 = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t0)
        return statistics.median(ts) * 1e3

    fwd = median_ms(forward)
    energy = float(u.numpy()[0])
    adj = median_ms(adjoint)  # forward + backward, as one Tape iteration
    print(json.dumps({"warp": wp.config.version, "n": n, "forward_ms": fwd,
                      "tape_forward_backward_ms": adj, "U": energy}))


if __name__ == "__main__":
    main()
