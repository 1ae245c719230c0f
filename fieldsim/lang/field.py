"""Fields: dense n-D arrays of scalars, vectors or matrices, with optional grad and dual twins.

A field's data lives in one contiguous row-major buffer of shape `storage_shape` = `shape` plus
the element's component dims ((n,) for vectors, (n, m) for matrices), except a big field under
sparse nodes, stored chunk- or block-major (`index_map`, lang/mapped_storage.py). Placement (`fs.root`, see
`fieldsim.lang.snode`) fixes the shape of fields declared without one; `offset` shifts the
indices a program uses (storage index = index - offset, in kernels and Python scope alike).
Python-scope access checks indices, shapes and dtypes and raises IndexError/ValueError/TypeError
naming the field, leaving its data unchanged; `x[i][k] = v` writes through to the field.
`get_scalar_field` gives one component of a vector/matrix field as a scalar field view.
"""
from __future__ import annotations

import functools
import math
import numbers
import operator

import numpy as np

from fieldsim.errors import (
    FieldShapeError,
    FieldsimError,
    FieldsimIndexError,
    FieldsimMemoryError,
    FieldsimRuntimeError,
    FieldsimSyntaxError,
    FieldsimTypeError,
    FieldsimValueError,
    HostIndexRangeError,
)
from fieldsim.ir.subnormals import FLUSHING_MACHINE, SMALLEST_NORMAL, flushed_array, flushed_constant
from fieldsim.lang import naming, precision, runtime
from fieldsim.lang import types as T
from fieldsim.lang.host_errors import at_user_line, located_subclasses


