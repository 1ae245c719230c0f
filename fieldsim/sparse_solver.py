"""Sparse linear solvers: `fs.linalg.SparseSolver` (direct) and `fs.linalg.SparseCG`.

Takes `fieldsim.sparse_matrix.SparseMatrix` matrices and right-hand sides that are numpy
vectors, fields (both give a numpy solution) or ndarrays (gives an ndarray), as Taichi 1.7's
CPU backend does. Solves in float64 and rounds the solution to the solver's dtype.

Direct solver (`solver_type` 'LLT', 'LDLT' or 'LU'): as Eigen's SimplicialLLT/LDLT, which
Taichi uses, the Cholesky types read the lower triangle only (the matrix is taken as
symmetric). With scipy installed, the factorization is scipy's SuperLU (`splu`): for LLT and
LDLT with a symmetric ordering and no pivoting, so `info()` is False for an LLT matrix that is
not positive definite, as Eigen reports; with 'LU' with COLAMD ordering. A symmetric matrix
that is singular to rounding (a pure-Neumann Laplacian: pivots below `TINY_PIVOT`) is solved
with its near-null space projected out of the solution (the least-norm solution), where Eigen
returns one with an arbitrary, rounding-made multiple of it. Without scipy, systems
up to `DENSE_LIMIT` unknowns are solved densely with numpy (Cholesky to judge LLT), and larger
symmetric ones by Jacobi-preconditioned conjugate gradients; a larger 'LU' system raises an
error saying scipy is needed.

`SparseCG(A, b, x0=None, max_iter=50, atol=1e-6).solve()` returns (x, converged): Eigen's
ConjugateGradient with its diagonal preconditioner and relative tolerance `atol`, printing the
iteration count and estimated error as Taichi does.
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import FieldsimRuntimeError, FieldsimTypeError
from fieldsim.lang import types as T
from fieldsim.lang.field import Field
from fieldsim.lang.naming import user_loc
from fieldsim.lang.ndarray import Ndarray, ndarray
from fieldsim.sparse_matrix import SparseMatrix

SOLVER_TYPES = ("LLT", "LDLT", "LU")
ORDERINGS = ("AMD", "COLAMD")
DENSE_LIMIT = 4000  # unknowns: above, the numpy fallback does not form a dense matrix
# A pivot at most this fraction of the largest is a zero made nonzero by rounding: the matrix is
# singular (e.g. a pure-Neumann Laplacian); up to MAX_NULL_DIM of them are projected out.
TINY_PIVOT = 1e-10
MAX_NULL_DIM = 8
_SCIPY = []


def _scipy():
    """scipy.sparse.linalg and scipy.sparse, or None when scipy is not installed."""
    if not _SCIPY:
        try:
            import scipy.sparse
            import scipy.sparse.linalg
            _SCIPY.append((scipy.sparse, scipy.sparse.linalg))
        except ImportError:
            _SCIPY.append(None)
    return _SCIPY[0]


def _lower_symmetric(A: SparseMatrix):
    """COO of the symmetric matrix whose lower triangle is A's (what Eigen's LLT/LDLT read)."""
    rows, cols, vals = A._coo()
    low = rows >= cols
    strict = rows > cols
    return (np.r_[rows[low], cols[strict]], np.r_[cols[low], rows[strict]],
            np.r_[vals[low], vals[strict]].astype(np.float64))


class _ScipyFactor:
    def __init__(self, sp, spla, coo, n, solver_type):
        csc = sp.csc_matrix((coo[2], (coo[0], coo[1])), shape=(n, n))
        self.lu, self.ok, self.null = None, False, None
        try:
            self.lu = _splu(spla, csc, solver_type)
        except RuntimeError:  # exactly singular: info() is False, as Eigen's
            if solver_type == "LU":
                return
            # a symmetric one still solves (least-norm) through a copy shifted by a rounding-size
            # multiple of I, whose tiny pivots are projected out below
            shift = 1e-13 * max(float(np.abs(csc.diagonal()).max(initial=0.0)), 1e-300)
            self.lu = _splu(spla, csc + shift * sp.identity(n, format="csc"), solver_type)
            self._null_space(n)
            return
        diag = self.lu.U.diagonal()
        self.ok = bool(np.all(np.isfinite(diag)) and
                       (np.all((diag > 0) | _tiny(diag)) if solver_type == "LLT" else True))
        if solver_type != "LU":
            self._null_space(n)

    def _null_space(self, n):
        k = int(_tiny(self.lu.U.diagonal()).sum())
        if 0 < k <= MAX_NULL_DIM:
            self.null = _null_basis(self.lu.solve, n, k)

    def solve(self, b):
        if self.lu is None:
            return np.full_like(b, np.nan)
        x = self.lu.solve(b)
        if self.null is not None:  # no multiple of the null space, however large rounding made it
            x -= self.null @ (self.null.T @ x)
        return x


def _splu(spla, csc, solver_type):
    if solver_type == "LU":
        return spla.splu(csc, permc_spec="COLAMD")
    # symmetric: a symmetric ordering and no pivoting, so U's diagonal is D of LDL^T
    return spla.splu(csc, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                     options={"SymmetricMode": True})


def _tiny(diag):
    """Which pivots are zeros that rounding made nonzero."""
    return np.abs(diag) <= TINY_PIVOT * (np.abs(diag).max() if diag.size else 1.0)


def _null_basis(solve, n: int, k: int):
    """An orthonormal basis of the k-dimensional near-null space of a symmetric matrix whose
    factorization has k rounding-level pivots: inverse iteration from a fixed start (each step
    shrinks the other directions by the tiny pivots' ratio to the rest)."""
    z = np.random.default_rng(0).standard_normal((n, k))
    for _ in range(2):
        z, _ = np.linalg.qr(solve(z).reshape(n, k))
    return z


class _DenseFactor:
    def __init__(self, coo, n, solver_type):
        self.dense = np.zeros((n, n))
        np.add.at(self.dense, (coo[0], coo[1]), coo[2])
        if solver_type == "LLT":
            try:
                np.linalg.cholesky(self.dense)
                self.ok = True
            except np.linalg.LinAlgError:
                self.ok = False
        else:
            self.ok = bool(np.linalg.slogdet(self.dense)[0] != 0)

    def solve(self, b):
        try:
            return np.linalg.solve(self.dense, b)
        except np.linalg.LinAlgError:
            return np.full_like(b, np.nan)


class _CGFactor:
    """No factorization at all: each solve runs preconditioned CG to rounding level."""

    def __init__(self, coo, n):
        self.matrix = SparseMatrix._from_coo(*coo, (n, n), T.f64)
        self.ok = True

    def solve(self, b):
        x, _, _ = conjugate_gradient(self.matrix, b, None, 10 * len(b) + 100, 1e-12)
        return x


def _factorize(A: SparseMatrix, solver_type: str):
    coo = A._coo() if solver_type == "LU" else _lower_symmetric(A)
    coo = (coo[0], coo[1], np.asarray(coo[2], np.float64))
    sci = _scipy()
    if sci is not None:
        return _ScipyFactor(sci[0], sci[1], coo, A.n, solver_type)
    if A.n <= DENSE_LIMIT:
        return _DenseFactor(coo, A.n, solver_type)
    if solver_type == "LU":
        raise FieldsimRuntimeError(f"SparseSolver('LU') of a {A.n} x {A.n} matrix needs scipy "
                                   "(pip install scipy); without it only systems up to "
                                   f"{DENSE_LIMIT} unknowns or symmetric ones (LLT, LDLT) are "
                                   "solved", user_loc())
    return _CGFactor(coo, A.n)


def _rhs(b, n: int):
    """(b as a float64 vector, how to return the solution) for a numpy, field or ndarray b."""
    if isinstance(b, Ndarray):
        arr, kind = b.to_numpy(), ("ndarray", b.dtype)
    elif isinstance(b, Field):
        arr, kind = b.to_numpy(), ("numpy", None)
    elif isinstance(b, np.ndarray):
        arr, kind = b, ("numpy", None)
    else:
        raise FieldsimTypeError(f"The parameter type: {type(b).__name__} is not supported in "
                                "linear solvers for now (use a numpy array, a field or an ndarray)",
                                user_loc())
    if arr.shape != (n,):
        raise FieldsimRuntimeError(f"the right-hand side has shape {arr.shape}; the {n} x {n} "
                                   f"system needs ({n},)", user_loc())
    return arr.astype(np.float64), kind


def _result(x, kind, dtype):
    if kind[0] == "ndarray":
        out = ndarray(kind[1], (len(x),))
        out.from_numpy(x.astype(kind[1].np))
        return out
    return x.astype(dtype.np)


class SparseSolver:
    """A direct solver for `A x = b` (Taichi's `ti.linalg.SparseSolver`)."""

    def __init__(self, dtype=T.f32, solver_type="LLT", ordering="AMD"):
        if solver_type not in SOLVER_TYPES or ordering not in ORDERINGS:
            raise FieldsimRuntimeError(
                f"The solver type {solver_type} with {ordering} is not supported for now. Only "
                f"{list(SOLVER_TYPES)} with {list(ORDERINGS)} are supported.", user_loc())
        self.dtype, self.solver_type, self.ordering = dtype, solver_type, ordering
        self.matrix = None
        self._factor = None

    def _take(self, A):
        if not isinstance(A, SparseMatrix):
            raise FieldsimTypeError(f"The parameter type: {type(A).__name__} is not supported in "
                                    "linear solvers for now (give a fs.linalg.SparseMatrix)",
                                    user_loc())
        if A.n != A.m:
            raise FieldsimRuntimeError(f"SparseSolver needs a square matrix, got {A.n} x {A.m}",
                                       user_loc())
        self.matrix = A

    def analyze_pattern(self, A):
        self._take(A)
        if A.dtype is not self.dtype:
            raise FieldsimRuntimeError(f"The SparseSolver's dtype {self.dtype} is not consistent "
                                       f"with the SparseMatrix's dtype {A.dtype}.", user_loc())

    def factorize(self, A):
        self._take(A)
        self._factor = _factorize(A, self.solver_type)

    def compute(self, A):
        """`analyze_pattern(A)` then `factorize(A)`."""
        self.analyze_pattern(A)
        self.factorize(A)

    def solve(self, b):
        """The solution of A x = b: numpy for a numpy or field b, an ndarray for an ndarray b."""
        if self.matrix is None or self._factor is None:
            raise FieldsimRuntimeError("Please call compute() (or analyze_pattern() and "
                                       "factorize()) before calling solve().", user_loc())
        rhs, kind = _rhs(b, self.matrix.n)
        return _result(self._factor.solve(rhs), kind, self.dtype)

    def info(self):
        """Whether the factorization succeeded (False for a singular matrix, and for an LLT
        matrix that is not positive definite)."""
        return self._factor is not None and self._factor.ok


def conjugate_gradient(A: SparseMatrix, b, x0, max_iter: int, tol: float):
    """Eigen's ConjugateGradient with a diagonal preconditioner, in float64:
    (x, iterations, estimated relative error)."""
    diag = np.zeros(A.n)
    rows, cols, vals = A._coo()
    on = rows == cols
    np.add.at(diag, rows[on], vals[on])
    inv_diag = np.where(diag != 0, 1.0 / np.where(diag != 0, diag, 1.0), 1.0)
    x = np.zeros(A.n) if x0 is None else np.asarray(x0, np.float64).copy()
    rhs_norm2 = float(b @ b)
    if rhs_norm2 == 0:
        return np.zeros(A.n), 0, 0.0
    r = b - A._matvec(x)
    threshold = max(tol * tol * rhs_norm2, np.finfo(np.float64).tiny)
    res_norm2 = float(r @ r)
    if res_norm2 < threshold:
        return x, 0, float(np.sqrt(res_norm2 / rhs_norm2))
    p = inv_diag * r
    abs_new = float(r @ p)
    i = 0
    while i < max_iter:
        q = A._matvec(p)
        alpha = abs_new / float(p @ q)
        x += alpha * p
        r -= alpha * q
        res_norm2 = float(r @ r)
        if res_norm2 < threshold:
            break
        z = inv_diag * r
        abs_old, abs_new = abs_new, float(r @ z)
        p = z + (abs_new / abs_old) * p
        i += 1
    return x, i, float(np.sqrt(res_norm2 / rhs_norm2))


class SparseCG:
    """Conjugate gradients for a symmetric positive definite SparseMatrix (Taichi's
    `ti.linalg.SparseCG`); `solve()` returns (x as numpy, converged)."""

    def __init__(self, A, b, x0=None, max_iter=50, atol=1e-6):
        if not isinstance(A, SparseMatrix):
            raise FieldsimTypeError(f"SparseCG needs a fs.linalg.SparseMatrix, got "
                                    f"{type(A).__name__}", user_loc())
        self.matrix, self.dtype = A, A.dtype
        self.b, _ = _rhs(b, A.n)
        self.x0 = None if x0 is None else _rhs(x0, A.n)[0]
        self.max_iter, self.atol = int(max_iter), float(atol)

    def solve(self):
        x, iters, err = conjugate_gradient(self.matrix, self.b, self.x0, self.max_iter, self.atol)
        print(f"#iterations:     {iters}")
        print(f"estimated error: {err:g}")
        return x.astype(self.dtype.np), bool(err <= self.atol)


__all__ = ["SparseCG", "SparseSolver"]
