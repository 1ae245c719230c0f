"""Host-side sparse matrices: `fs.linalg.SparseMatrix` and `fs.linalg.SparseMatrixBuilder`.

A `SparseMatrix` is an n x m matrix stored as canonical CSR numpy arrays (row pointers, sorted
column indices, values of its dtype; duplicates summed, explicit zeros kept, as Eigen's
`setFromTriplets` does). Everything here is plain numpy, so it works without scipy; the
solvers (`fieldsim.sparse_solver`) use scipy where it is installed.

Taichi 1.7's API (`ti.linalg`): `builder.build()` sums the triplets a kernel added (in float64,
then rounded to the dtype, so the result does not depend on the threads' order) and empties
the builder; `A + B`, `A - B`, `A * B` (elementwise), `A @ B`, `A * s`, `s * A`,
`A.transpose()`, `A[i, j]`, `A @ x` for x a numpy vector (gives numpy), a scalar field (gives
numpy) or an ndarray (gives an ndarray), `A.shape`, `str(A)` (dense rows, as Taichi prints),
`A.build_from_ndarray(nd)` ((row, col, value) triplets) and `A.mmwrite(file)`.
Guarantees: mismatched shapes, unsupported operands and out-of-range indices raise a fieldsim
error naming the shapes and the user's line, never a numpy traceback.
"""
from __future__ import annotations

import numbers

import numpy as np

from fieldsim.errors import FieldsimIndexError, FieldsimRuntimeError, FieldsimTypeError
from fieldsim.lang import types as T
from fieldsim.lang.field import Field
from fieldsim.lang.naming import user_loc
from fieldsim.lang.ndarray import Ndarray, ndarray
from fieldsim.lang.triplets import TripletBuffer


def _coalesce(rows, cols, vals, shape, np_dtype):
    """CSR (indptr, indices, data) of COO triplets: sorted by (row, col), duplicates summed in
    float64 and rounded once to `np_dtype`."""
    rows = np.asarray(rows, dtype=np.int64)
    cols = np.asarray(cols, dtype=np.int64)
    key = rows * max(shape[1], 1) + cols
    order = np.argsort(key, kind="stable")
    key = key[order]
    vals = np.asarray(vals, dtype=np.float64)[order]
    first = np.flatnonzero(np.r_[True, key[1:] != key[:-1]]) if key.size else np.zeros(0, np.int64)
    data = np.add.reduceat(vals, first) if key.size else np.zeros(0)
    unique = key[first]
    urows = unique // max(shape[1], 1)
    indptr = np.zeros(shape[0] + 1, dtype=np.int64)
    np.add.at(indptr, urows + 1, 1)
    return np.cumsum(indptr), (unique % max(shape[1], 1)).astype(np.int64), data.astype(np_dtype)


def _error(msg, cls=FieldsimRuntimeError):
    return cls(msg, user_loc())


