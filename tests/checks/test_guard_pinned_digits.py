"""A store guarded by `if a == c` on a digit of a flattened `ti.ndrange` loop that its index
leaves out (DiffTaichi-style actuation: `for i, axis in ti.ndrange(n, 3)`, then
`if axis == 0: actuation_x[t, i] = ...`): every thread that runs it has the same `axis`, so the
other digits in the index pick one thread per element. Rule 2 refused it as a store from
another thread. Gradients against the analytic derivative; stores that two threads really
share are still refused."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import AccessRuleError


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu, default_fp=fs.f64)


def _fields():
    w = fs.field(float, shape=(2, 3), needs_grad=True)
    ax = fs.field(float, shape=(4, 3), needs_grad=True)
    ay = fs.field(float, shape=(4, 3), needs_grad=True)
    loss = fs.field(float, shape=(), needs_grad=True)
    w.from_numpy(np.array([[0.1, 0.2, 0.3], [0.4, -0.5, 0.6]]))
    return w, ax, ay, loss


def _loss_kernel(ax, ay, loss):
    @fs.kernel
    def total():
        for i in range(3):
            loss[None] += ax[1, i] * (i + 1) + ay[1, i] ** 2
    return total


def test_store_pinned_by_an_equality_guard_on_the_other_digit():
    w, ax, ay, loss = _fields()

    @fs.kernel
    def actuate(t: int):
        for i, a in fs.ndrange(3, 2):
            v = w[a, i] * 2.0
            if a == 0:
                ax[t, i] = fs.tanh(v)
            if a == 1:
                ay[t, i] = fs.tanh(v)

    total = _loss_kernel(ax, ay, loss)
    with fs.ad.Tape(loss):
        actuate(1)
        total()
    wv = w.to_numpy()
    th0, th1 = np.tanh(2 * wv[0]), np.tanh(2 * wv[1])
    np.testing.assert_allclose(w.grad.to_numpy()[0], 2 * (1 - th0**2) * np.arange(1, 4), rtol=1e-12)
    np.testing.assert_allclose(w.grad.to_numpy()[1], 4 * th1 * (1 - th1**2), rtol=1e-12)


def test_kernel_grad_of_the_pinned_store():
    w, ax, ay, loss = _fields()

    @fs.kernel
    def actuate(t: int):
        for i, a in fs.ndrange(3, 2):
            if a == 1:
                ay[t, i] = fs.tanh(w[a, i] * 2.0)

    actuate(1)
    ay.grad.fill(0.0)
    for i in range(3):
        ay.grad[1, i] = 1.0
    actuate.grad(1)
    th1 = np.tanh(2 * w.to_numpy()[1])
    np.testing.assert_allclose(w.grad.to_numpy()[1], 2 * (1 - th1**2), rtol=1e-12)
    np.testing.assert_allclose(w.grad.to_numpy()[0], 0.0)


def test_a_guard_that_admits_both_digits_is_still_refused():
    w, ax, ay, loss = _fields()

    @fs.kernel
    def actuate(t: int):
        for i, a in fs.ndrange(3, 2):
            if a >= 0:
                ax[t, i] = fs.tanh(w[a, i])

    total = _loss_kernel(ax, ay, loss)
    with pytest.raises(AccessRuleError, match="Rule 2"):
        with fs.ad.Tape(loss):
            actuate(1)
            total()


def test_pinned_digit_with_the_other_digit_left_out_is_still_refused():
    w, ax, ay, loss = _fields()

    @fs.kernel
    def actuate(t: int):
        for i, a in fs.ndrange(3, 2):
            if a == 0:
                ax[t, 0] = fs.tanh(w[a, i])

    total = _loss_kernel(ax, ay, loss)
    with pytest.raises(AccessRuleError, match="Rule 2"):
        with fs.ad.Tape(loss):
            actuate(1)
            total()
