"""Fields: dense n-D arrays of scalars, vectors or matrices, with optional grad and dual twins.

A field's data lives in one contiguous row-major buffer of shape `storage_shape` = `shape` plus
the element's component dims ((n,) for vectors, (n, m) for matrices). Placement (`fs.root`)
fixes the shape of fields declared without one. Python-scope access checks indices, shapes and
dtypes and raises IndexError/ValueError/TypeError naming the field, leaving its data unchanged.
"""
from __future__ import annotations

import numbers

import numpy as np

from fieldsim.errors import FieldsimError
from fieldsim.lang import runtime
from fieldsim.lang import types as T


class Field:
    """A scalar (`ndim_el == 0`), vector (1) or matrix (2) field."""

    def __init__(self, dtype, shape=None, name="", needs_grad=False, needs_dual=False,
                 n=None, m=None, ndim_el=0, _role="primal"):
        rt = runtime.get()
        self.dtype = _resolve_dtype(dtype, rt)
        self.name = name or ""
        self.n, self.m, self.ndim_el = n, (1 if ndim_el == 1 else m), ndim_el
        self.uid = len(rt.fields)
        self.generation = rt.generation
        self.role = _role
        self.ir_name = self.name or f"field{self.uid}"
        self.shape = None
        self.storage = None
        self.grad: Field | None = None
        self.dual: Field | None = None
        self.primal: Field | None = None
        self.needs_grad = needs_grad
        self.needs_dual = needs_dual
        rt.fields.append(self)
        if needs_grad and self.dtype.is_float:
            self.grad = self._twin("grad")
        if needs_dual and self.dtype.is_float:
            self.dual = self._twin("dual")
        if shape is not None:
            self._place(_normalize_shape(shape, self))

    def _twin(self, role: str) -> Field:
        twin = Field(self.dtype, None, f"{self.ir_name}.{role}", n=self.n, m=self.m,
                     ndim_el=self.ndim_el, _role=role)
        twin.primal = self
        if self.shape is not None:
            twin._place(self.shape)
        return twin

    def _place(self, shape: tuple):
        if self.shape is not None and self.shape != shape:
            raise ValueError(f"field {self.ir_name!r} is already placed with shape {self.shape}")
        self.shape = shape
        self.storage = runtime.get().backend().allocate(self.storage_shape, self.dtype)
        for twin in (self.grad, self.dual):
            if twin is not None and twin.shape is None:
                twin._place(shape)

    def _invalidate(self):
        self.storage = None
        self.generation = -1

    def _check_live(self):
        if self.generation != runtime.get().generation or self.storage is None:
            if self.shape is None and self.generation == runtime.get().generation:
                raise RuntimeError(f"field {self.ir_name!r} has no shape yet: place it with "
                                   "fs.root.dense(...).place(...) or give shape=")
            raise RuntimeError(f"field {self.ir_name!r} belongs to an earlier fs.init(); "
                               "fields are dropped when fs.init is called again")

    # ---- shape ------------------------------------------------------------------------------
    @property
    def element_shape(self) -> tuple:
        if self.ndim_el == 0:
            return ()
        if self.ndim_el == 1:
            return (self.n,)
        return (self.n, self.m)

    @property
    def storage_shape(self) -> tuple:
        return tuple(self.shape) + self.element_shape

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __len__(self):
        return self.shape[0] if self.shape else 1

    def get_field_members(self):
        return [self]

    def snode(self):
        return self

    def parent(self, n=1):
        return self

    # ---- Python-scope access ----------------------------------------------------------------
    def _index(self, key) -> tuple:
        self._check_live()
        if key is None or key == ():
            key = ()
        elif not isinstance(key, tuple):
            key = (key,)
        if len(key) != len(self.shape):
            raise IndexError(f"field {self.ir_name!r} has {len(self.shape)} dimension(s) "
                             f"(shape {self.shape}) but was indexed with {len(key)} index(es)"
                             + ("; use x[None] for a 0-D field" if not self.shape else ""))
        out = []
        for axis, (k, n) in enumerate(zip(key, self.shape)):
            if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
                raise TypeError(f"field {self.ir_name!r}: index {k!r} on axis {axis} is not an int")
            if not 0 <= int(k) < n:
                raise IndexError(f"field {self.ir_name!r}: index {int(k)} is out of range "
                                 f"[0, {n}) on axis {axis} (shape {self.shape})")
            out.append(int(k))
        return tuple(out)

    def __getitem__(self, key):
        idx = self._index(key)
        value = self.storage.read_element(idx)
        if self.ndim_el == 0:
            return value.item() if hasattr(value, "item") else value
        from fieldsim.lang.matrix import Matrix, Vector
        # bound to the element: `x[i][0, 1] = v` and `x[i].y = v` write through, as in Taichi
        if self.ndim_el == 1:
            return Vector(list(value), dt=self.dtype)._bind(self, key)
        return Matrix([list(r) for r in value], dt=self.dtype)._bind(self, key)

    def __setitem__(self, key, value):
        idx = self._index(key)
        arr = self._coerce(value, self.element_shape, f"element {idx}")
        _record_python_write(self, idx, f"{self.ir_name}[{_index_text(idx)}] = ...")
        self.storage.write_element(idx, arr)

    def _coerce(self, value, shape, what, broadcast=False) -> np.ndarray:
        if hasattr(value, "to_numpy") and not isinstance(value, Field):
            value = value.to_numpy()
        try:
            arr = np.asarray(value)
        except Exception:  # noqa: BLE001 - whatever a user's value raises on conversion
            raise TypeError(f"field {self.ir_name!r}: cannot store {type(value).__name__} "
                            f"into {what}") from None
        if arr.dtype == object or arr.dtype.kind not in "biuf":
            raise TypeError(f"field {self.ir_name!r}: cannot store {value!r} into {what}")
        if self.dtype.is_int and arr.dtype.kind == "f":
            raise TypeError(f"field {self.ir_name!r} holds {self.dtype} values: cannot store the float "
                            f"{value!r} into {what} (cast it with int() first)")
        if arr.shape != tuple(shape):
            if arr.size == 1 and len(shape) == 0:
                arr = arr.reshape(())
            elif arr.shape == () and broadcast:
                arr = np.broadcast_to(arr, shape)
            else:
                raise ValueError(f"field {self.ir_name!r}: {what} has shape {tuple(shape)}, "
                                 f"got a value of shape {arr.shape}")
        return arr.astype(self.dtype.np)

    def to_numpy(self, dtype=None, keep_dims=False) -> np.ndarray:
        self._check_live()
        arr = self.storage.to_numpy()
        if self.ndim_el == 2 and self.m == 1 and not keep_dims:  # Taichi: an n x 1 matrix as a vector
            arr = arr.reshape(arr.shape[:-1])
        return arr.astype(dtype) if dtype is not None else arr

    def from_numpy(self, arr):
        self._check_live()
        if hasattr(arr, "to_numpy") and not isinstance(arr, np.ndarray):
            arr = arr.to_numpy()
        a = np.asarray(arr)
        if self.ndim_el == 2 and self.m == 1 and a.shape == self.storage_shape[:-1]:
            a = a.reshape(self.storage_shape)  # what to_numpy() gives for an n x 1 matrix field
        if a.shape != self.storage_shape:
            raise ValueError(f"field {self.ir_name!r}.from_numpy: expected an array of shape "
                             f"{self.storage_shape}, got {a.shape}")
        if a.dtype.kind not in "biuf":
            raise TypeError(f"field {self.ir_name!r}.from_numpy: unsupported dtype {a.dtype}")
        _record_python_write(self, None, f"{self.ir_name}.from_numpy(...)")
        self.storage.from_numpy(np.ascontiguousarray(a, dtype=self.dtype.np))

    def fill(self, value):
        self._check_live()
        arr = self._coerce(value, self.element_shape, "fill value", broadcast=True)
        _record_python_write(self, None, f"{self.ir_name}.fill(...)")
        self.storage.fill(arr)

    def copy_from(self, other: Field):
        self._check_live()
        if not isinstance(other, Field) or other.storage_shape != self.storage_shape:
            raise ValueError(f"field {self.ir_name!r}.copy_from: needs a field of storage shape "
                             f"{self.storage_shape}")
        _record_python_write(self, None, f"{self.ir_name}.copy_from(...)")
        self.storage.from_numpy(other.to_numpy().astype(self.dtype.np))

    def __repr__(self):
        kind = {0: "field", 1: f"Vector.field({self.n})", 2: f"Matrix.field({self.n}, {self.m})"}
        return f"<fs.{kind[self.ndim_el]} {self.ir_name!r} shape={self.shape} dtype={self.dtype}>"


