"""Ndarrays: `fs.ndarray(...)` arrays and `fs.types.ndarray()` kernel arguments.

Takes what a user passes to a kernel argument annotated `fs.types.ndarray(dtype=, ndim=)`: a
fieldsim `Ndarray` (`fs.ndarray`, `fs.Vector.ndarray`, `fs.Matrix.ndarray`, or an ndarray's
`.grad`) or a C-contiguous numpy array, read and written in place (zero copy; a Fortran-order
array runs on a C-order copy, one per array per launch, copied back after the launch if the
kernel writes it; refused where it shares memory with another array argument and either is
written, as the kernel would see stale values). On the CUDA backend a host
array is copied to the device for the launch (`_staged`), and a CUDA array (a torch CUDA
tensor, any DLPack array in CUDA memory) is used in place (`_device_tensor`).

Guarantees:

* A kernel is compiled once per (element dtype, ndim, element shape, has-gradient) of each
  ndarray argument, never per array: the data pointer, the gradient's pointer and the shape
  travel as hidden runtime arguments, so launching with another array of another shape reuses
  the compiled code. Inside the kernel the argument is an `NdarraySlot` (a `Field` whose shape
  entries are IR values) and `arr.shape[i]`, `for i in arr` and `fs.grouped(arr)` read the
  launch's shape.
* A mismatch between the annotation and the array (dtype, ndim, element shape), a strided
  numpy view, a read-only numpy array the kernel writes, an axis longer than 2**31 - 1 (shapes
  travel as i32), or a value that is not an array raises
  `NdarrayArgumentError` (a `FieldsimTypeError` and a `ValueError`, worded as Taichi's
  "Invalid value for argument x - ...") naming the kernel, the argument and the launch's
  file:line. `@fs.func` parameters annotated `fs.types.ndarray(...)` are checked the same way.
* Autodiff: an `Ndarray` made with `needs_grad=True` carries a `.grad` ndarray; adjoints
  (`kernel.grad(...)`, the Tape) accumulate into it. The access-rule checker and the Tape judge
  each launch on the arrays it was given (`bound_view`: the kernel's IR with every slot replaced
  by the launch's actual array and its shape arguments by the launch's shape), so two launches
  on different arrays are two arrays to them, and a loop over an ndarray is judged as one over
  a field of that shape.
  Numpy arrays have no gradient. Forward-mode AD (`fs.ad.FwdMode`) over ndarray arguments is
  refused with a clear error.
"""
from __future__ import annotations

import copy
import itertools

import numpy as np

from fieldsim.errors import ArgumentTypeError, FieldsimRuntimeError, FieldsimTypeError, Loc
from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang import interop, naming, runtime
from fieldsim.lang import types as T
from fieldsim.lang.field import Field, FieldScopeError, _resolve_dtype
from fieldsim.lang.host_errors import at_user_line


# ---- the annotation -----------------------------------------------------------------------------
class NdarrayType:
    """`fs.types.ndarray(dtype=None, ndim=None)`: an array argument. `dtype` is a scalar type, a
    `fs.types.vector/matrix` element type, or None (taken from each launch's array)."""

    def __init__(self, dtype=None, ndim=None, element_dim=None, element_shape=None,
                 field_dim=None, needs_grad=None, boundary=None, layout=None):
        self.dtype = dtype
        self.ndim = ndim if ndim is not None else field_dim
        # Taichi's older `element_dim=1/2` without an element type: the array's last 1 or 2
        # axes are its vector/matrix elements, their sizes taken from each launch's array
        self.element_dim = element_dim if element_dim in (1, 2) and element_shape is None \
            and not isinstance(dtype, T.MatrixType) else 0
        if element_shape is not None and dtype is not None and not isinstance(dtype, T.MatrixType):
            es = tuple(element_shape)
            self.dtype = T.vector(es[0], dtype) if len(es) == 1 else T.matrix(es[0], es[1], dtype)
        self.needs_grad = needs_grad

    def __repr__(self):
        return f"ndarray(dtype={self.dtype}, ndim={self.ndim})"


class NdarrayTypeMetadata:
    """What `Ndarray.get_type()` returns, as Taichi's: an array's element type and shape."""

    def __init__(self, element_type, shape, needs_grad=False):
        from fieldsim.lang.enums import Layout
        self.element_type, self.shape, self.needs_grad = element_type, shape, needs_grad
        self.layout = Layout.AOS

    def __repr__(self):
        return (f"NdarrayTypeMetadata(element_type={self.element_type}, shape={self.shape}, "
                f"needs_grad={self.needs_grad})")


