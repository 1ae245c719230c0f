"""Sharing memory with numpy, PyTorch and JAX: DLPack, `to_torch`/`from_torch`, tensor arguments.

Takes fields and `fs.ndarray`s (host memory on the CPU backend, device memory on CUDA), and torch
tensors, JAX arrays and anything else with the DLPack protocol (`__dlpack__`/`__dlpack_device__`)
in host memory, or in CUDA memory on the CUDA backend. Storage is reached by duck typing: a host
storage has `array` (numpy); a device storage has `ptr`, `shape`, `dtype`, `dlpack_device` and
an `exported` count, and its backend `borrow(ptr, shape, dtype, keep)` wraps memory someone else
owns. The DLPack structs and capsules themselves are `fieldsim.lang.dlpack`'s.

Guarantees:

* `field.__dlpack__()`, `field.to_dlpack()` (a DLPack capsule) and `fs.from_dlpack(x)` share
  memory, never copy: `torch.from_dlpack(field)` and `np.from_dlpack(field)` are views of the
  field's data, and `fs.from_dlpack(x)` is an `fs.ndarray` whose data is `x`'s. On the CUDA
  backend the capsule holds the device pointer (kDLCUDA, device 0), made after fieldsim's
  launches are waited for, and keeps the storage alive (past a reset) until the consumer's
  deleter runs; a CUDA array is taken after `__dlpack__(stream=1)` (fieldsim launches on the
  legacy default stream) and kept alive by the ndarray.
* `field.to_torch(device=None)` and `field.from_torch(t)` copy, as in Taichi; `from_torch`
  requires the field's exact shape. On the CUDA backend `to_torch(device="cuda")` and
  `from_torch(cuda_tensor)` copy device to device; other pairs go through host memory.
* A torch tensor or a DLPack array passed to a `fs.types.ndarray()` kernel argument is read and
  written in place (`kernel_array`), a CUDA one too on the CUDA backend. A torch tensor with
  `requires_grad` lends its `.grad` (made as zeros when None, as Taichi does) as the gradient
  that the kernel's adjoint accumulates into; inside `fs.ad.torch_function` the bridge supplies
  the gradient buffers instead (host tensors only: CUDA tensors are refused there).
* Device, dtype, stride and read-only mismatches raise `InteropError` (a FieldsimTypeError)
  naming the field or argument, never a silent copy or reinterpretation: CUDA memory on the CPU
  backend is refused so.
"""
from __future__ import annotations

import sys

import numpy as np

from fieldsim.errors import FieldsimTypeError, MissingModuleError
from fieldsim.lang import dlpack, runtime
from fieldsim.lang import types as T
from fieldsim.lang.host_errors import at_user_line

_DL_CPU = 1  # DLDeviceType kDLCPU
_DL_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 10: "rocm"}


class InteropError(FieldsimTypeError, ValueError):
    """An array that cannot share memory with fieldsim as asked (device, dtype, strides)."""


# ---- fields out -----------------------------------------------------------------------------------
def _host_array(field, what) -> np.ndarray | None:
    """The field's host array, or None when its storage is device memory that can be exported
    (a storage with `dlpack_device`); anything else is refused."""
    field._check_live()
    arr = getattr(field.storage, "array", None)
    if isinstance(arr, np.ndarray):
        return arr
    if getattr(field.storage, "dlpack_device", None) is None:
        raise InteropError(f"field {field.ir_name!r}.{what}: its data is not one array in memory "
                           "fieldsim can share (a component view of a matrix field, or a big sparse "
                           "field stored block- or chunk-major); use to_numpy()")
    return None


def _storage_copy(field) -> np.ndarray:
    """A copy of the field's storage (shape `storage_shape`), from host or device memory."""
    field._check_live()
    arr = getattr(field.storage, "array", None)
    return arr.copy() if isinstance(arr, np.ndarray) else field.storage.to_numpy()