ScalarField = Field
MatrixField = Field


def _index_text(idx) -> str:
    return ", ".join(str(i) for i in idx) if isinstance(idx, tuple) else str(idx)


def _record_python_write(field: Field, idx, what: str):
    rt = runtime.get()
    if rt.tape is not None:
        try:
            rt.tape.record_python_write(field, idx, what)
        except FieldsimError as err:  # the checker's refusal, without fieldsim's own frames
            raise err.with_traceback(None) from None


def _resolve_dtype(dtype, rt) -> T.DataType:
    if dtype is None or dtype is float:
        return rt.default_fp
    if dtype is int:
        return rt.default_ip
    if isinstance(dtype, T.DataType):
        return dtype
    if isinstance(dtype, T.MatrixType):
        raise TypeError("use fs.Vector.field / fs.Matrix.field for vector and matrix fields")
    try:
        return T.from_numpy(dtype)
    except TypeError:
        raise TypeError(f"unsupported field dtype {dtype!r}") from None


def _normalize_shape(shape, field=None) -> tuple:
    if isinstance(shape, numbers.Integral):
        shape = (int(shape),)
    shape = tuple(int(s) for s in shape)
    if any(s <= 0 for s in shape):
        name = field.ir_name if field is not None else ""
        raise ValueError(f"field {name!r}: shape {shape} must be positive")
    return shape


