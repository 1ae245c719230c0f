"""Block-major storage of a big field under pointer/bitmasked nodes.

A sparse field holds data only in the blocks its innermost pointer/bitmasked node activates
(`pointer(ijk, 128).dense(ijk, 8)`: blocks of 8^3 cells). Laid out row-major, one such block
spans 8 x 8 rows of its grid, each on a page of its own: a shell of active blocks in a 1024^3
grid committed 1.1 GB where Taichi, which allocates per block, holds 0.25 GB. Here each block's
cells are contiguous instead, blocks in row-major order of the block grid:

    physical index = (i // Bi, j // Bj, ..., i % Bi, j % Bj, ..., component indices...)

(an axis whose block is 1 wide keeps only its outer index, one whose block spans it only its
inner one). `BlockLayout` is the index map, with the interface `MappedStorage`
(lang/mapped_storage.py) needs; kernels address such a field through `BlockLayout.split`
(codegen/llvm.py `element_ptr`, which keeps a struct-for's walk through a block affine, so it
still vectorizes), `fs.get_addr` through it too (lang/addresses.py).

Takes a PLACE node and the field's storage shape; guarantees the map is used only where it
saves memory and changes the layout: the field at least as big as the backend's reservations
(on the CPU 64 MB: smaller fields are committed whole anyway, and CUDA allocates whole), no
dynamic node on the path, power-of-two block extents that divide the field's, and blocks that
are not already contiguous row-major (e.g. a `pointer(i, n).dense(j, m)` row per block).
"""
from __future__ import annotations

import itertools
import math

from fieldsim.lang.snode import DYNAMIC


class BlockLayout:
    """The block-major index map of a field of storage shape `shape` whose first `nfield` axes
    are its own (the rest: components), `block[a]` cells a block along axis a."""

    def __init__(self, shape: tuple, nfield: int, block: tuple):
        self.shape, self.nfield, self.block = tuple(shape), nfield, tuple(block)
        own = self.shape[:nfield]
        self.outer = [a for a in range(nfield) if own[a] // self.block[a] > 1]
        self.inner = [a for a in range(nfield) if self.block[a] > 1]
        comps = list(self.shape[nfield:])
        self.physical = tuple([own[a] // self.block[a] for a in self.outer]
                              + [self.block[a] for a in self.inner] + comps)
        # the split view: each logical axis as (outer, inner) where it has both parts
        labels, split_shape = [], []
        for a in range(nfield):
            if a in self.outer:
                labels.append(self.outer.index(a))
                split_shape.append(own[a] // self.block[a])
            if a in self.inner:
                labels.append(len(self.outer) + self.inner.index(a))
                split_shape.append(self.block[a])
        first = len(self.outer) + len(self.inner)
        self.perm = tuple(labels) + tuple(range(first, first + len(comps)))
        self.split_shape = tuple(split_shape + comps)

    def split(self, idx: list, div, mod) -> list:
        """The physical index of the logical index `idx` (at least the field's own axes);
        `div(j, n)`/`mod(j, n)` give j // n and j % n in the caller's values (n a power of
        two)."""
        outer = [idx[a] if self.block[a] == 1 else div(idx[a], self.block[a]) for a in self.outer]
        inner = [idx[a] if a not in self.outer else mod(idx[a], self.block[a]) for a in self.inner]
        return outer + inner + list(idx[self.nfield:])

    def physical_index(self, idx) -> tuple:
        """`split` of Python ints."""
        return tuple(self.split(list(idx), lambda j, n: j // n, lambda j, n: j % n))

    def split_index(self, idx) -> tuple:
        """A logical index (ints and slices, leading axes) into the split view; a slice must
        either lie within one block or start and end on block boundaries (`pieces` cuts any
        box into such)."""
        out = []
        for a, j in enumerate(tuple(idx)):
            if a >= self.nfield or not (a in self.outer and a in self.inner):
                out.append(j)
                continue
            n, bsz = self.shape[a], self.block[a]
            if not isinstance(j, slice):
                out += [int(j) // bsz, int(j) % bsz]
                continue
            lo, hi, _ = j.indices(n)
            if lo % bsz == 0 and hi % bsz == 0 and hi - lo != bsz:
                out += [slice(lo // bsz, hi // bsz), slice(None)]
            elif lo // bsz == (hi - 1) // bsz:
                c = lo // bsz
                out += [c, slice(lo - c * bsz, hi - c * bsz)]
            else:
                raise ValueError(f"slice {lo}:{hi} of axis {a} crosses a block partly")
        return tuple(out)

    def pieces(self, box) -> list:
        """`box` (ints and slices over leading axes) as boxes `split_index` takes."""
        boxes = [()]
        for a, j in enumerate(tuple(box)):
            cuts = [j]
            if isinstance(j, slice) and a < self.nfield and a in self.outer and a in self.inner:
                lo, hi, _ = j.indices(self.shape[a])
                bsz = self.block[a]
                first, last = min(hi, -(-lo // bsz) * bsz), max(lo, hi // bsz * bsz)
                bounds = sorted({lo, first, last, hi}) if first <= last else [lo, hi]
                cuts = [slice(p, q) for p, q in itertools.pairwise(bounds) if q > p]
            boxes = [b + (c,) for b in boxes for c in cuts]
        return boxes


def layout_for_blocks(snode, shape: tuple, nfield: int, itemsize: int,
                      reserve_bytes: int | None) -> BlockLayout | None:
    """The block-major map of a field of storage shape `shape` placed in PLACE node `snode`,
    or None where the field keeps the row-major layout (see the module doc)."""
    path = snode.sparse_path()
    if not path or any(n.kind == DYNAMIC for n in path):
        return None
    if reserve_bytes is None or math.prod(shape) * itemsize < reserve_bytes:
        return None
    leaf = snode.axis_sizes
    axes = sorted(leaf)
    if tuple(leaf[a] for a in axes) != tuple(shape[:nfield]):
        return None
    grid = [path[-1].axis_sizes.get(a, 1) for a in axes]  # the innermost node's cells
    if any(leaf[a] % g for a, g in zip(axes, grid)):
        return None
    block = [leaf[a] // g for a, g in zip(axes, grid)]
    if any(b & (b - 1) for b in block) or not _scattered(block, shape[:nfield]):
        return None
    return BlockLayout(shape, nfield, block)


def _scattered(block, own) -> bool:
    """Whether row-major order splits a block into separate runs: some axis past the first
    one a block is more than 1 wide along is not whole in a block."""
    wide = [a for a, b in enumerate(block) if b > 1]
    return bool(wide) and any(block[a] < own[a] for a in range(wide[0] + 1, len(own)))