# ---- fieldsim-owned arrays ------------------------------------------------------------------------
class Ndarray(Field):
    """`fs.ndarray(dtype, shape, needs_grad=False)`: a fieldsim-owned array (a field that kernels
    take as an ndarray argument). `.grad` is an Ndarray too."""

    def __init__(self, dtype, shape=None, name="", needs_grad=False, n=None, m=None, ndim_el=0,
                 _role="primal"):
        rt = runtime.get()
        dt = _resolve_dtype(dtype, rt)
        if needs_grad and not dt.is_float:
            raise FieldsimRuntimeError(f"{dt} is not supported for ndarray with needs_grad=True: "
                                       "gradients need a float dtype")
        name = name or (_role == "primal" and naming.assigned_name()) or f"ndarray{len(rt.fields)}"
        super().__init__(dtype, shape, name, needs_grad,
                         n=n, m=m, ndim_el=ndim_el, _role=_role)

    def _unplaced_twin(self, role: str):
        return None  # as in Taichi, an ndarray made without needs_grad has no .grad

    def _twin(self, role: str, place: bool = True) -> Ndarray:
        # As in Taichi, a Tape's clear_gradients (and fs.ad.clear_all_gradients) zeroes the
        # fields' gradients, not the ndarrays': their role is not "grad"
        twin = make_ndarray(self.dtype, None, f"{self.ir_name}.{role}", n=self.n, m=self.m,
                            ndim_el=self.ndim_el, _role="ndarray_grad" if role == "grad" else role)
        twin.primal = self
        if place and self.shape is not None:
            twin._place(self.shape)
        return twin

    @property
    def element_type(self):
        if self.ndim_el == 0:
            return self.dtype
        return T.vector(self.n, self.dtype) if self.ndim_el == 1 else T.matrix(self.n, self.m, self.dtype)

    def get_type(self) -> NdarrayTypeMetadata:
        """Taichi's `Ndarray.get_type()`: element type, shape, layout and needs_grad.

        >>> fs.Vector.ndarray(3, fs.f32, shape=(2, 3)).get_type().shape
        (2, 3)
        """
        return NdarrayTypeMetadata(self.element_type, self.shape, bool(self.needs_grad))

    @property
    def _what(self) -> str:
        return f"ndarray {self.ir_name!r}"

    def from_numpy(self, arr):
        # unlike a vector field, an ndarray takes no keep_dims (shape, n, 1) array (as Taichi)
        a = getattr(arr, "shape", None)
        if self.ndim_el == 1 and a is not None and tuple(a) != self.storage_shape:
            raise ValueError(f"{self._what}.from_numpy: expected an array of shape "
                             f"{self.storage_shape}, got {tuple(a)}")
        super().from_numpy(arr)

    def __repr__(self):
        return f"<fs.ndarray {self.ir_name!r} shape={self.shape} element={self.element_type}>"

    def __iter__(self):
        # Taichi 1.7.4 iterates through __getitem__: a 1-D ndarray reads past its end without
        # stopping, any other stops at once (`sum(a)` of a 3-D one is a silent 0)
        raise FieldScopeError(f"ndarray {self.ir_name!r} (shape {self.shape}) cannot be iterated "
                              "in Python scope (Taichi 1.7.4 silently reads past its end or "
                              "yields nothing); use .to_numpy() or loop over ti.ndrange(*a.shape)")


class ScalarNdarray(Ndarray):
    """An ndarray of scalars (Taichi's class of the same name): `fs.ScalarNdarray(dtype,
    arr_shape)` is `fs.ndarray(dtype, arr_shape)`, and `type(fs.ndarray(fs.f32, 2))` is this class.

    >>> type(fs.ndarray(fs.f32, shape=2)).__name__
    'ScalarNdarray'
    """

    def __init__(self, dtype, arr_shape, needs_grad=False):
        super().__init__(dtype, arr_shape, needs_grad=needs_grad)


class VectorNdarray(Ndarray):
    """An ndarray of n-vectors (Taichi's class of the same name): `fs.VectorNdarray(n, dtype,
    shape)` is `fs.Vector.ndarray(n, dtype, shape)`.

    >>> fs.VectorNdarray(3, fs.f32, shape=2).to_numpy().shape
    (2, 3)
    """

    def __init__(self, n, dtype, shape, needs_grad=False, layout=None):
        super().__init__(dtype, shape, needs_grad=needs_grad, n=n, ndim_el=1)


class MatrixNdarray(Ndarray):
    """An ndarray of n x m matrices (Taichi's class of the same name): `fs.MatrixNdarray(n, m,
    dtype, shape)` is `fs.Matrix.ndarray(n, m, dtype, shape)`.

    >>> type(fs.Matrix.ndarray(2, 2, fs.f32, shape=3)).__name__
    'MatrixNdarray'
    """

    def __init__(self, n, m, dtype, shape, needs_grad=False, layout=None):
        super().__init__(dtype, shape, needs_grad=needs_grad, n=n, m=m, ndim_el=2)


_NDARRAY_CLASS = {0: ScalarNdarray, 1: VectorNdarray, 2: MatrixNdarray}


def make_ndarray(dtype, shape=None, name="", needs_grad=False, n=None, m=None, ndim_el=0,
                 _role="primal") -> Ndarray:
    """An Ndarray of the class Taichi gives an array of that element rank (Scalar/Vector/
    MatrixNdarray), built through `Ndarray.__init__` (which those classes' Taichi-shaped
    constructors only forward to)."""
    nd = object.__new__(_NDARRAY_CLASS[ndim_el])
    Ndarray.__init__(nd, dtype, shape, name, needs_grad, n=n, m=m, ndim_el=ndim_el, _role=_role)
    return nd


@at_user_line
def ndarray(dtype, shape, needs_grad=False, layout=None) -> Ndarray:
    """Make a dense array passed to kernels as an argument (Taichi's `ti.ndarray`).

    Unlike a field, one kernel compiles for every ndarray of the same dtype and rank.

    >>> a = fs.ndarray(fs.f32, shape=3)
    >>> @fs.kernel
    ... def inc(arr: fs.types.ndarray()):
    ...     for i in arr:
    ...         arr[i] += 1
    >>> inc(a); a.to_numpy().tolist()
    [1.0, 1.0, 1.0]
    """
    runtime.python_scope_only("ndarray")
    rt = runtime.get()
    if dtype is float:
        dtype = rt.default_fp
    elif dtype is int:
        dtype = rt.default_ip
    if isinstance(dtype, T.MatrixType):
        el = dtype.dtype if dtype.dtype is not None else rt.default_fp
        if dtype.ndim == 1:
            return make_ndarray(el, shape, needs_grad=needs_grad, n=dtype.n, ndim_el=1)
        return make_ndarray(el, shape, needs_grad=needs_grad, n=dtype.n, m=dtype.m, ndim_el=2)
    return make_ndarray(dtype, shape, needs_grad=needs_grad)


def vector_ndarray(n, dtype, shape, needs_grad=False, layout=None) -> Ndarray:
    return ndarray(T.vector(n, dtype), shape, needs_grad=needs_grad)


def matrix_ndarray(n, m, dtype, shape, needs_grad=False, layout=None) -> Ndarray:
    return ndarray(T.matrix(n, m, dtype), shape, needs_grad=needs_grad)


class ArrayStorage:
    """A numpy array as a field's storage, read and written in place: a user's array (an
    ndarray argument, a DLPack view) or, through the CPU backend's `HostStorage`, a field's
    own data."""

    def __init__(self, array, ptr=None):
        self.array = array
        # the array is only ever written in place; `ptr`: its address, where the caller has it
        self.ptr = array.ctypes.data if ptr is None else ptr

    def read_element(self, idx):
        return self.array[idx].copy() if self.array[idx].ndim else self.array[idx]

    def write_element(self, idx, value):
        self.array[idx] = value

    def to_numpy(self):
        return self.array.copy()

    def from_numpy(self, arr):
        self.array[...] = arr

    def fill(self, value):
        self.array[...] = value

    def zero(self):
        self.array.fill(0)


