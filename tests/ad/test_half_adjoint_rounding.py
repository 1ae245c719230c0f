"""Adjoints of f16 values reached through casts to f32 (`1.7 * x` promotes an f16 `x`): the
f32 contributions are summed in f32 and rounded to f16 once, as Taichi does (its pre-AD
simplification merges the repeated casts of one value, and it adds a wider contribution to
the f16 adjoint before narrowing). fieldsim rounded each contribution to f16 first, so
gradients of taichi-nerfs' f16 spherical-harmonics encoder were an ulp off in a third of the
entries. Checked against the analytic derivatives, evaluated in float64: each gradient must be
the f16 value nearest to it (up to a tie broken the other way)."""
import numpy as np

import fieldsim as fs

N = 512


def _within_half_ulp(got, exact):
    ulp = np.spacing(np.abs(got.astype(np.float16))).astype(np.float64)
    err = np.abs(got.astype(np.float64) - exact)
    bad = err > 0.5 * ulp * (1 + 2.0 ** -10)
    assert not bad.any(), (np.nonzero(bad)[0][:5], got[bad][:5], exact[bad][:5])


def test_half_gradients_through_promoting_casts_round_once():
    fs.init(arch=fs.cpu, fast_math=False, offline_cache=False)
    a = fs.field(fs.f16, shape=(N, 2), needs_grad=True)
    o = fs.field(fs.f16, shape=(N, 2), needs_grad=True)

    @fs.kernel
    def k():
        for i in range(N):
            x = a[i, 0]
            y = a[i, 1]
            o[i, 0] = 1.7 * x * (x + 0.3)  # x cast to f32 twice
            o[i, 1] = 1.7 * y * y + x * y  # y's adjoint: x (exact), then f32 parts

    rng = np.random.default_rng(7)
    a.from_numpy(rng.uniform(-2, 2, (N, 2)).astype(np.float16))
    k()
    o.grad.fill(1.0)
    k.grad()
    x, y = (a.to_numpy()[:, j].astype(np.float64) for j in range(2))
    g = a.grad.to_numpy()
    c = np.float64(np.float32(1.7))
    _within_half_ulp(g[:, 1], x + 2 * c * y)

    a.grad.fill(0.0)
    o.grad.fill(0.0)
    o.grad.from_numpy(np.stack([np.ones(N), np.zeros(N)], 1).astype(np.float16))
    k.grad()
    _within_half_ulp(a.grad.to_numpy()[:, 0], c * (2 * x + np.float64(np.float32(0.3))))
    fs.init(arch=fs.cpu)
