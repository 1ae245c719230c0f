"""Sparse layout nodes (`pointer`, `bitmasked`, `dynamic`): activation semantics over dense
storage, on every backend.

Each pointer/bitmasked node keeps an i32 mask with one entry per cell of the node; a dynamic
node keeps an i32 length per cell of its parent. A field placed under sparse nodes still owns a
full dense array; what sparsity changes:
- a write to a cell (kernel store/atomic, `x[i] = v`, `from_numpy`) activates the cells of all
  its sparse ancestors (for a dynamic node: length = max(length, j + 1));
- a struct-for (`for I in x`, `for I in fs.grouped(node)`) visits active cells only;
- `fs.deactivate(node, I)` / `node.deactivate_all()` deactivate and zero the data below, so an
  inactive cell reads 0 (as a Taichi pointer cell does); a dynamic cell zeroes only its first
  `length` slots (the only ones ever written); `fill`, `from_numpy` and `copy_from` write
  active cells only and activate nothing (Taichi's are struct-for kernels);
- `fs.is_active`, `fs.activate`, `fs.deactivate`, `fs.append`, `fs.length` work in kernels and
  Python scope; `fs.deactivate_all_snodes()` (Python scope) deactivates every sparse node.
As in Taichi 1.7, those functions take the node's own cell coordinates (`fs.rescale_index(x,
node, I)` maps a field index to them; a dynamic node takes its parent's), and a struct-for
over a node yields them too. A big sparse field's storage is a reservation on the CPU
(codegen/cpu.py `_reserved_zeros`): memory is committed only in the 4 KB pages written, and
`deactivate_all` hands the pages back.
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import FieldsimError, FieldsimIndexError, FieldsimTypeError
from fieldsim.lang import types as T
from fieldsim.lang.snode import DYNAMIC, PLACE, SPARSE_KINDS, SNode


class SparseState:
    def __init__(self, node: SNode):
        from fieldsim.lang.field import Field
        self.node = node
        from fieldsim.lang import runtime
        label = f"{node.kind}{len(runtime.get().fields)}"  # deterministic: the disk cache keys on IR
        if node.kind == DYNAMIC:
            (axis,) = node.own
            if axis in node._parent.axis_sizes:
                raise FieldsimError(f"dynamic: axis {axis} is already used by an ancestor node; "
                                    "a dynamic node must add a new axis")
            self.axis = axis
            self.flag = Field(T.i32, None, f"{label}.length", _role="mask")
            self.flag._place(node._parent.shape, snode=SNode(PLACE, None))
        else:
            self.flag = Field(T.i32, None, f"{label}.mask", _role="mask")
            self.flag._place(node.shape, snode=SNode(PLACE, None))


def declare(node: SNode):
    node.sparse = SparseState(node)


def _path(field) -> list:
    snode = getattr(field, "_snode", None)
    return snode.sparse_path() if snode is not None else []


def _leaf_sizes(node: SNode) -> dict:
    """Axis extents of the global index space below `node` (its first placed field's)."""
    stack = [node]
    while stack:
        n = stack.pop(0)
        if n.kind == PLACE:
            return n.axis_sizes
        stack.extend(n._children)
    return node.axis_sizes


def _node_index(node: SNode, leaf_sizes: dict, idx, div) -> list:
    """`node`'s cell index of the global index `idx` (one entry per axis of `leaf_sizes`)."""
    axes = sorted(leaf_sizes)
    out = []
    for a in sorted(node.axis_sizes):
        block = leaf_sizes[a] // node.axis_sizes[a]
        v = idx[axes.index(a)]
        out.append(v if block == 1 else div(v, block))
    return out


# ---- Python scope --------------------------------------------------------------------------
def _py_div(v, b):
    return v // b


def activate_python(field, idx):
    """Python-scope write to `field` at storage index `idx` (None: every cell)."""
    path = _path(field)
    if not path:
        return
    leaf = field._snode.axis_sizes
    if idx is None:
        for node in path:
            st = node.sparse
            st.flag.storage.fill(node.own[st.axis] if node.kind == DYNAMIC else 1)
        return
    for node in path:
        _activate_cell_py(node, leaf, idx)


def _activate_cell_py(node, leaf, idx):
    st = node.sparse
    store = st.flag.storage
    if node.kind == DYNAMIC:
        j = _node_index(node, leaf, idx, _py_div)[sorted(node.axis_sizes).index(st.axis)]
        p = tuple(_node_index(node._parent, leaf, idx, _py_div))
        store.write_element(p, max(int(store.read_element(p)), j + 1))
    else:
        store.write_element(tuple(_node_index(node, leaf, idx, _py_div)), 1)


def _active_cells(field) -> np.ndarray:
    """Boolean array over `field.shape`: which cells are active."""
    active = np.ones(field.shape, dtype=bool)
    leaf = field._snode.axis_sizes
    idx = None
    for node in _path(field):
        st = node.sparse
        arr = st.flag.storage.to_numpy()
        if node.kind != DYNAMIC:
            active &= _expand(arr != 0, node, leaf)
            continue
        if idx is None:
            grids = np.indices(field.shape) if field.shape else np.zeros((0,), dtype=int)
            idx = [grids[d] for d in range(len(field.shape))]
        j = _node_index(node, leaf, idx, _py_div)[sorted(node.axis_sizes).index(st.axis)]
        p = tuple(_node_index(node._parent, leaf, idx, _py_div))
        active &= j < arr[p] if p else j < arr[()]
    return active


def _expand(mask, node, leaf) -> np.ndarray:
    """A per-cell array of `node` repeated over the field cells each of its cells holds (axes
    the node lacks: over all of them)."""
    cells, blocks = [], []
    for a in sorted(leaf):
        n = node.axis_sizes.get(a, 1)
        cells += [n, 1]
        blocks += [n, leaf[a] // n]
    return np.broadcast_to(mask.reshape(cells), blocks).reshape([leaf[a] for a in sorted(leaf)])


def write_active(field, arr) -> bool:
    """`x.from_numpy(a)`, `x.fill(v)`, `x.copy_from(y)` of a field under sparse nodes: `arr`
    (storage-shaped, or one element for every cell) goes into the active cells only, activating
    none, as Taichi's struct-for kernels do; pages of inactive cells are not touched. False
    (nothing written) for a field under no sparse node."""
    if not _path(field):
        return False
    active = _active_cells(field)
    src = arr if np.ndim(arr) <= field.ndim_el else arr[active]
    host = getattr(field.storage, "array", None)
    if host is not None:
        host[active] = src
        return True
    data = field.storage.to_numpy()  # a device field: round trip through the host
    data[active] = src
    field.storage.from_numpy(data)
    return True


def deactivate_all(node: SNode):
    """Deactivate every cell of `node` and of the sparse nodes below it; zero the data below."""
    for n in _subtree(node):
        if n.kind in SPARSE_KINDS:
            n.sparse.flag.storage.zero()
        live = n.kind == PLACE and n.field is not None and n.field.storage is not None
        if live and n.sparse_path():  # data under a sparse node: its cells are all inactive now
            n.field.storage.zero()


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
    from fieldsim.lang.snode import root
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


def _global_index(node, idx):
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


# ---- kernel scope -----------------------------------------------------------------------------
def _div(fe):
    return lambda v, b: fe.e.binop("//", v, b)


def _i32(fe, v):
    return fe.e.value(v, T.i32)


def activate_kernel(fe, field, indices):
    """After a kernel store/atomic to `field` at storage `indices`: activate its cells."""
    path = _path(field)
    if not path:
        return
    leaf = field._snode.axis_sizes
    for node in path:
        st = node.sparse
        if node.kind == DYNAMIC:
            j = _node_index(node, leaf, indices, _div(fe))[sorted(node.axis_sizes).index(st.axis)]
            p = [_i32(fe, v) for v in _node_index(node._parent, leaf, indices, _div(fe))]
            fe.b.atomic("max", st.flag, p, _i32(fe, fe.e.binop("+", j, 1)))
        else:
            n = [_i32(fe, v) for v in _node_index(node, leaf, indices, _div(fe))]
            fe.b.store(st.flag, n, fe.b.const(1, T.i32))


def active_condition(fe, path, leaf, indices):
    """The IR condition "every node of `path` is active at global `indices`" (None: always)."""
    cond = None
    for node in path:
        st = node.sparse
        if node.kind == DYNAMIC:
            j = _node_index(node, leaf, indices, _div(fe))[sorted(node.axis_sizes).index(st.axis)]
            p = [_i32(fe, v) for v in _node_index(node._parent, leaf, indices, _div(fe))]
            c = fe.e.compare("<", j, fe.b.load(st.flag, p))
        else:
            n = [_i32(fe, v) for v in _node_index(node, leaf, indices, _div(fe))]
            c = fe.e.compare("!=", fe.b.load(st.flag, n), 0)
        cond = c if cond is None else fe.e.binop("&", cond, c)
    return cond


def struct_for_guard(fe, iterable, indices):
    """(condition or None, user indices) for a struct-for over a field or a node whose loop
    produced `indices` (the field's user indices, or the node's cell indices)."""
    from fieldsim.lang.field import Field
    if isinstance(iterable, Field):
        path = _path(iterable)
        if not path:
            return None, indices
        off = iterable._offset
        storage = [i if o == 0 else _i32(fe, fe.e.binop("-", i, o)) for i, o in zip(indices, off)]
        return active_condition(fe, path, iterable._snode.axis_sizes, storage), indices
    if isinstance(iterable, SNode):
        # a node's loop yields its own cell coordinates (as Taichi 1.7.4); activity is looked up
        # at each cell's global coordinates (its first field index)
        path = iterable.sparse_path()
        if not path:
            return None, indices
        leaf = _leaf_sizes(iterable)
        glob = []
        for a, v in zip(sorted(iterable.axis_sizes), indices):
            block = leaf.get(a, iterable.axis_sizes[a]) // iterable.axis_sizes[a]
            glob.append(v if block == 1 else _i32(fe, fe.e.binop("*", v, block)))
        node_leaf = {a: leaf.get(a, s) for a, s in iterable.axis_sizes.items()}
        return active_condition(fe, path, node_leaf, glob), indices
    return None, indices


# ---- fs.is_active / activate / deactivate / append / length ------------------------------------
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
    fields = _placed_fields(node)
    if len(fields) != 1:
        raise FieldsimTypeError("fs.append(node, ...) needs a dynamic node with exactly one field "
                                "placed under it; for a struct field use x.append(value)")
    return fields[0]


def is_active(node, indices):
    _check_sparse(node, "is_active")
    if node.kind == DYNAMIC:
        raise FieldsimTypeError("fs.is_active on a dynamic node: use fs.length")
    idx, leaf = _global_index(node, indices)
    for n in node.sparse_path():
        if n.kind == DYNAMIC:
            continue
        if n.sparse.flag.storage.read_element(tuple(_node_index(n, leaf, idx, _py_div))) == 0:
            return 0
    return 1


def activate(node, indices):
    _check_sparse(node, "activate")
    idx, leaf = _global_index(node, indices)
    for n in node.sparse_path():
        if n.kind != DYNAMIC:
            n.sparse.flag.storage.write_element(tuple(_node_index(n, leaf, idx, _py_div)), 1)


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
    idx, leaf = _global_index(node, indices)
    cell = _node_index(node, leaf, idx, _py_div)
    node.sparse.flag.storage.write_element(tuple(cell), 0)
    for fld, sizes in _below(node):
        sl = []
        for a in sorted(sizes):
            if a in node.axis_sizes:
                blk = sizes[a] // node.axis_sizes[a]
                c = cell[sorted(node.axis_sizes).index(a)]
                sl.append(slice(c * blk, (c + 1) * blk))
            else:
                sl.append(slice(None))
        _zero_host(fld, tuple(sl))


def _zero_host(fld, sl):
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
    idx, leaf = _global_index(node, args[1])
    path = [n for n in node.sparse_path() if n.kind != DYNAMIC]
    return active_condition(fe, path, leaf, idx)


def _k_activate(fe, call, args, kw):
    node = args[0]
    _check_sparse(node, "activate")
    idx, leaf = _global_index(node, args[1])
    for n in node.sparse_path():
        if n.kind != DYNAMIC:
            cell = [_i32(fe, v) for v in _node_index(n, leaf, idx, _div(fe))]
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
        idx = [_i32(fe, fe.e.binop("+", b, l)) for b, l in zip(base, local)]
        # plain stores: a FieldRef store would activate the cell again
        for target in FieldRef(fld, idx, None)._targets(fe):
            fe.b.store(fld, target, fe.b.const(0, fld.dtype))


def _k_deactivate(fe, call, args, kw):
    node = args[0]
    _check_sparse(node, "deactivate")
    if node.kind == DYNAMIC:
        _k_deactivate_dynamic(fe, node, [_i32(fe, v) for v in _dyn_parent_index(node, args[1])])
        return
    idx, leaf = _global_index(node, args[1])
    cell = [_i32(fe, v) for v in _node_index(node, leaf, idx, _div(fe))]
    fe.b.store(node.sparse.flag, cell, fe.b.const(0, T.i32))
    node_axes = sorted(node.axis_sizes)
    for fld, sizes in _below(node):
        base, ext = [], []
        for a in sorted(sizes):
            if a in node.axis_sizes:
                blk = sizes[a] // node.axis_sizes[a]
                base.append(_i32(fe, fe.e.binop("*", cell[node_axes.index(a)], blk)))
                ext.append(blk)
            else:
                base.append(fe.b.const(0, T.i32))
                ext.append(sizes[a])
        _zero_loop(fe, fld, base, ext)


def _k_deactivate_dynamic(fe, node, p):
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


def _k_append(fe, call, args, kw, target=None):
    from fieldsim.lang.frontend_refs import FieldRef
    from fieldsim.lang.struct import StructField, StructFieldRef
    node, value = args[0], args[2]
    _check_sparse(node, "append")
    if node.kind != DYNAMIC:
        raise FieldsimTypeError("fs.append needs a dynamic node")
    p = [_i32(fe, v) for v in _dyn_parent_index(node, args[1])]
    f = _append_target(node, target)
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


def _k_length(fe, call, args, kw):
    node = args[0]
    _check_sparse(node, "length")
    if node.kind != DYNAMIC:
        raise FieldsimTypeError("fs.length needs a dynamic node")
    p = [_i32(fe, v) for v in _dyn_parent_index(node, args[1])]
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
    return MatVal.vector([_i32(fe, v) for v in out])


def _register():
    from fieldsim.lang import ops
    ops.KERNEL_BUILTINS[rescale_index] = _k_rescale_index
    ops.KERNEL_BUILTINS[is_active] = _k_is_active
    ops.KERNEL_BUILTINS[activate] = _k_activate
    ops.KERNEL_BUILTINS[deactivate] = _k_deactivate
    ops.KERNEL_BUILTINS[append] = _k_append
    ops.KERNEL_BUILTINS[length] = _k_length


_register()