class ExternalArray(Field):
    """A numpy array passed to a kernel, seen as a field by the checker and the Tape. Not
    registered with the runtime (it belongs to the user); it has no gradient."""

    def __init__(self, array, dtype, n, m, ndim_el, name, ptr=None):
        rt = runtime.get()
        self.array = array
        self.dtype = dtype
        self.name = self.ir_name = name
        self.n, self.m, self.ndim_el = n, (1 if ndim_el == 1 else m), ndim_el
        self.uid = -next(_EXTERNAL_IDS)  # distinct from fields' (graphs key nodes by uid)
        self.generation = rt.generation
        self.role = "primal"
        n_el = ndim_el
        self.shape = tuple(array.shape[:array.ndim - n_el]) if n_el else tuple(array.shape)
        self.storage = ArrayStorage(array, ptr)
        self.shape_key = array.shape
        self._unplaced = {}
        self.offset, self._snode = None, None
        self.grad = self.dual = self.primal = None
        self.needs_grad = self.needs_dual = False

    def _unplaced_twin(self, role):
        return None

    def _twin(self, role, place=True):
        raise FieldsimTypeError(f"numpy array {self.ir_name!r} has no {role}: use "
                                "fs.ndarray(..., needs_grad=True) for arrays with gradients")


_EXTERNAL_IDS = itertools.count(1)
_EXTERNAL: dict = {}  # id(numpy array) -> its ExternalArray (checked by identity)


def _external(array, dtype, n, m, ndim_el, name, ptr):
    proxy = _EXTERNAL.get(id(array))
    # the same array object may since have been reshaped or resized in place: check its layout
    if proxy is not None and proxy.array is array and proxy.dtype is dtype \
            and (proxy.n, proxy.m, proxy.ndim_el) == (n, (1 if ndim_el == 1 else m), ndim_el) \
            and proxy.storage.ptr == ptr and proxy.shape_key == array.shape \
            and proxy.generation == runtime.get().generation:
        return proxy
    if len(_EXTERNAL) > 256:  # the cache keeps arrays alive: keep it small
        _EXTERNAL.clear()
    proxy = _EXTERNAL[id(array)] = ExternalArray(array, dtype, n, m, ndim_el, name, ptr)
    return proxy


# (memory, layout, gradient memory) -> ExternalArray of a tensor argument; it keeps up to 64
# recent tensors alive (so their addresses stay theirs while cached)
_TENSORS: dict = {}


def _external_tensor(owner, array, grad_arr, dtype, n, m, ndim_el, name, ptr):
    """A tensor argument as a field, one per memory (so two launches on one tensor are one
    array to the checker and the Tape); it keeps the tensor alive, so its memory is not reused
    while it is cached."""
    gen = runtime.get().generation
    key = (ptr, array.shape, array.dtype.str, n, m, ndim_el, gen,
           None if grad_arr is None else (grad_arr.ctypes.data, grad_arr.shape, grad_arr.dtype.str))
    proxy = _TENSORS.get(key)
    if proxy is not None:
        return proxy
    if len(_TENSORS) > 64:
        _TENSORS.clear()
    proxy = ExternalArray(array, dtype, n, m, ndim_el, name, ptr)
    proxy.owner, proxy.cache_key = owner, key
    if grad_arr is not None:
        if grad_arr.shape != array.shape or grad_arr.dtype != array.dtype \
                or not grad_arr.flags.c_contiguous:
            raise NdarrayArgumentError(f"argument {name}: its gradient buffer does not match the "
                                       f"array ({grad_arr.shape} {grad_arr.dtype} vs {array.shape} "
                                       f"{array.dtype})")
        g = ExternalArray(grad_arr, dtype, n, m, ndim_el, f"{name}.grad")
        g.role, g.primal = "ndarray_grad", proxy
        proxy.grad, proxy.needs_grad = g, True
    _TENSORS[key] = proxy
    return proxy


# (memory, layout, gradient memory) -> the Ndarray of a CUDA tensor argument (a CUDA runtime)
_DEVICE_TENSORS: dict = {}


class _Layout:
    """What `_numpy_element` reads of an array: its shape and ndim."""

    def __init__(self, shape):
        self.shape, self.ndim = shape, len(shape)


def _device_tensor(owner, what, pname, ann, bad):
    """A CUDA array argument on the CUDA backend as an unregistered `Ndarray` over its memory
    (zero copy), one per memory as `_external_tensor`; a torch tensor with `requires_grad` lends
    its `.grad` (made as zeros when None) as the gradient, as on the host."""
    interop._no_bridge(what)
    imported = interop.device_import(owner, what)
    grad = None
    if interop._is_torch(owner) and owner.requires_grad:
        import torch
        if owner.grad is None:
            owner.grad = torch.zeros_like(owner)
        grad = interop.device_import(owner.grad, f"{what} (its .grad)")
        if (grad.shape, grad.dtype) != (imported.shape, imported.dtype):
            raise NdarrayArgumentError(f"{what}: its .grad does not match the tensor")
    gen = runtime.get().generation
    layout = _numpy_element(ann, _Layout(imported.shape), bad)  # its trailing axes as elements
    key = (imported.ptr, imported.shape, imported.dtype.str, imported.read_only, gen, layout,
           None if grad is None else grad.ptr)
    nd = _DEVICE_TENSORS.get(key)
    if nd is None:
        if len(_DEVICE_TENSORS) > 64:  # each keeps its tensor alive
            _DEVICE_TENSORS.clear()
        nd = _DEVICE_TENSORS[key] = _unregistered(imported, owner, pname, "primal", layout)
        if grad is not None:
            g = nd._grad = _unregistered(grad, owner.grad, f"{pname}.grad", "ndarray_grad", layout)
            g.primal, nd.needs_grad = nd, True
    return nd


