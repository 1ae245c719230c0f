"""`fs.ndrange` bounds in kernels: integer values (literals, locals, field reads) run; a float
bound is refused, as in Taichi 1.7.4, with the user's line and the value's type (older Taichi
accepted `ti.ndrange(len, h + 1, len)` with float locals, as some voxel-challenge scenes do)."""
import numpy as np
import pytest

import fieldsim as fs


def test_integer_local_and_tuple_bounds():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=(6, 6))

    @fs.kernel
    def fill(n: fs.i32):
        m = n - 2
        for i, j in fs.ndrange((1, n), m):
            out[i, j] = i * 10 + j

    fill(5)
    expected = np.zeros((6, 6), np.int32)
    for i in range(1, 5):
        for j in range(3):
            expected[i, j] = i * 10 + j
    np.testing.assert_array_equal(out.to_numpy(), expected)


def test_float_bound_names_its_type_and_line():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=8)

    @fs.kernel
    def fill():
        length = 2.0
        for i, j in fs.ndrange(length, 3):
            out[i] = j

    with pytest.raises(fs.FieldsimTypeError, match=r"(?s)test_ndrange_bounds.py.*got a f32 value"):
        fill()
