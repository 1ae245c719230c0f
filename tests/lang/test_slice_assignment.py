"""Assignment through compile-time slices of vectors and matrices (fieldsim/lang/frontend.py
`_lvalue_subscript`, frontend_refs.slice_ref), as Taichi allows: `p[:3] = v`, `m[:3, 3] = t`,
`mat[b][:, :] = R` on an ndarray element, `f[i][1:3] += d` (atomic on a field, as Taichi).
Values are checked against numpy doing the same slice assignments."""
import numpy as np
import pytest

import fieldsim as fs


def test_local_vector_and_matrix_slices():
    vec7 = fs.types.vector(7, fs.f32)

    @fs.kernel
    def k(v: fs.math.vec3) -> fs.types.matrix(2, 7, fs.f32):
        p = fs.Vector.zero(fs.f32, 7)
        p[:3] = v
        p[3:7] = fs.Vector([1.0, 2.0, 3.0, 4.0])
        p[::3] = fs.Vector([9.0, 9.0, 9.0])
        q = vec7(0)
        q[-2:] = 5.0  # a scalar fills the slice
        return fs.Matrix.rows([p, q])

    p = np.zeros(7); p[:3] = [1, 2, 3]; p[3:7] = [1, 2, 3, 4]; p[::3] = 9
    q = np.zeros(7); q[-2:] = 5
    np.testing.assert_array_equal(k(fs.math.vec3(1, 2, 3)).to_numpy(), [p, q])

    @fs.kernel
    def m4() -> fs.math.mat4:
        m = fs.Matrix.identity(fs.f32, 4)
        m[:3, 3] = fs.Vector([5.0, 6.0, 7.0])
        m[1, :] = fs.Vector([0.5, 0.5, 0.5, 0.5])
        m[2:, :2] = fs.Matrix([[8.0, 8.5], [9.0, 9.5]])
        m[:2, :2] += fs.Matrix([[1.0, 1.0], [1.0, 1.0]])
        return m

    e = np.eye(4); e[:3, 3] = [5, 6, 7]; e[1, :] = 0.5; e[2:, :2] = [[8, 8.5], [9, 9.5]]
    e[:2, :2] += 1
    np.testing.assert_array_equal(m4().to_numpy(), e)


def test_ndarray_and_field_element_slices():
    @fs.kernel
    def k(m: fs.types.ndarray(dtype=fs.math.mat3), p: fs.types.ndarray(dtype=fs.types.vector(5, fs.f32))):
        for b in range(m.shape[0]):
            m[b][:, :] = fs.Matrix.identity(fs.f32, 3) * (b + 1)
            m[b][0, 1:] = fs.Vector([7.0, 8.0])
            p[b][:] = fs.Vector([1.0, 2.0, 3.0, 4.0, 5.0]) * b
            p[b][1:3] = fs.Vector([-1.0, -2.0])
            p[b][3:] += fs.Vector([100.0, 200.0])

    m, p = np.zeros((3, 3, 3), np.float32), np.zeros((3, 5), np.float32)
    k(m, p)
    em, ep = np.zeros_like(m), np.zeros_like(p)
    for b in range(3):
        em[b][:, :] = np.eye(3) * (b + 1); em[b][0, 1:] = [7, 8]
        ep[b][:] = np.arange(1, 6) * b; ep[b][1:3] = [-1, -2]; ep[b][3:] += [100, 200]
    np.testing.assert_array_equal(m, em)
    np.testing.assert_array_equal(p, ep)

    f = fs.Vector.field(4, fs.f32, shape=8)
    total = fs.field(fs.f32, shape=())

    @fs.kernel
    def add_slices():
        for i in range(8):
            f[i % 2][1:3] += fs.Vector([1.0, 2.0])  # threads meet on two elements: atomic adds
        for i in f:
            total[None] += f[i].sum()

    add_slices()
    want = np.zeros((8, 4)); want[:2, 1:3] = [[4, 8], [4, 8]]
    np.testing.assert_array_equal(f.to_numpy(), want)
    assert total[None] == want.sum()


def test_bad_slice_assignments_are_refused():
    @fs.kernel
    def wrong_count():
        v = fs.Vector([1.0, 2.0, 3.0])
        v[:2] = fs.Vector([1.0, 2.0, 3.0])

    with pytest.raises(fs.FieldsimTypeError, match="cannot assign .* to 2 components"):
        wrong_count()

    @fs.kernel
    def scalar_slice(x: fs.f32):
        s = x
        s[:1] = 2.0

    with pytest.raises(fs.FieldsimSyntaxError, match="through a slice"):
        scalar_slice(1.0)


def test_runtime_row_and_column_slices_of_a_local_matrix():
    """`M[i, :]` / `M[:, j]` with i, j loop values (not static), read and assigned, as Taichi
    allows: rows of a 4x3 matrix rewritten then read back, checked against numpy."""
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    out = fs.Matrix.field(4, 3, fs.f64, shape=())
    col = fs.Vector.field(4, fs.f64, shape=())
    a = np.arange(12.0).reshape(4, 3) / 7

    @fs.kernel
    def k():
        M = fs.Matrix.zero(float, 4, 3)
        A = fs.Matrix(a.tolist())
        for i in range(4):
            M[i, :] = A[i, :] * (i + 1)
            if M[i, :].sum() > 3.0:
                M[i, :] = -M[i, :]
        out[None] = M
        for j in range(3):
            col[None] += M[:, j] * (j + 1)

    k()
    want = a * np.arange(1, 5)[:, None]
    want[want.sum(axis=1) > 3.0] *= -1
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-14)
    np.testing.assert_allclose(col.to_numpy(), want @ np.arange(1, 4), rtol=1e-14)
