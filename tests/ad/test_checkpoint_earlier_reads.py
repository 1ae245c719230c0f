"""`fs.ad.checkpoint` after a launch that read the state it overwrites (gh-adsound3).

The checkpoint's backward puts the fields its steps wrote back to their end-of-forward values,
so an earlier launch's adjoint sees those instead of what it read: `y[i] += x[i] ** 2` launched
before a checkpoint of `x[i] *= 0.5` got d/dx = 0.5 * (1 + 2 x) scaled wrong, silently. Such a
checkpoint is now refused (Rule 1 on the Tape) at its call; one after a launch that read only
other fields, or before the reading launch, is accepted and gives the central differences.
"""
import numpy as np
import pytest

import fieldsim as fs

from .fd import central_differences

pytestmark = pytest.mark.fs_init(fp="f64")


def _program():
    x = fs.field(fs.f64, shape=2, needs_grad=True)
    y = fs.field(fs.f64, shape=2, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def square_into_y():
        for i in range(2):
            y[i] += x[i] * x[i]

    @fs.kernel
    def halve_x():
        for i in range(2):
            x[i] *= 0.5

    @fs.kernel
    def total():
        for i in range(2):
            loss[None] += x[i] + y[i]

    def run(order):
        for step in order:
            if step == "read":
                square_into_y()
            else:
                fs.ad.checkpoint(lambda t: halve_x(), 2, 1, state=[x])
        total()

    return x, y, loss, run


def _gradient_and_differences(x, loss, run, accumulators, x0):
    """(the Tape's x.grad, float64 central differences of the loss) for `run` from x = x0, with
    the `accumulators` zeroed before each run and x put back after each evaluation (a
    checkpointed step may halve it)."""
    def evaluate():
        xs = x.to_numpy()
        for f in accumulators:
            f.fill(0.0)
        loss[None] = 0.0
        run()
        value = loss[None]
        x.from_numpy(xs)
        return value

    x.from_numpy(x0)
    ref = central_differences(evaluate, {"x": x})["x"]
    x.from_numpy(x0)
    for f in accumulators:
        f.fill(0.0)
    with fs.ad.Tape(loss=loss):
        run()
    return x.grad.to_numpy(), ref


def test_a_checkpoint_overwriting_what_an_earlier_launch_read_is_refused():
    x, _y, loss, run = _program()
    x.from_numpy(np.array([0.3, 0.7]))
    with pytest.raises(fs.AccessRuleError) as err, fs.ad.Tape(loss=loss):
        run(["read", "checkpoint"])
    text = str(err.value)
    assert "Rule 1" in text and "square_into_y" in text and "checkpoint(<lambda>)" in text
    assert "test_checkpoint_earlier_reads.py" in text


def test_a_checkpoint_before_the_reading_launch_is_accepted_and_right():
    x, y, loss, run = _program()
    x0 = np.array([0.3, 0.7])
    grad, ref = _gradient_and_differences(x, loss, lambda: run(["checkpoint", "read"]), [y], x0)
    np.testing.assert_allclose(grad, ref, rtol=1e-6)
    np.testing.assert_allclose(ref, 0.25 * (1 + 2 * 0.25 * x0), rtol=1e-6)


def test_a_checkpoint_after_a_free_read_is_accepted_and_right():
    # gh-refused2: `y[i] += 0.3 * x[i]` reads x linearly with a constant factor; its adjoint
    # (`x.grad += 0.3 * y.grad`) uses no value of x, so the checkpoint may overwrite x after it
    x = fs.field(fs.f64, shape=2, needs_grad=True)
    y = fs.field(fs.f64, shape=2, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def scale_into_y():
        for i in range(2):
            y[i] += 0.3 * x[i]

    @fs.kernel
    def halve_x():
        for i in range(2):
            x[i] *= 0.5

    @fs.kernel
    def total():
        for i in range(2):
            loss[None] += x[i] * x[i] + y[i] * y[i]

    def run():
        scale_into_y()
        fs.ad.checkpoint(lambda t: halve_x(), 2, 1, state=[x])
        total()

    x0 = np.array([0.3, 0.7])
    grad, ref = _gradient_and_differences(x, loss, run, [y], x0)
    np.testing.assert_allclose(grad, ref, rtol=1e-6)
    np.testing.assert_allclose(ref, 2 * 0.0625 * x0 + 2 * 0.09 * x0, rtol=1e-6)


def test_a_field_the_steps_only_read_overwritten_after_the_checkpoint():
    # gh-refused2: the backward recomputes the steps; a field they only read (`v`), changed by
    # a later launch, used to be read with its new value there: x.grad [1.732, 2.308] against
    # 1.7 x. The checkpoint now keeps a copy of such fields for its recomputation.
    x, v, p, q = (fs.field(fs.f64, shape=2, needs_grad=True) for _ in range(4))
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def start():
        for i in range(2):
            v[i] = x[i] * 1.0
            p[i] = x[i] * 0.5

    @fs.kernel
    def step():
        for i in range(2):
            p[i] += 0.1 * v[i]

    @fs.kernel
    def square():
        for i in range(2):
            q[i] += p[i] * p[i]

    @fs.kernel
    def clobber():
        for i in range(2):
            v[i] = 5.0

    @fs.kernel
    def total():
        for i in range(2):
            loss[None] += q[i]

    def steps(t):
        step()
        square()

    def run():
        start()
        fs.ad.checkpoint(steps, 2, 1, state=[p, q])
        clobber()
        total()

    x0 = np.array([0.3, 0.7])
    grad, ref = _gradient_and_differences(x, loss, run, [q], x0)
    np.testing.assert_allclose(ref, 1.7 * x0, rtol=1e-6)
    np.testing.assert_allclose(grad, ref, rtol=1e-6)
    np.testing.assert_allclose(v.to_numpy(), [5.0, 5.0])  # the later value is put back
