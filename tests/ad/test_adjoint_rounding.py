"""Exact-mode (`fast_math=False`) adjoints of division, log and atan2 round as Taichi 1.7.4's.

Taichi's reverse rules divide the adjoint itself (`adj / d`, `-(adj * a) / (d * d)`,
`adj / x`, `(adj * x) / r2`); multiplying by a reciprocal instead is an ulp or so off, and a
softmax classifier trained with `kernel.grad()` then parted from Taichi's weights after a few
steps. Expected values are the analytic derivatives evaluated in float32 with those
operations, each rounded once (numpy), chosen where `adj * (1 / d)` rounds differently.
Under FIELDSIM_AS_TAICHI=1 the same checks pass on Taichi (but the tiny-divisor guard).
"""
import numpy as np
import pytest

from ._env import AS_TAICHI, fs

pytestmark = pytest.mark.fs_init(fp="f32", fast_math=False)

f32 = np.float32
N = 64


def _inputs(seed):
    r = np.random.default_rng(seed)
    return [f32(0.5) + r.random(N, dtype=np.float32) * f32(3) for _ in range(3)]


def _fields(*names):
    return [fs.field(fs.f32, shape=N, needs_grad=True, name=n) for n in names]


def test_quotient_rule_divides_the_adjoint():
    a, d, y = _fields("a", "d", "y")
    av, dv, gv = _inputs(1)

    @fs.kernel
    def quotient():
        for i in y:
            y[i] = a[i] / d[i]

    a.from_numpy(av)
    d.from_numpy(dv)
    y.grad.from_numpy(gv)
    quotient()
    quotient.grad()
    assert np.array_equal(a.grad.to_numpy(), gv / dv)
    assert not np.array_equal(gv / dv, gv * (f32(1) / dv))  # the inputs tell the two apart
    assert np.array_equal(d.grad.to_numpy(), -((gv * av) / (dv * dv)))


def test_log_and_atan2_divide_the_adjoint():
    x, z, u, v = _fields("x", "z", "u", "v")
    xv, zv, gv = _inputs(2)

    @fs.kernel
    def logs():
        for i in x:
            u[i] = fs.log(x[i])
            v[i] = fs.atan2(x[i], z[i])

    x.from_numpy(xv)
    z.from_numpy(zv)
    u.grad.from_numpy(gv)
    v.grad.from_numpy(gv)
    logs()
    logs.grad()
    r2 = zv * zv + xv * xv
    assert np.array_equal(x.grad.to_numpy(), gv / xv + (gv * zv) / r2)
    assert np.array_equal(z.grad.to_numpy(), -((gv * xv) / r2))


@pytest.mark.skipif(AS_TAICHI, reason="Taichi's -(adj * a) / (d * d) is -inf here")
def test_quotient_rule_with_a_tiny_divisor_stays_finite():
    """d * d underflows (flushed to 0) for |d| < 1e-19 in f32: the rule then divides the
    quotient by d again, giving the analytic -a / d**2."""
    a, d, y = _fields("a", "d", "y")
    a.fill(1e-20)
    d.fill(1e-20)
    y.grad.fill(1.0)

    @fs.kernel
    def quotient():
        for i in y:
            y[i] = a[i] / d[i]

    quotient()
    quotient.grad()
    np.testing.assert_allclose(d.grad.to_numpy(), -1e20, rtol=1e-6)
    np.testing.assert_allclose(a.grad.to_numpy(), 1e20, rtol=1e-6)
