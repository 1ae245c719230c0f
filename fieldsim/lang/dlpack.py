"""DLPack capsules made and read with ctypes (for memory numpy cannot hold: device memory).

The C structs of `dlpack.h` (DLPack 1.x: `DLManagedTensor`, the legacy unversioned one, and
`DLManagedTensorVersioned`), `export()` that wraps a pointer in a `"dltensor"` PyCapsule, and
`import_capsule()` that consumes one (legacy or versioned). CPython only (`ctypes.pythonapi`).

Guarantees:

* An exported capsule follows the DLPack rules: its `DLManagedTensor` (and the shape and stride
  arrays it points to) and `owner` stay alive until the deleter is called, exactly once: by the
  consumer that renamed the capsule `"used_dltensor"`, or by the capsule's destructor when
  nobody consumed it (a consumed capsule's destructor does nothing).
* Exported tensors are C-contiguous, strides given explicitly (in elements), byte_offset 0.
* `import_capsule` renames the capsule `"used_dltensor"` / `"used_dltensor_versioned"` and
  returns an `Imported` whose deletion calls the producer's deleter once. Dtypes other than
  int/uint/float/bool with one lane raise BufferError, and leave the capsule unconsumed.
"""
from __future__ import annotations

import ctypes
import itertools
import sys

import numpy as np

KDL_CPU, KDL_CUDA = 1, 2  # DLDeviceType
READ_ONLY = 1  # DLPACK_FLAG_BITMASK_READ_ONLY
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}  # numpy kind -> DLDataTypeCode (kDLInt, kDLUInt, kDLFloat, kDLBool)
_KINDS = {code: kind for kind, code in _CODES.items()}

_LEGACY, _VERSIONED = b"dltensor", b"dltensor_versioned"
_USED = {_LEGACY: b"used_dltensor", _VERSIONED: b"used_dltensor_versioned"}


class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)  # void (*)(DLManagedTensor[Versioned] *)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


class DLPackVersion(ctypes.Structure):
    _fields_ = [("major", ctypes.c_uint32), ("minor", ctypes.c_uint32)]


class DLManagedTensorVersioned(ctypes.Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", ctypes.c_void_p),
                ("deleter", DELETER), ("flags", ctypes.c_uint64), ("dl_tensor", DLTensor)]


def _api(name, restype, *argtypes):
    return ctypes.PYFUNCTYPE(restype, *argtypes)((name, ctypes.pythonapi))