def _device_capsule(field, stream, kwargs):
    """A DLPack capsule of a field in device memory: fieldsim's launches synchronised first
    (unless `stream` is -1), the storage kept alive (and not freed by a reset) until the
    consumer lets go."""
    storage = field.storage
    if stream == 0:
        raise BufferError("__dlpack__: stream=0 is ambiguous on CUDA (the array API disallows it); "
                          "pass 1 for the legacy default stream")
    if kwargs.get("copy"):
        raise BufferError(f"field {field.ir_name!r}.__dlpack__: copy=True: fieldsim exports views "
                          "only; use to_torch() for a copy")
    want = kwargs.get("dl_device")
    if want is not None and tuple(int(v) for v in want) != tuple(storage.dlpack_device):
        raise BufferError(f"field {field.ir_name!r}.__dlpack__: the data lives on "
                          f"{storage.dlpack_device}, not {tuple(want)}")
    if stream != -1:
        runtime.sync()
    return dlpack.export(storage.ptr, storage.shape, storage.dtype, storage.dlpack_device,
                         _Lease(storage))


class _Lease:
    """An exported storage's hold: while one lives, a backend reset leaves the memory allocated
    (the storage frees it when the last reference goes)."""

    def __init__(self, storage):
        self.storage = storage
        storage.exported += 1

    def __del__(self):
        self.storage.exported -= 1


def field_dlpack(self, stream=None, **kwargs):
    """`__dlpack__`: the field's data as a DLPack capsule (zero copy).

    Host memory (the CPU backend): numpy's capsule; `stream` must be None. Device memory (the
    CUDA backend): a `"dltensor"` capsule of the device pointer, C-contiguous. fieldsim launches
    its kernels on the legacy default stream; before the capsule is made every launch so far is
    waited for (`fs.sync()`), so the data is final on whatever stream the consumer names
    (`stream=None` or 1: the legacy default stream; a stream pointer; -1: no synchronisation,
    the consumer's responsibility). Kernels launched later are ordered with the consumer's
    work only on the legacy default stream (torch's default): elsewhere call `fs.sync()` first.
    `max_version` is accepted and answered with a legacy (unversioned) capsule, as the array API
    allows; `copy=True` and a `dl_device` other than the field's raise BufferError."""
    arr = _host_array(self, "__dlpack__")
    _note_shared(self)
    if arr is not None:
        return arr.__dlpack__(stream=stream, **kwargs)
    return _device_capsule(self, stream, kwargs)


def _note_shared(field):
    """A dual exported zero copy may be written by its consumer at any time, unseen: forward
    mode takes its field's tangent as live from now on (`ad.fwd_mode`), in this block and later
    ones."""
    if field.role != "dual" or field.primal is None:
        return
    field.primal.dual_shared = True
    fwd = runtime.get().fwd_mode
    if fwd is not None:
        fwd.note_dual_write(field)


def field_dlpack_device(self):
    """`__dlpack_device__`: (kDLCPU=1, 0) on the CPU backend, (kDLCUDA=2, 0) on CUDA."""
    arr = _host_array(self, "__dlpack_device__")
    return (_DL_CPU, 0) if arr is not None else tuple(self.storage.dlpack_device)


def to_dlpack(self):
    """A DLPack capsule of the field's data (zero copy; consume it once, e.g. torch.from_dlpack).
    On the CUDA backend launched kernels are waited for first, as `__dlpack__` does."""
    arr = _host_array(self, "to_dlpack")
    _note_shared(self)
    return arr.__dlpack__() if arr is not None else _device_capsule(self, None, {})


def _on_device(field) -> bool:
    field._check_live()
    return getattr(field.storage, "dlpack_device", None) is not None


def _no_bridge(what):
    if _grad_provider:
        raise InteropError(f"{what}: fs.ad.torch_function/jax_function take host tensors only "
                           "(their gradient buffers are host memory); CUDA tensors are not "
                           "supported there yet")


def _torch(what: str):
    """The torch module, or a MissingModuleError naming the call that needs it."""
    try:
        import torch
    except ImportError:
        raise MissingModuleError(f"{what} needs PyTorch, which is not installed "
                                 "(pip install torch)") from None
    return torch


def to_torch(self, device=None, keep_dims=None):
    """A torch tensor copy of the field, shaped as `to_numpy(keep_dims=...)` gives, as in Taichi
    (whose scalar fields take no `keep_dims`): on the host for `device=None`. On the CUDA backend
    `device="cuda"` copies device to device (a DLPack view cloned on torch's current stream),
    never through the host."""
    runtime.python_scope_call(f"{self._what}.to_torch()")
    torch = _torch(f"{self._what}.to_torch()")
    if keep_dims is not None and not self.ndim_el:
        raise TypeError(f"{self._what}.to_torch() got an unexpected keyword argument "
                        "'keep_dims' (a scalar field has no element dimensions to keep)")
    shape = self._host_shape(bool(keep_dims))
    dev = None if device is None else torch.device(device)
    if dev is not None and dev.type == "cuda" and _on_device(self):
        _no_bridge(f"{self._what}.to_torch(device={device!r})")
        return torch.from_dlpack(self).clone().to(dev).reshape(shape)
    t = torch.from_numpy(_storage_copy(self).reshape(shape))
    if _grad_provider:  # inside fs.ad.torch_function: the copy's gradient flows to the field
        _grad_provider[-1].on_to_torch(self, t)
    return t if device is None else t.to(device)


