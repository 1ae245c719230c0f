"""Kernel-scope sparse activation (see `fieldsim.lang.sparse`): the IR a store emits to
activate its cells, and the activity condition that guards a struct-for's body.

Takes the frontend (`fe`) and a field or node with index values; emits IR through `fe.b`.
Guarantees a kernel store/atomic into a sparse field activates every sparse ancestor of the cell
(a dynamic node's length by atomic max) and a struct-for body runs for active cells only.
"""
from __future__ import annotations

from fieldsim.lang import types as T
from fieldsim.lang.snode import DYNAMIC, SNode
from fieldsim.lang.sparse import dynamic_slot, field_path, leaf_sizes, node_index


def ir_floordiv(fe):
    return lambda v, b: fe.e.binop("//", v, b)


def as_i32(fe, v):
    return fe.e.value(v, T.i32)


def activate_kernel(fe, field, indices):
    """After a kernel store/atomic to `field` at storage `indices`: activate its cells."""
    path = field_path(field)
    if not path:
        return
    leaf = field._snode.axis_sizes
    for node in path:
        st = node.sparse
        if node.kind == DYNAMIC:
            p, j = dynamic_slot(node, leaf, indices, ir_floordiv(fe))
            p = [as_i32(fe, v) for v in p]
            fe.b.atomic("max", st.flag, p, as_i32(fe, fe.e.binop("+", j, 1)))
        else:
            n = [as_i32(fe, v) for v in node_index(node, leaf, indices, ir_floordiv(fe))]
            fe.b.store(st.flag, n, fe.b.const(1, T.i32))


def active_condition(fe, path, leaf, indices):
    """The IR condition "every node of `path` is active at global `indices`" (None: always)."""
    cond = None
    for node in path:
        st = node.sparse
        if node.kind == DYNAMIC:
            p, j = dynamic_slot(node, leaf, indices, ir_floordiv(fe))
            p = [as_i32(fe, v) for v in p]
            c = fe.e.compare("<", j, fe.b.load(st.flag, p))
        else:
            n = [as_i32(fe, v) for v in node_index(node, leaf, indices, ir_floordiv(fe))]
            c = fe.e.compare("!=", fe.b.load(st.flag, n), 0)
        cond = c if cond is None else fe.e.binop("&", cond, c)
    return cond


def struct_for_guard(fe, iterable, indices):
    """(condition or None, user indices) for a struct-for over a field or a node whose loop
    produced `indices` (the field's user indices, or the node's cell indices)."""
    from fieldsim.lang.field import Field
    from fieldsim.lang.struct import StructField
    if isinstance(iterable, StructField) and iterable.leaves():
        iterable = iterable.leaves()[0]  # its members share its cells (Taichi: the first's)
    if isinstance(iterable, Field):
        path = field_path(iterable)
        if not path:
            return None, indices
        off = iterable._offset
        storage = [i if o == 0 else as_i32(fe, fe.e.binop("-", i, o)) for i, o in zip(indices, off)]
        return active_condition(fe, path, iterable._snode.axis_sizes, storage), indices
    if isinstance(iterable, SNode):
        # a node's loop yields its own cell coordinates (as Taichi 1.7.4); activity is looked up
        # at each cell's global coordinates (its first field index)
        path = iterable.sparse_path()
        if not path:
            return None, indices
        leaf = leaf_sizes(iterable)
        glob = []
        for a, v in zip(sorted(iterable.axis_sizes), indices):
            block = leaf.get(a, iterable.axis_sizes[a]) // iterable.axis_sizes[a]
            glob.append(v if block == 1 else as_i32(fe, fe.e.binop("*", v, block)))
        node_leaf = {a: leaf.get(a, s) for a, s in iterable.axis_sizes.items()}
        return active_condition(fe, path, node_leaf, glob), indices
    return None, indices
