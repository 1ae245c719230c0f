"""A func that assigns its `ti.template()` parameter, called with a field element
(`loss_func(..., values[I])`, tinn's loss functions): the parameter aliases the element, so the
call reads nothing. The frontend still evaluates the argument into a load nobody uses; the
access rules counted it as a read before the func's store (rule 1), refusing a program whose
gradient is right. Gradients against the analytic derivative."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu, default_fp=fs.f64)


def _program():
    x = fs.field(float, shape=6, needs_grad=True)
    values = fs.field(float, shape=6, needs_grad=True)
    loss = fs.field(float, shape=(), needs_grad=True)

    @fs.func
    def cube(scale: float, p: fs.template(), v: fs.template()):
        v = p * p * p * scale

    @fs.kernel
    def per_element(scale: float):
        for i in x:
            cube(scale, x[i], values[i])

    @fs.kernel
    def total():
        for i in values:
            loss[None] += values[i]

    x.from_numpy(np.linspace(-1.0, 1.5, 6))
    return x, values, loss, per_element, total


def test_tape_through_a_func_storing_to_its_template_parameter():
    x, values, loss, per_element, total = _program()
    with fs.ad.Tape(loss):
        per_element(0.5)
        total()
    xv = x.to_numpy()
    np.testing.assert_allclose(values.to_numpy(), 0.5 * xv ** 3)
    np.testing.assert_allclose(x.grad.to_numpy(), 1.5 * xv ** 2, rtol=1e-12)


def test_a_used_read_before_the_store_is_still_refused():
    x = fs.field(float, shape=4, needs_grad=True)
    loss = fs.field(float, shape=(), needs_grad=True)

    @fs.func
    def square_in_place(v: fs.template()):
        v = v * v

    @fs.kernel
    def k():
        for i in x:
            square_in_place(x[i])
            loss[None] += x[i]

    with pytest.raises(fs.AccessRuleError, match="Rule 1"):
        with fs.ad.Tape(loss):
            k()
