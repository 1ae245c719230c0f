"""`kernel.grad(*args)` judges the access rules with that launch's argument values, as a Tape
launch does: an offset that keeps two writes apart is accepted, one that makes them meet is
refused before the adjoint runs."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture
def place_kernel():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    x = fs.field(float, shape=4, needs_grad=True, name="x")
    y = fs.field(float, shape=8, needs_grad=True, name="y")

    @fs.kernel
    def place(a: fs.i32, b: fs.i32):
        for i in range(4):
            y[i + a] = x[i] * 2.0
            y[i + b] = x[i] * x[i]

    x.from_numpy(np.array([0.5, -1.0, 1.5, 2.0]))
    return x, y, place


def test_kernel_grad_accepts_offsets_that_keep_the_writes_apart(place_kernel):
    x, y, place = place_kernel
    place(0, 4)
    y.grad.from_numpy(np.arange(1.0, 9.0))
    place.grad(0, 4)
    xs = x.to_numpy()
    np.testing.assert_allclose(x.grad.to_numpy(), 2.0 * np.arange(1, 5) + 2 * xs * np.arange(5, 9))


def test_kernel_grad_refuses_offsets_that_make_the_writes_meet(place_kernel):
    x, y, place = place_kernel
    y.grad.from_numpy(np.arange(1.0, 9.0))
    with pytest.raises(fs.AccessRuleError, match=r"Rule 2[\s\S]*'y'"):
        place.grad(0, 2)
    np.testing.assert_array_equal(x.grad.to_numpy(), np.zeros(4))  # nothing ran
    np.testing.assert_array_equal(y.grad.to_numpy(), np.arange(1.0, 9.0))