@located_subclasses
class Field:
    """A scalar (`ndim_el == 0`), vector (1) or matrix (2) field."""

    index_map = None  # its chunk- or block-major index map (lang/mapped_storage.py), if any
    dual_shared = False  # its dual was exported zero copy (lang/interop.py): forward mode's live set

    def __init__(self, dtype, shape=None, name="", needs_grad=False, needs_dual=False,
                 n=None, m=None, ndim_el=0, _role="primal", offset=None):
        rt = runtime.get()
        self.dtype = _resolve_dtype(dtype, rt)
        self.name = name or ""
        self.n, self.m, self.ndim_el = n, (1 if ndim_el == 1 else m), ndim_el
        if ndim_el and not all(isinstance(k, numbers.Integral) and k >= 1 for k in (n, self.m)):
            raise ValueError(f"a {('vector', 'matrix')[ndim_el - 1]} field needs integer "
                             f"dimensions of at least 1, got n={n!r}, m={self.m!r}")
        self.uid = len(rt.fields)
        self.generation = rt.generation
        self.role = _role
        # the name messages, repr and tape pictures use: name=, else the variable the user's
        # code assigns the field to (`x = fs.field(...)`), else field<uid>
        self.ir_name = self.name or (_role == "primal" and naming.assigned_name()) or \
            f"field{self.uid}"
        self.shape = None
        self.offset = None  # per-axis index of the first cell; None when all zero
        self.storage = None
        self._snode = None  # the PLACE node in the layout tree
        self._grad: Field | None = None
        self._dual: Field | None = None
        self._unplaced: dict = {}  # role -> a twin the user can see but has not attached yet
        self.primal: Field | None = None
        self.needs_grad = needs_grad
        self.needs_dual = needs_dual
        if (needs_grad or needs_dual) and not self.dtype.is_float:
            raise FieldsimRuntimeError(
                f"{self._what}: dtype {self.dtype} is not supported for field with "
                "`needs_grad=True` or `needs_dual=True`. (only float fields have gradients)")
        if offset is not None and shape is None:
            raise FieldsimSyntaxError(f"{self._what}: shape cannot be None when "
                                      "offset is set")
        rt.fields.append(self)
        if needs_grad:
            self._grad = self._twin("grad")
        if needs_dual:
            self._dual = self._twin("dual")
        if shape is not None:
            self._place(_normalize_shape(shape, self), offset=offset)

    # ---- grad and dual twins --------------------------------------------------------------------
    # `x.grad` / `x.dual` of a float field always exist, as in Taichi, so that
    # `fs.root.dense(...).place(x, x.grad)` works; fieldsim's own code asks `x.adjoint` /
    # `x.tangent`, which are None until the twin is attached (needs_grad=True, lazy_grad, or
    # placed by hand).
    @property
    def grad(self) -> Field | None:
        return self._grad if self._grad is not None else self._unplaced_twin("grad")

    @grad.setter
    def grad(self, twin):
        self._grad = twin

    @property
    def dual(self) -> Field | None:
        return self._dual if self._dual is not None else self._unplaced_twin("dual")

    @dual.setter
    def dual(self, twin):
        self._dual = twin

    @property
    def adjoint(self) -> Field | None:
        """The attached gradient twin, or None: what AD and the checker use."""
        return self._grad

    @property
    def tangent(self) -> Field | None:
        """The attached dual twin, or None."""
        return self._dual

    def _unplaced_twin(self, role: str) -> Field | None:
        if self.role != "primal" or not self.dtype.is_float:
            return None
        twin = self._unplaced.get(role)
        if twin is None:
            twin = self._unplaced[role] = self._twin(role, place=False)
        return twin

    def _attach(self, role: str, place: bool = True) -> Field:
        """The attached twin of `role`, made (or the user's unplaced one taken) if needed, and
        placed with this field when it is placed (`lazy_grad`, FwdMode, a twin placed by hand)."""
        current = self._grad if role == "grad" else self._dual
        if current is None:
            current = self._unplaced.pop(role, None) or self._twin(role, place=False)
            setattr(self, "_" + role, current)
        setattr(self, "needs_" + role, True)
        if place and self.shape is not None and current.shape is None:
            self._place_twin(current, self._snode, self.offset)
        return current

    _enable_twin = _attach

    def _twin(self, role: str, place: bool = True) -> Field:
        twin = Field(self.dtype, None, f"{self.ir_name}.{role}", n=self.n, m=self.m,
                     ndim_el=self.ndim_el, _role=role)
        twin.primal = self
        if place and self.shape is not None:
            self._place_twin(twin, self._snode, self.offset)
        return twin

    def _place(self, shape: tuple, offset=None, snode=None):
        primal = self.primal
        if primal is not None and primal._unplaced.get(self.role) is self:
            primal._attach(self.role, place=False)  # the user placed x.grad by hand
            if primal.shape is not None and tuple(shape) != primal.shape:
                raise ValueError(f"{self._what} must have the shape of "
                                 f"{primal.ir_name!r}, {primal.shape}; got {tuple(shape)}")
        if self.shape is not None:
            if self.role in ("grad", "dual") and tuple(shape) == self.shape:
                return  # needs_grad placed it with its field; Taichi programs place it again
            raise FieldsimError(f"{self._what} is already placed (shape {self.shape})")
        offset = _normalize_offset(offset, shape, self)
        own = self.role in ("hidden", "mask", "listing") or getattr(self.primal, "role", None) == "hidden"
        if snode is None and own:  # fieldsim's own fields (and their twins): not in fs.root
            from fieldsim.lang.snode import PLACE
            snode = SNode(PLACE, None)
        if snode is None:  # `shape=`: Taichi's root.dense(axes, shape).place(x)
            from fieldsim.lang.snode import root
            parent = root.dense(Axis(*range(len(shape))), shape) if shape else root
            parent.place(self, offset=offset)
            return
        self.shape = shape
        self.offset = offset
        self._snode = snode
        self.storage = self._new_storage(snode)
        for role in ("grad", "dual"):
            twin = getattr(self, "_" + role)
            if twin is not None and twin.shape is None and getattr(self, "needs_" + role):
                self._place_twin(twin, snode, offset)

    def _place_twin(self, twin, snode, offset):
        """needs_grad/needs_dual: under sparse nodes the twin goes beside the field, as Taichi
        places it, so that it shares the field's activation (a struct-for over x.grad visits
        x's active cells, deactivation zeroes both) and its memory is committed per block."""
        parent = snode._parent if snode is not None else None
        if parent is not None and snode.sparse_path():
            parent.place(twin, offset=offset)
        else:
            twin._place(self.shape, offset=offset)

    def _new_storage(self, snode):
        from fieldsim.lang.mapped_storage import MappedStorage, layout_for
        backend = runtime.get().backend()
        self.index_map = layout_for(snode, self.storage_shape, len(self.shape),
                                    self.dtype.np.itemsize,
                                    getattr(backend, "sparse_reserve_bytes", None))
        shape = self.storage_shape if self.index_map is None else self.index_map.physical
        try:
            # a sparse node's mask is one too: deactivate_all hands its pages back instead of
            # writing zeros over all of them (4 GB for a 4096^3 grid's inner pointer)
            sparse = bool(snode.sparse_path()) or self.role == "mask"
            storage = backend.allocate(shape, self.dtype, sparse=sparse)
        except MemoryError:
            raise FieldsimMemoryError(_allocation_failed(self), naming.user_loc()) from None
        return storage if self.index_map is None else MappedStorage(storage, self.index_map)

    @property
    def snode(self):
        return self._snode

    @property
    def _name(self) -> str:
        return self.name

    def parent(self, n=1):
        return self._snode.parent(n) if self._snode is not None else None

    @property
    def _offset(self) -> tuple:
        return self.offset if self.offset is not None else (0,) * len(self.shape or ())

    def _invalidate(self):
        self.storage = None
        self.generation = -1

    def _destroy(self):
        """Free the storage of this field and its twins (`SNodeTree.destroy()`)."""
        for f in (self, self._grad, self._dual):
            if f is not None:
                f._invalidate()
                f._destroyed = True

    @property
    def _what(self) -> str:
        """How messages name this field (an `fs.ndarray` says so)."""
        return f"field {self.ir_name!r}"

    def _live(self) -> bool:
        """Whether the storage is still usable (not destroyed nor dropped by a later init)."""
        return (not getattr(self, "_destroyed", False) and self.storage is not None
                and self.generation == runtime.get().generation)

    def _check_live(self):
        if getattr(self, "_destroyed", False):
            raise FieldsimRuntimeError(f"{self._what} was destroyed with its SNodeTree "
                                       "(FieldsBuilder.finalize().destroy())", naming.user_loc())
        if self.generation != runtime.get().generation or self.storage is None:
            if (self.shape is None and self.primal is not None and self.generation == runtime.get().generation
                    and self.primal._unplaced.get(self.role) is self):
                raise FieldsimRuntimeError(unplaced_twin_message(self), naming.user_loc())
            if self.shape is None and self.generation == runtime.get().generation:
                raise FieldsimRuntimeError(f"{self._what} has no shape yet: place it with "
                                           "fs.root.dense(...).place(...) or give shape=",
                                           naming.user_loc())
            raise FieldsimRuntimeError(f"{self._what} belongs to an earlier fs.init(); "
                                       "fields are dropped when fs.init is called again",
                                       naming.user_loc())

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
        """As Taichi's `MatrixField.ndim`: a vector field's is 1, a matrix field's 2 (its
        elements'); a scalar field's (Taichi's has none) is its number of axes."""
        return self.ndim_el or len(self.shape)

    def __len__(self):
        return self.shape[0] if self.shape else 1

    def get_field_members(self):
        return [self]

    _get_field_members = get_field_members

    def __iter__(self):
        raise FieldScopeError(f"{self._what}: Struct for is only available in Taichi "
                                  "scope (iterate over fs.ndrange(*x.shape) in Python)")

    # ---- Python-scope access ----------------------------------------------------------------
    def _index(self, key) -> tuple:
        """Storage indices (offset removed) of a user's key, checked against the field."""
        self._check_live()
        if key is None and not self.shape:  # loss[None]
            return ()
        if type(key) is int and len(self.shape) == 1:  # x[i], the common case: one axis to check
            off = self._offset[0]
            if off <= key < off + self.shape[0]:
                return (key - off,)
            return (self._axis_index(0, key, self.shape[0], off),)
        if type(key) is tuple:
            idx = self._plain_index(key)
            if idx is not None:
                return idx
        key = _key_tuple(key)
        for axis, k in enumerate(key):
            if isinstance(k, slice) or k is Ellipsis:
                raise FieldsimTypeError(
                    f"{self._what}: Detected illegal element of type: {type(k).__name__} "
                    f"on axis {axis}. Please be aware that slicing a ti.field is not supported so far.")
        if len(key) != len(self.shape):
            raise FieldIndexCountError(
                f"{self._what} has {len(self.shape)} dimension(s) (shape {self.shape}) "
                f"but was indexed with {len(key)} index(es)"
                + ("; use x[None] for a 0-D field" if not self.shape else "")
                + " (Slicing is not supported on ti.field)")
        return tuple(self._axis_index(axis, k, n, off)
                     for axis, (k, n, off) in enumerate(zip(key, self.shape, self._offset)))

    def _plain_index(self, key: tuple):
        """`x[i, j]` with plain ints all in range: the storage index without the general
        checks (Python loops over 2-D and 3-D fields); None where those must word an error."""
        if len(key) != len(self.shape) or not key:
            return None
        idx = tuple(k - off for k, n, off in zip(key, self.shape, self._offset)
                    if type(k) is int and off <= k < off + n)
        return idx if len(idx) == len(key) else None

    def _axis_index(self, axis, k, n, off) -> int:
        """One axis's storage index: an int within [off, off + n), offset removed."""
        if isinstance(k, (bool, np.bool_)) or not isinstance(k, numbers.Integral):
            raise TypeError(f"{self._what}: index {k!r} on axis {axis} is not an int")
        if not off <= int(k) < off + n:
            raise HostIndexRangeError(f"{self._what}: index {int(k)} is out of range "
                             f"[{off}, {off + n}) on axis {axis} (shape {self.shape}"
                             + (f", offset {self.offset})" if self.offset else ")"))
        return int(k) - off

    def __getitem__(self, key):
        idx = self._index(key)
        _record_python_read(self, idx)
        value = self.storage.read_element(idx)
        if self.ndim_el == 0:
            value = value.item() if hasattr(value, "item") else value
            return int(value) if isinstance(value, bool) else value  # a u1 reads as 0/1, as in Taichi
        from fieldsim.lang.matrix import Matrix, Vector
        # bound to the element: `x[i][0, 1] = v` and `x[i].y = v` write through, as in Taichi.
        # Entries are Python numbers, as Taichi reads them: a float field's element is an f64
        # array in Python scope (prints `[2.20000005 1.]`, computes in f64 there).
        kind = Vector if self.ndim_el == 1 else Matrix
        value = np.asarray(value)
        entries = value.astype(np.float64) if value.dtype.kind == "f" else np.array(value.tolist())
        return kind._element(entries, self, key, idx)

    def __setitem__(self, key, value):
        idx = self._index(key)
        arr = self._scalar(value)
        if arr is None:
            arr = self._coerce(value, self.element_shape, f"element {idx}")
            if arr.dtype == np.float32 and _flushes():
                arr = flushed_array(arr)
        _record_python_write(self, idx)
        self.storage.write_element(idx, arr)
        if self._snode is not None and self._snode.sparse_path():
            from fieldsim.lang import sparse_host
            sparse_host.activate_python(self, idx)

    def _scalar(self, value):
        """A Python int or float for a scalar element, stored as `_coerce` stores it but
        without its general checks; None where those are needed (a value out of the dtype's
        exact range, a bool, a NumPy scalar, a float for an integer field, a vector element)."""
        if self.ndim_el or type(value) not in (int, float):
            return None
        bounds = _scalar_bounds(self.dtype, type(value))
        if bounds is None or not bounds[0] <= value <= bounds[1]:
            return None
        if -_TINY32 < value < _TINY32 and value:  # one comparison for a normal value
            value = flushed_write(self.dtype, value)
        return np.array(value, self.dtype.np)

    def _coerce(self, value, shape, what, broadcast=False, truncate=False) -> np.ndarray:
        if hasattr(value, "to_numpy") and not isinstance(value, Field):
            value = value.to_numpy()
        wrapped = None if truncate else wrap_int_leaves(value, self.dtype, shape)
        if wrapped is not None:
            return wrapped
        try:
            arr = np.asarray(value)
        except Exception:  # noqa: BLE001 - whatever a user's value raises on conversion
            raise TypeError(f"{self._what}: cannot store {type(value).__name__} "
                            f"into {what}") from None
        if arr.dtype == object or arr.dtype.kind not in "biuf":
            raise TypeError(f"{self._what}: cannot store {value!r} into {what}")
        if self.dtype.is_int and arr.dtype.kind == "f" and truncate:
            arr = np.trunc(arr)  # fill assigns in a kernel as Taichi's does: floats truncate
        elif self.dtype.is_int and arr.dtype.kind == "f":
            raise TypeError(f"{self._what} holds {self.dtype} values: cannot store the float "
                            f"{value!r} into {what} (cast it with int() first)")
        if arr.shape != tuple(shape):
            if arr.size == 1 and len(shape) == 0:
                arr = arr.reshape(())
            elif arr.shape == () and broadcast:
                arr = np.broadcast_to(arr, shape)
            else:
                raise ElementShapeError(f"{self._what}: {what} has shape {tuple(shape)}, "
                                        f"got a value of shape {arr.shape}")
        with np.errstate(over="ignore", invalid="ignore"):  # 1e300 into f32 is inf, silently
            return arr.astype(self.dtype.np)

    def to_numpy(self, dtype=None, keep_dims=False) -> np.ndarray:
        runtime.python_scope_call(f"{self._what}.to_numpy()")
        self._check_live()
        _record_python_read(self, None, "to_numpy()")
        from fieldsim.lang import sparse_host
        arr = sparse_host.read_active(self)
        if arr is None:
            arr = self.storage.to_numpy()
        arr = arr.reshape(self._host_shape(keep_dims))
        if dtype is None:
            return arr
        precision.host_copy(self, _np_dtype(dtype), self.dtype, "to")
        return arr.astype(_np_dtype(dtype))

    def _host_shape(self, keep_dims) -> tuple:
        """The shape `to_numpy`/`to_torch` give, as Taichi's: a vector field is n x 1 matrices
        with keep_dims; an n x 1 matrix field is vectors without it."""
        if keep_dims and self.ndim_el == 1:
            return tuple(self.shape) + (self.n, 1)
        if self.ndim_el == 2 and self.m == 1 and not keep_dims:
            return tuple(self.shape) + (self.n,)
        return self.storage_shape

    def from_numpy(self, arr):
        runtime.python_scope_call(f"{self._what}.from_numpy()")
        self._check_live()
        if hasattr(arr, "to_numpy") and not isinstance(arr, np.ndarray):
            arr = arr.to_numpy()
        a = _host_array(arr, f"{self._what}.from_numpy")
        if a.shape != self.storage_shape and self.ndim_el == 1 and \
                a.shape == tuple(self.shape) + (self.n, 1):
            a = a.reshape(self.storage_shape)
        if self.ndim_el == 2 and self.m == 1 and a.shape == self.storage_shape[:-1]:
            a = a.reshape(self.storage_shape)  # what to_numpy() gives for an n x 1 matrix field
        if a.shape != self.storage_shape:
            raise ValueError(f"{self._what}.from_numpy: expected an array of shape "
                             f"{self.storage_shape}, got {a.shape}")
        if a.dtype.kind not in "biuf":
            raise TypeError(f"{self._what}.from_numpy: unsupported dtype {a.dtype}")
        if a.dtype.kind == "f" and not self.dtype.is_float and not np.isfinite(a).all():
            where = tuple(int(k) for k in np.argwhere(~np.isfinite(a))[0])
            raise ValueError(f"{self._what}.from_numpy: the array holds {a[where]} at "
                             f"{where}, which the {self.dtype} field cannot store")
        precision.host_copy(self, self.dtype, a.dtype, "from")
        _record_python_write(self, None, f"{self.ir_name}.from_numpy(...)")
        a = np.ascontiguousarray(a, dtype=self.dtype.np)
        self._write_all(flushed_array(a) if a.dtype == np.float32 and _flushes() else a)

    def fill(self, value):
        self._check_live()
        arr = _through_default_fp(value, self._coerce(value, self.element_shape, "fill value",
                                                      broadcast=True, truncate=True))
        if _flushes():  # Taichi fills in a kernel: f64 subnormals are flushed too
            arr = flushed_array(arr)
        _record_python_write(self, None, f"{self.ir_name}.fill(...)")
        from fieldsim.lang import sparse_host
        if not sparse_host.write_active(self, arr):
            self.storage.fill(arr)

    def copy_from(self, other: Field):
        runtime.python_scope_call(f"{self._what}.copy_from()")
        self._check_live()
        if not isinstance(other, Field):
            raise FieldsimTypeError(f"{self._what}.copy_from: needs a field, got "
                            f"{type(other).__name__}")
        if other.storage_shape != self.storage_shape:
            raise ValueError(f"{self._what}.copy_from: needs a field of storage shape "
                             f"{self.storage_shape}")
        from fieldsim.lang.copy_kernel import copy_on_tape
        if copy_on_tape(self, other):  # recorded and differentiated, as Taichi's copy kernel
            return
        # a checkpoint's forward follows the copy's read of `other` too (gh-regress9)
        _record_python_read(other, None, text=f"{self.ir_name}.copy_from({other.ir_name})")
        _record_python_write(self, None, f"{self.ir_name}.copy_from(...)")
        if not _copy_in_place(self, other):
            # Taichi copies over the whole index range, not a struct-for: every cell of the
            # destination is written, so its sparse ancestors all end up active
            from fieldsim.lang import sparse_host
            sparse_host.activate_python(self, None)
            self._write_all(other.storage.to_numpy().astype(self.dtype.np))

    def _write_all(self, arr):
        """Storage-shaped `arr` into the field; under sparse nodes into its active cells only."""
        from fieldsim.lang import sparse_host
        if not sparse_host.write_active(self, arr):
            self.storage.from_numpy(arr)

    def get_scalar_field(self, i, j=0):
        """Component (i, j) of a vector/matrix field as a scalar field sharing its data."""
        if self.ndim_el == 0:
            raise FieldsimTypeError(f"{self._what} is a scalar field: it has no "
                                    "components")
        if not (0 <= i < self.n and 0 <= j < (self.m or 1)):
            raise FieldsimIndexError(f"{self._what}: component ({i}, {j}) is out of "
                                     f"range for elements of shape {self.element_shape}")
        return ComponentField(self, i * (self.m or 1) + j)

    def __repr__(self):
        kind = {0: "field", 1: f"Vector.field({self.n})", 2: f"Matrix.field({self.n}, {self.m})"}
        return f"<fs.{kind[self.ndim_el]} {self.ir_name!r} shape={self.shape} dtype={self.dtype}>"

    def __str__(self):
        """`print(x)` in Python scope shows the values, as Taichi prints a field."""
        if self.shape is None:
            return repr(self)
        return str(self.to_numpy())


