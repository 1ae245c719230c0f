"""Where `min`/`max` send the derivative when their operands are equal.

A contact or ReLU term (`ti.max(x, 0.0)`, `min(v.dot(n), 0)`) is often evaluated exactly at its
kink: a body at rest has a zero normal velocity. There the derivative is a convention; Taichi 1.7.4's
(measured, reverse and forward mode) gives it to the first operand only where that operand is
strictly larger (max) or smaller (min), so a tie goes to the second. fieldsim gave it to the first,
a silently different gradient (a resting contact's impulse was differentiated as if active).
Away from ties the derivative is the analytic one. `ti.math.clamp(x, lo, hi)` is Taichi's
`min(hi, max(lo, x))`, so at either bound the slope in x is 1.

The expectations pass under Taichi itself (`FIELDSIM_AS_TAICHI=1`).
"""
import numpy as np
import pytest

from ._env import fs

pytestmark = pytest.mark.fs_init(fp="f64")


def _fields():
    a = fs.field(fs.f64, shape=(), needs_grad=True)
    b = fs.field(fs.f64, shape=(), needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    return a, b, loss


@pytest.mark.parametrize("op", ["max", "min"])
@pytest.mark.parametrize("av, bv", [(1.0, 1.0), (0.0, -0.0), (1.0, 2.0), (2.0, 1.0)])
def test_reverse_mode_gives_a_tie_to_the_second_operand(op, av, bv):
    a, b, loss = _fields()
    fn = fs.max if op == "max" else fs.min

    @fs.kernel
    def k():
        loss[None] += 3.0 * fn(a[None], b[None])

    a[None], b[None] = av, bv
    with fs.ad.Tape(loss=loss):
        k()
    first_wins = av > bv if op == "max" else av < bv
    assert (a.grad[None], b.grad[None]) == ((3.0, 0.0) if first_wins else (0.0, 3.0))


@pytest.mark.parametrize("op", ["max", "min"])
def test_forward_mode_gives_a_tie_to_the_second_operand(op):
    a = fs.field(fs.f64, shape=(), needs_dual=True)
    b = fs.field(fs.f64, shape=(), needs_dual=True)
    out = fs.field(fs.f64, shape=(), needs_dual=True)
    fn = fs.max if op == "max" else fs.min

    @fs.kernel
    def k():
        out[None] = fn(a[None], b[None])

    duals = []
    for param in (a, b):
        a[None], b[None] = 0.5, 0.5
        with fs.ad.FwdMode(loss=out, param=param):
            k()
        duals.append(out.dual[None])
    assert duals == [0.0, 1.0]


def test_resting_contact_and_relu_have_zero_slope_at_the_kink():
    # a penalty contact on a body at rest (normal velocity exactly 0): min(vn, 0) and
    # max(0, -vn) are inactive, as in Taichi; x = 0.5 is off the kink (analytic slopes)
    v = fs.field(fs.f64, shape=2, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        for i in v:
            loss[None] += 2.0 * min(v[i], 0.0) + 5.0 * fs.max(v[i] * v[i], 0.0)

    v.from_numpy(np.array([0.0, -0.5]))
    with fs.ad.Tape(loss=loss):
        k()
    np.testing.assert_array_equal(v.grad.to_numpy(), [0.0, 2.0 + 5.0 * 2 * -0.5])


def test_clamp_slope_at_both_bounds_and_reductions_give_ties_to_the_later_entry():
    x = fs.field(fs.f64, shape=5, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.math.clamp(x[i], 0.0, 1.0) + 10.0 * fs.max(x[i], 0.0, 1.0) \
                + 100.0 * fs.Vector([x[i], 1.0, 0.0]).max()

    x.from_numpy(np.array([0.0, 1.0, 0.5, -1.0, 2.0]))
    with fs.ad.Tape(loss=loss):
        k()
    # x = 1: clamp's slope 1; the 3-way max and the vector's max tie with the constant 1.0,
    # which comes later, so x gets nothing from them
    np.testing.assert_array_equal(x.grad.to_numpy(), [1.0, 1.0, 1.0, 0.0, 110.0])
