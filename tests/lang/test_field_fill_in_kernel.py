"""`x.fill(v)` at a kernel's top level with `v` computed in the kernel body: the fill loop is a
task of its own, so the value reaches it through a hidden kernel variable (Taichi's MRT
lattice-Boltzmann solvers fill a relaxation field with a local vector, then loop over it).

Expected values are numpy arrays built independently.
"""
import numpy as np

import fieldsim as fs


def test_fill_with_a_local_vector_then_loop():
    fs.init(arch=fs.cpu)
    diag = fs.Vector.field(3, fs.f32, shape=(4, 2))

    @fs.kernel
    def init():
        m = fs.Vector([1.0, 2.0, 3.0])
        diag.fill(m)
        for i in range(4):
            diag[i, 1][0] = 5.0

    init()
    want = np.tile(np.array([1.0, 2.0, 3.0], np.float32), (4, 2, 1))
    want[:, 1, 0] = 5.0
    np.testing.assert_array_equal(diag.to_numpy(), want)


def test_fill_with_values_read_in_the_body():
    fs.init(arch=fs.cpu)
    src = fs.field(fs.f64, shape=3)
    dst = fs.field(fs.f64, shape=5)
    pair = fs.Vector.field(2, fs.i32, shape=3)
    src.from_numpy(np.array([1.5, -2.0, 4.25]))

    @fs.kernel
    def fill_from(k: fs.i32):
        dst.fill(src[k] * 2.0)
        pair.fill([k, k + 1])

    fill_from(2)
    np.testing.assert_array_equal(dst.to_numpy(), np.full(5, 8.5))
    np.testing.assert_array_equal(pair.to_numpy(), np.array([[2, 3]] * 3, np.int32))
