"""Sharing memory with numpy, PyTorch and JAX: DLPack, `to_torch`/`from_torch`, tensor arguments.

Takes fields and `fs.ndarray`s on the CPU backend, and torch tensors, JAX arrays and anything
else with the DLPack protocol (`__dlpack__`/`__dlpack_device__`) on the host.

Guarantees:

* `field.__dlpack__()`, `field.to_dlpack()` (a DLPack capsule) and `fs.from_dlpack(x)` share
  memory, never copy: `torch.from_dlpack(field)` and `np.from_dlpack(field)` are views of the
  field's data, and `fs.from_dlpack(x)` is an `fs.ndarray` whose data is `x`'s.
* `field.to_torch(device=None)` and `field.from_torch(t)` copy, as in Taichi; `from_torch`
  requires the field's exact shape.
* A torch tensor or a DLPack array passed to a `fs.types.ndarray()` kernel argument is read and
  written in place (`kernel_array`). A torch tensor with `requires_grad` lends its `.grad` (made
  as zeros when None, as Taichi does) as the gradient that the kernel's adjoint accumulates into;
  inside `fs.ad.torch_function` the bridge supplies the gradient buffers instead.
* Device, dtype, stride and read-only mismatches raise `InteropError` (a FieldsimTypeError)
  naming the field or argument, never a silent copy or reinterpretation. Fields on the CUDA
  backend are refused with a clear error (DLPack export of device memory is not implemented).
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import FieldsimTypeError
from fieldsim.lang import runtime
from fieldsim.lang import types as T

_DL_CPU = 1  # DLDeviceType kDLCPU
_DL_DEVICES = {1: "cpu", 2: "cuda", 3: "cuda_host", 4: "opencl", 7: "vulkan", 8: "metal", 10: "rocm"}


class InteropError(FieldsimTypeError, ValueError):
    """An array that cannot share memory with fieldsim as asked (device, dtype, strides)."""


# ---- fields out -----------------------------------------------------------------------------------
def _host_array(field, what) -> np.ndarray:
    field._check_live()
    arr = getattr(field.storage, "array", None)
    if not isinstance(arr, np.ndarray):
        raise InteropError(f"field {field.ir_name!r}.{what}: its data lives on the "
                           f"{runtime.get().arch} device; sharing device memory through DLPack is "
                           "not implemented (use to_numpy(), or fs.init(arch=fs.cpu))")
    return arr


def _storage_copy(field) -> np.ndarray:
    """A copy of the field's storage (shape `storage_shape`), from host or device memory."""
    field._check_live()
    arr = getattr(field.storage, "array", None)
    return arr.copy() if isinstance(arr, np.ndarray) else field.storage.to_numpy()


def field_dlpack(self, stream=None, **kwargs):
    """`__dlpack__`: the field's data as a DLPack capsule (zero copy)."""
    return _host_array(self, "__dlpack__").__dlpack__(stream=stream, **kwargs)


def field_dlpack_device(self):
    _host_array(self, "__dlpack_device__")
    return (_DL_CPU, 0)


def to_dlpack(self):
    """A DLPack capsule of the field's data (zero copy; consume it once, e.g. torch.from_dlpack)."""
    return _host_array(self, "to_dlpack").__dlpack__()


def to_torch(self, device=None):
    """A torch tensor copy of the field (shape `shape + element shape`), as in Taichi."""
    import torch
    t = torch.from_numpy(_storage_copy(self))
    if _grad_provider:  # inside fs.ad.torch_function: the copy's gradient flows to the field
        _grad_provider[-1].on_to_torch(self, t)
    return t if device is None else t.to(device)


def from_torch(self, tensor):
    """Copy a torch tensor of exactly the field's storage shape into the field."""
    import torch
    if not isinstance(tensor, torch.Tensor):
        raise InteropError(f"field {self.ir_name!r}.from_torch: expected a torch.Tensor, got "
                           f"{type(tensor).__name__}")
    if tuple(tensor.shape) != self.storage_shape:
        raise InteropError(f"field {self.ir_name!r}.from_torch: expected a tensor of shape "
                           f"{self.storage_shape}, got {tuple(tensor.shape)}")
    if tensor.is_complex() or tensor.dtype == torch.bool:
        raise InteropError(f"field {self.ir_name!r}.from_torch: unsupported dtype {tensor.dtype}")
    self.from_numpy(tensor.detach().cpu().resolve_conj().numpy())
    if _grad_provider:  # inside fs.ad.torch_function: the field's gradient flows to the tensor
        _grad_provider[-1].on_from_torch(self, tensor)


