"""Constructor forms a multi-module eigen solver from GitHub (Mirebeau's agdt `sym_eig.py`,
`Linalg.py`) relies on: a helper passing its own `dtype=None` on positionally
(`ti.Matrix(rows, dtype)`), and `MatrixType(3, 4, 1, float)(0)`, whose `ndim` of 1 still
builds a 3x4 matrix (Taichi's MatrixType call always makes n x m values; its `ndim` shapes
fields and ndarrays). Expected values are worked by hand."""
import pytest

import fieldsim as fs
from fieldsim.lang.matrix import MatrixType


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu)


def test_positional_none_dtype_keeps_the_entries_type():
    @fs.func
    def diag_scale(mat: fs.template(), diag: fs.template(), dtype: fs.template() = None):
        return fs.Matrix([[mat[i, j] * diag[j] for j in fs.static(range(mat.m))]
                          for i in fs.static(range(mat.n))], dtype)

    @fs.kernel
    def k() -> fs.f32:
        m = diag_scale(fs.Matrix([[1.0, 2.0], [3.0, 4.0]]), fs.Vector([10.0, 100.0]))
        v = fs.Vector([1.5, 2.5], None)
        return m[0, 1] + m[1, 0] + v[1]

    assert k() == pytest.approx(200.0 + 30.0 + 2.5)


def test_positional_none_dtype_int_entries_stay_int():
    @fs.kernel
    def k() -> fs.i32:
        v = fs.Vector([7, 2], None)
        return v[0] // v[1]

    assert k() == 3


def test_matrix_type_with_one_axis_ndim_builds_a_matrix_in_kernels():
    @fs.kernel
    def k() -> fs.f32:
        a = MatrixType(3, 4, 1, float)(0)
        a[0, 3] = 1
        a[2, 1] = 5
        s = 0.0
        for i in fs.static(range(3)):
            for j in fs.static(range(4)):
                s += a[i, j] * (i + 1) * (j + 2)
        return s

    # 1 * (0+1) * (3+2) + 5 * (2+1) * (1+2)
    assert k() == pytest.approx(5.0 + 45.0)


def test_matrix_type_with_one_axis_ndim_builds_a_matrix_in_python():
    a = MatrixType(3, 4, 1, float)(0)
    assert a.to_numpy().shape == (3, 4)
    assert fs.math.vec3(1).to_numpy().shape == (3,)
