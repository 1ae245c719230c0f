"""Kernel-scope sparse activation (see `fieldsim.lang.sparse`): the IR a store emits to
activate its cells, and the activity condition that guards a struct-for's body.

Takes the frontend (`fe`) and a field or node with index values; emits IR through `fe.b`.
Guarantees a kernel store/atomic into a sparse field activates every sparse ancestor of the cell
(a dynamic node's length by atomic max) and a struct-for body runs for active cells only.
"""
from __future__ import annotations

from fieldsim.ir.ir import ForInfo, Op, walk
from fieldsim.lang import types as T
from fieldsim.lang.snode import DYNAMIC, ROOT, SNode
from fieldsim.lang.sparse import dynamic_slot, field_path, leaf_sizes, node_index


def ir_floordiv(fe):
    return lambda v, b: fe.e.binop("//", v, b)


def as_i32(fe, v):
    return fe.e.value(v, T.i32)


def layout_field(iterable):
    """The field whose layout a struct-for over `iterable` walks: a struct field's first member
    (its members share its cells, as Taichi's first); anything else as it is."""
    from fieldsim.lang.struct import StructField
    if isinstance(iterable, StructField) and iterable.leaves():
        return iterable.leaves()[0]
    return iterable


def activate_kernel(fe, field, indices):
    """After a kernel store/atomic to `field` at storage `indices`: activate its cells (but
    for a cell the enclosing struct-for found active: storing its flag again would write an
    element the loop read, which the access rules refuse on a Tape)."""
    path = field_path(field)
    if not path or _known_active(fe, path, field._snode.axis_sizes, indices):
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


def known_cell(fe, iterable, user):
    """What a struct-for over `iterable` whose body runs at active cells only knows there:
    (the ids of its sparse nodes, its leaf extents, the storage index values of the cell), or
    None. Records the
    storage value of each user index, which `field_indices` then reuses for fields of the
    same offset."""
    from fieldsim.lang.field import Field
    iterable = layout_field(iterable)
    if not isinstance(iterable, Field) or not field_path(iterable):
        return None
    storage = []
    for v, o in zip(user, iterable._offset):
        if o == 0:
            storage.append(v)
        else:
            s = as_i32(fe, fe.e.binop("-", v, o))
            fe.storage_of[id(v)] = (o, s)
            storage.append(s)
    return frozenset(id(n) for n in field_path(iterable)), iterable._snode.axis_sizes, storage


def _known_active(fe, path, leaf, indices) -> bool:
    """Is the cell of a field (its sparse `path`, `leaf` extents) at storage `indices` one an
    enclosing struct-for found active? The same nodes at the same index values name the same
    cells only when the fields' extents agree (a node's cell is index // (leaf / cells))."""
    for nodes, known_leaf, storage in fe.known_active:
        same_cell = len(indices) == len(storage) and all(a is b for a, b in zip(indices, storage))
        if same_cell and known_leaf == leaf and all(id(n) in nodes for n in path):
            return True
    return False


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


def struct_for_guard(fe, iterable, indices, keep=None):
    """(condition or None, user indices) for a struct-for over a field or a node whose loop
    produced `indices` (the field's user indices, or the node's cell indices); with `keep`,
    only the nodes of the path it keeps are tested."""
    from fieldsim.lang.field import Field
    iterable = layout_field(iterable)
    if isinstance(iterable, Field):
        path = [n for n in field_path(iterable) if keep is None or keep(n)]
        if not path:
            return None, indices
        off = iterable._offset
        storage = [i if o == 0 else as_i32(fe, fe.e.binop("-", i, o)) for i, o in zip(indices, off)]
        return active_condition(fe, path, iterable._snode.axis_sizes, storage), indices
    if isinstance(iterable, SNode):
        # a node's loop yields its own cell coordinates (as Taichi 1.7.4); activity is looked up
        # at each cell's global coordinates (its first field index)
        path = [n for n in iterable.sparse_path() if keep is None or keep(n)]
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