def field(dtype, shape=None, name="", offset=None, needs_grad=False, needs_dual=False,
          order=None, layout=None) -> Field:
    if isinstance(dtype, T.MatrixType):
        if dtype.ndim == 1:
            return Field(dtype.dtype, shape, name, needs_grad, needs_dual, n=dtype.n, ndim_el=1)
        return Field(dtype.dtype, shape, name, needs_grad, needs_dual, n=dtype.n, m=dtype.m,
                     ndim_el=2)
    return Field(dtype, shape, name, needs_grad, needs_dual)


# ---- placement: fs.root.dense(fs.ij, (n, m)).place(x, y) -------------------------------------
class Axis:
    def __init__(self, *dims):
        self.dims = dims


i, j, k, l = Axis(0), Axis(1), Axis(2), Axis(3)
ij, ik, jk, ijk, ijkl = Axis(0, 1), Axis(0, 2), Axis(1, 2), Axis(0, 1, 2), Axis(0, 1, 2, 3)


def axes(*dims):
    return Axis(*dims)


class SNode:
    def __init__(self, shape=()):
        self.shape = tuple(shape)

    def dense(self, axis, dims) -> SNode:
        dims = _normalize_shape(dims)
        n_axes = len(axis.dims) if isinstance(axis, Axis) else 1
        if len(dims) == 1 and n_axes > 1:
            dims = dims * n_axes
        if len(dims) != n_axes:
            raise ValueError(f"dense: {n_axes} axes but {len(dims)} sizes {dims}")
        return SNode(self.shape + dims)

    pointer = bitmasked = dense

    def place(self, *fields, offset=None) -> SNode:
        for f in fields:
            for member in (f if isinstance(f, (list, tuple)) else [f]):
                member._place(self.shape)
        return self

    def lazy_grad(self):
        for f in list(runtime.get().fields):
            if f.role == "primal" and f.dtype.is_float and f.grad is None:
                f.grad = f._twin("grad")
                f.needs_grad = True

    def lazy_dual(self):
        for f in list(runtime.get().fields):
            if f.role == "primal" and f.dtype.is_float and f.dual is None:
                f.dual = f._twin("dual")


root = SNode()
