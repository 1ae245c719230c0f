"""An equality guard pins a digit of a flattened `ti.ndrange` loop only where the compared
values are the exact ones: `a * 65536 * 65536` wraps to 0 in i32 for every `a`, a cast to u8
truncates `a * 128` to 0 at a = 2, and `a + k` at k = 2**31 - 1 wraps for every a >= 1. Under
such guards every thread runs the store `y[t, i]`, so rule 2 must refuse it (the checker read
them as `a == 0` and accepted a race whose gradient sums all writers). Exact forms of the same
guards still pin; gradients against the analytic derivative."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import AccessRuleError


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu, default_fp=fs.f64)


def _setup():
    w = fs.field(float, shape=(3, 3), needs_grad=True)
    y = fs.field(float, shape=(2, 3), needs_grad=True)
    loss = fs.field(float, shape=(), needs_grad=True)
    w.from_numpy(np.array([[0.1, 0.2, 0.3], [0.4, -0.5, 0.6], [-0.7, 0.8, 0.9]]))

    @fs.kernel
    def total():
        for i in range(3):
            loss[None] += y[1, i] * (i + 1)
    return w, y, loss, total


def _refused(kernel, total, loss, *args):
    with pytest.raises(AccessRuleError, match="Rule 2"), fs.ad.Tape(loss):
        kernel(*args)
        total()


def test_guard_on_a_product_that_wraps_is_refused():
    w, y, loss, total = _setup()

    @fs.kernel
    def actuate(t: int):
        for i, a in fs.ndrange(3, 3):
            if a * 65536 * 65536 == 0:
                y[t, i] = fs.tanh(w[a, i])

    _refused(actuate, total, loss, 1)


def test_guard_on_a_truncating_cast_is_refused():
    w, y, loss, total = _setup()

    @fs.kernel
    def actuate(t: int):
        for i, a in fs.ndrange(3, 3):
            if fs.cast(a * 128, fs.u8) == 0:
                y[t, i] = fs.tanh(w[a, i])

    _refused(actuate, total, loss, 1)


def _shifted():
    w, y, loss, total = _setup()

    @fs.kernel
    def actuate(t: int, k: int):
        for i, a in fs.ndrange(3, 3):
            if a + k <= k:
                y[t, i] = fs.tanh(w[a, i])
    return w, loss, total, actuate


def test_guard_that_wraps_at_the_arguments_value_is_refused():
    _, loss, total, actuate = _shifted()
    _refused(actuate, total, loss, 1, 2**31 - 1)


def test_same_guard_at_a_small_argument_pins_the_digit():
    w, loss, total, actuate = _shifted()
    with fs.ad.Tape(loss):
        actuate(1, 5)
        total()
    th = np.tanh(w.to_numpy()[0])
    np.testing.assert_allclose(w.grad.to_numpy()[0], (1 - th**2) * np.arange(1, 4), rtol=1e-12)
    np.testing.assert_allclose(w.grad.to_numpy()[1:], 0.0)


def test_widened_product_still_pins_the_digit():
    w, y, loss, total = _setup()

    @fs.kernel
    def actuate(t: int):
        for i, a in fs.ndrange(3, 3):
            if fs.cast(a, fs.i64) * 65536 * 65536 == 0:
                y[t, i] = fs.tanh(w[a, i])

    with fs.ad.Tape(loss):
        actuate(1)
        total()
    th = np.tanh(w.to_numpy()[0])
    np.testing.assert_allclose(w.grad.to_numpy()[0], (1 - th**2) * np.arange(1, 4), rtol=1e-12)
    np.testing.assert_allclose(w.grad.to_numpy()[1:], 0.0)


def test_pinned_digit_of_size_one_terminates():
    # the digit walk multiplied its stride by a size-1 digit's size forever
    w, y, loss, total = _setup()

    @fs.kernel
    def actuate(t: int):
        for i, a, c in fs.ndrange(3, 3, 1):
            if a == 0 and c == 0:
                y[t, i] = fs.tanh(w[a, i])

    with fs.ad.Tape(loss):
        actuate(1)
        total()
    th = np.tanh(w.to_numpy()[0])
    np.testing.assert_allclose(w.grad.to_numpy()[0], (1 - th**2) * np.arange(1, 4), rtol=1e-12)
