"""`fs.Vector` / `fs.Matrix` in Python scope, and their `.field` constructors.

In kernels the frontend never instantiates these classes: calls such as `fs.Vector([...])` are
scalarised into IR (see `fieldsim.lang.matrix_ops`). Here they are small numpy-backed values
with Taichi's Python-scope behaviour: arithmetic, indexing, `to_numpy`, and the usual methods.
"""
from __future__ import annotations

import numpy as np

from fieldsim.lang import field as F
from fieldsim.lang import types as T


class Matrix:
    ndim = 2

    def __init__(self, arr, dt=None, **kwargs):
        a = np.array(arr.to_numpy() if hasattr(arr, "to_numpy") else arr)
        if a.ndim == 1 and type(self) is Matrix:
            a = a.reshape(-1, 1)
        self._a = a.astype(dt.np) if isinstance(dt, T.DataType) else a
        self.dtype = dt

    # -- constructors used in both scopes
    @classmethod
    def zero(cls, dt, n, m=None):
        return cls(np.zeros((n,) if m is None else (n, m)), dt=dt)

    @classmethod
    def one(cls, dt, n, m=None):
        return cls(np.ones((n,) if m is None else (n, m)), dt=dt)

    @classmethod
    def identity(cls, dt, n):
        return Matrix(np.eye(n), dt=dt)

    @classmethod
    def unit(cls, n, i, dt=None):
        v = np.zeros(n)
        v[i] = 1
        return Vector(v, dt=dt)

    @staticmethod
    def field(n, m, dtype, shape=None, name="", offset=None, needs_grad=False, needs_dual=False,
              layout=None, ndim=None):
        return F.Field(dtype, shape, name, needs_grad, needs_dual, n=n, m=m, ndim_el=2,
                       offset=offset)

    # -- numpy-like value behaviour
    @property
    def n(self):
        return self._a.shape[0]

    @property
    def m(self):
        return self._a.shape[1] if self._a.ndim > 1 else 1

    @property
    def entries(self):
        return list(self._a.reshape(-1))

    def to_numpy(self):
        return self._a.copy()

    def to_list(self):
        return self._a.tolist()

    def __array__(self, dtype=None, copy=None):
        return self._a.astype(dtype) if dtype is not None else self._a

    def __getitem__(self, k):
        v = self._a[k]
        return v.item() if np.ndim(v) == 0 else type(self)(v)

    def __setitem__(self, k, v):
        self._a[k] = v

    def __len__(self):
        return self.n

    def __iter__(self):
        return iter(self._a.tolist())

    def __eq__(self, other):
        return np.array_equal(self._a, np.asarray(other))

    def __repr__(self):
        return f"{type(self).__name__}({self._a.tolist()})"

    def _wrap(self, a):
        return Vector(a) if a.ndim == 1 else Matrix(a)

    def _bin(self, other, fn):
        return self._wrap(fn(self._a, np.asarray(other)))

    def __add__(self, o): return self._bin(o, np.add)
    def __radd__(self, o): return self._bin(o, lambda a, b: b + a)
    def __sub__(self, o): return self._bin(o, np.subtract)
    def __rsub__(self, o): return self._bin(o, lambda a, b: b - a)
    def __mul__(self, o): return self._bin(o, np.multiply)
    def __rmul__(self, o): return self._bin(o, lambda a, b: b * a)
    def __truediv__(self, o): return self._bin(o, np.true_divide)
    def __rtruediv__(self, o): return self._bin(o, lambda a, b: b / a)
    def __pow__(self, o): return self._bin(o, np.power)
    def __neg__(self): return self._wrap(-self._a)
    def __matmul__(self, o): return self._wrap(self._a @ np.asarray(o))

    def dot(self, o): return float(np.dot(self._a.reshape(-1), np.asarray(o).reshape(-1)))
    def norm(self, eps=0): return float(np.sqrt(np.sum(self._a ** 2) + eps))
    def norm_sqr(self): return float(np.sum(self._a ** 2))
    def normalized(self, eps=0): return self._wrap(self._a / self.norm(eps))
    def transpose(self): return Matrix(self._a.reshape(self.n, -1).T)
    def trace(self): return float(np.trace(self._a))
    def determinant(self): return float(np.linalg.det(self._a))
    def inverse(self): return Matrix(np.linalg.inv(self._a))
    def sum(self): return self._a.sum().item()
    def max(self): return self._a.max().item()
    def min(self): return self._a.min().item()
    def cross(self, o): return self._wrap(np.cross(self._a, np.asarray(o)))
    def outer_product(self, o): return Matrix(np.outer(self._a, np.asarray(o)))

    @property
    def T(self):
        return self.transpose()


class Vector(Matrix):
    ndim = 1

    def __init__(self, arr, dt=None, **kwargs):
        a = np.array(arr.to_numpy() if hasattr(arr, "to_numpy") else arr).reshape(-1)
        self._a = a.astype(dt.np) if isinstance(dt, T.DataType) else a
        self.dtype = dt

    @staticmethod
    def field(n, dtype, shape=None, name="", offset=None, needs_grad=False, needs_dual=False,
              layout=None):
        return F.Field(dtype, shape, name, needs_grad, needs_dual, n=n, ndim_el=1, offset=offset)

    @classmethod
    def zero(cls, dt, n):
        return Vector(np.zeros(n), dt=dt)

    @property
    def x(self): return self._a[0].item()
    @property
    def y(self): return self._a[1].item()
    @property
    def z(self): return self._a[2].item()
    @property
    def w(self): return self._a[3].item()