# capsules are passed by address (id() in CPython), so one prototype serves Python callers and
# the destructor, which gets a raw PyObject *
_is_valid = _api("PyCapsule_IsValid", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_get_pointer = _api("PyCapsule_GetPointer", ctypes.c_void_p, ctypes.c_void_p, ctypes.c_char_p)
_set_name = _api("PyCapsule_SetName", ctypes.c_int, ctypes.c_void_p, ctypes.c_char_p)
_CAPSULE_DTOR = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
_new = _api("PyCapsule_New", ctypes.py_object, ctypes.c_void_p, ctypes.c_char_p, _CAPSULE_DTOR)

# ---- export ----------------------------------------------------------------------------------
_LIVE: dict = {}  # manager_ctx key -> (DLManagedTensor, shape array, strides array, owner)
_KEYS = itertools.count(1)


def _release(address: int, finalizing=sys.is_finalizing):
    """The deleter's body: drop what the DLManagedTensor at `address` kept alive (nothing at
    interpreter exit, when the struct may be gone already)."""
    if finalizing():
        return
    key = DLManagedTensor.from_address(address).manager_ctx
    _LIVE.pop(key, None)


_DELETE = DELETER(lambda address: _release(address))  # looked up at each call (tests wrap it)


def _capsule_gone(capsule: int, finalizing=sys.is_finalizing):
    """The capsule destructor: a capsule nobody consumed still holds its tensor."""
    if not finalizing() and _is_valid(capsule, _LEGACY):
        address = _get_pointer(capsule, _LEGACY)
        DLManagedTensor.from_address(address).deleter(address)


_ON_CAPSULE_GONE = _CAPSULE_DTOR(_capsule_gone)
# a capsule or a consumer may outlive this module at interpreter exit: the C thunks both
# callbacks are must never be freed (one reference each, never given back)
for _thunk in (_DELETE, _ON_CAPSULE_GONE):
    ctypes.pythonapi.Py_IncRef(ctypes.py_object(_thunk))


def dl_dtype(dtype) -> DLDataType:
    dtype = np.dtype(dtype)
    if dtype.kind not in _CODES:
        raise BufferError(f"DLPack: dtype {dtype} cannot be exported")
    return DLDataType(_CODES[dtype.kind], dtype.itemsize * 8, 1)


def export(ptr: int, shape, dtype, device, owner):
    """A `"dltensor"` capsule of the C-contiguous array at `ptr` on `device` ((type, id));
    `owner` is kept alive until the consumer calls the deleter (or the capsule dies unused)."""
    shape = tuple(int(s) for s in shape)
    ndim = len(shape)
    dims = (ctypes.c_int64 * max(ndim, 1))(*shape)
    strides = (ctypes.c_int64 * max(ndim, 1))(*c_strides(shape))
    managed = DLManagedTensor()
    t = managed.dl_tensor
    t.data, t.device, t.ndim = ptr or None, DLDevice(*device), ndim
    t.dtype = dl_dtype(dtype)
    t.shape = ctypes.cast(dims, ctypes.POINTER(ctypes.c_int64))
    t.strides = ctypes.cast(strides, ctypes.POINTER(ctypes.c_int64))
    key = next(_KEYS)
    managed.manager_ctx, managed.deleter = key, _DELETE
    _LIVE[key] = (managed, dims, strides, owner)
    return _new(ctypes.addressof(managed), _LEGACY, _ON_CAPSULE_GONE)


def c_strides(shape) -> list:
    """C-order strides in elements."""
    out, step = [], 1
    for n in reversed(shape):
        out.append(step)
        step *= int(n)
    return out[::-1]


# ---- import ----------------------------------------------------------------------------------
class Imported:
    """A consumed capsule's tensor: `ptr` (data + byte_offset), `shape`, `strides` (elements;
    None when C-contiguous was implied), numpy `dtype`, `device` ((type, id)), `read_only`.
    Deleting it calls the producer's deleter (once)."""

    def __init__(self, address, versioned, keep):
        struct = (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(address)
        t = struct.dl_tensor
        self.deleter = None  # set last: a tensor this refuses stays the capsule's
        self.device = (int(t.device.device_type), int(t.device.device_id))
        self.shape = tuple(int(t.shape[k]) for k in range(t.ndim))
        self.strides = None if not t.strides else tuple(int(t.strides[k]) for k in range(t.ndim))
        self.dtype = _np_dtype(t.dtype)
        self.ptr = int(t.data or 0) + int(t.byte_offset)
        self.read_only = bool(versioned and struct.flags & READ_ONLY)
        self.address, self.keep, self.deleter = address, keep, struct.deleter

    def c_contiguous(self) -> bool:
        if self.strides is None:
            return True
        want = c_strides(self.shape)
        return all(n == 1 or s == w for n, s, w in zip(self.shape, self.strides, want))

    def __del__(self, finalizing=sys.is_finalizing):
        deleter, self.deleter = self.deleter, None
        if deleter and not finalizing():  # at exit the producer may be gone: leave it
            deleter(self.address)


def _np_dtype(dt: DLDataType) -> np.dtype:
    kind = _KINDS.get(int(dt.code))
    if kind is None or dt.lanes != 1 or dt.bits % 8:
        raise BufferError(f"DLPack dtype (code {dt.code}, {dt.bits} bits, {dt.lanes} lanes) has no "
                          "fieldsim equivalent")
    return np.dtype("?" if kind == "b" else f"{kind}{dt.bits // 8}")


def _capsule_kind(capsule):
    """The capsule's unconsumed name (legacy or versioned); BufferError otherwise."""
    for name in (_VERSIONED, _LEGACY):
        if _is_valid(id(capsule), name):
            return name
    raise BufferError("not an unconsumed DLPack capsule (was it used already?)")


def capsule_device(capsule) -> tuple:
    """(device type, id) of an unconsumed capsule, without consuming it."""
    name = _capsule_kind(capsule)
    address = _get_pointer(id(capsule), name)
    struct = (DLManagedTensorVersioned if name == _VERSIONED else DLManagedTensor).from_address(address)
    return (int(struct.dl_tensor.device.device_type), int(struct.dl_tensor.device.device_id))


def import_capsule(capsule) -> Imported:
    """Consume `capsule`: an `Imported` owning the producer's tensor until it is deleted."""
    name = _capsule_kind(capsule)
    address = _get_pointer(id(capsule), name)
    imported = Imported(address, name == _VERSIONED, capsule)
    _set_name(id(capsule), _USED[name])
    return imported
