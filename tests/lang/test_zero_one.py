"""`fs.zero(x)` / `fs.one(x)`: x's type and shape filled with 0 / 1, in kernels and Python."""
import numpy as np

import fieldsim as fs


def test_zero_one_keep_shape_and_dtype_in_kernels():
    v = fs.Vector.field(3, fs.f32, shape=())
    m = fs.Matrix.field(2, 2, fs.i32, shape=())
    s = fs.field(fs.f32, shape=2)

    @fs.kernel
    def k(a: fs.f32):
        v[None] = fs.one(fs.Vector([a, 2 * a, 3 * a])) * 2.5 + fs.zero(fs.Vector([a, a, a]))
        m[None] = fs.one(fs.Matrix([[1, 2], [3, 4]])) + fs.one(fs.Matrix([[1, 2], [3, 4]]) // 3) * 5
        s[0] = fs.zero(a) - 1.0
        s[1] = fs.one(a) / 4

    k(7.0)
    np.testing.assert_array_equal(v.to_numpy(), [2.5, 2.5, 2.5])
    np.testing.assert_array_equal(m.to_numpy(), [[6, 6], [6, 6]])
    np.testing.assert_array_equal(s.to_numpy(), [-1.0, 0.25])


def test_zero_one_python_scope():
    assert fs.zero(3.5) == 0 and fs.one(3) == 1
    np.testing.assert_array_equal(fs.one(fs.Vector([4.0, 5.0])).to_numpy(), [1.0, 1.0])