def unlist(nd: Ndarray) -> Ndarray:
    """Take a just-made Ndarray over memory the user owns off the runtime's list (an
    ExternalArray's negative uid), so that it, and the memory it keeps alive, go when the user
    drops it (a reset still makes it unusable: its generation)."""
    rt = runtime.get()
    if rt.fields and rt.fields[-1] is nd:
        rt.fields.pop()
    nd.uid = -next(_EXTERNAL_IDS)
    return nd


def _unregistered(imported, owner, name, role, layout):
    """An Ndarray over imported device memory that the runtime does not list (it belongs to the
    user, as an ExternalArray): a negative uid, like theirs."""
    dt = interop.fieldsim_dtype(imported.dtype, name)
    n, m, ndim_el = layout
    nd = unlist(make_ndarray(dt, None, name=name, n=n, m=m, ndim_el=ndim_el, _role=role))
    nd.shape = imported.shape[:len(imported.shape) - ndim_el]
    nd.storage = interop.device_storage(imported, dt, owner)
    nd.external = nd.owner = owner
    nd.read_only = imported.read_only
    return nd


# ---- binding a launch's array ---------------------------------------------------------------------
class NdarraySpec:
    """What a compiled kernel is specialised on for one ndarray argument."""

    __slots__ = ("dtype", "dtypes", "has_grad", "key_", "m", "n", "ndim", "ndim_el")

    def __init__(self, dtype, ndim, n, m, ndim_el, has_grad):
        self.dtype, self.ndim, self.n, self.m = dtype, ndim, n, m
        self.ndim_el, self.has_grad = ndim_el, has_grad
        self.key_ = ("nd", dtype.name, ndim, n, m, ndim_el, has_grad)
        self.dtypes = {}  # argument name -> {hidden argument name: dtype}

    def key(self):
        return self.key_


_SPECS: dict = {}


def _spec(*fields) -> NdarraySpec:
    """Specs are interned: a launch reuses the one made by the first launch like it."""
    spec = _SPECS.get(fields)
    if spec is None:
        spec = _SPECS[fields] = NdarraySpec(*fields)
    return spec


class BoundNdarray:
    """A launch's ndarray argument: its spec (what the kernel is compiled for) and the array
    as a field (`proxy`: an `Ndarray` or an `ExternalArray`)."""

    def __init__(self, spec: NdarraySpec, proxy: Field):
        self.spec, self.proxy = spec, proxy
        self.copy_back = None  # set for a Fortran-order numpy array run on a C-order copy
        self.fortran = None  # that copy (`_FortranCopy`)


def hidden_names(pname, spec: NdarraySpec) -> list:
    """The hidden runtime arguments of one ndarray argument, in launch order."""
    names = [f"{pname}.ptr"]
    if spec.has_grad:
        names.append(f"{pname}.grad_ptr")
    return names + [f"{pname}.shape{d}" for d in range(spec.ndim)]


class NdarrayArgumentError(ArgumentTypeError, ValueError):
    """An array that does not fit its `fs.types.ndarray(...)` argument. A TypeError (as
    fieldsim's other argument errors), a ValueError (what Taichi raises for a wrong dtype or
    shape) and Taichi's TaichiRuntimeTypeError (what it raises for a value that is no array)."""


def bind_arg(ann: NdarrayType, value, kname, pname, rt, staged=None):
    """(BoundNdarray, hidden argument values, {hidden name: dtype}) for one launch. Errors
    carry the launch's location in the user's code. `staged`: the launch's device copies of
    host arrays so far (a GPU backend), shared by arguments given the same array."""
    try:
        return _bind_arg(ann, value, kname, pname, rt, {} if staged is None else staged)
    except NdarrayArgumentError as err:
        if err.loc is None:
            raise NdarrayArgumentError(err.message, _call_loc()) from None
        raise


def bind_arg_reused(memo: dict, ann: NdarrayType, value, kname, pname, rt, staged):
    """`bind_arg`, reusing the binding the previous launch made for this parameter (`memo`:
    the kernel's, by parameter name) when `value` is the same object, unchanged in everything
    the binding read: a training loop passes the same arrays every step, and binding one
    (views, dtype, layout and element checks) cost several times the launch. Only a binding
    that passed every check is kept, and a value that differs in any of them is bound (and
    checked) again; a read-only array is still refused per launch (`check_writable`). Never
    reused: a Fortran-order array (its C-order copy is per launch), a GPU backend's staged
    copy, a tensor that requires grad (its `.grad` may be replaced between launches), arrays
    inside a DLPack bridge, a `check_values` call. The memo keeps the last array of each
    parameter alive."""
    sig = _reuse_signature(value, rt) if type(staged) is dict else None
    if sig is not None:
        last = memo.get(pname)
        if last is not None and last[0] is value and last[1] == sig \
                and _proxy_current(last[2][0].proxy, value):
            return last[2]
    result = bind_arg(ann, value, kname, pname, rt, staged)
    bound = result[0]
    if sig is not None and bound.fortran is None and bound.copy_back is None \
            and rt.backend().host_memory:
        memo[pname] = (value, sig, result)
    return result


def _proxy_current(proxy, value) -> bool:
    """Whether a host array's field is still the one its cache gives (`_external`,
    `_external_tensor`): the caches are cleared when they grow, and every launch on one array
    must see one field (the checker and the Tape know the array by it)."""
    if not isinstance(proxy, ExternalArray):
        return True
    key = getattr(proxy, "cache_key", None)
    return (_EXTERNAL.get(id(value)) if key is None else _TENSORS.get(key)) is proxy


def _reuse_signature(value, rt):
    """What `_bind_arg` reads of `value` that can change while the object stays the same (its
    memory, layout, dtype; a tensor's device and view bits; an ndarray's storage and gradient),
    with the runtime's generation; None: never reused."""
    if interop._grad_provider:
        return None
    if type(value) is np.ndarray:  # .ctypes.data: `resize(refcheck=False)` moves the memory
        return (value.shape, value.strides, value.dtype, value.ctypes.data, rt.generation)
    if isinstance(value, Ndarray):
        storage, grad = value.storage, value._grad
        gstorage = grad.storage if grad is not None else None
        return (value.generation, rt.generation, storage, None if storage is None else storage.ptr,
                gstorage, None if gstorage is None else gstorage.ptr, value.needs_grad,
                value.shape, value.dtype)
    if type(value) is interop.torch_tensor_type() and not value.requires_grad:
        try:
            return (value.data_ptr(), value.shape, value.stride(), value.dtype, value.device,
                    value.layout, value.is_neg(), value.is_conj(), rt.generation)
        except RuntimeError:  # e.g. a sparse tensor: no pointer (the full path refuses it)
            return None
    return None


