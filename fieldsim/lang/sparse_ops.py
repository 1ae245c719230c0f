"""The user functions over sparse nodes, in Python scope and in kernels: `fs.is_active`,
`fs.activate`, `fs.deactivate`, `fs.append`, `fs.length`, `fs.rescale_index`,
`node.deactivate_all()` and `fs.deactivate_all_snodes()` (see `fieldsim.lang.sparse`).

Takes a pointer/bitmasked/dynamic node and the node's own cell coordinates (a dynamic node: its
parent's), as Taichi 1.7 does. Guarantees a deactivated cell's data reads 0 afterwards; a node of
another kind, a wrong number of indices or a constant index out of range raises a
FieldsimTypeError/FieldsimIndexError naming the node. The kernel-scope versions are registered in
`ops.KERNEL_BUILTINS`.
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import FieldsimIndexError, FieldsimTypeError
from fieldsim.lang import types as T
from fieldsim.lang.snode import DYNAMIC, PLACE, SPARSE_KINDS, SNode
from fieldsim.lang.sparse import node_index, py_floordiv
from fieldsim.lang.sparse_kernel import active_condition, as_i32, ir_floordiv


def deactivate_all(node: SNode):
    """Deactivate every cell of `node` and of the sparse nodes below it; zero the data below."""
    components = {}  # id(owner) -> (the vector/matrix field, its components placed below)
    for n in _subtree(node):
        if n.kind in SPARSE_KINDS:
            n.sparse.flag.storage.zero()
        live = n.kind == PLACE and n.field is not None and n.field.storage is not None
        if not (live and n.sparse_path()):
            continue
        owner = getattr(n.field, "owner", None)  # a component placed by get_scalar_field
        if owner is None:  # data under a sparse node: its cells are all inactive now
            n.field.storage.zero()
        else:
            components.setdefault(id(owner), (owner, set()))[1].add(n.field.comp)
    for owner, comps in components.values():
        # the components share the owner's storage: zeroed once, where a big one hands its
        # pages back (one component at a time copied the whole field twice: 0.6 s a step
        # for taichi_elements' 4096^2 grid)
        if len(comps) == (owner.n or 1) * (owner.m or 1):
            owner.storage.zero()
        else:
            for comp in comps:
                owner.get_scalar_field(comp // (owner.m or 1), comp % (owner.m or 1)).storage.zero()


def deactivate_all_snodes():
    """`fs.deactivate_all_snodes()` (Python scope): every sparse node of the layout tree
    deactivated, as `fs.root.deactivate_all()`.

    >>> x = fs.field(fs.f32)
    >>> blk = fs.root.pointer(fs.i, 4)
    >>> _ = blk.dense(fs.i, 2).place(x)
    >>> x[5] = 1.0
    >>> fs.deactivate_all_snodes()
    >>> float(x[5])
    0.0
    """
    from fieldsim.lang import runtime
    from fieldsim.lang.snode import root
    runtime.python_scope_call("fs.deactivate_all_snodes()")
    deactivate_all(root)


def _subtree(node):
    out, stack = [], [node]
    while stack:
        n = stack.pop()
        out.append(n)
        stack.extend(n._children)
    return out


def _check_sparse(node, what):
    if not isinstance(node, SNode) or node.kind not in SPARSE_KINDS:
        raise FieldsimTypeError(f"fs.{what} needs a pointer, bitmasked or dynamic node "
                                f"(e.g. x.parent()), got {node!r}")


def _as_list(idx) -> list:
    if hasattr(idx, "entries"):  # a Vector / kernel vector value
        return list(idx.entries)
    return list(idx) if isinstance(idx, (list, tuple)) else [idx]


def _node_cell_index(node, idx):
    """(`idx`, the index space it is in) for a cell of `node`: node-level coordinates, as
    Taichi's activate/is_active/deactivate take them (fs.rescale_index maps a field's index)."""
    idx = _as_list(idx)
    if len(idx) != len(node.axis_sizes):
        raise FieldsimTypeError(f"{node!r} takes {len(node.axis_sizes)} index(es) (its own cell "
                                f"coordinates), got {len(idx)}")
    _check_range(node, idx, node.axis_sizes)
    return idx, node.axis_sizes


def _check_range(node, idx, sizes):
    for v, a in zip(idx, sorted(sizes)):
        if isinstance(v, (int, np.integer)) and not 0 <= int(v) < sizes[a]:
            raise FieldsimIndexError(f"{node!r}: cell index {int(v)} is out of range "
                                     f"[0, {sizes[a]}) on axis {a} (indices are the node's own "
                                     "cell coordinates: see fs.rescale_index)")


def _dyn_parent_index(node, idx):
    """A dynamic node's length slot: the cell coordinates of its parent node."""
    idx = _as_list(idx)
    if len(idx) != len(node._parent.axis_sizes):
        raise FieldsimTypeError(f"{node!r}: expected {len(node._parent.axis_sizes)} index(es) "
                                f"for the cells of its parent, got {len(idx)}")
    _check_range(node._parent, idx, node._parent.axis_sizes)
    return idx