def from_torch(self, tensor):
    """Copy a torch tensor of the field's storage shape (or a shape `to_torch` gives, with or
    without `keep_dims`, as Taichi takes) into the field. A CUDA tensor into a field of the
    CUDA backend is copied device to device (torch's stream is waited for before this returns,
    so the next kernel sees it); other pairs go through host memory."""
    runtime.python_scope_call(f"{self._what}.from_torch()")
    torch = _torch(f"{self._what}.from_torch()")
    if not isinstance(tensor, torch.Tensor):
        raise InteropError(f"{self._what}.from_torch: expected a torch.Tensor, got "
                           f"{type(tensor).__name__}")
    shapes = (self.storage_shape, self._host_shape(False), self._host_shape(True))
    if tuple(tensor.shape) not in shapes:
        raise InteropError(f"{self._what}.from_torch: expected a tensor of shape "
                           f"{self.storage_shape}, got {tuple(tensor.shape)}")
    if tensor.is_complex() or tensor.dtype == torch.bool:
        raise InteropError(f"{self._what}.from_torch: unsupported dtype {tensor.dtype}")
    if tensor.device.type == "cuda" and _on_device(self):
        _no_bridge(f"{self._what}.from_torch")
        _device_from_torch(self, tensor.reshape(self.storage_shape))
        return
    self.from_numpy(tensor.detach().cpu().resolve_conj().numpy())
    if _grad_provider:  # inside fs.ad.torch_function: the field's gradient flows to the tensor
        _grad_provider[-1].on_from_torch(self, tensor)


def _device_from_torch(field, tensor):
    """A CUDA tensor into a device field: recorded on a Tape as `from_numpy` is, then copied
    by torch into a DLPack view of the field."""
    import torch

    from fieldsim.lang import sparse_host
    from fieldsim.lang.field import _record_python_write
    _record_python_write(field, None, f"{field.ir_name}.from_torch(...)")
    view = torch.from_dlpack(field)  # fieldsim's launches waited for: none still reads it
    view.copy_(tensor.detach().resolve_conj())
    torch.cuda.current_stream(view.device).synchronize()
    sparse_host.activate_python(field, None)


# ---- arrays in --------------------------------------------------------------------------------
def _is_torch(x) -> bool:
    mod = type(x).__module__
    return mod.startswith("torch") and hasattr(x, "data_ptr")


def torch_tensor_type():
    """`torch.Tensor` once torch is imported (by the user: fieldsim never imports it for
    this), else None."""
    torch = sys.modules.get("torch")
    return getattr(torch, "Tensor", None)


def _is_jax(x) -> bool:
    return type(x).__module__.startswith(("jax", "jaxlib"))


def host_view(x, what: str) -> np.ndarray:
    """A numpy view (zero copy) of a torch tensor or a DLPack array in host memory."""
    if _is_torch(x):
        import torch
        if x.device.type != "cpu":
            raise InteropError(f"{what}: the tensor is on {x.device}, but fieldsim runs on "
                               f"{_backend_name()}, which takes host (CPU) tensors: move it with "
                               ".cpu() first, or fs.init(arch=fs.cuda) to share CUDA memory "
                               "(fieldsim never copies it silently)")
        if x.layout != torch.strided:
            raise InteropError(f"{what}: sparse tensors are not supported")
        if x.is_neg():  # its memory holds the values before a lazy negation
            raise InteropError(f"{what}: the tensor is a lazily negated view (its neg bit is "
                               "set); call .resolve_neg() first (a copy: fieldsim never makes "
                               "one silently)")
        try:
            return x.detach().resolve_conj().numpy()
        except TypeError as err:  # e.g. bfloat16: numpy has no such dtype
            raise InteropError(f"{what}: torch dtype {x.dtype} has no fieldsim equivalent ({err})") \
                from None
    dev = x.__dlpack_device__()
    if int(dev[0]) != _DL_CPU:
        name = _DL_DEVICES.get(int(dev[0]), f"device type {int(dev[0])}")
        raise InteropError(f"{what}: the array lives on {name}, but fieldsim runs on "
                           f"{_backend_name()}, which shares host (CPU) memory only"
                           + ("; fs.init(arch=fs.cuda) shares CUDA memory" if name == "cuda" else ""))
    try:
        return np.from_dlpack(x)
    except (BufferError, TypeError, RuntimeError) as err:
        raise InteropError(f"{what}: cannot view it through DLPack ({err})") from None