def _call_loc() -> Loc | None:
    """Where the user launched the kernel: the innermost frame outside fieldsim."""
    return naming.user_loc()


def _host_value(value, kname, pname, bad, ann):
    """(value, owner, gradient array): a torch tensor or DLPack array becomes a numpy view of its
    host memory (in place, never a copy), or on the CUDA backend a CUDA one an `Ndarray` over
    its device memory; a jax_function bridge buffer brings its gradient."""
    if not isinstance(value, (Field, np.ndarray)) and interop.is_external(value):
        owner = value
        what = f"kernel {kname!r} argument {pname}"
        try:
            if interop.is_device_array(owner):
                return _device_tensor(owner, what, pname, ann, bad), owner, None
            value = interop.host_view(owner, what)
        except interop.InteropError as err:
            raise NdarrayArgumentError(err.message) from None
        if not value.flags.c_contiguous:
            raise bad(f"the {type(owner).__name__} is not C-contiguous (strides {value.strides}); "
                      "call .contiguous() first (fieldsim never copies it silently)")
        return value, owner, interop.tensor_grad_view(owner, value)
    if isinstance(value, np.ndarray) and interop._grad_provider and value.flags.c_contiguous:
        # inside fs.ad.jax_function: the bridge's buffer is its gradient
        return value, value, interop.tensor_grad_view(value, value)
    return value, None, None


def _field_proxy(ann, value, rt, bad):
    """(proxy, dtype, n, m, ndim_el) of an fs.ndarray (or an external array's proxy) passed
    as is; any other field is refused."""
    if value.generation != rt.generation or value.storage is None:
        raise bad(f"{value.ir_name!r} has no data (from an earlier fs.init(), or not placed)")
    if not isinstance(value, (Ndarray, ExternalArray)):
        raise bad(f"it is an ndarray (fs.types.ndarray()) but got field {value.ir_name!r}; "
                  "pass an fs.ndarray or a numpy array, or annotate the argument "
                  "fs.template() to pass a field")
    _check_element(ann, value.dtype, value.n, value.m, value.ndim_el, bad)
    # as Taichi: a gradient-less ndarray under needs_grad=True would make `kernel.grad()` a
    # silent no-op for it (NumPy arrays, which never carry one, are taken as Taichi takes them)
    if ann.needs_grad and isinstance(value, Ndarray) and not value.needs_grad:
        raise bad(f"required needs_grad=True, but False is provided: make {value.ir_name!r} with "
                  "fs.ndarray(..., needs_grad=True)")
    return value, value.dtype, value.n, value.m, value.ndim_el


def _numpy_element(ann, value, bad):
    """(n, m, ndim_el) of a numpy array's elements under a matrix/vector annotation (its
    trailing axes), checked against the annotation; scalars: (None, None, 0)."""
    if ann.element_dim:
        return _numpy_element_dims(ann, value, bad)
    if not isinstance(ann.dtype, T.MatrixType):
        return None, None, 0
    mt = ann.dtype
    el = (mt.n,) if mt.ndim == 1 else (mt.n, mt.m)
    if ann.ndim is not None and value.ndim != ann.ndim + len(el):
        raise bad(f"required array has ndim={ann.ndim} element_dim={len(el)}, array with "
                  f"{value.ndim} dimensions is provided")
    got = tuple(value.shape[max(value.ndim - len(el), 0):])
    if got != el:
        raise bad(f"required element_shape={el}, array with element shape of {got} is "
                  "provided")
    return mt.n, (mt.m if mt.ndim == 2 else None), mt.ndim


def _numpy_element_dims(ann, value, bad):
    """(n, m, ndim_el) of a numpy array under `element_dim=k`: its last k axes."""
    k = ann.element_dim
    if value.ndim <= k or (ann.ndim is not None and value.ndim != ann.ndim + k):
        raise bad(f"required array has ndim={ann.ndim} element_dim={k}, array with "
                  f"{value.ndim} dimensions is provided")
    return value.shape[value.ndim - k], (value.shape[-1] if k == 2 else None), k


def _numpy_proxy(ann, value, owner, grad_arr, pname, bad, staged):
    """(proxy, dtype, n, m, ndim_el, fortran) of a numpy array (or a tensor's host view). A
    Fortran-order array runs on a C-order copy (`fortran`, a `_FortranCopy`, shared by every
    argument of the launch given the same array)."""
    try:
        dtype = T.from_numpy(value.dtype)
    except TypeError:
        raise bad(f"numpy dtype {value.dtype} has no fieldsim equivalent") from None
    fortran = None
    if not value.flags.c_contiguous:
        if not value.flags.f_contiguous:
            raise bad("Non contiguous numpy arrays are not supported, please call "
                      "np.ascontiguousarray(arr) before passing it to the kernel")
        fortran = _FortranCopy.of(value, staged)
        value = fortran.copy
    n, m, ndim_el = _numpy_element(ann, value, bad)
    _check_element(ann, dtype, n, m, ndim_el, bad, matrix_dtype=False)
    # a CPU tensor's address from torch (the view's, read through numpy, costs 15x that)
    ptr = owner.data_ptr() if type(owner) is interop.torch_tensor_type() and value.size \
        else value.ctypes.data
    if grad_arr is not None or owner is not None:
        proxy = _external_tensor(owner, value, grad_arr, dtype, n, m, ndim_el, pname, ptr)
    else:
        proxy = _external(value, dtype, n, m, ndim_el, pname, ptr)
    return proxy, dtype, n, m, ndim_el, fortran