def dynamic_axis(iterable):
    """(the position of its dynamic axis among the field's indices, the dynamic node, the
    field) when a struct-for over `iterable` can run over each cell's dynamic axis up to the
    cell's length instead of testing every slot: a field (or struct field) whose innermost
    sparse node is dynamic, with one element per slot along that axis. Else None."""
    from fieldsim.lang.field import Field
    iterable = layout_field(iterable)
    if isinstance(iterable, SNode):
        iterable = _placed_in_dynamic(iterable)
    if not isinstance(iterable, Field):
        return None
    path = field_path(iterable)
    if not path or path[-1].kind != DYNAMIC:
        return None
    node, leaf = path[-1], iterable._snode.axis_sizes
    axis = node.sparse.axis
    if leaf[axis] != node.axis_sizes[axis]:
        return None  # nodes below split the axis: slots and elements differ
    return sorted(leaf).index(axis), node, iterable


def _placed_in_dynamic(node):
    """A field placed right under the dynamic `node` (no offset): a struct-for over the node
    visits that field's cells, each list up to its length, as one over the field does."""
    if node.kind != DYNAMIC:
        return None
    for child in node._live_children():
        f = child.field
        if f is not None and f._snode is child and child.axis_sizes == node.axis_sizes \
                and not any(f._offset):
            return f
    return None


def dynamic_cell(fe, field, node, pos, outer):
    """(the number of stored elements of the dynamic `node`'s list at the cell named by the user indices `outer`,
    which lack the dynamic axis; the condition "its sparse ancestors are active", or None)."""
    idx = list(outer)
    idx.insert(pos, field._offset[pos])  # any place along the axis names the same list
    storage = [i if o == 0 else as_i32(fe, fe.e.binop("-", i, o)) for i, o in zip(idx, field._offset)]
    leaf = field._snode.axis_sizes
    parent = [as_i32(fe, v) for v in node_index(node._parent, leaf, storage, ir_floordiv(fe))]
    # a list's length counts every append, stored or not (as Taichi's): its slots end sooner
    length = fe.e.binop("min", fe.b.load(node.sparse.flag, parent), node.own[node.sparse.axis])
    return length, active_condition(fe, field_path(field)[:-1], leaf, storage)


def dynamic_length(fe, split, outer):
    """The number of elements a struct-for visits in the list of the cell `outer` (see
    `dynamic_cell`): its length, 0 where a sparse ancestor is inactive."""
    pos, node, field = split
    length, ancestors = dynamic_cell(fe, field, node, pos, outer)
    if ancestors is None:
        return length
    return fe.b.select(ancestors, length, fe.b.const(0, T.i32))


def _changes_flags(loop, flags: set, total) -> bool:
    """Does the body of `loop` (of `total` iterations, listable) store to one of the
    activity or length fields `flags` (ids)?"""
    return isinstance(total, int) and total <= LIST_MAX and any(
        s.op in (Op.STORE, Op.ATOMIC) and id(s.field) in flags for s in walk(loop.body))


def _listing_before(fe, loop, total: int, what: str, fill):
    """A hidden i32 list of `total` entries, filled by a serial task (`fill(list, t)` builds
    entry `t`) put just before `loop` (the last statement of the current block)."""
    from fieldsim.lang.field import Field
    snap = Field(T.i32, (total,), f"{fe.kernel_name}.{what}{len(fe.hidden_fields)}", _role="listing")
    fe.hidden_fields.append(snap)
    top = fe.b.block
    at, end = top.index(loop), len(top)
    pre = fe.b.for_(fe.b.const(0, T.i32), fe.b.const(total, T.i32),
                    ForInfo(parallel=False, serialize=True, listing=True))
    with fe.b.into(pre.body):
        fill(snap, pre)
    listing = top[end:]
    del top[end:]
    top[at:at] = listing  # the listing before the loop
    return snap


