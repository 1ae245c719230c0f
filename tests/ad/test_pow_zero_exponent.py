"""`x ** p` with a run-time exponent p: its slope in x is p * x ** (p - 1), which at p = 0 and
x = 0 IEEE evaluates as 0 * inf = NaN. But x ** 0 is 1 for every x (pow(0, 0) = 1 here, as in
C), so the slope there is 0. Expected values are analytic; forward and reverse mode both."""
import numpy as np
import pytest

from ._env import fs

pytestmark = pytest.mark.fs_init(fp="f64")

XS = np.array([-2.0, 0.0, 0.5, 3.0])


def _setup():
    x = fs.field(fs.f64, shape=4, needs_grad=True, needs_dual=True)
    y = fs.field(fs.f64, shape=4, needs_grad=True, needs_dual=True)
    x.from_numpy(XS)

    @fs.kernel
    def power(p: fs.f64):
        for i in x:
            y[i] = x[i] ** p
    return x, y, power


def _slope(p):
    # the analytic d(x ** p)/dx at XS, only where x ** p is real (integer p or x > 0)
    return np.zeros(4) if p == 0 else p * XS ** (p - 1)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0, 3.0])
def test_forward_slope_of_a_runtime_integer_power(p):
    x, y, power = _setup()
    with fs.ad.FwdMode(loss=y, param=x, seed=[1.0] * 4):
        power(p)
    np.testing.assert_allclose(y.to_numpy(), XS ** p)
    np.testing.assert_allclose(y.dual.to_numpy(), _slope(p), rtol=1e-12)


@pytest.mark.parametrize("p", [0.0, 1.0, 2.0])
def test_reverse_slope_of_a_runtime_integer_power(p):
    x, y, power = _setup()
    power(p)
    y.grad.fill(1.0)
    power.grad(p)
    np.testing.assert_allclose(x.grad.to_numpy(), _slope(p), rtol=1e-12)


def test_the_exponent_keeps_its_own_slope_at_zero():
    # d(x ** p)/dp = x ** p * log x, at p = 0 still log x (x > 0)
    p = fs.field(fs.f64, shape=(), needs_dual=True)
    y = fs.field(fs.f64, shape=(), needs_dual=True)

    @fs.kernel
    def power(base: fs.f64):
        y[None] = base ** p[None]

    p[None] = 0.0
    with fs.ad.FwdMode(loss=y, param=p):
        power(2.5)
    assert y[None] == 1.0 and y.dual[None] == pytest.approx(np.log(2.5), rel=1e-12)