class _FortranCopy:
    """A Fortran-order numpy argument's C-order copy for one launch: one per array however
    many arguments are given it (so writes through one are read through the other), copied
    back once after the launch, and only if the kernel writes it (a copy back of values the
    kernel only read would undo what it wrote through another view of the same memory). The
    copy of a read-only array is read-only, so a kernel writing it is refused before it runs."""

    def __init__(self, original):
        self.original, self.copy = original, np.ascontiguousarray(original)
        self.copy.flags.writeable = original.flags.writeable
        self.written = False  # set before the launch by `check_writable`
        self.done = False

    @classmethod
    def of(cls, original, staged):
        key = ("F", original.__array_interface__["data"][0], original.shape, original.strides,
               original.dtype.str)
        if key not in staged:
            staged[key] = cls(original)
        return staged[key]

    def back(self):
        if self.written and not self.done:
            np.copyto(self.original, self.copy)
        self.done = True


def _bind_arg(ann, value, kname, pname, rt, staged):
    def bad(what):  # Taichi's wording, with the kernel's name
        return NdarrayArgumentError(f"kernel {kname!r}: Invalid value for argument {pname} - {what}")

    value, owner, grad_arr = _host_value(value, kname, pname, bad, ann)
    fortran = None
    if isinstance(value, Field):
        proxy, dtype, n, m, ndim_el = _field_proxy(ann, value, rt, bad)
    elif isinstance(value, np.ndarray):
        proxy, dtype, n, m, ndim_el, fortran = _numpy_proxy(ann, value, owner, grad_arr, pname,
                                                            bad, staged)
    else:
        raise bad(f"it is an ndarray (fs.types.ndarray()) but got {type(value).__name__}; pass "
                  "an fs.ndarray, a numpy array, a torch tensor or a DLPack array")
    ndim = len(proxy.shape)
    # Taichi checks a NumPy array's or tensor's rank only against an annotation with a dtype:
    # `ndarray(ndim=2)` alone takes a 3-D array as 3-D (taichi-nerfs' ray marcher passes one)
    ranked = ann.dtype is not None or ann.element_dim or isinstance(value, Field)
    if ann.ndim is not None and ann.ndim != ndim and ranked:
        raise bad(f"required array has ndim={ann.ndim}, array with {ndim + ndim_el} dimensions "
                  f"is provided" + (f" ({ndim} besides its elements)" if ndim_el else ""))
    _check_extents(proxy.shape, bad)
    # needs_grad=False in the annotation: the kernel's adjoint leaves this array's gradient alone
    has_grad = proxy.grad is not None and proxy.grad.storage is not None and ann.needs_grad is not False
    spec = _spec(dtype, ndim, n, m, ndim_el, has_grad)
    ptrs = [proxy.storage.ptr] + ([proxy.grad.storage.ptr] if has_grad else [])
    copy_back = None if fortran is None else fortran.back
    if isinstance(proxy, ExternalArray) and not rt.backend().host_memory and not isinstance(staged, CheckOnly):
        ptrs, copy_back = _staged(rt, proxy, has_grad, copy_back, staged)
    values = ptrs + [int(s) for s in proxy.shape]
    dtypes = spec.dtypes.get(pname)
    if dtypes is None:
        dtypes = spec.dtypes[pname] = {name: (T.i64 if k < 1 + has_grad else T.i32)
                                       for k, name in enumerate(hidden_names(pname, spec))}
    bound = BoundNdarray(spec, proxy)
    bound.copy_back, bound.fortran = copy_back, fortran
    return bound, values, dtypes


_MAX_EXTENT = (1 << 31) - 1  # a launch passes each axis length as an i32, as Taichi does


def _check_extents(shape, bad):
    for axis, extent in enumerate(shape):
        if extent > _MAX_EXTENT:
            raise bad(f"axis {axis} has {extent} elements; an ndarray argument's axis holds at "
                      f"most 2**31 - 1 (its length is passed as an i32, as in Taichi): split "
                      "the array or reshape it")


class CheckOnly(dict):
    """The staging table of a launch whose arguments are only checked (`Kernel.check_values`):
    a host array is checked as for a launch, never copied to the device."""


class _Stage:
    """A host array's device copy for one launch; copied back and freed once, however many
    arguments were given the array."""

    def __init__(self, rt, array, dtype):
        self.array, self.storage = array, rt.backend().allocate(array.shape, dtype)
        self.storage.from_numpy(array)

    def back(self):
        if self.storage is None:
            return
        if self.array.flags.writeable:  # a read-only one the kernel never writes (check_writable)
            np.copyto(self.array, self.storage.to_numpy())
        self.storage.free()
        self.storage = None


def _staged(rt, proxy, has_grad, copy_back, staged):
    """(device pointers, copy_back) of a host array (numpy, a tensor's host view) passed to a
    kernel on the GPU: copied into device memory for this launch and back after it, as Taichi
    does (an `fs.ndarray` lives on the device and is passed as is); an array given to two
    arguments gets one copy (`staged`: the launch's copies by address, shape and dtype), so
    what the kernel adds through either arrives. A Tape's backward binds such a launch's
    arguments again (`LaunchEntry` keeps no values for it), so its adjoint gets copies of its
    own, gradients copied back after it."""
    stages = []
    for array in [proxy.array] + ([proxy.grad.array] if has_grad else []):
        key = (array.ctypes.data, array.shape, array.dtype.str)
        if key not in staged:
            staged[key] = _Stage(rt, array, proxy.dtype)
        stages.append(staged[key])
    earlier = copy_back  # a Fortran-order array's own copy back runs after ours

    def back():
        for stage in stages:
            stage.back()
        if earlier is not None:
            earlier()
    return [stage.storage.ptr for stage in stages], back


def check_writable(ck, templates, kname):
    """Before a launch: a read-only numpy array may be passed only to an argument the kernel
    never writes (writing it could fault, and would break the owner's promise); a
    Fortran-order array's copy is copied back only if the kernel writes it, and is refused
    where it shares memory with another array argument and either is written (the kernel
    would read or keep stale values)."""
    written = getattr(ck, "nd_written", None)
    if written is None:
        bodies = [ck.ir.body] + [f.body for f in ck.ir.funcs]  # real functions write too
        written = ck.nd_written = {s.field.ir_name for body in bodies for s in _walk(body)
                                   if s.op in (Op.STORE, Op.ATOMIC) and is_slot(s.field)}
    arrays = [(name, t) for name, t in templates.items() if isinstance(t, BoundNdarray)]
    for name, t in arrays:
        if name in written and _read_only(t.proxy):
            owner = getattr(t.proxy, "owner", None)
            what = "numpy array" if owner is None or isinstance(owner, np.ndarray) else \
                f"{type(owner).__name__} (e.g. a JAX array: immutable)"
            raise NdarrayArgumentError(f"kernel {kname!r}: Invalid value for argument {name} - the "
                                       f"kernel writes it but the {what} is read-only",
                                       _call_loc())
        if t.fortran is not None and name in written:
            t.fortran.written = True
    for name, t in arrays:
        if t.fortran is not None:
            _refuse_stale_copy(name, t, arrays, written, kname)


