"""Chunk-major storage of a field placed directly under a `dynamic` node.

Taichi allocates a dynamic node's slots per parent cell, `chunk_size` slots at a time; a
program appending a few values to each of many cells (oit_renderer: 10^6 pixels, a few
fragments each, under `dynamic(ti.k, 2048, chunk_size=64)`) then holds one chunk per touched
cell. Laid out row-major, each such cell's slots start on a page of their own. Here the slots
`[c*C, (c+1)*C)` of *all* cells sit together instead (chunk-major, C the chunk size):

    physical index = (j // C, cell indices..., j % C, component indices...)

so the first chunk of every cell is one contiguous block, then the second chunk of every
cell, and so on: a few appends per cell commit about the first chunk row only (on the CPU a
big sparse field is a reservation committed per page written: codegen/cpu.py).

`ChunkLayout` is the index map; `MappedStorage` (lang/mapped_storage.py) wraps the backend
storage of the physical shape and offers the storage interface `Field` uses. Kernels address such a field through `ChunkLayout.split`
(codegen/llvm.py `element_ptr`), `fs.get_addr` through `physical_index`.

Takes a PLACE node and the field's storage shape; guarantees the map is used only where it
saves memory and changes the layout: the field as big as the backend's reservations (on the
CPU 64 MB: smaller fields are committed whole anyway, and on CUDA allocated whole), the chunk
size (rounded up to a power of two, as Taichi does) below the node's size and dividing it, and
more than one parent cell. Any other dynamic field keeps the row-major layout. The map costs
a shift and a mask per access, and a loop over a cell's slots no longer vectorizes.
"""
from __future__ import annotations

import math

from fieldsim.lang.snode import DYNAMIC


class ChunkLayout:
    """The chunk-major index map of a field of storage shape `shape` whose first `nfield`
    axes are its own (the rest: components), axis `axis` the dynamic one, `chunk` slots a
    chunk."""

    def __init__(self, shape: tuple, nfield: int, axis: int, chunk: int):
        self.shape, self.nfield, self.axis, self.chunk = tuple(shape), nfield, axis, chunk
        self.shift = chunk.bit_length() - 1
        self.nchunks = shape[axis] // chunk
        cells = [n for k, n in enumerate(shape[:nfield]) if k != axis]
        self.physical = (self.nchunks, *cells, chunk, *shape[nfield:])
        # physical axes in logical order, the dynamic axis as (chunk, slot)
        self.perm = (tuple(range(1, axis + 1)) + (0, nfield) + tuple(range(axis + 1, nfield))
                     + tuple(range(nfield + 1, len(self.physical))))
        self.split_shape = shape[:axis] + (self.nchunks, chunk) + shape[axis + 1:]

    def split(self, idx: list, div, mod) -> list:
        """The physical index of the logical index `idx` (at least the field's own axes);
        `div(j, n)`/`mod(j, n)` give j // n and j % n in the caller's values (n: the chunk
        size, a power of two)."""
        j = idx[self.axis]
        cells = [v for k, v in enumerate(idx[:self.nfield]) if k != self.axis]
        return [div(j, self.chunk), *cells, mod(j, self.chunk), *idx[self.nfield:]]

    def physical_index(self, idx) -> tuple:
        """`split` of Python ints."""
        return tuple(self.split(list(idx), lambda j, n: j // n, lambda j, n: j % n))

    def split_index(self, idx) -> tuple:
        """A logical index (ints and slices, leading axes) into the split view: the dynamic
        axis's int as (chunk, slot); a slice there must lie within one chunk."""
        idx = tuple(idx)
        if len(idx) <= self.axis:
            return idx
        j = idx[self.axis]
        if isinstance(j, slice):
            lo, hi, _ = j.indices(self.shape[self.axis])
            c = lo >> self.shift
            pair = (c, slice(lo - c * self.chunk, hi - c * self.chunk))
        else:
            pair = (int(j) >> self.shift, int(j) & (self.chunk - 1))
        return idx[:self.axis] + pair + idx[self.axis + 1:]

    def pieces(self, box) -> list:
        """`box` (ints and slices over leading axes) as boxes `split_index` takes: a slice
        of the dynamic axis cut at chunk boundaries."""
        sl = list(box)
        if len(sl) <= self.axis or not isinstance(sl[self.axis], slice):
            return [tuple(sl)]
        lo, hi, _ = sl[self.axis].indices(self.shape[self.axis])
        out = []
        for c in range(lo >> self.shift, -(-hi // self.chunk)):
            sl[self.axis] = slice(max(lo, c * self.chunk), min(hi, (c + 1) * self.chunk))
            out.append(tuple(sl))
        return out


def layout_for_chunks(snode, shape: tuple, nfield: int, itemsize: int,
               reserve_bytes: int | None) -> ChunkLayout | None:
    """The chunk-major map of a field of storage shape `shape` placed in PLACE node `snode`,
    or None where the field keeps the row-major layout: below `reserve_bytes` (the backend's
    size from which a sparse field is committed per page written; None: never) the layout
    saves no memory, and row-major keeps a cell's slots affine in the slot index (a loop over
    them vectorizes: reading 256-slot cells back ran 10x faster)."""
    parent = getattr(snode, "_parent", None)
    if parent is None or parent.kind != DYNAMIC or not parent.chunk_size:
        return None
    if reserve_bytes is None or math.prod(shape) * itemsize < reserve_bytes:
        return None
    size = parent.own[parent.sparse.axis]
    chunk = 1 << max(0, int(parent.chunk_size) - 1).bit_length()
    if chunk >= size or size % chunk or math.prod(shape[:nfield]) == size:
        return None
    axis = sorted(snode.axis_sizes).index(parent.sparse.axis)
    return ChunkLayout(shape, nfield, axis, chunk)
