"""`fs.Vector` given nested rows builds the matrix of those rows, in both scopes, as Taichi's does
(a Newton-fractal program writes its rotation as `ti.Vector([[c, s], [-s, c]]) @ z`)."""
import math

import numpy as np

import fieldsim as fs


def test_vector_of_rows_in_a_kernel_is_a_matrix():
    fs.init(arch=fs.cpu)
    out = fs.Vector.field(2, fs.f32, shape=())
    dims = fs.field(fs.i32, shape=4)

    @fs.kernel
    def rotate(t: fs.f32):
        m = fs.Vector([[fs.cos(t), fs.sin(t)], [-fs.sin(t), fs.cos(t)]])
        out[None] = m @ fs.Vector([1.0, 2.0])
        col = fs.Vector([[1.0], [2.0]])
        dims[0], dims[1] = m.n, m.m
        dims[2], dims[3] = col.n, col.m

    t = 0.3
    rotate(t)
    c, s = math.cos(t), math.sin(t)
    np.testing.assert_allclose(out[None].to_numpy(), [c + 2 * s, -s + 2 * c], rtol=1e-6)
    assert dims.to_numpy().tolist() == [2, 2, 2, 1]


def test_vector_of_rows_in_python_scope_is_a_matrix():
    m = fs.Vector([[1.0, 2.0], [3.0, 4.0]])
    assert (m.n, m.m) == (2, 2)
    np.testing.assert_array_equal((m @ fs.Vector([1.0, 1.0])).to_numpy(), [3.0, 7.0])
    assert fs.Vector(((1, 2, 3), (4, 5, 6))).to_numpy().shape == (2, 3)
    assert fs.Vector([np.array([1.0]), np.array([2.0])]).to_numpy().shape == (2, 1)
    v = fs.Vector([1.0, 2.0, 3.0])
    assert isinstance(v, fs.Vector) and v.to_numpy().shape == (3,)