def _backend_name() -> str:
    return f"the {getattr(runtime.get().backend(), 'name', 'cpu')} backend"


def is_device_array(x) -> bool:
    """A torch CUDA tensor, or a DLPack array or capsule in CUDA memory."""
    if _is_torch(x):
        return x.device.type == "cuda"
    if type(x).__name__ == "PyCapsule":
        try:
            return dlpack.capsule_device(x)[0] == dlpack.KDL_CUDA
        except BufferError:
            return False
    dev = getattr(x, "__dlpack_device__", None)
    return dev is not None and not isinstance(x, np.ndarray) and int(dev()[0]) == dlpack.KDL_CUDA


def device_import(x, what: str) -> dlpack.Imported:
    """Consume a CUDA array's DLPack capsule (zero copy) for the CUDA backend: its producer's
    stream work is ordered before fieldsim's launches (`__dlpack__(stream=1)`: fieldsim launches
    on the legacy default stream). The backend must take device memory (`borrow`): on the CPU
    an InteropError names `what`. C-contiguous, fieldsim dtypes, device 0 only."""
    if getattr(runtime.get().backend(), "borrow", None) is None:
        raise InteropError(f"{what}: the array lives in CUDA device memory, but fieldsim runs on "
                           f"{_backend_name()}: fs.init(arch=fs.cuda) to share it, or move it to "
                           "the host first (e.g. .cpu()); fieldsim never copies it silently")
    try:
        imported = dlpack.import_capsule(_device_capsule_of(x))
    except (BufferError, TypeError, RuntimeError) as err:
        raise InteropError(f"{what}: cannot view it through DLPack ({err})") from None
    if imported.device != (dlpack.KDL_CUDA, 0):
        raise InteropError(f"{what}: the array is on CUDA device {imported.device[1]}; fieldsim "
                           "uses device 0")
    if not imported.c_contiguous():
        raise InteropError(f"{what}: the array is not C-contiguous (strides {imported.strides} "
                           "elements); make it contiguous first (a copy) or pass a view that is")
    if _is_jax(x):  # immutable, whatever its capsule says (JAX's pre-1.0 DLPack has no flag)
        imported.read_only = True
    return imported


def _device_capsule_of(x):
    if type(x).__name__ == "PyCapsule":
        return x
    src = x.detach() if _is_torch(x) else x  # torch exports no tensor that requires grad
    try:
        return src.__dlpack__(stream=1, max_version=(1, 0))
    except TypeError:  # a producer older than DLPack 1.0
        return src.__dlpack__(stream=1)


def fieldsim_dtype(dtype, what: str):
    try:
        return T.from_numpy(dtype)
    except TypeError:
        raise InteropError(f"{what}: dtype {dtype} has no fieldsim equivalent") from None


def device_storage(imported: dlpack.Imported, dt, owner):
    """The backend's storage over an imported device array (it keeps `owner` and the import)."""
    return runtime.get().backend().borrow(imported.ptr, imported.shape, dt, (imported, owner))


def is_external(x) -> bool:
    """A value `host_view` takes (and so a kernel's ndarray argument can)."""
    return _is_torch(x) or (hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__")
                            and not isinstance(x, np.ndarray))


# the bridge call recording or replaying (fs.ad.torch_function / jax_function): it supplies
# the gradient buffers of tensors and records to_torch/from_torch
_grad_provider = []


def tensor_grad_view(x, arr: np.ndarray):
    """The host array that a tensor argument's adjoint accumulates into, or None."""
    if _grad_provider:
        return _grad_provider[-1].grad_for(x, arr)
    if _is_torch(x) and x.requires_grad:
        import torch
        if x.grad is None:
            x.grad = torch.zeros_like(x)
        g = x.grad
        if g.device.type != "cpu" or not g.is_contiguous() or g.dtype != x.dtype:
            raise InteropError("the tensor's .grad is not a contiguous host tensor of its dtype")
        return g.numpy()
    return None