def _placed_fields(node) -> list:
    """The fields placed directly under dynamic `node` (a struct field's members: several)."""
    fields = [c.field for c in node._children if c.kind == PLACE]
    if not fields or len(fields) != len(node._children):
        raise FieldsimTypeError("a dynamic node needs fields placed directly under it (and no "
                                "other nodes)")
    return fields


def _append_target(node, target):
    """What fs.append stores into: `target` (the field whose `x.append` was called, e.g. a
    struct field), else the one field placed under `node`."""
    if target is not None:
        return target
    # a gradient placed beside the field (place(x, x.grad), needs_grad) takes no value: Taichi
    # refuses the append there, fieldsim appends to the field
    fields = [f for f in _placed_fields(node) if getattr(f, "role", "primal") not in ("grad", "dual")]
    # one struct field's members (`S.field()` placed here): Taichi appends the whole struct
    structs = [s for s in node.placed_structs if set(map(id, s.leaves())) == set(map(id, fields))]
    if len(fields) > 1 and len(structs) == 1:
        return structs[0]
    if len(fields) != 1:
        raise FieldsimTypeError("fs.append(node, ...) needs a dynamic node with exactly one field "
                                "placed under it; for a struct field use x.append(value)")
    return fields[0]


def is_active(node, indices):
    _check_sparse(node, "is_active")
    if node.kind == DYNAMIC:
        raise FieldsimTypeError("fs.is_active on a dynamic node: use fs.length")
    idx, leaf = _node_cell_index(node, indices)
    for n in node.sparse_path():
        if n.kind == DYNAMIC:
            continue
        if n.sparse.flag.storage.read_element(tuple(node_index(n, leaf, idx, py_floordiv))) == 0:
            return 0
    return 1


def activate(node, indices):
    _check_sparse(node, "activate")
    idx, leaf = _node_cell_index(node, indices)
    for n in node.sparse_path():
        if n.kind != DYNAMIC:
            n.sparse.flag.storage.write_element(tuple(node_index(n, leaf, idx, py_floordiv)), 1)


def deactivate(node, indices):
    _check_sparse(node, "deactivate")
    if node.kind == DYNAMIC:
        p = tuple(_dyn_parent_index(node, indices))
        used = min(int(node.sparse.flag.storage.read_element(p)), node.own[node.sparse.axis])
        node.sparse.flag.storage.write_element(p, 0)
        sl = list(p)
        sl.insert(sorted(node.axis_sizes).index(node.sparse.axis), slice(0, used))
        for f in _placed_fields(node):
            _zero_host(f, tuple(sl))
        return
    idx, leaf = _node_cell_index(node, indices)
    cell = node_index(node, leaf, idx, py_floordiv)
    node.sparse.flag.storage.write_element(tuple(cell), 0)
    for fld, sizes in _below(node):
        box = _cell_box(node, cell, sizes, lambda c, blk: c * blk)
        _zero_host(fld, tuple(slice(start, start + ext) for start, ext in box))


def _cell_box(node, cell, sizes, scale) -> list:
    """(start, extent) per axis of `sizes` (a field's or mask's, below `node`) of the block
    that `node`'s `cell` holds: `scale(cell index, block size)` gives a start on the node's axes,
    the other axes are whole."""
    node_axes = sorted(node.axis_sizes)
    box = []
    for a in sorted(sizes):
        if a in node.axis_sizes:
            blk = sizes[a] // node.axis_sizes[a]
            box.append((scale(cell[node_axes.index(a)], blk), blk))
        else:
            box.append((0, sizes[a]))
    return box


def _zero_host(fld, sl):
    if hasattr(fld.storage, "zero_box"):  # chunk- or block-major (lang/mapped_storage.py)
        fld.storage.zero_box(sl)
        return
    host = getattr(fld.storage, "array", None)
    if host is not None:
        host[sl] = 0
        return
    arr = fld.storage.to_numpy()  # a device field: round trip through the host
    arr[sl] = 0
    fld.storage.from_numpy(arr)