def lengths_if_appending(fe, target, loop, inner, total):
    """Taichi lists each list's length when a struct-for over a dynamic field launches, so
    elements its body appends (or rows it deactivates) ahead of the loop do not change what
    it visits (Taichi 1.7.4: 3 rows of 2, 3, 4 elements, each visit appending to the next
    row, make 9 visits). Where the body of `loop` (just built, the last statement of the
    current block; `inner`: (its serial loop over a list, `length_at(t)`: a list's visited
    length at loop value `t`)) changes the lengths or the activity of its layout, a serial
    task before it now writes each list's length into a hidden list, and the serial loop runs
    up to that."""
    serial, length_at = inner
    flags = {id(n.sparse.flag) for n in field_path(layout_field(target))}
    if not _changes_flags(loop, flags, total):
        return
    snap = _listing_before(fe, loop, total, "lengths",
                           lambda snap, t: fe.b.store(snap, [t], length_at(t)))
    n = len(loop.body)
    with fe.b.into(loop.body):
        listed = fe.b.load(snap, [as_i32(fe, loop)])
    made = loop.body[n:]
    del loop.body[n:]
    loop.body[0:0] = made
    serial.args = (serial.args[0], listed)


class SparseBlocks:
    """How a struct-for over a field under pointer/bitmasked nodes runs, as Taichi 1.7.4 walks
    it on the CPU: a block is one container of the field's leaf node (a cell of the node above
    it), blocks in the layout tree's order (level by level from the root, each level's cells
    row-major), a block's cells row-major in parts, each part one iteration of the parallel loop
    (its sums start afresh, as Taichi's thread-local reduction does per part). A block's sparse
    ancestors are tested once; a sparse leaf node's flag per cell. Per field axis a, the index
    is `sum(level digit * stride) + part * inner[a] + k`, k a serial loop over `inner[a]`
    (innermost axis last, so a part's cells are contiguous and its loops vectorize). Testing
    every element of a 4096^2 grid took 5 ms a struct-for where Taichi takes 0.2. On the CPU
    only: a CUDA thread per element, each testing its block's flags, keeps a warp's loads
    together."""

    def __init__(self, field, path, levels, block, part, level_nodes=()):
        self.field, self.path = field, path
        # per level above the leaf node, root first: per axis of the node, ascending (its
        # cells row-major, as Taichi's even for `ti.axes(1, 0)`), (field axis, cells, stride)
        self.levels = levels
        self.block = block  # per field axis: the leaf node's own cells, a block's extent
        leaf = field._snode._parent
        self.leaf_sparse = [n for n in path if n is leaf]  # its flags are per cell
        self.above = [n for n in path if n is not leaf]
        self.inner = [1] * len(block)
        budget = part
        for a in reversed(range(len(block))):
            self.inner[a] = max(d for d in range(1, min(block[a], budget) + 1) if block[a] % d == 0)
            budget //= self.inner[a]
            if self.inner[a] != block[a]:
                break  # an axis split: the part stays one contiguous run
        self.parts = [b // n for b, n in zip(block, self.inner)]
        self.digits = [c for level in levels for _, c, _ in level]  # the parallel loop's
        self.total = 1
        for d in self.digits:
            self.total *= d
        self.part_count = 1  # a block's parts: a serial loop inside it (its flags tested once)
        for d in self.parts:
            self.part_count *= d
        # a huge tree under a sparse top node: the parallel loop runs over the top node's
        # cells, and an active one's blocks in a serial loop (`skip_top`)
        top = len(levels[0]) if levels else 0
        self.top_digits = top
        self.top_total = 1
        for d in self.digits[:top]:
            self.top_total *= d
        self.top_node = level_nodes[0] if level_nodes and level_nodes[0] in path else None
        self.skip_top = (self.top_node is not None and self.total > LIST_MAX
                         and 1 < self.top_total < self.total)
        self.guard = None  # the IF testing a block's ancestors (frontend `_sparse_block_at`)

    @property
    def loop_total(self) -> int:
        """The parallel loop's extent: every block, or the top node's cells (`skip_top`)."""
        return self.top_total if self.skip_top else self.total


TAICHI_PART = 128  # the most cells of a part (measured on Taichi 1.7.4's x64 backend)


def _part_size(cells, above):
    """Taichi's part of a block of `cells` cells under a node of `above` cells a container:
    as many parts as make each at most `above` and TAICHI_PART cells (measured: 4 x 4 blocks
    under a 2 x 2 pointer sum 4 cells at a time, 16 x 16 ones under a 8 x 8 pointer 64, under
    a 16 x 16 one 128)."""
    parts = -(-cells // min(above, TAICHI_PART))
    while cells % parts:
        parts += 1
    return cells // parts


def sparse_blocks(iterable):
    """The `SparseBlocks` of a struct-for over `iterable` when it is a field (or struct field)
    under pointer/bitmasked nodes (no dynamic one), and its leaf
    node has more than one cell a container. Else None (a flat loop testing each element)."""
    from fieldsim.lang import runtime
    from fieldsim.lang.field import Field
    iterable = layout_field(iterable)
    if not isinstance(iterable, Field) or iterable.shape is None or runtime.get().arch != "cpu":
        return None
    path = field_path(iterable)
    if not path or any(n.kind == DYNAMIC for n in path):
        return None
    leaf_sizes_, axes = iterable._snode.axis_sizes, sorted(iterable._snode.axis_sizes)
    if tuple(leaf_sizes_[a] for a in axes) != tuple(iterable.shape):
        return None
    chain = _chain(iterable._snode._parent)
    leaf, above = chain[-1], chain[:-1]
    if not above:  # one container: a flat loop is Taichi's order, its parts single cells
        return None
    block = [leaf.own.get(a, 1) for a in axes]
    cells = 1
    for b in block:
        cells *= b
    if cells == 1:
        return None
    levels = [[(k, n.own[a], leaf_sizes_[a] // n.axis_sizes[a])
               for k, a in enumerate(axes) if a in n.own] for n in above]
    per_container = 1
    for s in above[-1].own.values():
        per_container *= s
    return SparseBlocks(iterable, path, levels, block, _part_size(cells, per_container), above)


def _chain(node):
    """The nodes from the root's child down to `node`."""
    chain = []
    while node is not None and node.kind != ROOT:
        chain.append(node)
        node = node._parent
    return chain[::-1]


LIST_MAX = 1 << 22  # the most blocks a struct-for lists (a 16 MB list); more: flags tested live


def list_if_activating(fe, blocks, loop):
    """Taichi lists the active blocks before a struct-for runs, so blocks its own body
    activates are not visited (Taichi 1.7.4: a loop writing `x[i + 1]` under
    `pointer(i, 8).dense(i, 8)` visits 8 cells, not 64). Where the body of the blocked
    struct-for `loop` (just built, the last statement of the current block) activates a block
    of its layout, a serial task before it now writes the blocks active at that point into a
    hidden list, in block order, and the loop runs over the list. Elsewhere testing each block
    as the loop reaches it is the same, and the loop's indices stay plain for the access rules
    (a listed block's index depends on data). A body that deactivates blocks is listed too:
    Taichi runs every cell of a listed block, also one the body deactivated before reaching it
    (`for I in x.parent(): fs.deactivate(ptr, I)` clears every block, not the first few)."""
    flags = {id(n.sparse.flag) for n in blocks.above}
    if blocks.total > LIST_MAX or not any(
            s.op in (Op.STORE, Op.ATOMIC) and id(s.field) in flags for s in walk(loop.body)):
        return
    top = fe.b.block
    at, end = top.index(loop), len(top)
    listed, count = _list_active_blocks(fe, blocks)
    listing = top[end:]
    del top[end:]
    top[at:at] = listing  # the listing before the loop
    with fe.b.into(loop.body):
        block = fe.b.load(listed, [loop])
    loop.body.insert(0, loop.body.pop())
    for s in walk(loop.body):
        if s is not block:
            s.args = tuple(block if a is loop else a for a in s.args)
    loop.args = (loop.args[0], count)  # i32: at most LIST_MAX blocks
    for k, s in enumerate(loop.body):
        if s is blocks.guard:  # a listed block was active when listed: no second test
            loop.body[k:k + 1] = s.blocks[0]
            break


def _guard_leaf(target):
    """The node whose own cells a flat struct-for over `target` walks (a field's container)."""
    from fieldsim.lang.field import Field
    target = layout_field(target)
    return target._snode._parent if isinstance(target, Field) else target


def snapshot_if_changing(fe, target, loop, active, total, cond_at):
    """The flat struct-for `loop` over `target` (just built, the last statement of the current
    block) runs its body where `active` holds. Taichi lists the active containers (cells of
    the nodes above the walked node) before the body runs and tests the walked node's own
    cells as it reaches them; where the body activates or deactivates containers
    (`for I in x.parent(): fs.deactivate(ptr, I)` of blocks the loop has not reached yet), a
    serial task before it now writes each cell's containers' activity at that point into a
    hidden list (`cond_at(t, keep)`: the condition at loop value `t` for the nodes `keep`
    keeps), and the body runs where the list and the walked node's own flag say so."""
    leaf = _guard_leaf(target)

    def above(n):
        return n is not leaf
    flags = {id(n.sparse.flag) for n in leaf.sparse_path() if above(n)}
    if not flags or not _changes_flags(loop, flags, total):
        return

    def fill(snap, t):
        fe.b.store(snap, [t], fe.b.const(0, T.i32))
        with fe.b.into(fe.b.if_(cond_at(t, above)).blocks[0]):
            fe.b.store(snap, [t], fe.b.const(1, T.i32))
    snap = _listing_before(fe, loop, total, "cells", fill)
    guard = next(k for k, st in enumerate(loop.body) if st.op == Op.IF and st.args[0] is active)
    n = len(loop.body)
    with fe.b.into(loop.body):
        listed = fe.e.compare("!=", fe.b.load(snap, [as_i32(fe, loop)]), 0)
        own = cond_at(loop, lambda n: n is leaf)
        if own is not None:
            listed = fe.e.binop("&", listed, own)
    made = loop.body[n:]
    del loop.body[n:]
    loop.body[guard:guard] = made
    loop.body[guard + len(made)].args = (listed,)


def _list_active_blocks(fe, blocks):
    """Emits the listing task (`ForInfo.listing`) and the load of its count: (list, count)."""
    from fieldsim.lang.field import Field
    name = f"{fe.kernel_name}.blocks{len(fe.hidden_fields)}"
    count = Field(T.i32, (), name + ".count", _role="listing")
    listed = Field(T.i32, (blocks.total,), name, _role="listing")
    fe.hidden_fields += [count, listed]
    zero = fe.b.const(0, T.i32)
    loop = fe.b.for_(zero, fe.b.const(blocks.total, T.i32),
                     ForInfo(parallel=False, serialize=True, listing=True))
    with fe.b.into(loop.body):
        with fe.b.into(fe.b.if_(fe.e.compare("==", loop, zero)).blocks[0]):
            fe.b.store(count, [], zero)  # in the task: an adjoint runs it again whole
        first = block_origin(fe, blocks, block_digits(fe, blocks, loop))
        guard = fe.b.if_(active_condition(fe, blocks.above, blocks.field._snode.axis_sizes, first))
        with fe.b.into(guard.blocks[0]):
            k = fe.b.load(count, [])
            fe.b.store(listed, [k], loop)
            fe.b.store(count, [], as_i32(fe, fe.e.binop("+", k, 1)))
    return listed, fe.b.load(count, [])


def block_digits(fe, blocks, t, first=0, end=None):
    """The level digits of block number `t` (its levels' cells, row-major); with `first`/`end`,
    digits [first, end) from `t` and the others 0."""
    end = len(blocks.digits) if end is None else end
    sizes = [d for d in blocks.digits[first:end] if d > 1]
    found = iter(fe.delinearize(t, [(0, d) for d in sizes], sizes))
    return [next(found) if d > 1 and first <= k < end else 0 for k, d in enumerate(blocks.digits)]


def block_origin(fe, blocks, digits):
    """Per field axis, the storage index of the block's first cell: each level's digit times
    the cells below it."""
    first = [None] * len(blocks.block)
    k = 0
    for level in blocks.levels:
        for a, cells, stride in level:
            d, k = digits[k], k + 1
            if cells == 1:
                continue
            term = d if stride == 1 else fe.e.binop("*", d, stride)
            first[a] = term if first[a] is None else fe.e.binop("+", first[a], term)
    return [as_i32(fe, 0 if f is None else f) for f in first]


def dense_tree_digits(iterable):
    """Taichi 1.7.4 turns a struct-for over a layout of dense nodes only into a range loop
    whose index walks the layout tree (level by level from the root, each level's cells
    row-major in ascending axes), with one running sum on one thread (measured). For such a
    struct-for over a field (or struct field) or a node on the CPU whose tree order is not
    row-major over the whole index space: per digit of that index, root first, (axis position
    among the loop's indices, cells, stride); else None (a row-major loop, unchanged)."""
    from fieldsim.lang import runtime
    from fieldsim.lang.field import Field
    iterable = layout_field(iterable)
    if isinstance(iterable, Field):
        if iterable.shape is None or iterable._snode is None or field_path(iterable):
            return None  # (an ndarray has no layout node)
        node, extents = iterable._snode._parent, iterable._snode.axis_sizes
        if tuple(extents[a] for a in sorted(extents)) != tuple(iterable.shape):
            return None
    elif isinstance(iterable, SNode) and iterable.kind != ROOT and not iterable.sparse_path():
        node, extents = iterable, iterable.axis_sizes
    else:
        return None
    if runtime.get().arch != "cpu":
        return None  # a thread per cell: neighbouring threads keep neighbouring rows
    axes = sorted(extents)
    digits = [(k, n.own[a], extents[a] // n.axis_sizes[a])
              for n in _chain(node) for k, a in enumerate(axes) if n.own.get(a, 1) > 1]
    positions = [k for k, _, _ in digits]
    return None if positions == sorted(positions) else digits


def order_free(body, indices) -> bool:
    """Whether a struct-for body, its cell's index values `indices`, gives the same result in
    any visiting order: no atomics, output, asserts or calls, and every access of a field it
    stores to names the iteration's own element (each index one of `indices`, all of them, the
    same constant shifts, e.g. the field's offset, at every access), so iterations touch
    disjoint elements of it."""
    own = {id(v): k for k, v in enumerate(indices)}
    stored, cells = set(), {}
    for s in walk(body):
        if s.op in (Op.ATOMIC, Op.PRINT, Op.ASSERT, Op.CALL):
            return False
        if s.op in (Op.LOAD, Op.STORE):
            if s.op == Op.STORE:
                stored.add(id(s.field))
            cells.setdefault(id(s.field), set()).add(_cell(s.indices, own))
    return all(None not in cells[f] and len(cells[f]) == 1 for f in stored)


def _cell(indices, own):
    """Field `indices` as (loop index position, shift) pairs, each position of `own` (id ->
    position) once; None where they are not."""
    found = []
    for ix in indices:
        shift = 0
        if ix.op in (Op.ADD, Op.SUB) and len(ix.args) == 2 and ix.args[1].op == Op.CONST:
            shift = ix.args[1].attr if ix.op == Op.ADD else -ix.args[1].attr
            ix = ix.args[0]
        if id(ix) not in own:
            return None
        found.append((own[id(ix)], shift))
    return tuple(found) if sorted(k for k, _ in found) == list(range(len(own))) else None
