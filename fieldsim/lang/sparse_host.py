"""Python-scope bookkeeping of sparse activation (see `fieldsim.lang.sparse`).

Takes a field write from Python scope (`x[i] = v`, `from_numpy`, `fill`); guarantees the cells
written are active in every sparse ancestor (a dynamic node's length grows to cover them), and
that `from_numpy`/`fill` write active cells only, as Taichi's struct-for kernels do.
"""
from __future__ import annotations

import numpy as np

from fieldsim.lang.blocked import BlockLayout
from fieldsim.lang.snode import DYNAMIC
from fieldsim.lang.sparse import dynamic_slot, field_path, node_index, py_floordiv


def activate_python(field, idx):
    """Python-scope write to `field` at storage index `idx` (None: every cell)."""
    path = field_path(field)
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
        p, j = dynamic_slot(node, leaf, idx, py_floordiv)
        p = tuple(p)
        store.write_element(p, max(int(store.read_element(p)), j + 1))
    else:
        store.write_element(tuple(node_index(node, leaf, idx, py_floordiv)), 1)


BLOCK_SLICES = 4096  # active blocks up to which a write goes block by block


def _active_blocks(field):
    """The storage slices of the active blocks (cells of its innermost sparse node) of a host
    field under pointer/bitmasked nodes, when there are at most BLOCK_SLICES; else None."""
    path = field_path(field)
    if _box_view(field.storage) is None or any(n.kind == DYNAMIC for n in path):
        return None
    leaf = field._snode.axis_sizes
    axes = sorted(leaf)
    grid = {a: path[-1].axis_sizes.get(a, 1) for a in axes}  # the innermost node's cells
    if any(leaf[a] % grid[a] for a in axes):
        return None
    blocks = _walk_active(path, axes)
    if blocks is None:
        mask = np.ones([grid[a] for a in axes], dtype=bool)
        for node in path:
            mask &= _expand(node.sparse.flag.storage.to_numpy() != 0, node, grid)
        blocks = np.argwhere(mask)
    if len(blocks) > BLOCK_SLICES:
        return None
    extent = [leaf[a] // grid[a] for a in axes]
    return [tuple(slice(int(i) * e, (int(i) + 1) * e) for i, e in zip(b, extent)) for b in blocks]


def _walk_active(path, axes):
    """The active cells of the innermost of the host masks of `path` (coordinates over
    `axes`), found level by level within the active cells of the level above, as Taichi walks
    its tree: the whole mask of a 4096^3 grid's inner pointer (2^30 cells) was copied and
    expanded for each `fill`. None: a mask not in host memory, or too many active cells."""
    cells = np.zeros((1, len(axes)), dtype=np.int64)  # the root's one cell
    above = {a: 1 for a in axes}
    for node in path:
        flags = getattr(node.sparse.flag.storage, "array", None)
        if not isinstance(flags, np.ndarray):
            return None
        size = {a: node.axis_sizes.get(a, 1) for a in axes}
        ratio = [size[a] // above[a] for a in axes]
        found = []
        for cell in cells:
            box = tuple(slice(int(c) * r, (int(c) + 1) * r) for c, r in zip(cell, ratio))
            sub = np.argwhere(flags.reshape([size[a] for a in axes])[box] != 0)
            found.append(sub + np.asarray(cell) * ratio)
            if sum(len(f) for f in found) > BLOCK_SLICES:
                return None
        cells = np.concatenate(found) if found else np.zeros((0, len(axes)), dtype=np.int64)
        above = size
    return cells


def _write_blocks(field, arr) -> bool:
    """`write_active` a block at a time (few active blocks): a mask over every cell of a
    4096^2 grid made `fill` take 15 ms where Taichi's struct-for takes 0.1. False: not done."""
    blocks = _active_blocks(field)
    if blocks is None:
        return False
    whole = np.ndim(arr) > field.ndim_el  # one value per cell, not one element for all
    view = _box_view(field.storage)
    for sl in blocks:
        view(sl)[...] = arr[sl] if whole else arr
    return True


def _write_rows(field, arr) -> bool:
    """`write_active` of a row-major host field under one dynamic node, a cell's slots in use
    at a time: the mask over every slot of a `dynamic(ti.i, 2**30)` particle field took a
    minute and 16 GB for each `fill` (a Tape's gradient clear). False: not done."""
    rows = _dynamic_rows(field)
    if rows is None:
        return False
    whole = np.ndim(arr) > field.ndim_el
    for box in rows:
        field.storage.array[box] = arr[box] if whole else arr
    return True


def _dynamic_rows(field):
    """The storage boxes `(cell..., slice(0, length))` of the cells in use of a row-major host
    field under one dynamic node (its last axis), or None (another layout, or more than
    BLOCK_SLICES cells in use)."""
    path = field_path(field)
    host = getattr(field.storage, "array", None)
    if len(path) != 1 or path[0].kind != DYNAMIC or not isinstance(host, np.ndarray):
        return None
    node = path[0]
    axes = sorted(field._snode.axis_sizes)
    if node.sparse.axis != axes[-1] or len(node._parent.axis_sizes) != len(axes) - 1:
        return None
    lengths = node.sparse.flag.storage.to_numpy()
    used = np.argwhere(lengths > 0)
    if len(used) > BLOCK_SLICES:
        return None
    return [tuple(int(c) for c in cell) + (slice(0, int(lengths[tuple(cell)])),)
            for cell in used]


def _box_view(storage):
    """`view(box)`: the host view of a box within one block of `storage`, or None (device
    memory, or a chunk-major layout, whose blocks are not the sparse nodes' blocks)."""
    if isinstance(getattr(storage, "array", None), np.ndarray):
        return lambda box: storage.array[box]
    if isinstance(getattr(storage, "layout", None), BlockLayout) and storage.split is not None:
        return storage.view
    return None


def read_active(field):
    """`x.to_numpy()` of a host field under pointer/bitmasked nodes with few active blocks:
    zeros (pages mapped on use) with the active blocks copied in, as Taichi's struct-for
    kernel fills them (a copy of a 4096^2 grid's whole storage took 5-10 ms). None: read it
    all."""
    placed = getattr(field._snode, "field", None) if field._snode is not None else None
    if placed is not field:  # components placed one by one, maybe under other nodes
        return None
    blocks = _active_blocks(field) if field_path(field) else None
    if blocks is not None:
        view = _box_view(field.storage)
    else:  # a particle list: its slots in use (a dynamic(ti.i, 2**30) field copied 8 GB)
        blocks = _dynamic_rows(field) if field_path(field) else None
        if blocks is None:
            return None
        view = field.storage.array.__getitem__
    out = np.zeros(field.storage_shape, field.dtype.np)
    for sl in blocks:
        out[sl] = view(sl)
    return out


def _active_cells(field) -> np.ndarray:
    """Boolean array over `field.shape`: which cells are active."""
    active = np.ones(field.shape, dtype=bool)
    leaf = field._snode.axis_sizes
    idx = None
    for node in field_path(field):
        st = node.sparse
        arr = st.flag.storage.to_numpy()
        if node.kind != DYNAMIC:
            active &= _expand(arr != 0, node, leaf)
            continue
        if idx is None:
            grids = np.indices(field.shape) if field.shape else np.zeros((0,), dtype=int)
            idx = [grids[d] for d in range(len(field.shape))]
        p, j = dynamic_slot(node, leaf, idx, py_floordiv)
        p = tuple(p)
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
    if not field_path(field):
        return False
    if _write_blocks(field, arr) or _write_rows(field, arr):
        return True
    active = _active_cells(field)
    src = arr if np.ndim(arr) <= field.ndim_el else arr[active]
    if hasattr(field.storage, "write_mask"):  # chunk- or block-major (lang/mapped_storage.py)
        field.storage.write_mask(active, src)
        return True
    host = getattr(field.storage, "array", None)
    if host is not None:
        host[active] = src
        return True
    data = field.storage.to_numpy()  # a device field: round trip through the host
    data[active] = src
    field.storage.from_numpy(data)
    return True