def _refuse_stale_copy(name, t, arrays, written, kname):
    """A Fortran-order argument's copy must not overlap another array argument's memory
    when either is written."""
    for other, u in arrays:
        if u.fortran is t.fortran or not isinstance(u.proxy, ExternalArray):
            continue
        if (name in written or other in written) and \
                np.may_share_memory(t.fortran.original, u.proxy.array):
            raise NdarrayArgumentError(
                f"kernel {kname!r}: Invalid value for argument {name} - the Fortran-order array "
                f"runs on a C-order copy, and it shares memory with argument {other}, which "
                f"{'the kernel writes' if other in written else 'the kernel reads while it writes ' + name}: "
                "the kernel would see stale values; pass np.ascontiguousarray(arr) and copy "
                "back yourself", _call_loc())


def _read_only(proxy) -> bool:
    if isinstance(proxy, ExternalArray):
        return not proxy.array.flags.writeable
    return getattr(proxy, "read_only", False)  # a read-only CUDA array (_device_tensor)


def check_func_args(fn, bound: dict):
    """A `@fs.func` parameter annotated `fs.types.ndarray(...)`: the array passed must fit it
    (as for a kernel argument), else a compile error naming the func and the parameter."""
    for pname, value in bound.items():
        ann = getattr(fn, "__annotations__", {}).get(pname)
        if not isinstance(ann, NdarrayType):
            continue

        def bad(what, pname=pname):
            return NdarrayArgumentError(f"func {fn.__name__!r}: Invalid value for argument "
                                        f"{pname} - {what}")
        if not isinstance(value, Field) or not isinstance(value, (NdarraySlot, Ndarray, ExternalArray)):
            raise bad(f"it is an ndarray (fs.types.ndarray()) but got {type(value).__name__}")
        _check_element(ann, value.dtype, value.n, value.m, value.ndim_el, bad)
        if ann.ndim is not None and ann.ndim != len(value.shape):
            raise bad(f"required array has ndim={ann.ndim}, array with {len(value.shape)} "
                      "dimensions is provided")


def copy_back(templates):
    """After a launch: copy the C-order copies of Fortran-order numpy arguments back."""
    for t in templates.values():
        if isinstance(t, BoundNdarray) and t.copy_back is not None:
            t.copy_back()


def _check_element(ann, dtype, n, m, ndim_el, bad, matrix_dtype=True):
    """`matrix_dtype=False` (a NumPy array or tensor): under a vector/matrix annotation only
    the element shape is checked and the array's dtype is used, as Taichi 1.7.4 does
    (taichi-nerfs' f16 hash encoder accumulates into an f32 tensor under a `vector(2, f16)`)."""
    want = ann.dtype
    if want is None:
        return
    if want is float or want is int:
        if not (dtype.is_float if want is float else dtype.is_int):
            raise bad(f"required array has dtype={want.__name__}, array with dtype={dtype} is "
                      "provided")
        return
    if isinstance(want, T.MatrixType):
        el = (want.n,) if want.ndim == 1 else (want.n, want.m)
        got = () if ndim_el == 0 else ((n,) if ndim_el == 1 else (n, m))
        if el != got:
            raise bad(f"required element_shape={el}, array with element shape of {got} is "
                      "provided")
        want = want.dtype
        if not matrix_dtype or want is None or want is float or want is int:  # e.g. fs.math.vec3
            return
    if isinstance(want, T.DataType):
        if ndim_el != 0 and not isinstance(ann.dtype, T.MatrixType) and not ann.element_dim:
            raise bad(f"required array has dtype={want} (scalar elements), array with "
                      "vector/matrix elements is provided")
        if want is not dtype:
            raise bad(f"required array has dtype={want}, array with dtype={dtype} is provided")
        return
    raise bad(f"unsupported ndarray dtype {want!r}")


# ---- the kernel-side argument -------------------------------------------------------------------
class _ElementShape(tuple):
    """An ndarray argument's element shape in a kernel: a tuple, as on a field, and callable,
    since Taichi spells it `arr.element_shape()` there (a list: `== [2]` compares true)."""

    def __call__(self) -> list:
        return list(self)


class NdarraySlot(Field):
    """An ndarray argument inside a compiled kernel: a field whose data pointer (hidden argument
    `ptr_pos`) and shape (hidden arguments `shape_pos`; the IR values `shape`) come with each
    launch. Not registered with the runtime."""

    is_ndarray_slot = True

    @property
    def _what(self) -> str:
        return f"ndarray {self.ir_name!r}"

    def __init__(self, spec: NdarraySpec, name, ptr_pos, shape_pos, shape, role="primal"):
        self.dtype = spec.dtype
        self.name = self.ir_name = name
        self.n, self.m, self.ndim_el = spec.n, (1 if spec.ndim_el == 1 else spec.m), spec.ndim_el
        self.uid = -1
        self.generation = runtime.get().generation
        self.role = role
        self.ptr_pos, self.shape_pos = ptr_pos, tuple(shape_pos)
        self.shape = tuple(shape)
        self.storage = None
        self._unplaced = {}
        self.offset, self._snode = None, None
        self.grad = self.dual = self.primal = None
        self.needs_grad, self.needs_dual = spec.has_grad, False

    @property
    def element_shape(self) -> _ElementShape:
        return _ElementShape(Field.element_shape.fget(self))

    def _unplaced_twin(self, role):
        return None

    def _twin(self, role, place=True):
        raise FieldsimTypeError(f"ndarray argument {self.ir_name!r}: forward-mode AD "
                                "(fs.ad.FwdMode) does not support ndarray arguments; use fields")

    def __repr__(self):
        return f"<ndarray argument {self.ir_name!r} ndim={len(self.shape)} dtype={self.dtype}>"