def from_dlpack(x, element_dim: int = 0):
    """`fs.from_dlpack(x)`: an `fs.ndarray` sharing `x`'s memory (a torch tensor, a numpy array,
    anything with `__dlpack__`). The last `element_dim` axes become vector (1) or matrix (2)
    elements. Read-only memory is refused (JAX arrays; bare DLPack capsules, which cannot say
    whether they may be written): pass JAX arrays to kernels directly, to be read in place.
    CUDA memory (a CUDA tensor) is shared on the CUDA backend (see `device_import`) and refused,
    with an InteropError, on the CPU; host memory likewise on the CUDA backend."""
    if is_device_array(x):
        _refuse_bare_capsule(x)
        imported = device_import(x, "fs.from_dlpack")
        if imported.read_only:
            raise InteropError("fs.from_dlpack: the array is read-only (e.g. a JAX array); pass it "
                               "to a kernel's fs.types.ndarray() argument directly to read it in place")
        dt = fieldsim_dtype(imported.dtype, "fs.from_dlpack")
        from fieldsim.lang.ndarray import unlist  # device memory: freed with the ndarray
        return unlist(_ndarray(dt, imported.shape, element_dim, device_storage(imported, dt, x), x))
    if not getattr(runtime.get().backend(), "host_memory", True):
        raise InteropError("fs.from_dlpack: the array is in host memory, and fieldsim runs on "
                           f"{_backend_name()}, whose kernels read device memory: share a CUDA "
                           "array, or pass this one to a kernel's fs.types.ndarray() argument "
                           "directly (copied to the device and back for each launch)")
    if type(x).__name__ == "PyCapsule":
        arr = np.from_dlpack(_Capsule(x))
    elif isinstance(x, np.ndarray):
        arr = x
    else:
        arr = host_view(x, "fs.from_dlpack")
    if not arr.flags.c_contiguous:
        raise InteropError("fs.from_dlpack: the array is not C-contiguous (strides "
                           f"{arr.strides}); make it contiguous first (a copy) or pass a view that is")
    if not arr.flags.writeable:
        _refuse_bare_capsule(x)
        raise InteropError("fs.from_dlpack: the array is read-only (e.g. a JAX array); pass it to "
                           "a kernel's fs.types.ndarray() argument directly to read it in place")
    dt = fieldsim_dtype(arr.dtype, "fs.from_dlpack")
    from fieldsim.lang.ndarray import ArrayStorage
    return _ndarray(dt, arr.shape, element_dim, ArrayStorage(arr), x)


def _refuse_bare_capsule(x):
    if type(x).__name__ == "PyCapsule":
        raise InteropError("fs.from_dlpack: a bare DLPack capsule carries no read-only flag, so it "
                           "is taken as read-only; pass the array itself (fs.from_dlpack(t)), whose "
                           "__dlpack__ says whether it may be written")


def _ndarray(dt, full_shape, element_dim, storage, owner):
    """An `fs.ndarray` over `storage` (of shape `full_shape`: the array's shape then its
    `element_dim` element axes)."""
    from fieldsim.lang.ndarray import make_ndarray
    ndim = len(full_shape)
    if element_dim not in (0, 1, 2) or ndim < element_dim:
        raise InteropError(f"fs.from_dlpack: element_dim={element_dim} does not fit an array of "
                           f"{ndim} dimensions")
    el = full_shape[ndim - element_dim:] if element_dim else ()
    n = el[0] if element_dim else None
    m = el[1] if element_dim == 2 else None
    nd = make_ndarray(dt, None, n=n, m=m, ndim_el=element_dim)
    nd.shape = tuple(int(s) for s in full_shape[:ndim - element_dim])
    nd.storage = storage
    nd.external = owner  # keeps the owner alive
    return nd


class _Capsule:
    """A bare DLPack capsule, given the protocol np.from_dlpack asks for."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return dlpack.capsule_device(self.capsule)


def install():
    """Give fields (and so fs.ndarrays) their interop methods."""
    from fieldsim.lang.field import Field
    Field.__dlpack__ = field_dlpack
    Field.__dlpack_device__ = field_dlpack_device
    Field.to_dlpack = to_dlpack
    Field.to_torch = at_user_line(to_torch)  # set after the class: not wrapped by its decorator
    Field.from_torch = at_user_line(from_torch)
