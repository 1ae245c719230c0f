"""The storage of a field whose physical layout is not row-major in its logical indices.

Takes a PLACE node, the field's storage shape and dtype; `layout_for` picks the index map
(lang/chunked.py: chunk-major under a dynamic node; lang/blocked.py: block-major under
pointer/bitmasked nodes) or None (row-major). `MappedStorage` wraps the backend storage of the
map's physical shape and offers the storage interface `Field` uses (read/write an element,
to/from numpy in the logical shape, fill, zero) plus what sparse bookkeeping needs (zero a box,
write a mask, a view of a box within one block). Guarantees: every Python-scope access sees
the logical indices; kernels and `fs.get_addr` reach the same bytes through the map's `split`.

A map's interface: `shape`, `nfield`, `physical` (the backend storage's shape), `split_shape`
(the logical shape with the mapped axes cut in two, a reshape of it), `perm` (the transpose of
the physical array that gives that split view), `split(idx, div, mod)`, `physical_index(idx)`,
`split_index(box)` and `pieces(box)`.
"""
from __future__ import annotations

import numpy as np

from fieldsim.lang.blocked import layout_for_blocks
from fieldsim.lang.chunked import layout_for_chunks


def layout_for(snode, shape: tuple, nfield: int, itemsize: int, reserve_bytes: int | None):
    """The index map of a field placed in `snode`, or None: row-major."""
    return (layout_for_chunks(snode, shape, nfield, itemsize, reserve_bytes)
            or layout_for_blocks(snode, shape, nfield, itemsize, reserve_bytes))


class MappedStorage:
    """A backend storage of `layout.physical` seen through the logical indices of the field."""

    def __init__(self, inner, layout):
        self.inner, self.layout = inner, layout
        host = getattr(inner, "array", None)
        # the physical array in logical axis order, mapped axes split: a view (None: device)
        self.split = host.transpose(layout.perm) if isinstance(host, np.ndarray) else None

    @property
    def ptr(self) -> int:
        return self.inner.ptr

    def read_element(self, idx):
        if len(idx) < self.layout.nfield:  # a block of cells: through the logical view
            if self.split is None:
                return self.to_numpy()[tuple(idx)]
            return self.split[self.layout.split_index(idx)].reshape(
                self.layout.shape[len(idx):]).copy()
        return self.inner.read_element(self.layout.physical_index(idx))

    def write_element(self, idx, value):
        self.inner.write_element(self.layout.physical_index(idx), value)

    def to_numpy(self):
        split = self.split if self.split is not None else \
            self.inner.to_numpy().transpose(self.layout.perm)
        return split.reshape(self.layout.shape)

    def from_numpy(self, arr):
        arr = np.asarray(arr).reshape(self.layout.split_shape)
        if self.split is not None:
            self.split[...] = arr
            return
        inverse = np.argsort(self.layout.perm)
        self.inner.from_numpy(np.ascontiguousarray(arr.transpose(inverse)))

    def fill(self, value):
        self.inner.fill(value)  # every element alike: the layout does not matter

    def zero(self):
        self.inner.zero()

    def flat(self) -> np.ndarray:
        """The physical host array, flat (what codegen's addresses index)."""
        return self.inner.array.reshape(-1)

    def zero_box(self, box: tuple):
        """Zero the logical box `box` (ints and slices over leading axes) in place."""
        for piece in self.layout.pieces(box):
            self._assign(piece, 0)

    def view(self, box: tuple):
        """The host view of a logical box within one block (`pieces` gives such boxes)."""
        return self.split[self.layout.split_index(box)]

    def _assign(self, box, value):
        if self.split is not None:
            self.split[self.layout.split_index(box)] = value
            return
        data = self.to_numpy()  # a device field: round trip through the host
        data[box] = value
        self.from_numpy(data)

    def write_mask(self, active: np.ndarray, src):
        """`x[active] = src` over the logical cells (`active`: a boolean array of the field's
        own shape; `src`: one element, or one per active cell in C order)."""
        if self.split is None:
            data = self.to_numpy()
            data[active] = src
            self.from_numpy(data)
            return
        comps = len(self.layout.shape) - self.layout.nfield
        own = self.layout.split_shape[:len(self.layout.split_shape) - comps]
        self.split[active.reshape(own)] = src
