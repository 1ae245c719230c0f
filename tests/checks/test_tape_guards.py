"""Across kernels on a Tape, an `if` guard narrows the elements a write can touch: a later
kernel may overwrite the elements an earlier one did not read, and is refused where its
guarded range still meets what was read."""
import numpy as np
import pytest
from rules_support import fd

import fieldsim as fs


@pytest.fixture
def program():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    n = 6
    x = fs.field(float, shape=n, needs_grad=True, name="x")
    y = fs.field(float, shape=n, needs_grad=True, name="y")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.kernel
    def read_first():
        loss[None] += y[0] * x[0]

    @fs.kernel
    def fill_rest(start: fs.i32):
        for i in range(n):
            if i >= start:
                y[i] = fs.sin(x[i])

    @fs.kernel
    def total():
        for i in range(1, n):
            loss[None] += y[i] * y[i]

    x.from_numpy(np.linspace(-1.1, 1.4, n))
    return x, y, loss, read_first, fill_rest, total


def test_a_guarded_write_past_what_was_read_is_accepted(program):
    x, y, loss, read_first, fill_rest, total = program

    def reset():
        y.from_numpy(np.full(6, 0.5))

    def run():
        read_first()
        fill_rest(1)
        total()

    grads = fd.check_tape_against_fd(fs, {"x": x}, loss, run, reset=reset)
    assert np.all(grads["x"] != 0)


def test_a_guarded_write_that_reaches_what_was_read_is_refused(program):
    _x, y, loss, read_first, fill_rest, _total = program
    y.from_numpy(np.full(6, 0.5))
    with pytest.raises(fs.AccessRuleError, match=r"Rule 1[\s\S]*'y'[\s\S]*read_first"), \
            fs.ad.Tape(loss):
        read_first()
        fill_rest(0)
    np.testing.assert_array_equal(y.to_numpy(), np.full(6, 0.5))  # the refused launch never ran
