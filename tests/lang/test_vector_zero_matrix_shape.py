"""`ti.Vector.zero(dt, n, m)` and `ti.Vector.one(dt, n, m)` are n x m matrices, as in Taichi
(its Vector inherits Matrix's `zero`/`one` and their `m`). A GitHub starfield program resets a
force with `ti.Vector.zero(float, 3, 1)`; fieldsim refused the call itself ("too many
positional arguments") where Taichi builds the 3x1 matrix."""
import numpy as np

import fieldsim as fs


def test_vector_zero_and_one_take_a_column_count_in_a_kernel():
    fs.init(arch=fs.cpu)
    col = fs.Matrix.field(3, 1, fs.f32, shape=())
    sq = fs.Matrix.field(2, 2, fs.i32, shape=())
    vec = fs.Vector.field(3, fs.f32, shape=())

    @fs.kernel
    def run():
        c = fs.Vector.zero(float, 3, 1)
        c[1, 0] = 2.5
        col[None] = c
        sq[None] = fs.Vector.one(fs.i32, 2, 2) * 3
        vec[None] = fs.Vector.zero(float, 3) + 1.0

    run()
    # Taichi's to_numpy of a 3x1 matrix field also drops the unit column
    np.testing.assert_array_equal(col.to_numpy(), [0.0, 2.5, 0.0])
    np.testing.assert_array_equal(sq.to_numpy(), [[3, 3], [3, 3]])
    np.testing.assert_array_equal(vec.to_numpy(), [1.0, 1.0, 1.0])


def test_vector_zero_with_a_column_count_in_python_scope():
    fs.init(arch=fs.cpu)
    m = fs.Vector.zero(fs.f32, 2, 3)
    assert isinstance(m, fs.Matrix) and (m.n, m.m) == (2, 3)
    np.testing.assert_array_equal(m.to_numpy(), np.zeros((2, 3)))
    np.testing.assert_array_equal(fs.Vector.one(fs.f32, 2, 1).to_numpy(), [[1.0], [1.0]])
    np.testing.assert_array_equal(fs.Vector.zero(fs.f32, 3).to_numpy(), [0.0, 0.0, 0.0])