def _below(node):
    """(field, its axis sizes) for the data and masks under `node`."""
    out = []
    for n in _subtree(node):
        if n.kind == PLACE and n.field is not None and n.field.storage is not None:
            out.append((n.field, n.axis_sizes))
        elif n is not node and n.kind in SPARSE_KINDS:
            sizes = n._parent.axis_sizes if n.kind == DYNAMIC else n.axis_sizes
            out.append((n.sparse.flag, sizes))
    return out


def append(node, indices, value):
    _check_sparse(node, "append")
    if node.kind != DYNAMIC:
        raise FieldsimTypeError("fs.append needs a dynamic node")
    p = tuple(_dyn_parent_index(node, indices))
    f = _append_target(node, None)
    store = node.sparse.flag.storage
    old = int(store.read_element(p))
    store.write_element(p, old + 1)  # counted even when full, as Taichi 1.7.4 does
    if old < node.own[node.sparse.axis]:
        full = list(p)
        full.insert(sorted(node.axis_sizes).index(node.sparse.axis), old)
        f[tuple(v + o for v, o in zip(full, f._offset))] = value  # user (offset) indices
    return old


def length(node, indices):
    _check_sparse(node, "length")
    if node.kind != DYNAMIC:
        raise FieldsimTypeError("fs.length needs a dynamic node")
    return int(node.sparse.flag.storage.read_element(
        tuple(_dyn_parent_index(node, indices))))


def _k_is_active(fe, call, args, kw):
    node = args[0]
    _check_sparse(node, "is_active")
    if node.kind == DYNAMIC:
        raise FieldsimTypeError("fs.is_active on a dynamic node: use fs.length")
    idx, leaf = _node_cell_index(node, args[1])
    path = [n for n in node.sparse_path() if n.kind != DYNAMIC]
    # a u1 as Taichi 1.7.4 types it, like a comparison: `a + b` of two wraps, `-a` is a
    return fe.e.as_bool(active_condition(fe, path, leaf, idx))


def _k_activate(fe, call, args, kw):
    node = args[0]
    _check_sparse(node, "activate")
    idx, leaf = _node_cell_index(node, args[1])
    for n in node.sparse_path():
        if n.kind != DYNAMIC:
            cell = [as_i32(fe, v) for v in node_index(n, leaf, idx, ir_floordiv(fe))]
            fe.b.store(n.sparse.flag, cell, fe.b.const(1, T.i32))


def _zero_loop(fe, fld, base, ext):
    """A serial loop storing 0 into `fld` at base + every offset in the box `ext`."""
    from fieldsim.ir.ir import ForInfo
    from fieldsim.lang.frontend_refs import FieldRef
    total = 1
    for e in ext:
        total *= e
    loop = fe.b.for_(fe.b.const(0, T.i32), fe.b.const(total, T.i32), ForInfo(False))
    with fe.b.into(loop.body):
        local = fe.delinearize(loop, [(0, e) for e in ext], ext)
        idx = [as_i32(fe, fe.e.binop("+", b, l)) for b, l in zip(base, local)]
        # plain stores: a FieldRef store would activate the cell again
        for target in FieldRef(fld, idx, None)._targets(fe):
            fe.b.store(fld, target, fe.b.const(0, fld.dtype))


def kernel_deactivate(fe, call, args, kw):
    fe.known_active.clear()  # the enclosing struct-for's cell may be the one deactivated
    node = args[0]
    _check_sparse(node, "deactivate")
    if node.kind == DYNAMIC:
        _deactivate_dynamic_cell(fe, node, [as_i32(fe, v) for v in _dyn_parent_index(node, args[1])])
        return
    idx, leaf = _node_cell_index(node, args[1])
    cell = [as_i32(fe, v) for v in node_index(node, leaf, idx, ir_floordiv(fe))]
    fe.b.store(node.sparse.flag, cell, fe.b.const(0, T.i32))
    for fld, sizes in _below(node):
        box = _cell_box(node, cell, sizes, lambda c, blk: as_i32(fe, fe.e.binop("*", c, blk)))
        _zero_loop(fe, fld, [start for start, _ in box], [ext for _, ext in box])