class SparseMatrix:
    """An n x m sparse matrix (Taichi's `ti.linalg.SparseMatrix`).

    >>> A = fs.linalg.SparseMatrix(2, 2)
    >>> A.shape
    (2, 2)
    """

    def __init__(self, n=None, m=None, sm=None, dtype=T.f32, storage_format="col_major"):
        if sm is not None:  # Taichi's copy constructor
            n, m, dtype, storage_format = sm.n, sm.m, sm.dtype, sm.storage_format
        if n is None:
            raise _error("SparseMatrix needs its number of rows n", FieldsimTypeError)
        self.n, self.m = int(n), int(m) if m else int(n)
        if self.n < 0 or self.m < 0:
            raise _error(f"SparseMatrix: n and m must not be negative, got n={n!r}, m={m!r}")
        self.dtype = dtype
        self.storage_format = storage_format
        self._np = dtype.np
        if sm is not None:
            self._set_csr(sm._indptr.copy(), sm._indices.copy(), sm._data.copy())
        else:
            self._set_csr(np.zeros(self.n + 1, np.int64), np.zeros(0, np.int64), np.zeros(0, self._np))

    # ---- construction ---------------------------------------------------------------------------
    def _set_csr(self, indptr, indices, data):
        self._indptr, self._indices, self._data = indptr, indices, data

    @classmethod
    def _from_coo(cls, rows, cols, vals, shape, dtype, storage_format="col_major"):
        out = cls(shape[0], shape[1], dtype=dtype, storage_format=storage_format)
        out._set_csr(*_coalesce(rows, cols, vals, (out.n, out.m), out._np))
        return out

    def _coo(self):
        rows = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self._indptr))
        return rows, self._indices, self._data

    def _like(self, rows, cols, vals, shape=None):
        return SparseMatrix._from_coo(rows, cols, vals, shape or (self.n, self.m), self.dtype,
                                      self.storage_format)

    def build_from_ndarray(self, nd):
        """Set the matrix from an ndarray of (row, col, value) triplets (any shape whose number
        of scalars is a multiple of 3; rows and cols are truncated to integers)."""
        if not isinstance(nd, Ndarray):
            raise _error("Sparse matrix only supports building from [ti.ndarray, ti.Vector.ndarray, "
                         f"ti.Matrix.ndarray], got {type(nd).__name__}", FieldsimTypeError)
        flat = nd.to_numpy().reshape(-1)
        if flat.size % 3:
            raise _error("The number of ndarray elements must have a length that is divisible by 3.")
        t = flat.reshape(-1, 3)
        rows, cols = t[:, 0].astype(np.int64), t[:, 1].astype(np.int64)
        self._check_inside(rows, cols)
        self._set_csr(*_coalesce(rows, cols, t[:, 2], (self.n, self.m), self._np))

    def _check_inside(self, rows, cols):
        bad = np.flatnonzero((rows < 0) | (rows >= self.n) | (cols < 0) | (cols >= self.m))
        if bad.size:
            k = bad[0]
            raise _error(f"entry ({rows[k]}, {cols[k]}) is outside the {self.n} x {self.m} sparse "
                         "matrix", FieldsimIndexError)

    # ---- element access -------------------------------------------------------------------------
    @property
    def shape(self):
        return (self.n, self.m)

    def _find(self, i, j):
        """(position of entry (i, j) in the CSR arrays or None, the row's insertion point)."""
        i, j = int(i), int(j)
        self._check_inside(np.array([i]), np.array([j]))
        lo, hi = self._indptr[i], self._indptr[i + 1]
        k = lo + int(np.searchsorted(self._indices[lo:hi], j))
        return (k if k < hi and self._indices[k] == j else None), k

    def __getitem__(self, indices):
        k, _ = self._find(*indices)
        return 0.0 if k is None else float(self._data[k])

    def __setitem__(self, indices, value):
        i, j = indices
        k, at = self._find(i, j)
        if k is not None:
            self._data[k] = value
            return
        self._indices = np.insert(self._indices, at, int(j))
        self._data = np.insert(self._data, at, value).astype(self._np)
        self._indptr[int(i) + 1:] += 1

    def to_numpy(self):
        """beyond Taichi: the matrix as a dense numpy array."""
        rows, cols, vals = self._coo()
        dense = np.zeros((self.n, self.m), self._np)
        dense[rows, cols] = vals
        return dense

    # ---- arithmetic -----------------------------------------------------------------------------
    def _same_shape(self, other):
        if not isinstance(other, SparseMatrix):
            raise _error(f"a sparse matrix can only be combined with a sparse matrix here, got "
                         f"{type(other).__name__}", FieldsimTypeError)
        if other.shape != self.shape:
            raise _error(f"Dimension mismatch between sparse matrices {self.shape} and {other.shape}")

    def __add__(self, other):
        self._same_shape(other)
        (r0, c0, v0), (r1, c1, v1) = self._coo(), other._coo()
        return self._like(np.r_[r0, r1], np.r_[c0, c1], np.r_[v0, v1])

    def __sub__(self, other):
        self._same_shape(other)
        (r0, c0, v0), (r1, c1, v1) = self._coo(), other._coo()
        return self._like(np.r_[r0, r1], np.r_[c0, c1], np.r_[v0, -v1.astype(np.float64)])

    def __iadd__(self, other):
        self._set_csr(*(self + other)._csr())
        return self

    def __isub__(self, other):
        self._set_csr(*(self - other)._csr())
        return self

    def _csr(self):
        return self._indptr, self._indices, self._data

    def _scaled(self, s):
        out = SparseMatrix(sm=self)
        out._data = (out._data * s).astype(self._np)
        return out

    def __mul__(self, other):
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            return self._scaled(other)
        self._same_shape(other)  # Taichi: the elementwise (Hadamard) product
        (r0, c0, v0), (r1, c1, v1) = self._coo(), other._coo()
        _, ia, ib = np.intersect1d(r0 * self.m + c0, r1 * self.m + c1, assume_unique=True,
                                   return_indices=True)
        return self._like(r0[ia], c0[ia], v0[ia].astype(np.float64) * v1[ib])

    def __rmul__(self, other):
        if isinstance(other, numbers.Real) and not isinstance(other, bool):
            return self._scaled(other)
        return NotImplemented

    def transpose(self):
        rows, cols, vals = self._coo()
        return self._like(cols, rows, vals, (self.m, self.n))

    def __matmul__(self, other):
        if isinstance(other, SparseMatrix):
            return self._matmul_sparse(other)
        if isinstance(other, Ndarray):
            x = self._vector(other.to_numpy(), other)
            out = ndarray(other.dtype, (self.n,))
            out.from_numpy(self._matvec(x).astype(other.dtype.np))
            return out
        if isinstance(other, Field):
            return self._matvec(self._vector(other.to_numpy(), other)).astype(self._np)
        if isinstance(other, np.ndarray):
            return self._matvec(self._vector(other, other)).astype(self._np)
        raise _error(f"Sparse matrix-matrix/vector multiplication does not support "
                     f"{type(other).__name__}; use a SparseMatrix, a field, an ndarray or a numpy "
                     "array", FieldsimTypeError)

    def _vector(self, arr, what):
        if arr.shape != (self.m,):
            shape = getattr(what, "shape", None)
            raise _error(f"Dimension mismatch between sparse matrix {self.shape} and vector "
                         f"(shape {shape})")
        return arr

    def _matvec(self, x):
        rows, cols, vals = self._coo()
        return np.bincount(rows, weights=vals.astype(np.float64) * x[cols], minlength=self.n)

    def _matmul_sparse(self, other):
        if self.m != other.n:
            raise _error(f"Dimension mismatch between sparse matrices {self.shape} and {other.shape}")
        rows, ks, vals = self._coo()
        counts = other._indptr[ks + 1] - other._indptr[ks]  # entries of row k of `other`
        total = int(counts.sum())
        starts = np.repeat(other._indptr[ks] - np.cumsum(counts) + counts, counts)
        pos = starts + np.arange(total)
        return self._like(np.repeat(rows, counts), other._indices[pos],
                          np.repeat(vals.astype(np.float64), counts) * other._data[pos],
                          (self.n, other.m))

    # ---- printing and files ---------------------------------------------------------------------
    def __str__(self):
        dense = self.to_numpy()
        text = [[format(float(v), "g") for v in row] for row in dense]
        width = max((len(t) for row in text for t in row), default=1)
        return "\n".join("[" + ", ".join(t.rjust(width) for t in row) + "]" for row in text)

    __repr__ = __str__

    def mmwrite(self, filename):
        """Write the matrix as a Matrix Market coordinate file (1-based indices)."""
        rows, cols, vals = self._coo()
        with open(filename, "w") as f:
            f.write("%%MatrixMarket matrix coordinate real general\n")
            f.write(f"{self.n} {self.m} {len(vals)}\n")
            f.writelines(f"{i + 1} {j + 1} {float(v)!r}\n" for i, j, v in zip(rows, cols, vals))


class SparseMatrixBuilder(TripletBuffer):
    """Taichi's `ti.linalg.SparseMatrixBuilder(num_rows, num_cols, max_num_triplets,
    dtype=ti.f32, storage_format='col_major')`: pass it to a kernel argument annotated
    `fs.types.sparse_matrix_builder()`, add entries there with `A[i, j] += v` (from any number
    of threads: duplicates sum), then `build()`."""

    def build(self, dtype=None, _format="CSR"):
        """The matrix of the triplets added so far; the builder is emptied for the next fill."""
        rows, cols, vals = self.triplets()
        out = SparseMatrix._from_coo(rows, cols, vals, (self.num_rows, self.num_cols), self.dtype,
                                     self.storage_format)
        self.clear()
        return out

    def print_triplets(self):
        rows, cols, vals = self.triplets()
        print(f"n={self.num_rows}, m={self.num_cols}, num_triplets={len(vals)} "
              f"(max={self.max_num_triplets})")
        for i, j, v in zip(rows, cols, vals):
            print(f"[{i}, {j}] = {format(float(v), 'g')}")


__all__ = ["SparseMatrix", "SparseMatrixBuilder"]
