"""Forward mode: the old value an atomic returns (`old = ti.atomic_add(x[i], v)`) is the element
before the update, so its tangent is the dual's value before it. fieldsim gave it none, so
`y[i] = old * old` with param `x` had a zero JVP where 2 x dx is right (Taichi 1.7.4 gives 0
too: under FIELDSIM_AS_TAICHI=1 these tests fail). Checked against analytic values and float64
central differences."""
import numpy as np
import pytest

from ._env import fs
from .fd import assert_grad_close, central_differences

pytestmark = pytest.mark.fs_init(fp="f64")

XS = np.array([1.0, 2.0, -1.0, 0.5])
SEED = np.array([0.5, -1.0, 2.0, 0.25])


def _jvp(x, y, kernel):
    """y.dual after one launch of `kernel` in a block seeded with SEED, and by central
    differences of y against x (restoring x before each run)."""
    x.from_numpy(XS)
    with fs.ad.FwdMode(loss=y, param=x, seed=SEED.tolist()):
        kernel()
    got = y.dual.to_numpy()
    rows = []
    for j in range(y.shape[0]):
        def y_j(j=j):
            kernel()
            return y[j]
        x.from_numpy(XS)
        rows.append(central_differences(y_j, {"x": x})["x"] @ SEED)
    return got, np.array(rows)


def _fields(n=4):
    x = fs.field(fs.f64, n, needs_dual=True)
    y = fs.field(fs.f64, n, needs_dual=True)
    return x, y


@pytest.mark.parametrize("kind", ["add", "sub", "max", "min"])
def test_the_old_value_of_an_atomic_carries_the_elements_tangent(kind):
    x, y = _fields()
    atomic = {"add": fs.atomic_add, "sub": fs.atomic_sub, "max": fs.atomic_max, "min": fs.atomic_min}[kind]

    @fs.kernel
    def k():
        for i in x:
            old = atomic(x[i], 1.5)
            y[i] = old * old

    got, fd = _jvp(x, y, k)
    np.testing.assert_allclose(got, 2 * XS * SEED, rtol=1e-12)  # old == x before the update
    assert_grad_close(got, fd, "f64", kind)


def test_a_max_whose_operand_is_active_too():
    x, y = _fields()

    @fs.kernel
    def k():
        for i in x:
            old = fs.atomic_max(x[i], 2.0 * x[i])
            y[i] = old * old * old + x[i]  # x[i] after the update: the winner

    got, fd = _jvp(x, y, k)
    winner_tangent = np.where(2 * XS > XS, 2 * SEED, SEED)
    np.testing.assert_allclose(got, 3 * XS ** 2 * SEED + winner_tangent, rtol=1e-12)
    assert_grad_close(got, fd, "f64", "max")


def test_a_running_sum_read_through_atomic_adds():
    """The old value holds what earlier iterations added: y[i] = sum_{j<i} x[j]^2, tangent
    sum_{j<i} 2 x[j] dx[j], from a field `s` that is not itself a param."""
    x, y = _fields()
    s = fs.field(fs.f64, (), needs_dual=True)

    @fs.kernel
    def k():
        s[None] = 0.0
        fs.loop_config(serialize=True)
        for i in range(4):
            y[i] = fs.atomic_add(s[None], x[i] * x[i])

    got, fd = _jvp(x, y, k)
    expected = np.concatenate([[0.0], np.cumsum(2 * XS * SEED)[:-1]])
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14)
    assert_grad_close(got, fd, "f64", "running sum")


def test_an_atomic_on_a_field_without_a_live_dual_has_no_tangent():
    x, y = _fields()
    c = fs.field(fs.f64, 4, needs_dual=True)

    @fs.kernel
    def k():
        for i in x:
            old = fs.atomic_add(c[i], 1.0)
            y[i] = old * x[i]

    c.from_numpy(np.arange(4.0))
    x.from_numpy(XS)
    with fs.ad.FwdMode(loss=y, param=x, seed=SEED.tolist()):
        k()
    np.testing.assert_allclose(y.dual.to_numpy(), np.arange(4.0) * SEED, rtol=1e-12)
