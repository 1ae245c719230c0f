"""`fs.get_addr(f, I)`: the memory address of field element `f[I]`, as Taichi's `ti.get_addr`.

Takes a placed scalar or matrix field (or the SNode a field is placed in, `f.snode`) and its
storage indices (no field offset applied, as Taichi's SNode indices). Guarantees: a u64, the
address of the element's first component in the field's own storage (host memory on the CPU,
device memory on CUDA), in kernels (a constant base plus the index arithmetic: the storage does
not move while the field lives) and, beyond Taichi (kernel scope only there), in Python scope.
Elements are laid out in C order over the field's indices, then its components: consecutive
elements of a scalar f32 field are 4 bytes apart, as in Taichi's dense layouts; a hierarchical
Taichi layout (`dense(ij, 2).dense(ij, 2)`) is stored row-major here, so its addresses differ
from Taichi's. A field under a chunked dynamic node is chunk-major (`fieldsim.lang.chunked`):
slot j of a cell is in chunk j // C, after that chunk of every cell.
"""
from __future__ import annotations

import math
import numbers

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
    """(base address, byte stride of each storage axis, component indices fixed by a
    component view, the index map (lang/mapped_storage.py) or None) of `field`."""
    from fieldsim.lang.field import _ComponentStorage
    storage, owner, extra = field.storage, field, ()
    if isinstance(storage, _ComponentStorage):  # a component of a matrix field
        owner, extra = storage.owner, storage.cidx
    index_map = owner.index_map
    shape = owner.storage_shape if index_map is None else index_map.physical
    item = field.dtype.np.itemsize
    strides = [item * math.prod(shape[d + 1:]) for d in range(len(shape))]
    return owner.storage.ptr, strides, extra, index_map


def _terms(field, idx, div, mod) -> tuple:
    """(base, [(index value, byte stride)]) of element `idx` of `field`: `div`/`mod` split a
    mapped index into its outer and inner parts (lang/mapped_storage.py)."""
    base, strides, extra, index_map = _layout(field)
    n = len(field.shape)
    ndim = len(strides) if index_map is None else len(index_map.shape)
    full = list(idx) + list(extra) + [0] * (ndim - n - len(extra))
    if index_map is not None:
        full = index_map.split(full, div, mod)
    constant = sum(int(v) * s for v, s in zip(full, strides) if _is_int(v))
    return base + constant, [(v, s) for v, s in zip(full, strides) if not _is_int(v)]


def _is_int(v) -> bool:
    return isinstance(v, numbers.Integral)


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
    base, _ = _terms(field, [int(i) for i in _indices(field, indices)],
                     lambda j, c: j // c, lambda j, c: j % c)
    return base  # every index an int: all of the address is in the base


def _k_get_addr(fe, call, args, kw):
    field = _field_of(args[0])
    base, terms = _terms(field, _indices(field, args[1]), lambda j, c: fe.e.binop("//", j, c),
                         lambda j, c: fe.e.binop("%", j, c))
    addr = fe.b.const(base, T.u64)
    for i, s in terms:
        addr = fe.e.binop("+", addr, fe.e.binop("*", fe.e.value(i, T.u64), fe.b.const(s, T.u64)))
    return addr


def _register():
    from fieldsim.lang import ops
    ops.KERNEL_BUILTINS[get_addr] = _k_get_addr


_register()
