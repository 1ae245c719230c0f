"""Python's `float` and `int` where a dtype is expected inside kernels: the default types."""
import numpy as np

import fieldsim as fs


def test_matrix_cast_to_python_types_follows_defaults():
    fs.init(arch=fs.cpu, default_fp=fs.f64, default_ip=fs.i64)
    out_f = fs.Vector.field(2, fs.f64, shape=())
    out_i = fs.Vector.field(2, fs.i64, shape=())

    @fs.kernel
    def k(s: fs.f64):
        v = fs.Vector([2.75, -1.25]) * s
        out_i[None] = v.cast(int)
        out_f[None] = v.cast(int).cast(float) / 3

    k(1.0 + 2.0**-40)
    np.testing.assert_array_equal(out_i.to_numpy(), [2, -1])
    np.testing.assert_array_equal(out_f.to_numpy(), np.array([2.0, -1.0]) / 3)


def test_scalar_cast_python_types():
    out = fs.field(fs.f32, shape=2)

    @fs.kernel
    def k(a: fs.f32):
        out[0] = fs.cast(a, int)
        out[1] = fs.cast(fs.cast(a, int), float) / 2

    k(-3.75)
    np.testing.assert_array_equal(out.to_numpy(), [-3.0, -1.5])
