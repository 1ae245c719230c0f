"""`fs.get_addr(f, I)`: the memory address of field element `f[I]`, as Taichi's `ti.get_addr`.

Takes a placed scalar or matrix field (or the SNode a field is placed in, `f.snode`) and its
storage indices (no field offset applied, as Taichi's SNode indices). Guarantees: a u64, the
address of the element's first component in the field's own storage (host memory on the CPU,
device memory on CUDA), in kernels (a constant base plus the index arithmetic: the storage does
not move while the field lives) and, beyond Taichi (kernel scope only there), in Python scope.
Elements are laid out in C order over the field's indices, then its components: consecutive
elements of a scalar f32 field are 4 bytes apart, as in Taichi's dense layouts; a hierarchical
Taichi layout (`dense(ij, 2).dense(ij, 2)`) is stored row-major here, so its addresses differ
from Taichi's.
"""
from __future__ import annotations

import math

from fieldsim.errors import FieldsimTypeError
from fieldsim.lang import types as T


def _field_of(f):
    from fieldsim.lang.field import Field
    from fieldsim.lang.ndarray import ExternalArray, is_slot
    from fieldsim.lang.snode import PLACE, SNode
    if isinstance(f, SNode) and f.kind == PLACE and f.field is not None:
        f = f.field
    if is_slot(f) or isinstance(f, ExternalArray):  # a kernel compiled once serves many arrays
        raise FieldsimTypeError("fs.get_addr takes a field, not an ndarray or numpy array (as "
                                "in Taichi)")
    if not isinstance(f, Field) or f.shape is None:
        raise FieldsimTypeError(f"fs.get_addr needs a placed scalar or matrix field (or the SNode "
                                f"it is placed in), got {f!r}")
    f._check_live()
    return f


def _layout(field):
    """(base address, byte stride of each field index) of `field`'s element 0."""
    from fieldsim.lang.field import _ComponentStorage
    storage, extra = field.storage, ()
    shape = field.storage_shape
    if isinstance(storage, _ComponentStorage):  # a component of a matrix field
        shape = tuple(field.shape) + storage.owner.element_shape
        storage, extra = storage.owner.storage, storage.cidx
    item = field.dtype.np.itemsize
    strides = [item * math.prod(shape[d + 1:]) for d in range(len(shape))]
    n = len(field.shape)
    base = storage.ptr + sum(c * s for c, s in zip(extra, strides[n:]))
    return base, strides[:n]


def _indices(field, indices) -> list:
    idx = list(indices.entries) if hasattr(indices, "entries") else (
        list(indices) if isinstance(indices, (list, tuple)) else [indices])
    if len(idx) != len(field.shape):
        raise FieldsimTypeError(f"fs.get_addr: field {field.ir_name!r} has {len(field.shape)} "
                                f"index(es), got {len(idx)}")
    return idx


def get_addr(f, indices):
    """The address (u64) of element `indices` of field `f`.

    >>> x = fs.field(fs.f32, shape=4)
    >>> fs.get_addr(x, [1]) - fs.get_addr(x, [0])
    4
    """
    field = _field_of(f)
    base, strides = _layout(field)
    return base + sum(int(i) * s for i, s in zip(_indices(field, indices), strides))


def _k_get_addr(fe, call, args, kw):
    field = _field_of(args[0])
    base, strides = _layout(field)
    addr = fe.b.const(base, T.u64)
    for i, s in zip(_indices(field, args[1]), strides):
        addr = fe.e.binop("+", addr, fe.e.binop("*", fe.e.value(i, T.u64), fe.b.const(s, T.u64)))
    return addr


def _register():
    from fieldsim.lang import ops
    ops.KERNEL_BUILTINS[get_addr] = _k_get_addr


_register()
