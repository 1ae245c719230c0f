"""Sparse layout nodes (`pointer`, `bitmasked`, `dynamic`): activation semantics over dense
storage, on every backend.

Each pointer/bitmasked node keeps an i32 mask with one entry per cell of the node; a dynamic
node keeps an i32 length per cell of its parent. A field placed under sparse nodes still owns a
full dense array; what sparsity changes:
- a write to a cell (kernel store/atomic, `x[i] = v`) activates the cells of all its sparse
  ancestors (for a dynamic node: length = max(length, j + 1));
- a struct-for (`for I in x`, `for I in fs.grouped(node)`) visits active cells only; on the
  CPU one over a field under pointer/bitmasked nodes tests each block (a cell of the innermost
  sparse node) once and runs its cells, block after block, a sum over it adding block sums
  (`sparse_kernel.SparseBlocks`: Taichi's order);
- `fs.deactivate(node, I)` / `node.deactivate_all()` deactivate and zero the data below, so an
  inactive cell reads 0 (as a Taichi pointer cell does); a dynamic cell zeroes only its first
  `length` slots (the only ones ever written); `fill` and `from_numpy` write active cells
  only and activate nothing (Taichi's are struct-for kernels), `copy_from` activates and
  writes every cell (Taichi's loops over the whole index range);
- `fs.is_active`, `fs.activate`, `fs.deactivate`, `fs.append`, `fs.length` work in kernels and
  Python scope; `fs.deactivate_all_snodes()` (Python scope) deactivates every sparse node.
As in Taichi 1.7, those functions take the node's own cell coordinates (`fs.rescale_index(x,
node, I)` maps a field index to them; a dynamic node takes its parent's), and a struct-for
over a node yields them too. A big sparse field's storage is a reservation on the CPU
(codegen/cpu.py `_reserved_zeros`): memory is committed only in the 4 KB pages written, and
`deactivate_all` hands the pages back; such a field directly under a chunked dynamic node is
stored chunk-major (`fieldsim.lang.chunked`), so a few appends to each of many cells commit
about one chunk row, not a page per cell.

This module holds each sparse node's state (`SparseState`: its mask or length field) and the
map from a field index to a node's cell; `sparse_host` keeps the state on Python-scope writes,
`sparse_kernel` on kernel writes and in struct-fors, `sparse_ops` holds the user functions.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimError
from fieldsim.lang import types as T
from fieldsim.lang.snode import DYNAMIC, PLACE, SNode


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
        self.flag.sparse_node = node  # out-of-range messages name the fields it holds


def declare(node: SNode):
    node.sparse = SparseState(node)


def field_path(field) -> list:
    snode = getattr(field, "_snode", None)
    return snode.sparse_path() if snode is not None else []


def leaf_sizes(node: SNode) -> dict:
    """Axis extents of the global index space below `node` (its first placed field's)."""
    stack = [node]
    while stack:
        n = stack.pop(0)
        if n.kind == PLACE:
            return n.axis_sizes
        stack.extend(n._children)
    return node.axis_sizes


def node_index(node: SNode, leaf_sizes: dict, idx, div) -> list:
    """`node`'s cell index of the global index `idx` (one entry per axis of `leaf_sizes`)."""
    axes = sorted(leaf_sizes)
    out = []
    for a in sorted(node.axis_sizes):
        block = leaf_sizes[a] // node.axis_sizes[a]
        v = idx[axes.index(a)]
        out.append(v if block == 1 else div(v, block))
    return out


def py_floordiv(v, b):
    return v // b


def dynamic_slot(node: SNode, leaf_sizes: dict, idx, div) -> tuple:
    """(the parent's cell, the position along the dynamic axis) of the global index `idx`
    under the dynamic node `node`: where its length is kept, and what it must exceed."""
    j = node_index(node, leaf_sizes, idx, div)[sorted(node.axis_sizes).index(node.sparse.axis)]
    return node_index(node._parent, leaf_sizes, idx, div), j
