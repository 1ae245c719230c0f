"""Scatter privatization: which fields a parallel task only scatters into, and the buffers that
let each chunk of the task accumulate into its own copy instead of with atomics.

MPM's particle-to-grid transfer (and the adjoints of grid-to-particle gathers) adds into
data-dependent grid elements: `grid[base + offset] += w * ...`. Lowered as atomics, every
update is a `lock cmpxchg` loop on x86 (there is no atomic float add); those were about 40 % of
diffmpm's p2g at 6400 particles. Here, a field F of a parallel FOR task is *privatized* when
every access to F in the task is an atomic add or sub whose old value is unused (a pure
scatter), none of them demoted (codegen.demote) or thread-local reduced (codegen.llvm
`find_reductions`), and the task's privatized fields fit in `PRIVATE_MAX_BYTES`.

Takes one offloaded task (analysis) or a compiled task's layout and a launch (buffers).
Guarantees:

* analysis only reads the IR; a field it returns is written by nothing in the task but those
  scatters, so summing per-chunk partial sums into F after the task equals the atomics' result
  (up to float summation order, which atomics do not fix either);
* the generated code (codegen.llvm) adds with plain load/add/store: into F itself when the
  launch runs the task as one chunk (no other thread), else into the chunk's zeroed copy at
  `ctx[CTX_PRIV] + chunk * row_bytes + offset`; `PrivateBuffers.reduce` adds the copies into
  F after every chunk has finished, before the next task of the kernel starts.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from fieldsim.ir.ir import GLOBAL_ACCESS, Op, Stmt, walk
from fieldsim.lang.ndarray import is_slot

SCATTER_KINDS = ("add", "sub")
# one chunk's copies, all privatized fields of a task together: the launch zeroes and sums
# chunks x this many bytes, which must stay small next to the atomics it saves
PRIVATE_MAX_BYTES = 1 << 20
_ALIGN = 64  # each copy starts on its own cache line


@dataclass(frozen=True)
class PrivateField:
    field: object
    offset: int  # byte offset of this field's copy within a chunk's row
    elements: int


@dataclass(frozen=True)
class PrivateLayout:
    fields: tuple  # PrivateField, in the task's first-access order
    row_bytes: int  # bytes per chunk (a multiple of _ALIGN)

    @property
    def elements(self) -> int:
        return sum(p.elements for p in self.fields)


def private_scatters(task: Stmt, excluded: set[int]) -> PrivateLayout | None:
    """The layout of the pure-scatter fields of a parallel FOR task, or None if there are none.
    `excluded`: ids of ATOMIC statements already lowered otherwise (demoted, reductions)."""
    if task.op != Op.FOR or not task.attr.parallel:
        return None
    used = {id(a) for st in walk([task]) for a in st.args}
    order: list = []
    scatter: dict[int, bool] = {}
    for st in walk(task.body):
        if st.op not in GLOBAL_ACCESS:
            continue
        f = st.field
        if id(f) not in scatter:
            order.append(f)
            scatter[id(f)] = True
        ok = (st.op == Op.ATOMIC and st.attr[1] in SCATTER_KINDS and id(st) not in used
              and id(st) not in excluded)
        scatter[id(f)] = scatter[id(f)] and ok
    fields, row = [], 0
    for f in order:
        if not scatter[id(f)] or is_slot(f) or f.dtype.bits < 8:
            continue
        n = math.prod(f.storage_shape)
        size = -(-n * (f.dtype.bits // 8) // _ALIGN) * _ALIGN
        if row + size > PRIVATE_MAX_BYTES:
            continue
        fields.append(PrivateField(f, row, n))
        row += size
    return PrivateLayout(tuple(fields), row) if fields else None


class PrivateBuffers:
    """The per-chunk copies of a launch, reused between launches of one Python thread (launches
    from one thread run one at a time; other threads get their own)."""

    def __init__(self):
        self._local = threading.local()

    def prepare(self, layout: PrivateLayout, chunks: int) -> np.ndarray:
        """Zeroed copies for `chunks` chunks: (chunks, row_bytes) bytes."""
        need = chunks * layout.row_bytes
        buf = getattr(self._local, "buf", None)
        if buf is None or buf.size < need:
            buf = self._local.buf = np.zeros(need + _ALIGN, dtype=np.uint8)
        skip = (-buf.ctypes.data) % _ALIGN
        rows = buf[skip:skip + need].reshape(chunks, layout.row_bytes)
        rows.fill(0)
        return rows

    @staticmethod
    def reduce(layout: PrivateLayout, rows: np.ndarray):
        """Add every chunk's copy into its field."""
        for p in layout.fields:
            dt = p.field.dtype.np
            size = p.elements * np.dtype(dt).itemsize
            part = rows[:, p.offset:p.offset + size].view(dt)
            target = p.field.storage.array.reshape(-1)
            np.add(target, part.sum(axis=0, dtype=dt), out=target)
