"""`v = 1.0` on a vector/matrix variable fills every entry, as Taichi 1.7.4 does (fieldsim refused it
inside loops and funcs: "cannot assign float 1.0 to 'v', a vector of shape (3,)"). A kernel's
top-level variables (kept in hidden fields) follow the same rules as other locals, and their
errors name the variable: a (3, 1) matrix into a 3-vector had been stored entry by entry (Taichi
refuses it), and a vector into a scalar variable was reported against a field 'k.s'."""
import os

import numpy as np
import pytest

import fieldsim as fs

THIS_FILE = os.path.basename(__file__)


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu)


def test_a_scalar_fills_a_vector_variable_in_a_loop():
    out = fs.Vector.field(3, fs.f32, shape=2)

    @fs.kernel
    def k(t: fs.f32):
        for i in range(2):
            col = fs.Vector([0.5, 0.5, 0.5])
            if t > i:
                col = t * 2.0
            out[i] = col

    k(1.5)
    np.testing.assert_array_equal(out.to_numpy(), [[3.0, 3.0, 3.0], [3.0, 3.0, 3.0]])
    k(0.5)
    np.testing.assert_array_equal(out.to_numpy(), [[1.0, 1.0, 1.0], [0.5, 0.5, 0.5]])


def test_an_int_fills_a_matrix_variable_in_a_func():
    out = fs.Matrix.field(2, 2, fs.f32, shape=())

    @fs.func
    def f(n):
        m = fs.Matrix([[0.25, 0.5], [0.75, 1.0]])
        if n > 0:
            m = n  # an i32 value, cast to each f32 entry
        return m

    @fs.kernel
    def k(n: fs.i32):
        out[None] = f(n)

    k(3)
    np.testing.assert_array_equal(out.to_numpy(), [[3.0, 3.0], [3.0, 3.0]])
    k(0)
    np.testing.assert_array_equal(out.to_numpy(), [[0.25, 0.5], [0.75, 1.0]])


def test_a_scalar_fills_a_top_level_vector_variable():
    out = fs.Vector.field(3, fs.f32, shape=())

    @fs.kernel
    def k(t: fs.f32):
        col = fs.Vector([0.0, 0.0, 0.0])
        if t > 0:
            col = t
        out[None] = col

    k(2.0)
    np.testing.assert_array_equal(out.to_numpy(), [2.0, 2.0, 2.0])


def _raises(kernel, fragment):
    with pytest.raises(fs.FieldsimTypeError) as info:
        kernel()
    msg = str(info.value)
    assert fragment in msg, msg
    assert THIS_FILE in msg, msg
    assert "field" not in msg, msg  # the hidden field is not the user's


def test_a_top_level_vector_variable_refuses_a_column_matrix():
    out = fs.Vector.field(3, fs.f32, shape=())

    @fs.kernel
    def k():
        col = fs.Vector([0.0, 0.0, 0.0])
        col = fs.Matrix([[1.0], [2.0], [3.0]])
        out[None] = col

    _raises(k, "cannot assign a matrix of shape (3, 1) to 'col', a vector of shape (3,)")


def test_a_top_level_vector_variable_refuses_another_length():
    @fs.kernel
    def k():
        col = fs.Vector([0.0, 0.0, 0.0])
        col = fs.Vector([0.01])  # noqa: F841

    _raises(k, "cannot assign a vector of shape (1,) to 'col', a vector of shape (3,)")


def test_a_top_level_scalar_variable_refuses_a_vector():
    @fs.kernel
    def k():
        s = 1.0
        s = fs.Vector([1.0, 2.0])  # noqa: F841

    _raises(k, "to the scalar variable 's'")