# ---- arrays in --------------------------------------------------------------------------------
def _is_torch(x) -> bool:
    mod = type(x).__module__
    return mod.startswith("torch") and hasattr(x, "data_ptr")


def host_view(x, what: str) -> np.ndarray:
    """A numpy view (zero copy) of a torch tensor or a DLPack array in host memory."""
    if _is_torch(x):
        import torch
        if x.device.type != "cpu":
            raise InteropError(f"{what}: the tensor is on {x.device}; fieldsim's kernels take host "
                               "(CPU) tensors: move it with .cpu() first")
        if x.layout != torch.strided:
            raise InteropError(f"{what}: sparse tensors are not supported")
        try:
            return x.detach().resolve_conj().numpy()
        except TypeError as err:  # e.g. bfloat16: numpy has no such dtype
            raise InteropError(f"{what}: torch dtype {x.dtype} has no fieldsim equivalent ({err})") \
                from None
    dev = x.__dlpack_device__()
    if int(dev[0]) != _DL_CPU:
        name = _DL_DEVICES.get(int(dev[0]), f"device type {int(dev[0])}")
        raise InteropError(f"{what}: the array lives on {name}; fieldsim shares host (CPU) "
                           "memory only")
    try:
        return np.from_dlpack(x)
    except (BufferError, TypeError, RuntimeError) as err:
        raise InteropError(f"{what}: cannot view it through DLPack ({err})") from None


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
    whether they may be written): pass JAX arrays to kernels directly, to be read in place."""
    from fieldsim.lang.ndarray import ArrayStorage, Ndarray
    if type(x).__name__ == "PyCapsule":
        arr = np.from_dlpack(_Capsule(x))
    elif isinstance(x, np.ndarray):
        arr = x
    else:
        arr = host_view(x, "fs.from_dlpack")
    if not arr.flags.c_contiguous:
        raise InteropError("fs.from_dlpack: the array is not C-contiguous (strides "
                           f"{arr.strides}); make it contiguous first (a copy) or pass a view that is")
    if not arr.flags.writeable and type(x).__name__ == "PyCapsule":
        raise InteropError("fs.from_dlpack: a bare DLPack capsule carries no read-only flag, so it "
                           "is taken as read-only; pass the array itself (fs.from_dlpack(t)), whose "
                           "__dlpack__ says whether it may be written")
    if not arr.flags.writeable:
        raise InteropError("fs.from_dlpack: the array is read-only (e.g. a JAX array); pass it to "
                           "a kernel's fs.types.ndarray() argument directly to read it in place")
    try:
        dt = T.from_numpy(arr.dtype)
    except TypeError:
        raise InteropError(f"fs.from_dlpack: dtype {arr.dtype} has no fieldsim equivalent") from None
    if element_dim not in (0, 1, 2) or arr.ndim < element_dim:
        raise InteropError(f"fs.from_dlpack: element_dim={element_dim} does not fit an array of "
                           f"{arr.ndim} dimensions")
    el = arr.shape[arr.ndim - element_dim:] if element_dim else ()
    shape = arr.shape[:arr.ndim - element_dim]
    n = el[0] if element_dim else None
    m = el[1] if element_dim == 2 else None
    nd = Ndarray(dt, None, n=n, m=m, ndim_el=element_dim)
    nd.shape = tuple(int(s) for s in shape)
    nd.storage = ArrayStorage(arr)
    nd.external = x  # keeps the owner alive
    return nd


class _Capsule:
    """A bare DLPack capsule, given the protocol np.from_dlpack asks for."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None, **kwargs):
        return self.capsule

    def __dlpack_device__(self):
        return (_DL_CPU, 0)


def install():
    """Give fields (and so fs.ndarrays) their interop methods."""
    from fieldsim.lang.field import Field
    Field.__dlpack__ = field_dlpack
    Field.__dlpack_device__ = field_dlpack_device
    Field.to_dlpack = to_dlpack
    Field.to_torch = to_torch
    Field.from_torch = from_torch
