"""fs.linalg.SparseSolver and SparseCG (fieldsim/sparse_solver.py) against np.linalg.solve, with
scipy and with the numpy fallback (dense, and conjugate gradients for large systems)."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim import sparse_solver


def _matrix(dense, dtype=fs.f64):
    A = fs.linalg.SparseMatrix(*dense.shape, dtype=dtype)
    rows, cols = np.nonzero(dense)
    A._set_csr(*fs.sparse_matrix._coalesce(rows, cols, dense[rows, cols], dense.shape, dtype.np))
    return A


def _spd(n, seed):
    """A sparse symmetric positive definite matrix (a 1-D Laplacian plus random couplings)."""
    rng = np.random.default_rng(seed)
    L = 2.0 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    R = np.where(rng.random((n, n)) < 3.0 / n, rng.standard_normal((n, n)), 0.0)
    return L + R @ R.T + 0.1 * np.eye(n)


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu)


@pytest.fixture(params=["scipy", "numpy"])
def backend(request, monkeypatch):
    if request.param == "scipy":
        pytest.importorskip("scipy")
    else:
        monkeypatch.setattr(sparse_solver, "_SCIPY", [None])
    return request.param


@pytest.mark.parametrize("solver_type", ["LLT", "LDLT", "LU"])
def test_spd_system_matches_numpy(backend, solver_type):
    n = 60
    dense = _spd(n, 7)
    b = np.random.default_rng(8).standard_normal(n)
    solver = fs.linalg.SparseSolver(dtype=fs.f64, solver_type=solver_type)
    solver.analyze_pattern(_matrix(dense))
    solver.factorize(_matrix(dense))
    assert solver.info()
    x = solver.solve(b)
    assert x.dtype == np.float64
    np.testing.assert_allclose(x, np.linalg.solve(dense, b), rtol=1e-9, atol=1e-9)


def test_cholesky_types_read_the_lower_triangle_and_lu_all(backend):
    rng = np.random.default_rng(3)
    dense = _spd(8, 3)
    lopsided = np.tril(dense) + np.triu(rng.standard_normal((8, 8)), 1)  # upper part: noise
    b = rng.standard_normal(8)
    llt = fs.linalg.SparseSolver(fs.f64, "LLT")
    llt.compute(_matrix(lopsided))
    np.testing.assert_allclose(llt.solve(b), np.linalg.solve(dense, b), rtol=1e-9)
    lu = fs.linalg.SparseSolver(fs.f64, "LU", "COLAMD")
    lu.compute(_matrix(lopsided))
    np.testing.assert_allclose(lu.solve(b), np.linalg.solve(lopsided, b), rtol=1e-8)


def test_info_false_for_indefinite_llt_and_singular(backend):
    indefinite = np.diag([2.0, -1.0, 3.0])
    llt = fs.linalg.SparseSolver(fs.f64, "LLT")
    llt.compute(_matrix(indefinite))
    assert not llt.info()
    ldlt = fs.linalg.SparseSolver(fs.f64, "LDLT")
    ldlt.compute(_matrix(indefinite))
    assert ldlt.info()
    np.testing.assert_allclose(ldlt.solve(np.ones(3)), [0.5, -1.0, 1 / 3], rtol=1e-12)
    singular = fs.linalg.SparseSolver(fs.f64, "LU")
    singular.compute(_matrix(np.array([[1.0, 2.0], [2.0, 4.0]])))
    assert not singular.info()


def test_numpy_fallback_uses_cg_above_the_dense_limit(monkeypatch):
    monkeypatch.setattr(sparse_solver, "_SCIPY", [None])
    monkeypatch.setattr(sparse_solver, "DENSE_LIMIT", 10)
    dense = _spd(40, 11)
    b = np.random.default_rng(12).standard_normal(40)
    solver = fs.linalg.SparseSolver(fs.f64, "LDLT")
    solver.compute(_matrix(dense))
    np.testing.assert_allclose(solver.solve(b), np.linalg.solve(dense, b), rtol=1e-8, atol=1e-10)
    lu = fs.linalg.SparseSolver(fs.f64, "LU")
    with pytest.raises(fs.FieldsimRuntimeError, match="needs scipy"):
        lu.compute(_matrix(dense))


def test_f32_solver_with_field_and_ndarray_right_hand_sides():
    dense = _spd(30, 5).astype(np.float32)
    b = np.random.default_rng(6).standard_normal(30).astype(np.float32)
    want = np.linalg.solve(dense.astype(np.float64), b.astype(np.float64))
    solver = fs.linalg.SparseSolver()  # f32, LLT, AMD: Taichi's defaults
    with pytest.raises(fs.FieldsimRuntimeError, match="before calling solve"):
        solver.solve(b)
    with pytest.raises(fs.FieldsimRuntimeError, match="dtype f32 is not consistent"):
        solver.analyze_pattern(_matrix(dense, fs.f64))
    A = _matrix(dense, fs.f32)
    solver.analyze_pattern(A)
    solver.factorize(A)
    x = solver.solve(b)
    assert x.dtype == np.float32
    np.testing.assert_allclose(x, want, rtol=1e-4, atol=1e-5)
    f = fs.field(fs.f32, shape=30)
    f.from_numpy(b)
    np.testing.assert_allclose(solver.solve(f), want, rtol=1e-4, atol=1e-5)
    nd = fs.ndarray(fs.f32, shape=30)
    nd.from_numpy(b)
    out = solver.solve(nd)
    assert isinstance(out, fs.Ndarray)
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-4, atol=1e-5)
    with pytest.raises(fs.FieldsimTypeError, match="not supported in linear solvers"):
        solver.solve([1.0] * 30)
    with pytest.raises(fs.FieldsimRuntimeError, match="is not supported for now"):
        fs.linalg.SparseSolver(solver_type="QR")


def test_sparse_cg(capsys):
    dense = _spd(50, 9)
    b = np.random.default_rng(10).standard_normal(50)
    x, ok = fs.linalg.SparseCG(_matrix(dense), b, max_iter=500, atol=1e-10).solve()
    assert ok and x.dtype == np.float64
    np.testing.assert_allclose(x, np.linalg.solve(dense, b), rtol=1e-7, atol=1e-9)
    assert capsys.readouterr().out.startswith("#iterations:")
    _, ok = fs.linalg.SparseCG(_matrix(dense), b, max_iter=2, atol=1e-10).solve()
    assert not ok


def test_linalg_names():
    with pytest.raises(AttributeError, match="no_such_solver"):
        fs.linalg.no_such_solver
    assert fs.linalg.svd is fs.svd and fs.linalg.polar_decompose is fs.polar_decompose


def test_singular_neumann_laplacian_gives_the_least_norm_solution():
    """A pure-Neumann Laplacian (constant null space, as stable_fluid.py's -S solve): rounding
    leaves a tiny pivot; the solution has no multiple of the constants (np.linalg.lstsq's)."""
    pytest.importorskip("scipy")
    n = 50
    L = 2.0 * np.eye(n) - np.eye(n, k=1) - np.eye(n, k=-1)
    L[0, 0] = L[-1, -1] = 1.0
    b = np.random.default_rng(4).standard_normal(n)
    b -= b.mean()
    solver = fs.linalg.SparseSolver(fs.f64, "LLT")
    solver.compute(_matrix(L))
    assert not solver.info()  # an exactly zero pivot, as Eigen's LLT reports it
    x = solver.solve(b)
    np.testing.assert_allclose(x, np.linalg.lstsq(L, b, rcond=None)[0], atol=1e-8)
    np.testing.assert_allclose(L @ x, b, atol=1e-9)
    L[1:, 1:] *= 1.0 + 1e-13  # rounding-level nonzero pivot instead (as in a real simulation)
    solver.compute(_matrix(L))
    assert solver.info()
    np.testing.assert_allclose(solver.solve(b), np.linalg.lstsq(L, b, rcond=None)[0], atol=1e-6)