def _deactivate_dynamic_cell(fe, node, p):
    """Zero the slots a dynamic cell has used (its first `length`, at most its size: slots
    beyond were never written), then its length: the pages of unused slots stay untouched."""
    from fieldsim.ir.ir import ForInfo
    from fieldsim.lang.frontend_refs import FieldRef
    used = fe.e.binop("min", fe.b.load(node.sparse.flag, p), node.own[node.sparse.axis])
    pos = sorted(node.axis_sizes).index(node.sparse.axis)
    loop = fe.b.for_(fe.b.const(0, T.i32), used, ForInfo(False))
    with fe.b.into(loop.body):
        idx = list(p)
        idx.insert(pos, loop)
        for f in _placed_fields(node):
            # plain stores: a FieldRef store would activate the cell again
            for target in FieldRef(f, idx, None)._targets(fe):
                fe.b.store(f, target, fe.b.const(0, f.dtype))
    fe.b.store(node.sparse.flag, p, fe.b.const(0, T.i32))


def kernel_append(fe, call, args, kw, target=None):
    from fieldsim.lang.frontend_refs import FieldRef
    from fieldsim.lang.struct import StructField, StructFieldRef
    node, value = args[0], args[2]
    _check_sparse(node, "append")
    if node.kind != DYNAMIC:
        raise FieldsimTypeError("fs.append needs a dynamic node")
    p = [as_i32(fe, v) for v in _dyn_parent_index(node, args[1])]
    f = _append_target(node, target)
    value = _one_entry_as_scalar(f, value)
    # counted even when full, as Taichi 1.7.4 does (its length then exceeds the node's size);
    # what does not fit is dropped (Taichi chains chunks past the declared shape)
    old = fe.b.atomic("add", node.sparse.flag, p, fe.b.const(1, T.i32))
    fits = fe.e.compare("<", old, node.own[node.sparse.axis])
    guard = fe.b.if_(fits)
    with fe.b.into(guard.blocks[0]):
        full = list(p)
        full.insert(sorted(node.axis_sizes).index(node.sparse.axis), old)
        ref = StructFieldRef(f, full) if isinstance(f, StructField) else FieldRef(f, full, None)
        ref.store(fe, value)
    return old


def _one_entry_as_scalar(f, value):
    """A one-entry vector appended to a scalar field is its entry: Taichi 1.7.4 appends the
    index of `ti.grouped` over a 1-D field (`grid[c].append(I)`) this way."""
    from fieldsim.lang.expr import MatVal
    from fieldsim.lang.frontend_refs import to_matval
    v = to_matval(value)
    if isinstance(v, MatVal) and len(v.entries) == 1 and getattr(f, "ndim_el", None) == 0:
        return v.entries[0]
    return value


def kernel_length(fe, call, args, kw):
    node = args[0]
    _check_sparse(node, "length")
    if node.kind != DYNAMIC:
        raise FieldsimTypeError("fs.length needs a dynamic node")
    p = [as_i32(fe, v) for v in _dyn_parent_index(node, args[1])]
    return fe.b.load(node.sparse.flag, p)


def rescale_index(a, b, index):
    """Taichi's `fs.rescale_index(x, node, I)`: the index of `node`'s cell holding cell `I` of
    the field or node `a` (per axis, scaled by the ratio of their shapes)."""
    out = _as_list(index)
    for n in range(min(len(out), len(a.shape), len(b.shape))):
        if a.shape[n] > b.shape[n]:
            out[n] = out[n] // (a.shape[n] // b.shape[n])
        elif a.shape[n] < b.shape[n]:
            out[n] = out[n] * (b.shape[n] // a.shape[n])
    from fieldsim.lang.matrix import Vector
    return Vector(out)


def _k_rescale_index(fe, call, args, kw):
    from fieldsim.lang.expr import MatVal
    a, b, index = args
    out = _as_list(index)
    for n in range(min(len(out), len(a.shape), len(b.shape))):
        if a.shape[n] > b.shape[n]:
            out[n] = fe.e.binop("//", out[n], a.shape[n] // b.shape[n])
        elif a.shape[n] < b.shape[n]:
            out[n] = fe.e.binop("*", out[n], b.shape[n] // a.shape[n])
    return MatVal.vector([as_i32(fe, v) for v in out])


def _register():
    from fieldsim.lang import ops
    ops.KERNEL_BUILTINS[rescale_index] = _k_rescale_index
    ops.KERNEL_BUILTINS[is_active] = _k_is_active
    ops.KERNEL_BUILTINS[activate] = _k_activate
    ops.KERNEL_BUILTINS[deactivate] = kernel_deactivate
    ops.KERNEL_BUILTINS[append] = kernel_append
    ops.KERNEL_BUILTINS[length] = kernel_length


_register()