def is_slot(field) -> bool:
    return getattr(field, "is_ndarray_slot", False)


def make_slot(fe, pname, spec: NdarraySpec, pos: int, loc):
    """Emit the hidden ARGs of one ndarray argument (positions from `pos`); returns (slot,
    [Param...], next position)."""
    from fieldsim.ir.ir import Param
    names = hidden_names(pname, spec)
    params = [Param(names[0], T.i64)]
    ptr_pos, grad_pos = pos, None
    k = pos + 1
    if spec.has_grad:
        params.append(Param(names[1], T.i64))
        grad_pos = k
        k += 1
    shape_pos, shape = [], []
    for d in range(spec.ndim):
        shape.append(fe.b.emit(Op.ARG, T.i32, attr=k, loc=loc))
        fe.nonneg.add(id(shape[-1]))  # a loop over the array needs no empty-axis guard
        params.append(Param(names[len(params)], T.i32))
        shape_pos.append(k)
        k += 1
    slot = NdarraySlot(spec, pname, ptr_pos, shape_pos, shape)
    if grad_pos is not None:
        slot.grad = NdarraySlot(spec, f"{pname}.grad", grad_pos, shape_pos, shape, role="grad")
        slot.grad.primal = slot
    return slot, params, k


def slot_in_function(fe, slot: NdarraySlot) -> NdarraySlot:
    """`slot` as the body of a real function (being built by `fe`) sees it: the same pointer
    argument, its shape read again there from the launch's arguments (the kernel's own shape
    values are not visible in a function); its gradient slot likewise."""
    shape = [fe.b.emit(Op.ARG, T.i32, attr=k) for k in slot.shape_pos]
    for v in shape:
        fe.nonneg.add(id(v))

    def rebased(s):
        out = copy.copy(s)
        out.shape = tuple(shape)
        return out
    new = rebased(slot)
    if slot.grad is not None:
        new.grad = rebased(slot.grad)
        new.grad.primal = new
    return new


# ---- the checker's and the Tape's view of a launch --------------------------------------------------
_VIEW_CACHE_SIZE = 16


def bound_view(ck, templates):
    """`ck` itself for a kernel without ndarray arguments; else a CompiledKernel sharing its
    program whose IR reads and writes this launch's actual arrays (made once per set of arrays,
    a few kept per kernel) for the access-rule checker and the Tape."""
    bound = [(name, t) for name, t in templates.items() if isinstance(t, BoundNdarray)]
    if not bound:
        return ck
    key = tuple((id(t.proxy), t.proxy.shape) for _name, t in bound)
    views = getattr(ck, "nd_views", None)
    if views is None:
        views = ck.nd_views = {}
    view = views.get(key)
    if view is not None:
        return view
    proxies = {name: t.proxy for name, t in bound}
    fmap = {}
    for s in _walk(ck.ir.body):
        if s.op in (Op.LOAD, Op.STORE, Op.ATOMIC) and is_slot(s.field):
            slot = s.field
            primal = slot.primal if slot.role == "grad" else slot
            proxy = proxies.get(primal.ir_name)
            if proxy is not None:
                fmap[id(slot)] = proxy.grad if slot.role == "grad" else proxy
    from fieldsim.ir.ir import Kernel
    from fieldsim.lang.kernel import CompiledKernel
    ir = ck.ir
    # the launch's shapes as constants, so that the checker sees what it sees for a field
    shapes = {}
    runtime_params = [p for p in ir.params if not p.template]
    for pos, p in enumerate(runtime_params):
        base, _, dim = p.name.rpartition(".shape")
        if base in proxies and dim.isdigit():
            shapes[pos] = int(proxies[base].shape[int(dim)])
    smap: dict = {}
    body = _subst(ir.body, fmap, smap, shapes)
    view_ir = Kernel(ir.name, ir.params, body, ir.ret, ir.loc, dict(ir.meta), ir.funcs)
    view = CompiledKernel(ck.owner, view_ir, ck.hidden_fields, ck.arg_dtypes, ck.ret)
    view.program = ck.program
    view.proxies = list(proxies.values())  # keeps the arrays (and so the key's ids) alive
    if len(views) >= _VIEW_CACHE_SIZE:
        views.clear()
    views[key] = view
    return view


def _walk(block):
    for s in block:
        yield s
        for b in s.blocks:
            yield from _walk(b)


def _subst(block, fmap, smap, shapes):
    from fieldsim.ir.ir import CustomGradInfo
    out = []
    for s in block:
        if s.op == Op.ARG and s.attr in shapes:
            new = smap[id(s)] = Stmt(Op.CONST, s.dtype, (), shapes[s.attr], None, s.loc)
            out.append(new)
            continue
        attr = s.attr
        if s.op in (Op.LOAD, Op.STORE):
            attr = fmap.get(id(attr), attr)
        elif s.op == Op.ATOMIC:
            attr = (fmap.get(id(attr[0]), attr[0]), attr[1])
        elif s.op == Op.CUSTOM_GRAD and isinstance(attr, CustomGradInfo):
            attr = CustomGradInfo(attr.name, tuple(smap.get(id(o), o) for o in attr.outputs))
        args = tuple(smap.get(id(a), a) for a in s.args)
        new = Stmt(s.op, s.dtype, args, attr, None, s.loc)
        smap[id(s)] = new  # a FOR is its own index value: map it before its body
        new.blocks = [_subst(b, fmap, smap, shapes) for b in s.blocks]
        out.append(new)
    return out


def refuse_grad_reads(ck, kname):
    """Taichi's rule: a kernel that reads an ndarray's `.grad` cannot be differentiated."""
    read = getattr(ck, "nd_grad_read", False)
    if read is False:  # looked up once per compiled kernel
        read = ck.nd_grad_read = next(
            (s for s in _walk(ck.ir.body)
             if s.op in (Op.LOAD, Op.ATOMIC) and is_slot(s.field) and s.field.role == "grad"), None)
    if read is not None:
        raise FieldsimRuntimeError(
            f"kernel {kname!r}: Cannot automatically differentiate through a grad tensor: it "
            f"reads {read.field.ir_name!r}; compute with the gradient in a kernel that is not "
            "differentiated", read.loc)
