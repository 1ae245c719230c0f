"""fs.linalg.SparseMatrix (fieldsim/sparse_matrix.py): products, transpose, arithmetic and
element access against dense numpy."""
import numpy as np
import pytest

import fieldsim as fs


def _random_sparse(n, m, density, seed, dtype=fs.f32):
    """A SparseMatrix built through a kernel, and its dense float64 twin."""
    rng = np.random.default_rng(seed)
    dense = np.where(rng.random((n, m)) < density, rng.standard_normal((n, m)), 0.0)
    dense = dense.astype(dtype.np).astype(np.float64)
    rows, cols = np.nonzero(dense)
    trip = fs.ndarray(fs.f64, shape=(len(rows), 3))
    trip.from_numpy(np.stack([rows, cols, dense[rows, cols]], axis=1))
    B = fs.linalg.SparseMatrixBuilder(n, m, max_num_triplets=len(rows) + 1, dtype=dtype)

    @fs.kernel
    def fill(A: fs.types.sparse_matrix_builder(), t: fs.types.ndarray()):
        for k in range(t.shape[0]):
            A[int(t[k, 0]), int(t[k, 1])] += t[k, 2]

    fill(B, trip)
    return B.build(), dense


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu)


def test_matvec_with_numpy_field_and_ndarray():
    A, dense = _random_sparse(20, 13, 0.3, 1)
    x = np.random.default_rng(2).standard_normal(13).astype(np.float32)
    want = dense @ x.astype(np.float64)
    got = A @ x
    assert isinstance(got, np.ndarray) and got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    f = fs.field(fs.f32, shape=13)
    f.from_numpy(x)
    np.testing.assert_allclose(A @ f, want, rtol=1e-5, atol=1e-5)
    nd = fs.ndarray(fs.f32, shape=13)
    nd.from_numpy(x)
    out = A @ nd
    assert isinstance(out, fs.Ndarray) and out.shape == (20,)
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-5, atol=1e-5)
    with pytest.raises(fs.FieldsimRuntimeError, match="Dimension mismatch"):
        A @ np.ones(20, np.float32)


def test_transpose_arithmetic_and_products():
    A, a = _random_sparse(9, 7, 0.4, 3)
    B, b = _random_sparse(9, 7, 0.4, 4)
    C, c = _random_sparse(7, 5, 0.4, 5)
    tol = {"rtol": 1e-5, "atol": 1e-5}
    np.testing.assert_allclose(A.transpose().to_numpy(), a.T, **tol)
    assert A.transpose().shape == (7, 9)
    np.testing.assert_allclose((A + B).to_numpy(), a + b, **tol)
    np.testing.assert_allclose((A - B).to_numpy(), a - b, **tol)
    np.testing.assert_allclose((A * B).to_numpy(), a * b, **tol)  # Taichi: elementwise
    np.testing.assert_allclose((0.5 * A).to_numpy(), 0.5 * a, **tol)
    np.testing.assert_allclose((A * -2.0).to_numpy(), -2.0 * a, **tol)
    np.testing.assert_allclose((A @ C).to_numpy(), a @ c, **tol)
    np.testing.assert_allclose((A.transpose() @ A).to_numpy(), a.T @ a, **tol)
    D = fs.linalg.SparseMatrix(sm=A)
    D += B
    D -= A
    np.testing.assert_allclose(D.to_numpy(), b, **tol)
    np.testing.assert_allclose(A.to_numpy(), a, **tol)  # the copy did not alias A
    with pytest.raises(fs.FieldsimRuntimeError, match=r"\(9, 7\) and \(7, 5\)"):
        A + C
    with pytest.raises(fs.FieldsimRuntimeError, match="Dimension mismatch"):
        A @ A


def test_element_access_print_and_matrix_market(tmp_path):
    A = fs.linalg.SparseMatrix(3, 3, dtype=fs.f32)
    assert A[1, 1] == 0.0
    A[1, 2] = 2.5
    A[0, 0] = -1.0
    A[1, 2] = 3.0  # overwrite an existing entry
    np.testing.assert_array_equal(A.to_numpy(), [[-1, 0, 0], [0, 0, 3], [0, 0, 0]])
    assert str(A) == "[-1,  0,  0]\n[ 0,  0,  3]\n[ 0,  0,  0]"
    with pytest.raises(fs.FieldsimIndexError, match="outside the 3 x 3"):
        A[3, 0]
    path = tmp_path / "a.mtx"
    A.mmwrite(str(path))
    lines = path.read_text().splitlines()
    assert lines[0].startswith("%%MatrixMarket matrix coordinate real general")
    assert lines[1] == "3 3 2"
    assert sorted(lines[2:]) == ["1 1 -1.0", "2 3 3.0"]


def test_build_from_ndarray_of_triplets():
    N = 5
    trip = fs.Vector.ndarray(3, fs.f32, shape=N)

    @fs.kernel
    def fill(t: fs.types.ndarray()):
        for i in range(N):
            t[i] = fs.Vector([i, (i + 1) % N, i + 1], dt=fs.f32)

    fill(trip)
    A = fs.linalg.SparseMatrix(n=N, m=N, dtype=fs.f32)
    A.build_from_ndarray(trip)
    want = np.zeros((N, N))
    want[np.arange(N), (np.arange(N) + 1) % N] = np.arange(N) + 1
    np.testing.assert_array_equal(A.to_numpy(), want)
    with pytest.raises(fs.FieldsimRuntimeError, match="divisible by 3"):
        A.build_from_ndarray(fs.ndarray(fs.f32, shape=4))
    with pytest.raises(fs.FieldsimTypeError, match="only supports building from"):
        A.build_from_ndarray(np.zeros(6))


def test_negative_dimensions_are_refused_at_the_users_line():
    with pytest.raises(fs.FieldsimRuntimeError, match="must not be negative, got n=-1") as err:
        fs.linalg.SparseMatrix(n=-1, m=3)
    assert err.value.loc.file == __file__
