"""Atomic min/max on a field with a gradient, and what may follow them (gh-adsound3).

The adjoint of `ti.atomic_max(x[i], v)` finds its winner by comparing `v` with the element's
final value: where `v` wins, `v` takes the gradient and the old value gets none. Found wrong by
a random-program search: a `v` carrying no derivative (`atomic_max(x[i], 0.3)`) left the whole
gradient with the old value; and an in-place linear update or `+=` of the element after the
atomic (accepted by Rule 2's in-order relaxations) changed the final value the adjoint compares
with. Gradients are checked against analytic ones and float64 central differences.
"""
import numpy as np
import pytest

import fieldsim as fs

from .fd import central_differences

pytestmark = pytest.mark.fs_init(fp="f64")


def _differences(x, y, loss, launches) -> dict:
    """float64 central differences of the loss the launches compute, by x and y (each
    evaluation puts x and y back: the launches update them in place)."""
    def evaluate():
        xs, ys = x.to_numpy(), y.to_numpy()
        loss[None] = 0.0
        for k in launches:
            k()
        value = loss[None]
        x.from_numpy(xs)
        y.from_numpy(ys)
        return value
    return central_differences(evaluate, {"x": x, "y": y})


def _fields():
    x = fs.field(fs.f64, shape=2, needs_grad=True)
    y = fs.field(fs.f64, shape=2, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def total():
        for i in range(2):
            loss[None] += x[i] + y[i] * y[i]

    return x, y, loss, total


@pytest.mark.parametrize("op, start, grad", [("max", [0.1, 0.5], [0.0, 1.0]),
                                             ("min", [0.1, 0.5], [1.0, 0.0])])
def test_an_extremum_with_a_constant_takes_the_gradient_where_it_wins(op, start, grad):
    x, _y, loss, total = _fields()

    @fs.kernel
    def clamp():
        for i in range(2):
            if fs.static(op == "max"):
                fs.atomic_max(x[i], 0.3)
            else:
                fs.atomic_min(x[i], 0.3)

    x.from_numpy(np.array(start))
    with fs.ad.Tape(loss=loss):
        clamp()
        total()
    np.testing.assert_allclose(x.grad.to_numpy(), grad)


def _update_kernels(x, y):
    @fs.kernel
    def max_then_scale():
        for i in range(2):
            fs.atomic_max(x[i], y[i] * 0.3)
            x[i] *= 2.0

    @fs.kernel
    def max_then_add():
        for i in range(2):
            fs.atomic_max(x[i], y[i] * 0.3)
            x[i] += 1.0

    @fs.kernel
    def max_then_store():
        for i in range(2):
            fs.atomic_max(x[i], y[i] * 0.3)
            x[i] = y[i] * 2.0

    return {"scale": max_then_scale, "add": max_then_add, "store": max_then_store}


@pytest.mark.parametrize("name, line", [("scale", "x[i] *= 2.0"), ("add", "x[i] += 1.0")])
def test_an_update_after_an_extremum_is_refused_at_its_line(name, line):
    x, y, loss, total = _fields()
    kernel = _update_kernels(x, y)[name]
    x.from_numpy(np.array([0.1, 0.5]))
    y.fill(1.0)
    with pytest.raises(fs.AccessRuleError) as err, fs.ad.Tape(loss=loss):
        kernel()
        total()
    assert "Rule 2" in str(err.value) and line in str(err.value)


def test_a_store_after_an_extremum_is_accepted_and_right():
    x, y, loss, total = _fields()
    kernel = _update_kernels(x, y)["store"]
    x.from_numpy(np.array([0.1, 0.5]))
    y.from_numpy(np.array([1.0, -0.4]))
    ref = _differences(x, y, loss, [kernel, total])
    with fs.ad.Tape(loss=loss):
        kernel()
        total()
    np.testing.assert_allclose(x.grad.to_numpy(), [0.0, 0.0])
    np.testing.assert_allclose(ref["x"], [0.0, 0.0], atol=1e-8)
    np.testing.assert_allclose(y.grad.to_numpy(), ref["y"], rtol=1e-6)


def _launches(x, y):
    @fs.kernel
    def clamp_max():
        for i in range(2):
            fs.atomic_max(x[i], y[i] * 0.3)

    @fs.kernel
    def scale():
        for i in range(2):
            x[i] *= 2.0

    @fs.kernel
    def shift():
        for i in range(2):
            x[i] += 1.0

    @fs.kernel
    def overwrite():
        for i in range(2):
            x[i] = y[i] * 2.0

    return {"max": clamp_max, "scale": scale, "add": shift, "store": overwrite}


@pytest.mark.parametrize("later, line", [("scale", "x[i] *= 2.0"), ("add", "x[i] += 1.0")])
def test_a_later_launch_updating_after_an_extremum_is_refused(later, line):
    x, y, loss, total = _fields()
    ks = _launches(x, y)
    x.from_numpy(np.array([0.1, 0.5]))
    y.fill(1.0)
    with pytest.raises(fs.AccessRuleError) as err, fs.ad.Tape(loss=loss):
        ks["max"]()
        ks[later]()
        total()
    text = str(err.value)
    assert "atomic_max" in text and line in text and "clamp_max" in text


@pytest.mark.parametrize("later", ["max", "store"])
def test_a_later_store_or_the_same_extremum_is_accepted_and_right(later):
    x, y, loss, total = _fields()
    ks = _launches(x, y)
    x.from_numpy(np.array([0.1, 0.5]))
    y.from_numpy(np.array([1.0, 2.0]))
    ref = _differences(x, y, loss, [ks["max"], ks[later], total])
    with fs.ad.Tape(loss=loss):
        ks["max"]()
        ks[later]()
        total()
    np.testing.assert_allclose(x.grad.to_numpy(), ref["x"], atol=1e-8)
    np.testing.assert_allclose(y.grad.to_numpy(), ref["y"], rtol=1e-6)