def _copy_in_place(dst: Field, src: Field) -> bool:
    """`dst.copy_from(src)` as one array copy, where both are dense fields stored as arrays
    (the CPU backend's fields): an LBM step's `f.copy_from(buf)` made three copies (to_numpy,
    astype, from_numpy) into freshly mapped pages, five times Taichi's kernel copy. False
    where the field's storage or sparse layout needs the general path."""
    from fieldsim.lang.ndarray import ArrayStorage
    from fieldsim.lang.sparse import field_path
    if not (isinstance(dst.storage, ArrayStorage) and isinstance(src.storage, ArrayStorage)):
        return False
    if field_path(dst):
        return False
    with np.errstate(over="ignore", invalid="ignore"):  # as a kernel's copy: 1e300 -> inf
        np.copyto(dst.storage.array, src.storage.array, casting="unsafe")
    return True


class ComponentField(Field):
    """`m.get_scalar_field(i, j)`: one component of a vector/matrix field, as a scalar field
    whose data is the owner's. Kernels see it as the owner's component (the frontend redirects
    every access), Python scope through `_ComponentStorage`. Placing it places the owner (Taichi
    lets components go to different SNodes; here all components share one shape, or it raises).
    """

    def __init__(self, owner: Field, comp: int):  # a view: not registered with the runtime
        self.owner, self.comp = owner, comp
        self.dtype, self.n, self.m, self.ndim_el = owner.dtype, None, None, 0
        self.name = f"{owner.name}[{comp}]" if owner.name else ""
        self.ir_name = f"{owner.ir_name}[{comp}]"
        self.uid, self.role, self.primal = (owner.uid, comp), owner.role, None
        self.needs_grad = self.needs_dual = False
        self._grad = self._dual = None
        self._own_snode = None

    generation = property(lambda self: self.owner.generation)
    shape = property(lambda self: self.owner.shape)
    offset = property(lambda self: self.owner.offset)
    _snode = property(lambda self: self._own_snode or self.owner._snode)

    @property
    def storage(self):
        return None if self.owner.storage is None else _ComponentStorage(self.owner, self.comp)

    def component_indices(self) -> tuple:
        m = self.owner.m or 1
        return (self.comp,) if self.owner.ndim_el == 1 else (self.comp // m, self.comp % m)

    def _visible_twin(self, role):
        twin = getattr(self.owner, role)
        return None if twin is None else ComponentField(twin, self.comp)

    def _place(self, shape: tuple, offset=None, snode=None):
        if self.owner.shape is None:
            self.owner._place(shape, offset=offset, snode=snode)
        elif tuple(shape) != self.owner.shape or \
                _normalize_offset(offset, shape, self) != self.owner.offset:
            raise FieldsimError(
                f"{self._what}: the components of {self.owner.ir_name!r} must all be "
                f"placed with one shape and offset (it has {self.owner.shape}, this placement "
                f"{tuple(shape)}); fieldsim stores a matrix field's components together")
        self._own_snode = snode


class _ComponentStorage:
    """One component of a matrix field's storage, with the storage interface `Field` uses."""

    def __init__(self, owner: Field, comp: int):
        m = owner.m or 1
        self.owner = owner
        self.cidx = (comp,) if owner.ndim_el == 1 else (comp // m, comp % m)

    def read_element(self, idx):
        return self.owner.storage.read_element(tuple(idx) + self.cidx)

    def write_element(self, idx, value):
        self.owner.storage.write_element(tuple(idx) + self.cidx, value)

    def to_numpy(self):
        return np.ascontiguousarray(self.owner.storage.to_numpy()[(Ellipsis,) + self.cidx])

    def from_numpy(self, arr):
        full = self.owner.storage.to_numpy()
        full[(Ellipsis,) + self.cidx] = arr
        self.owner.storage.from_numpy(full)

    def fill(self, value):
        self.from_numpy(np.broadcast_to(np.asarray(value), self.owner.shape))

    def zero(self):
        self.fill(0)


class _ElementKind(type):
    """isinstance against Taichi's field classes: fieldsim has one `Field` class, and a field
    is Taichi's `ScalarField` or `MatrixField` by its elements, so that libraries that pick
    `ti.Vector.field` or `ti.field` by `isinstance(x, ti.MatrixField)` see what Taichi's do."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, Field) and cls.holds(obj)


class ScalarField(metaclass=_ElementKind):
    """Taichi's class of fields of scalars: `isinstance(x, fs.ScalarField)` holds for
    `fs.field(...)`, not for a vector or matrix field."""

    @staticmethod
    def holds(f: Field) -> bool:
        return f.ndim_el == 0


class MatrixField(metaclass=_ElementKind):
    """Taichi's class of vector and matrix fields: `isinstance(x, fs.MatrixField)` holds for
    `fs.Vector.field(...)` and `fs.Matrix.field(...)`, not for a field of scalars."""

    @staticmethod
    def holds(f: Field) -> bool:
        return f.ndim_el > 0


def unplaced_twin_message(twin: Field) -> str:
    """Taichi's words for a `.grad`/`.dual` twin used before it is placed."""
    kind = "Gradient" if twin.role == "grad" else "Dual"
    flag = "needs_grad" if twin.role == "grad" else "needs_dual"
    return (f"{kind} {twin.ir_name} has not been placed, check whether `{flag}=True` is set "
            f"for field {twin.primal.ir_name!r} (or place it with fs.root...place({twin.ir_name}), "
            f"or call fs.root.lazy_{twin.role}())")


def placed_twin(f: Field, role: str) -> Field:
    """`f.grad` / `f.dual` in a kernel: the placed twin, or a clear error."""
    from fieldsim.errors import FieldsimTypeError
    twin = f.adjoint if role == "grad" else f.tangent
    if twin is not None:
        return twin
    unplaced = f.grad if role == "grad" else f.dual
    if unplaced is not None:
        raise FieldsimTypeError(unplaced_twin_message(unplaced))
    raise FieldsimTypeError(f"field {f.ir_name!r} has no {role}: only float fields have one")


def _key_tuple(key) -> tuple:
    """A Python-scope key as a tuple: x[None] and x[()] are (), x[i] is (i,), a list or a
    Vector index (fs.grouped) its entries."""
    if hasattr(key, "_a") and hasattr(key, "entries"):  # a Vector index (fs.grouped)
        key = tuple(key.entries)
    if key is None or (isinstance(key, (tuple, list)) and len(key) == 0):
        return ()
    if isinstance(key, list):
        return tuple(key)
    if not isinstance(key, tuple):
        return (key,)
    return key


def _index_text(idx) -> str:
    return ", ".join(str(i) for i in idx) if isinstance(idx, tuple) else str(idx)


def _record_python_write(field: Field, idx, what: str | None = None):
    """Tells a recording Tape of a Python-scope write (and a FwdMode block of one into a dual);
    `what` (the write as the user wrote it) defaults to the element store `field[idx] = ...`,
    spelled only when a Tape asks."""
    rt = runtime.get()
    owner = field.owner if isinstance(field, ComponentField) else field
    if rt.fwd_mode is not None and owner.role == "dual":  # its field's tangent may be nonzero
        rt.fwd_mode.note_dual_write(owner)
    if rt.tape is None:
        return
    if what is None:
        what = f"{field.ir_name}[{_index_text(idx)}] = ..."
    try:  # the checker knows the owner (element granularity)
        rt.tape.record_python_write(owner, idx, what)
    except FieldsimError as err:  # the checker's refusal, without fieldsim's own frames
        raise err.with_traceback(None) from None


_READ_WATCHERS = [0]  # recorders following Python-scope reads now (`watch_python_reads`)


def watch_python_reads(delta: int) -> None:
    """A recorder that follows Python-scope reads starts (+1) or stops (-1) listening."""
    _READ_WATCHERS[0] += delta


def _record_python_read(field: Field, idx, what: str | None = None, text: str | None = None):
    """Tells a recorder that follows Python-scope reads (`fs.ad.checkpoint`'s forward) of one;
    `text`: the read as the user wrote it, where `what` is not a method of `field`."""
    if not _READ_WATCHERS[0]:  # the common case, kept cheap: element reads in Python loops
        return
    read = getattr(runtime.get().tape, "record_python_read", None)
    if read is not None:
        owner = field.owner if isinstance(field, ComponentField) else field
        if text is None:
            text = f"{field.ir_name}.{what}" if what else f"{field.ir_name}[{_index_text(idx)}]"
        read(owner, idx, text)


def _allocation_failed(field) -> str:
    """Why a field's storage could not be had: its size and, under sparse nodes, that fieldsim
    lays those out densely at their full size (Taichi allocates only the cells in use)."""
    nbytes = math.prod(field.storage_shape) * np.dtype(field.dtype.np).itemsize
    element = field.storage_shape[len(field.shape):]
    what = f"{field.dtype}" + (f" elements of shape {element}" if element else "")
    msg = (f"field {field.ir_name!r} needs {nbytes / 2**30:.1f} GiB of storage (shape "
           f"{field.shape}, {what}) and the allocation failed")
    nodes = field._snode.sparse_path() if field._snode is not None else []
    if nodes:
        sizes = ", ".join(f"{n.kind}(" + ", ".join(f"axis {a}: {c}" for a, c in n.own.items()) + ")"
                          for n in nodes)
        msg += (f"; fieldsim lays out fields under pointer, bitmasked and dynamic nodes densely "
                f"(on the CPU a reservation that commits memory only where written, but whose "
                f"full size must fit the address space), where Taichi allocates only the cells "
                f"in use: make {sizes} smaller")
    return msg


def _resolve_dtype(dtype, rt) -> T.DataType:
    dtype = T.concrete_dtype(float if dtype is None else dtype, rt.default_fp, rt.default_ip)
    if isinstance(dtype, T.DataType):
        return dtype
    if isinstance(dtype, T.MatrixType):
        raise TypeError("use fs.Vector.field / fs.Matrix.field for vector and matrix fields")
    if isinstance(dtype, str):  # numpy would read "float" as f64, where `float` means default_fp
        raise TypeError(f"unsupported field dtype {dtype!r}: use fs.f32, fs.i32, ... or float/int")
    try:
        return T.from_numpy(dtype)
    except TypeError:
        raise TypeError(f"unsupported field dtype {dtype!r}") from None


class FieldScopeError(FieldsimError, NotImplementedError):
    """A kernel-only field operation (a struct-for) tried in Python scope."""


class FieldIndexCountError(FieldsimIndexError, AssertionError):
    """A field indexed with the wrong number of indices (Taichi raises AssertionError here)."""


class ElementShapeError(FieldsimValueError, TypeError):
    """A value of the wrong shape for a field element or fill (`v[i] = 0.5` into a vector
    field): a TypeError as in Taichi 1.7.4, and still the ValueError fieldsim raised before."""


class _NotIntLeaf(Exception):
    pass


def _int_leaf(v):
    if isinstance(v, (bool, np.bool_)):
        return int(v)
    if isinstance(v, (int, np.integer)) and -2 ** 63 <= int(v) < 2 ** 64:
        return int(v)
    if isinstance(v, np.floating) and not isinstance(v, float) and np.isfinite(v):
        return int(v)  # Taichi truncates an np.float32 (not a Python float) into an int field
    raise _NotIntLeaf


def wrap_int_leaves(value, dtype, shape):
    """A scalar or nested list/tuple of integers for an integer field element, each wrapped to
    the field's bits one by one as Taichi's host accessors store them (`[2**63, -1]` into u8 is
    `[0, 255]`; through one NumPy array the pair would become floats). None for anything else."""
    def walk(v):  # an array's entries stay NumPy scalars: np.float32 ones truncate, f64 do not
        if isinstance(v, np.ndarray):
            v = list(v) if v.ndim else v[()]
        return [walk(e) for e in v] if isinstance(v, (list, tuple)) else _int_leaf(v)
    dt = np.dtype(dtype.np) if dtype.is_int else None
    if dt is None or dt.kind not in "iu":
        return None
    try:
        ints = walk(value)
    except _NotIntLeaf:
        return None
    bits = dt.itemsize * 8

    def wrap(v):
        if isinstance(v, list):
            return [wrap(e) for e in v]
        v &= (1 << bits) - 1
        return v - (1 << bits) if dt.kind == "i" and v >> (bits - 1) else v
    try:
        arr = np.array(wrap(ints), dtype=dt)
    except ValueError:  # ragged: the caller's shape check words the error
        return None
    return arr if arr.shape == tuple(shape) else None


_TINY32 = SMALLEST_NORMAL[32]


def _flushes() -> bool:
    """Whether Python-scope writes flush subnormals, as Taichi's x64 CPU backend's do."""
    return FLUSHING_MACHINE and runtime.get().arch == runtime.cpu


def _through_default_fp(value, arr: np.ndarray) -> np.ndarray:
    """A float fill value as Taichi 1.7.4 stores it: its fill is a kernel taking the value as a
    template argument, a float literal there, so it is a constant of default_fp first
    (`x.fill(1 / 3)` of an f64 field under an f32 default_fp stores f32's 1/3, `x.fill(1e-40)`
    a flushed 0); integers and fields no wider than default_fp are unchanged."""
    fp = runtime.get().default_fp
    if arr.dtype.kind != "f" or arr.dtype.itemsize * 8 <= fp.bits or \
            np.asarray(value).dtype.kind != "f":
        return arr
    with np.errstate(over="ignore"):
        literal = arr.astype(fp.np)
    return (flushed_array(literal) if _flushes() else literal).astype(arr.dtype)


def flushed_write(dtype, value):
    """A Python float written into one f32 entry as Taichi 1.7.4 stores it (a kernel converts
    it from f64 with flush-to-zero); f64 and other entries keep it."""
    if dtype.np == np.float32 and _flushes():
        return flushed_constant(value, 32)
    return value


@functools.cache
def _scalar_bounds(dtype, kind: type):
    """The Python `kind` (int or float) values that one NumPy conversion stores into a scalar
    of `dtype` exactly as `Field._coerce` does (no wrap, no overflow, one rounding: ints below
    2**53 are exact doubles first); None where `_coerce` must judge every value."""
    if not isinstance(dtype, T.DataType) or dtype.np.kind not in "fiu":
        return None
    if dtype.np.kind == "f":
        top = float(np.finfo(dtype.np).max)
        return (-top, top) if kind is float else (-min(2 ** 53, int(top)), min(2 ** 53, int(top)))
    if kind is float:  # a float into an integer field is an error `_coerce` words
        return None
    info = np.iinfo(dtype.np)
    return (int(info.min), int(info.max))


def _np_dtype(dtype):
    return dtype.np if isinstance(dtype, T.DataType) else dtype


def _normalize_offset(offset, shape, field):
    if offset is None:
        return None
    if isinstance(offset, numbers.Integral):
        offset = (int(offset),)
    offset = tuple(int(o) for o in offset)
    if len(offset) != len(shape):
        raise FieldsimSyntaxError(
            f"field {field.ir_name!r}: The dimensionality of shape and offset must be the same "
            f"(shape {shape}, offset {offset})")
    return offset if any(offset) else None


def _host_array(value, what: str) -> np.ndarray:
    """`np.asarray(value)`, or a ValueError naming `what` for a ragged nesting of lists."""
    try:
        return np.asarray(value)
    except ValueError as err:
        raise ValueError(f"{what}: {type(value).__name__} is not a rectangular array of "
                         f"numbers ({err})") from None


def _normalize_shape(shape, field=None) -> tuple:
    what = field._what if field is not None else "field ''"  # an fs.ndarray says so
    if not isinstance(shape, (tuple, list)) and np.ndim(shape) == 0:
        shape = (shape,)
    extents = []
    for axis, extent in enumerate(shape):
        try:
            extents.append(operator.index(extent))
        except TypeError:  # a float extent: Taichi refuses it too
            raise TypeError(f"{what}: shape {tuple(shape)!r} has {extent!r} "
                            f"({type(extent).__name__}) on axis {axis}; extents are integers"
                            ) from None
    shape = tuple(extents)
    for axis, extent in enumerate(shape):
        if extent > 0:
            continue
        if field is None or not what.startswith("field"):  # an ndarray's
            raise FieldShapeError(f"{what}: shape {shape} must be positive")
        # Taichi's words, which programs match
        raise FieldShapeError(f"{what}: shape {shape} must be positive (Every dimension of a "
                              f"Taichi field should be positive, got {extent} in dimension {axis})")
    return shape


@at_user_line
def field(dtype, shape=None, name="", offset=None, needs_grad=False, needs_dual=False,
          order=None, layout=None) -> Field:
    """Make a global field: a dense array living on the backend (Taichi's `ti.field`).

    Args:
        dtype: a scalar dtype (`fs.f32`, `float`, ...) or `fs.types.vector/matrix(...)`.
        shape: an int or a tuple; `()` makes a 0-D field (`x[None]`); None: place it yourself
            with `fs.root.dense(...).place(x)`.
        name: the name used in messages.
        offset: per-axis index offsets.
        needs_grad: also make `x.grad` for reverse-mode AD.
        needs_dual: also make `x.dual` for forward-mode AD.

    >>> x = fs.field(fs.f32, shape=(2, 3), needs_grad=True)
    >>> x.shape, x.grad.shape
    ((2, 3), (2, 3))
    >>> x[1, 2] = 5; x[1, 2]
    5.0
    """
    if isinstance(dtype, T.MatrixType):
        if dtype.ndim == 1:
            return make_field(dtype.dtype, shape, name, needs_grad, needs_dual, n=dtype.n,
                              ndim_el=1, offset=offset, order=order)
        return make_field(dtype.dtype, shape, name, needs_grad, needs_dual, n=dtype.n, m=dtype.m,
                          ndim_el=2, offset=offset, order=order)
    return make_field(dtype, shape, name, needs_grad, needs_dual, offset=offset, order=order)


@at_user_line
def make_field(dtype, shape=None, *args, order=None, **kwargs) -> Field:
    """A `Field`, or a `QuantField` for a quantized dtype (`fieldsim.lang.quant`); with
    `order` (Taichi's `order='ji'`) placed under one dense node per axis in that order, as
    Taichi lays it out, so a struct-for over it walks the axes in that order."""
    runtime.python_scope_only("field")
    if order is not None:
        chain = _order_chain(shape, order)
        offset = kwargs.pop("offset", None)
        x = make_field(dtype, None, *args, **kwargs)
        from fieldsim.lang.snode import root
        node = root
        for axis, extent in chain:
            node = node.dense(Axis(axis), extent)
        node.place(x, offset=offset)
        return x
    from fieldsim.lang.quant_types import QuantType
    if isinstance(dtype, QuantType):
        from fieldsim.lang.quant import QuantField
        return QuantField(dtype, shape, *args, **kwargs)
    return Field(dtype, shape, *args, **kwargs)


def _order_chain(shape, order) -> list:
    """(axis, extent) per dense node of a field made with `order`, outermost first."""
    if shape is None:
        raise FieldsimSyntaxError("shape cannot be None when order is set")
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    if len(order) != len(shape):
        raise FieldsimSyntaxError(f"order {order!r} names {len(order)} axes, the shape "
                                  f"{shape} has {len(shape)}")
    axes = ["ijkl"[:len(shape)].find(ch) for ch in order]
    if -1 in axes or len(set(axes)) != len(axes):
        raise FieldsimSyntaxError(f"order {order!r} must name each of the axes "
                                  f"{'ijkl'[:len(shape)]!r} once")
    return [(a, shape[a]) for a in axes]


from fieldsim.lang.snode import Axis, SNode


def __getattr__(name):
    """The layout names that lived here before `fieldsim.lang.snode` (`root`, `i`, `ij`, ...)."""
    from fieldsim.lang import snode
    if name in ("root", "axes", "i", "j", "k", "l", "ij", "ik", "jk", "ijk", "ijkl",
                "il", "jl", "kl", "ijl", "ikl", "jkl"):
        return getattr(snode, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
