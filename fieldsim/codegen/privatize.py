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
  launch runs the task as one chunk (no other thread), else into the copy of the thread that
  runs the chunk, `table[chunk] + offset` with `table = ctx[CTX_PRIV]`: one copy per thread,
  not per chunk, so a launch zeroes and sums as many copies as threads took chunks;
  `PrivateRun.reduce` adds them into F after every chunk has finished, before the next task
  of the kernel starts.
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from fieldsim.ir.ir import GLOBAL_ACCESS, Op, Stmt, walk
from fieldsim.lang.ndarray import is_slot

SCATTER_KINDS = ("add", "sub")
# one thread's copies, all privatized fields of a task together: the launch zeroes and sums
# threads x this many bytes, which must stay small next to the atomics it saves
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


# With one chunk no copy is used, but the task still loads its (ignored) table entry: the ctx
# word points here then, never at a freed table.
NO_COPIES = np.zeros(1, dtype=np.uint64)


class PrivateBuffers:
    """Per-thread scatter copies and the chunk -> copy table of a launch, reused between
    launches of one Python thread (its launches run one at a time; other threads get their
    own)."""

    def __init__(self):
        self._local = threading.local()

    def start(self, layout: PrivateLayout, chunks: int, slots: int) -> PrivateRun:
        """Copies for `slots` threads sharing `chunks` chunks (zeroed when a thread starts)."""
        local = self._local
        need = slots * layout.row_bytes + _ALIGN
        if getattr(local, "rows", None) is None or local.rows.size < need:
            local.rows = np.empty(need, dtype=np.uint8)
        if getattr(local, "table", None) is None or local.table.size < chunks:
            local.table = np.zeros(chunks, dtype=np.uint64)
        skip = (-local.rows.ctypes.data) % _ALIGN
        rows = local.rows[skip:skip + slots * layout.row_bytes].reshape(slots, layout.row_bytes)
        return PrivateRun(layout, rows, local.table)


class PrivateRun:
    """One launch of a task with privatized fields: `take(slot, c)` before thread `slot` runs
    chunk c (each slot is one thread's), `reduce()` after every chunk has finished."""

    def __init__(self, layout: PrivateLayout, rows: np.ndarray, table: np.ndarray):
        self.layout, self.rows, self.table = layout, rows, table
        self.base = rows.ctypes.data
        self.used = [False] * rows.shape[0]

    def take(self, slot: int, chunk: int):
        if not self.used[slot]:  # this thread's first chunk: its copy starts at 0
            self.rows[slot].fill(0)
            self.used[slot] = True
        self.table[chunk] = self.base + slot * self.layout.row_bytes

    def reduce(self):
        """Add the copies of the threads that ran a chunk into their fields."""
        for slot, used in enumerate(self.used):
            if not used:
                continue
            for p in self.layout.fields:
                dt = p.field.dtype.np
                part = self.rows[slot, p.offset:p.offset + p.elements * np.dtype(dt).itemsize]
                target = p.field.storage.array.reshape(-1)
                np.add(target, part.view(dt), out=target)
