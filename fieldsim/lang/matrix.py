"""`fs.Vector` / `fs.Matrix` in Python scope, and their `.field` constructors.

In kernels the frontend never instantiates these classes: calls such as `fs.Vector([...])` are
scalarised into IR (see `fieldsim.lang.matrix_ops`), and a Python-scope value met in a kernel
becomes a constant vector/matrix. Here they are small numpy-backed values with Taichi's
Python-scope behaviour: arithmetic (every operator, element-wise comparisons returning a
Vector/Matrix of bools), indexing, swizzles (`v.x`, `v.xy`), `to_numpy`, and the usual methods.
A value read from a field element (`x[i]`) is bound to it, as Taichi's element proxies are:
`x[i][0, 1] = v` and `x[i].y = v` write the entries they change back to the field, and every
read (an entry, arithmetic, printing) sees the element's current value, so `r = x[0]` then
`x[0] = ...` changes `r` too (Taichi 1.7.4 reads its host accessors at each use).
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import (
    FieldsimIndexError,
    FieldsimOverflowError,
    FieldsimRuntimeError,
    FieldsimTypeError,
    FieldsimValueError,
)
from fieldsim.lang import field as F
from fieldsim.lang import types as T
from fieldsim.lang.host_errors import at_user_line
from fieldsim.lang.naming import user_loc


class Matrix:
    ndim = 2
    __array_priority__ = 1000  # `np.float64(1) + v` calls v.__radd__: the result stays a Matrix
    _owner = None  # (field, key, storage index) when this value is a field element: writes go through

    def __init__(self, arr, *args, **kwargs):
        if not (args or kwargs) and type(self) is Matrix:
            a = _plain_entries(arr, 2)
            if a is not None:
                self.__dict__.update(_arr=a, dtype=None)
                return
        dt = _value_dtype("Matrix", arr, args, kwargs)
        _check_value_kwargs("Matrix", kwargs)
        if isinstance(dt, (list, tuple)) or (dt is not None and not _is_dtype(dt)):
            raise TypeError(f"fs.Matrix: bad dtype {dt!r}")
        a = _entries_array("Matrix", arr.to_numpy() if hasattr(arr, "to_numpy") else _rows(arr))
        if a.ndim == 1 and type(self) is Matrix:
            self.ndim = 1  # as Taichi 1.7.4: a flat list makes a 1-D Matrix (a vector), not a column
        self._a = _as_dtype(a, dt, arr)
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
        """The i-th unit n-vector; its entries are ints unless `dt` says otherwise (as in
        Taichi, so `I + fs.Vector.unit(3, k)` stays an integer index)."""
        return Vector([int(k == i) for k in range(n)], dt=int if dt is None else dt)

    @classmethod
    def diag(cls, dim, val):
        # an int `val` gives an int matrix, as in Taichi (np.eye made it float)
        return Matrix([[val if i == j else 0 for j in range(dim)] for i in range(dim)])

    @classmethod
    def rows(cls, rows):
        return Matrix([list(np.asarray(_np(r)).reshape(-1)) for r in rows])

    @classmethod
    def cols(cls, cols):
        return Matrix.rows(cols).transpose()

    @staticmethod
    @at_user_line
    def field(n, m, dtype, shape=None, name="", offset=None, needs_grad=False, needs_dual=False,
              layout=None, ndim=None, order=None):
        if ndim not in (None, 1, 2):
            raise ValueError(f"Matrix.field: ndim must be 1 (vectors) or 2 (matrices), got {ndim!r}")
        if ndim == 1:  # as Taichi: a field of n-vectors, m unused (a field_like(x) copy of a vector field)
            return F.make_field(dtype, shape, name, needs_grad, needs_dual, n=n, ndim_el=1,
                                offset=offset, order=order)
        return F.make_field(dtype, shape, name, needs_grad, needs_dual, n=n, m=m, ndim_el=2,
                            offset=offset, order=order)

    @staticmethod
    @at_user_line
    def ndarray(n, m, dtype, shape, needs_grad=False, layout=None):
        """`fs.Matrix.ndarray(n, m, dtype, shape)`: an ndarray of n x m matrices."""
        from fieldsim.lang.ndarray import matrix_ndarray
        return matrix_ndarray(n, m, dtype, shape, needs_grad, layout)

    # -- numpy-like value behaviour
    @property
    def n(self):
        return self._a.shape[0]

    @property
    def m(self):
        return self._a.shape[1] if self._a.ndim > 1 else 1

    def get_shape(self):
        return self._a.shape

    @property
    def entries(self):
        return self._a.reshape(-1)

    def to_numpy(self, keep_dims=False):
        return self._a.copy()

    def to_list(self):
        return self._a.tolist()

    def __array__(self, dtype=None, copy=None):
        return self._a.astype(dtype) if dtype is not None else self._a

    @at_user_line
    def __getitem__(self, k):
        if type(k) is int:  # `v[0]`: an entry, at once (a field element's, read from the field)
            a = self._arr
            if a.ndim == 1 and -a.shape[0] <= k < a.shape[0]:
                if self._owner is None:
                    return a[k]
                if self._owner[0]._live():
                    return self._entry(k, None)
        try:
            v = self._a[k]  # an entry is a numpy scalar of the entries' dtype, as in Taichi
        except IndexError as e:
            raise self._index_error(k, e) from None
        return self._entry(k, v) if np.ndim(v) == 0 else _wrap(v)

    def _index_error(self, k, err):
        """numpy's bare IndexError for `v[k]`, said of this value (or the field element it is)."""
        what = f"a {'vector' if self._a.ndim == 1 else 'matrix'} of shape {self._a.shape}"
        if self._owner is not None:
            field, _, idx = self._owner
            what = f"field {field.ir_name!r} element {tuple(idx)} ({what})"
        if "out of bounds" not in str(err):  # a bad kind of index (a str, too many axes)
            return FieldsimIndexError(f"bad index {k!r} for {what}: {err}")
        return FieldsimIndexError(f"index {k!r} is out of range for {what}")

    def _entry(self, k, v):
        """Entry `k` (value `v`): a field element's is the Python number Taichi's host accessor
        reads, exact for u64 (`x[i][0]` is 18446744073709551615, not np.float64(1.8e19))."""
        if self._owner is None:
            return v
        field, _, idx = self._owner
        if not field._live():
            return v.item()
        ks = k if isinstance(k, tuple) else (k,)  # in range: `self._a[k]` took it (-1 too)
        entry = tuple(idx) + tuple(int(j) % n for j, n in zip(ks, self._a.shape))
        value = np.asarray(field.storage.read_element(entry)).item()  # that entry, not the element
        return int(value) if isinstance(value, bool) else value

    @at_user_line
    def __setitem__(self, k, v):
        if self._owner is not None and self._set_float_entry(k, v):
            return
        try:
            self._a[k]  # checked first: a bad index writes nothing, to the field neither
        except IndexError as e:
            raise self._index_error(k, e) from None
        if self._owner is not None and self._set_int_entry(k, v):
            return
        self._a[k] = _np(v)
        self._write_back(k)

    def _set_float_entry(self, k, v):
        """`x[i][k] = v` of a real number into one entry of a float field's element: that entry
        alone written (the element's other entries are not read and written back)."""
        field, _, idx = self._owner
        if not (field.dtype in _FLOAT_ENTRY_TYPES and type(v) in _REAL_NUMBERS):
            return False
        ks = k if type(k) is tuple else (k,)
        shape = self._arr.shape
        if len(ks) != len(shape) or any(type(j) is not int or not -n <= j < n
                                        for j, n in zip(ks, shape)):
            return False  # slices, numpy ints, out-of-range entries: the general path says why
        field._check_live()
        if -F._TINY32 < v < F._TINY32 and v:  # one comparison for a normal value
            v = F.flushed_write(field.dtype, v)
        F._record_python_write(field, idx)
        field.storage.write_element(tuple(idx) + tuple(j % n for j, n in zip(ks, shape)), v)
        from fieldsim.lang import sparse_host
        sparse_host.activate_python(field, idx)
        return True

    def _set_int_entry(self, k, v):
        """`x[i][k] = v` of integers into an int field element, wrapped in the field's own type
        as a whole-element store wraps it (2**63 overflowed the int64 entries before)."""
        field, key, idx = self._owner
        field._check_live()
        fresh = np.array(field.storage.read_element(idx))
        wrapped = F.wrap_int_leaves(v, field.dtype, np.shape(fresh[k]))
        if wrapped is None:
            return False
        fresh[k] = wrapped
        field[key] = fresh
        return True

    @classmethod
    def _element(cls, entries, field, key, idx):
        """Field element `key` read in Python scope: `entries` bound to it, so writes go through
        (`x[i][0, 1] = v`, `x[i].y = v`); `idx` is the key's checked storage index, so later
        reads of the element's entries skip the key checks."""
        self = object.__new__(cls)
        self.__dict__.update(_arr=entries, dtype=None, _owner=(field, key, idx))
        return self

    @property
    def _a(self):
        """The entries; a field element's are re-read from the field at each use."""
        if self._owner is not None:
            field, _, idx = self._owner
            if field._live():  # a field dropped by a later init keeps its last values
                self._arr[...] = np.asarray(field.storage.read_element(idx))
        return self._arr

    @_a.setter
    def _a(self, arr):
        self._arr = arr

    def _write_back(self, k=Ellipsis):
        """Store entries `k` (all by default), just set in `_arr`, into the field element this
        value was read from; the other entries are re-read, so they keep newer values."""
        if self._owner is not None:
            field, key, idx = self._owner
            field._check_live()
            fresh = np.array(field.storage.read_element(idx))
            fresh[k] = self._arr[k]
            field[key] = fresh

    def fill(self, v):
        self._a[...] = v
        self._write_back()

    def __len__(self):
        return self.n

    def __iter__(self):
        # as Taichi: the entries as `v[i]` reads them (NumPy scalars), rows as lists of them
        if self._a.ndim == 1:
            return (self[i] for i in range(self._a.shape[0]))
        return ([self[i, j] for j in range(self._a.shape[1])] for i in range(self._a.shape[0]))

    # Taichi prints a Python-scope matrix as its numpy array: `[1.5 2. ]`, `[[1 2]\n [3 4]]`
    def __repr__(self):
        return str(self._a)

    __str__ = __repr__

    def _bin(self, other, fn):
        # a Python number stays one, so numpy's promotion keeps the entries' type: an f32
        # vector times 1 / 60 is f32, as in Taichi (a 0-d f64 array made it f64)
        o = other if isinstance(other, (int, float)) else _np(other)
        return _wrap(fn(self._a, o))

    # element-wise comparisons, as in Taichi: NumPy bools (`[ True False]`; `all(a == b)`, `~` is not)
    def __eq__(self, o): return self._bin(o, np.equal)
    def __ne__(self, o): return self._bin(o, np.not_equal)
    def __lt__(self, o): return self._bin(o, np.less)
    def __le__(self, o): return self._bin(o, np.less_equal)
    def __gt__(self, o): return self._bin(o, np.greater)
    def __ge__(self, o): return self._bin(o, np.greater_equal)
    __hash__ = object.__hash__

    def __add__(self, o): return self._bin(o, np.add)
    def __radd__(self, o): return self._bin(o, lambda a, b: b + a)
    def __sub__(self, o): return self._bin(o, np.subtract)
    def __rsub__(self, o): return self._bin(o, lambda a, b: b - a)
    def __mul__(self, o): return self._bin(o, np.multiply)
    def __rmul__(self, o): return self._bin(o, lambda a, b: b * a)
    def __truediv__(self, o): return self._bin(o, np.true_divide)
    def __rtruediv__(self, o): return self._bin(o, lambda a, b: b / a)
    def __floordiv__(self, o): return self._bin(o, np.floor_divide)
    def __rfloordiv__(self, o): return self._bin(o, lambda a, b: b // a)
    def __mod__(self, o): return self._bin(o, np.mod)
    def __rmod__(self, o): return self._bin(o, lambda a, b: b % a)
    def __pow__(self, o): return self._bin(o, np.power)
    def __rpow__(self, o): return self._bin(o, lambda a, b: b ** a)
    def __lshift__(self, o): return self._bin(o, np.left_shift)
    def __rshift__(self, o): return self._bin(o, np.right_shift)
    def __and__(self, o): return self._bin(o, np.bitwise_and)
    def __or__(self, o): return self._bin(o, np.bitwise_or)
    def __xor__(self, o): return self._bin(o, np.bitwise_xor)
    def __rand__(self, o): return self._bin(o, lambda a, b: b & a)
    def __ror__(self, o): return self._bin(o, lambda a, b: b | a)
    def __rxor__(self, o): return self._bin(o, lambda a, b: b ^ a)
    def __neg__(self): return _wrap(-self._a)
    def __pos__(self): return _wrap(self._a.copy())
    def __invert__(self): return _wrap(~self._a)
    def __abs__(self): return _wrap(np.abs(self._a))

    # a scalar result stays a NumPy scalar of the entries' type, as in Taichi (`np.float64(7.5)`)
    def __matmul__(self, o):
        r = self._a @ _np(o)
        return r[()] if np.ndim(r) == 0 else _wrap(r)

    def __rmatmul__(self, o):
        r = _np(o) @ self._a
        return r[()] if np.ndim(r) == 0 else _wrap(r)

    # numpy scalars of the entries' dtype, summed in order, as Taichi's Python-scope matrix ops
    @at_user_line
    def dot(self, o):
        _host_vectors(self, o, "dot")
        return _sum(self._a.reshape(-1) * _np(o).reshape(-1))
    def norm(self, eps=0): return np.sqrt(self.norm_sqr() + eps)
    def norm_inv(self, eps=0): return 1.0 / self.norm(eps)
    def norm_sqr(self): return _sum(self._a ** 2)

    def normalized(self, eps=0):
        # Taichi 1.7.4: v * (1 / (|v| + eps)), the norm without eps inside the root
        return _wrap(self._a * (1.0 / (np.sqrt(np.sum(self._a ** 2)) + eps)))

    def transpose(self): return Matrix(self._a.reshape(self.n, -1).T)
    def trace(self):
        if self._a.ndim != 2 or self.n != self.m:
            from fieldsim.errors import FieldsimTypeError
            from fieldsim.lang.compat import user_loc as _user_loc
            raise FieldsimTypeError(f"trace: expected a square matrix, got shape {self._a.shape}",
                                    _user_loc())
        return _sum(np.diagonal(self._a))
    def determinant(self):
        a = self._a
        return float(host_cofactor_det(a) if a.ndim == 2 and 1 <= a.shape[0] <= 4 else np.linalg.det(a))

    def inverse(self):
        a = self._a
        if a.ndim != 2 or not 1 <= a.shape[0] <= 4 or a.shape[0] != a.shape[1]:
            return Matrix(np.linalg.inv(a))
        return Matrix(host_cofactor_inverse(a))
    def sum(self): return _sum(self._a)
    def max(self): return self._a.max()
    def min(self): return self._a.min()
    # as Taichi 1.7.4's `reduce(...) and True`: a true result is Python's True (so `-v.all()`
    # is -1), a false one NumPy's False (`repr` np.False_)
    def any(self): return np.bool_(np.any(self._a)) and True
    def all(self): return np.bool_(np.all(self._a)) and True
    @at_user_line
    def cross(self, o):
        _host_vectors(self, o, "cross")
        r = host_cross(self._a, _np(o))
        return r[()] if np.ndim(r) == 0 else _wrap(r)
    @at_user_line
    def outer_product(self, o):
        _host_vectors(self, o, "outer_product")
        return Matrix(np.outer(self._a, _np(o)))
    def cast(self, dt): return type(self)(self._a, dt=dt)

    @property
    def T(self):
        return self.transpose()


def _check_value_kwargs(kind, kwargs):
    """Taichi 1.7's value constructors take only `dt` and `ndim`; the pre-1.0 field form
    `ti.Vector(3, dt=ti.f32, shape=...)` is a TypeError there too, here with the new spelling."""
    unknown = sorted(set(kwargs) - {"ndim"})
    if not unknown:
        return
    from fieldsim.errors import FieldsimTypeError
    from fieldsim.lang.compat import user_loc as _user_loc
    hint = f" (a field of them is fs.{kind}.field(..., shape=...))" if "shape" in unknown else ""
    raise FieldsimTypeError(f"fs.{kind}() got unexpected keyword argument(s) "
                            f"{', '.join(unknown)}{hint}", _user_loc())


_OLD_FIELD_FORMS = {"Matrix": ("fs.Matrix.field(n, m, dtype=..., shape=...)", "[[...], ...]"),
                    "Vector": ("fs.Vector.field(n, dtype=..., shape=...)", "[...]")}


def _value_dtype(kind, arr, args, kwargs):
    """`dt` of `fs.Matrix(arr, dt)` / `fs.Vector(arr, dt)`. The pre-1.0 field forms
    `ti.Matrix(2, 2, dt=ti.f32, shape=...)` and `ti.Vector(2, ti.f32, n)` pass more than one
    positional after the entries, which Python reports only as "multiple values for argument
    'dt'" or a count of positionals: they are named here, with the spelling that replaced them."""
    if len(args) > 1 or (args and "dt" in kwargs):
        from fieldsim.errors import FieldsimTypeError
        from fieldsim.lang.compat import user_loc as _user_loc
        field, value = _OLD_FIELD_FORMS[kind]
        raise FieldsimTypeError(
            f"fs.{kind}({arr!r}, {args[0]!r}, ...) is the pre-1.0 spelling of a "
            f"{kind.lower()} field, removed before Taichi 1.0 (Taichi 1.7 has no such form "
            f"either); use {field} for a field, fs.{kind}({value}) for a value", _user_loc())
    return args[0] if args else kwargs.pop("dt", None)


def _is_dtype(dt):
    return isinstance(dt, T.DataType) or dt in (int, float)


def _as_dtype(a, dt, entries=None):
    if dt is int or dt is float:  # the current default_ip/default_fp, as Taichi's cook_dtype
        from fieldsim.lang import runtime
        rt = runtime.get()
        dt = rt.default_fp if dt is float else rt.default_ip
    if not isinstance(dt, T.DataType):
        return a
    if isinstance(entries, (list, tuple)) and np.dtype(dt.np).kind in "iu":
        _check_int_range(entries, dt)
    return a.astype(dt.np)


def _check_int_range(entries, dt):
    """Taichi makes `fs.Vector([300, 2], dt=fs.u8)` with `np.array(entries, dtype)`: a Python
    number out of the type's range (300, -1, -1.5) is NumPy's OverflowError, not a wrapped 44;
    a NaN is its ValueError."""
    try:
        np.array(_rows(list(entries)), dt.np)
    except OverflowError as err:
        raise FieldsimOverflowError(f"fs.Vector/Matrix({list(entries)!r}, dt={dt}): {err}",
                                    user_loc()) from None
    except ValueError as err:
        if "NaN" in str(err):  # NaN into an int type: NumPy's (and Taichi's) ValueError
            raise FieldsimValueError(f"fs.Vector/Matrix({list(entries)!r}, dt={dt}): {err}",
                                     user_loc()) from None
    except TypeError:
        pass  # entries NumPy cannot take with a dtype (vectors inside) are converted as before


def _entries_array(kind: str, entries) -> np.ndarray:
    """`entries` as a numpy array; ragged rows are the user's mistake, said at the user's line.
    A lone number is refused, as Taichi 1.7.4 does: `fs.Vector(3, dt=...)` is the pre-1.0
    declaration of a 3-vector field, which silently became the 1-vector [3.]."""
    if np.isscalar(entries) or (isinstance(entries, np.ndarray) and entries.ndim == 0):
        raise FieldsimTypeError(f"fs.{kind}({entries!r}): a {kind} is made from an array-like of "
                                f"entries (a field of {kind.lower()}s is fs.{kind}.field(..., "
                                f"shape=...))", user_loc())
    try:
        return np.array(entries)
    except ValueError as err:
        raise FieldsimValueError(f"fs.{kind}: the entries {entries!r} do not form a rectangular "
                                 f"array ({err})", user_loc()) from None


def _rows(arr):
    """Rows given as vectors become lists (`fs.Matrix([v0, v1])`)."""
    if isinstance(arr, (list, tuple)):
        return [_np(r).tolist() if isinstance(r, Matrix) else r for r in arr]
    return arr


def _sum(a):
    """Sum of the entries in their own type, as Taichi adds them in Python scope: an i32 vector's
    `dot`/`norm_sqr`/`sum`/`trace` is an np.int32 (NumPy's sum widens to int64), bools or'ed."""
    return a.sum(dtype=a.dtype) if a.dtype.kind in "biu" else a.sum()


def _e(a, i, j):
    n = a.shape[0]
    return a[i % n, j % n]


def host_cofactor_det(a):
    """Determinant of a 1x1..4x4 array by cofactor expansion in the entries' own arithmetic, as
    Taichi 1.7.4 computes it in both scopes (LAPACK's LU gives `17.999999999999996` for 18)."""
    n = a.shape[0]
    if n == 1:
        return a[0, 0]
    if n == 2:
        return a[0, 0] * a[1, 1] - a[0, 1] * a[1, 0]
    if n == 3:
        return (a[0, 0] * (a[1, 1] * a[2, 2] - a[2, 1] * a[1, 2])
                - a[1, 0] * (a[0, 1] * a[2, 2] - a[2, 1] * a[0, 2])
                + a[2, 0] * (a[0, 1] * a[1, 2] - a[1, 1] * a[0, 2]))
    det = a[0, 0] * 0
    for i in range(4):
        det = det + (-1) ** i * a[i, 0] * _minor3(a, i, 1)
    return det


def _minor3(a, i, j):
    """The 3x3 minor of a 4x4 `a` cyclic from (i + 1, j), expanded along its first column."""
    return (_e(a, i + 1, j) * (_e(a, i + 2, j + 1) * _e(a, i + 3, j + 2) - _e(a, i + 3, j + 1) * _e(a, i + 2, j + 2))
            - _e(a, i + 2, j) * (_e(a, i + 1, j + 1) * _e(a, i + 3, j + 2) - _e(a, i + 3, j + 1) * _e(a, i + 1, j + 2))
            + _e(a, i + 3, j) * (_e(a, i + 1, j + 1) * _e(a, i + 2, j + 2) - _e(a, i + 2, j + 1) * _e(a, i + 1, j + 2)))


def host_cofactor_inverse(a):
    """Inverse of a 1x1..4x4 array as (1 / det) times the adjugate, entry by entry: a singular
    2x2 entry comes out as Taichi's `-0.` where `np.linalg.inv` leaves `-1.4e-17`."""
    n = a.shape[0]
    if n == 1:
        return np.array([[1.0 / a[0, 0]]])
    inv_det = 1.0 / host_cofactor_det(a)
    if n == 2:
        adj = [[a[1, 1], -a[0, 1]], [-a[1, 0], a[0, 0]]]
    elif n == 3:
        adj = [[_e(a, i + 1, j + 1) * _e(a, i + 2, j + 2) - _e(a, i + 2, j + 1) * _e(a, i + 1, j + 2)
                for i in range(3)] for j in range(3)]
    else:
        adj = [[(-1) ** (i + j) * _minor3(a, i, j + 1) for i in range(4)] for j in range(4)]
    return np.array([[inv_det * x for x in row] for row in adj])


def host_cross(a, b):
    """Cross product of two 3-vectors, or the scalar `a.x * b.y - a.y * b.x` of two 2-vectors
    (NumPy 2 dropped np.cross of 2-vectors)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape[-1:] == (2,) and b.shape[-1:] == (2,):
        return a[..., 0] * b[..., 1] - a[..., 1] * b[..., 0]
    return np.cross(a, b)


_FLOAT_ENTRY_TYPES = (T.f16, T.f32, T.f64)
_REAL_NUMBERS = (float, int, np.float64, np.float32)


def _host_vectors(a, b, what):
    """As in kernels (matrix_ops.require_vectors): Taichi 1.7.4 refuses a matrix operand."""
    for side, v in (("lhs", a), ("rhs", b)):
        if np.ndim(_np(v)) != 1:
            raise FieldsimTypeError(f"{side} for {what} is not a vector (shape {np.shape(_np(v))})")


def _np(v):
    return v._a if isinstance(v, Matrix) else np.asarray(v)


def _wrap(a):
    """A value of the numpy array `a` (a computed result: no entry checks to make), its own
    copy where `a` is a view (a matrix's row)."""
    if a.ndim not in (1, 2):
        return Vector(a) if a.ndim == 1 else Matrix(a)
    value = object.__new__(Vector if a.ndim == 1 else Matrix)
    value.__dict__.update(_arr=a if a.base is None else a.copy(), dtype=None)
    return value


def _plain_entries(arr, ndim):
    """`arr` as the numpy array the checked constructors would make, when it is a list or tuple
    of numbers (of rows of numbers, for `ndim` 2); None for anything else (those take the
    checked path, which says what is wrong)."""
    if type(arr) not in (list, tuple) or not arr or (type(arr[0]) in (list, tuple)) != (ndim == 2):
        return None
    try:
        a = np.array(arr)
    except ValueError:  # ragged rows: said by the checked path
        return None
    return a if a.ndim == ndim and a.dtype.kind in "fiu" else None


def _swizzle(i, name):
    def get(self):
        a = self._a
        if i >= a.shape[0]:
            _check_py_swizzle(self, name, [i])
        return self._entry(i, a[i])

    def set(self, v):
        if i >= self._arr.shape[0]:
            _check_py_swizzle(self, name, [i])
        self[i] = v
    return property(get, set)


def _check_py_swizzle(vec, name, sw):
    from fieldsim.lang.matrix_ops import check_swizzle
    check_swizzle(name, sw, len(vec._a), f"a vector of {len(vec._a)} entries")


class Vector(Matrix):
    ndim = 1

    def __new__(cls, arr=None, *args, **kwargs):
        # as Taichi: `fs.Vector([[a, b], [c, d]])` is the matrix of those rows, not a flat vector
        if cls is Vector and isinstance(arr, (list, tuple)) and arr \
                and isinstance(arr[0], (list, tuple, np.ndarray)):
            return Matrix(arr, *args, **kwargs)
        return super().__new__(cls)

    def __init__(self, arr, *args, **kwargs):
        if not (args or kwargs):
            a = _plain_entries(arr, 1)
            if a is not None:
                self.__dict__.update(_arr=a, dtype=None)
                return
        dt = _value_dtype("Vector", arr, args, kwargs)
        _check_value_kwargs("Vector", kwargs)
        if dt is not None and not _is_dtype(dt):
            raise TypeError(f"fs.Vector: bad dtype {dt!r}")
        a = _entries_array("Vector", arr.to_numpy() if hasattr(arr, "to_numpy") else arr).reshape(-1)
        self._a = _as_dtype(a, dt, arr)
        self.dtype = dt

    @staticmethod
    @at_user_line
    def field(n, dtype, shape=None, name="", offset=None, needs_grad=False, needs_dual=False,
              layout=None, order=None):
        return F.make_field(dtype, shape, name, needs_grad, needs_dual, n=n, ndim_el=1,
                            offset=offset, order=order)

    @staticmethod
    @at_user_line
    def ndarray(n, dtype, shape, needs_grad=False, layout=None):
        """`fs.Vector.ndarray(n, dtype, shape)`: an ndarray of n-vectors."""
        from fieldsim.lang.ndarray import vector_ndarray
        return vector_ndarray(n, dtype, shape, needs_grad, layout)

    # Taichi's Vector inherits Matrix's `m`: `Vector.zero(float, 3, 1)` is a 3x1 matrix
    @classmethod
    def zero(cls, dt, n, m=None):
        return Vector(np.zeros(n), dt=dt) if m is None else Matrix.zero(dt, n, m)

    @classmethod
    def one(cls, dt, n, m=None):
        return Vector(np.ones(n), dt=dt) if m is None else Matrix.one(dt, n, m)

    def __getattr__(self, name):  # multi-letter swizzles: v.xy, v.zyx, v.rgb
        from fieldsim.lang.matrix_ops import swizzle_indices
        sw = swizzle_indices(name) if not name.startswith("_") else None
        if sw is None:
            raise AttributeError(f"{type(self).__name__} has no attribute {name!r}")
        _check_py_swizzle(self, name, sw)
        return Vector(self._a[sw])

    def __setattr__(self, name, value):
        if name.startswith("_") or name == "dtype":  # the value's own attributes, set per element read
            object.__setattr__(self, name, value)
            return
        from fieldsim.lang.matrix_ops import swizzle_indices
        sw = swizzle_indices(name) if len(name) > 1 else None
        if sw is None:
            object.__setattr__(self, name, value)
            return
        _check_py_swizzle(self, name, sw)
        v = _np(value)
        if np.ndim(v) > 0 and np.size(v) != len(sw):
            raise FieldsimRuntimeError(f"cannot assign {np.size(v)} values to .{name}: value len "
                                       f"does not match the swizzle pattern={name}")
        self._a[sw] = v
        self._write_back(sw)

    x, r, s = _swizzle(0, "x"), _swizzle(0, "r"), _swizzle(0, "s")
    y, g, t = _swizzle(1, "y"), _swizzle(1, "g"), _swizzle(1, "t")
    z, b, p = _swizzle(2, "z"), _swizzle(2, "b"), _swizzle(2, "p")
    w, a, q = _swizzle(3, "w"), _swizzle(3, "a"), _swizzle(3, "q")


class _AnyMatrixType(type):
    # Taichi's constructor: MatrixType(n, m, ndim, dtype); fieldsim's type takes (n, m, dtype, ndim)
    def __instancecheck__(cls, obj):
        return isinstance(obj, T.MatrixType)

    def __call__(cls, n, m, ndim=2, dtype=None):
        return T.MatrixType(n, m, dtype, ndim)


class MatrixType(metaclass=_AnyMatrixType):
    """Taichi's `ti.lang.matrix.MatrixType`: `isinstance` is true of the types
    `fs.types.matrix/vector` make, and `MatrixType(n, m, ndim, dtype)` builds one, with
    Taichi's argument order.

    >>> from fieldsim.lang.matrix import MatrixType
    >>> mat23 = MatrixType(2, 3, 2, fs.f32)
    >>> isinstance(mat23, MatrixType), mat23.n, mat23.m, isinstance(fs.math.vec3, MatrixType)
    (True, 2, 3, True)
    """


class _OneAxisMatrixType(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, T.MatrixType) and obj.vector

    def __call__(cls, n, dtype=None):
        return T.vector(n, dtype)


class VectorType(metaclass=_OneAxisMatrixType):
    """Taichi's `ti.lang.matrix.VectorType`: `isinstance` is true of the types
    `fs.types.vector(n, dt)` makes (MatrixTypes of one axis), false of matrix types, and
    `VectorType(n, dtype)` builds one, as `fs.types.vector(n, dtype)` (a dataclass member's
    type in a forward-mode AD library from GitHub).

    >>> from fieldsim.lang.matrix import VectorType
    >>> isinstance(fs.math.vec3, VectorType), isinstance(fs.math.mat3, VectorType)
    (True, False)
    """
