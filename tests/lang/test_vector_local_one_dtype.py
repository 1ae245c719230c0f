"""A local vector or matrix has one dtype, the promotion of its entries', as Taichi's
matrices do: `t = ti.Vector([0, -9.8])` (a Python list mixing an int and a float, e.g. a
global `gravity = [0, -9.8]`) makes an f32 vector, so `t += f` keeps the fraction in every
entry (its int 0 made an i32 first entry that truncated 292.89 to 292)."""
import numpy as np

import fieldsim as fs

GRAVITY = [0, -9.8]


def test_mixed_int_float_list_makes_a_float_vector():
    fs.init(arch=fs.cpu, fast_math=False)
    force = fs.Vector.field(2, fs.f32, shape=())
    mixed = fs.Matrix.field(2, 2, fs.f32, shape=())
    ints = fs.Vector.field(2, fs.i32, shape=())

    @fs.kernel
    def run(fx: fs.f32, fy: fs.f32):
        total = fs.Vector(GRAVITY) * 1
        for _ in range(3):
            total += fs.Vector([fx, fy])
        force[None] = total
        m = fs.Matrix([[1, 0.5], [2, 3]])
        m += fs.Matrix([[0.25, 0.25], [0.25, 0.25]])
        mixed[None] = m
        k = fs.Vector([1, 2])
        k += fs.Vector([3, 4])
        ints[None] = k

    run(97.63, 1.25)
    f32 = np.float32
    expected = np.array([0, -9.8], f32)
    for _ in range(3):
        expected = expected + np.array([97.63, 1.25], f32)
    np.testing.assert_array_equal(np.asarray(force[None]), expected)
    np.testing.assert_array_equal(np.asarray(mixed[None]), [[1.25, 0.75], [2.25, 3.25]])
    np.testing.assert_array_equal(np.asarray(ints[None]), [4, 6])
