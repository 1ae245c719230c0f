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
  launch runs the task as one chunk, else where `table[chunk * len(fields) + k]` points for
  the k-th privatized field (`table = ctx[CTX_PRIV]`): F itself for chunks the launching
  thread runs, the running helper thread's copy for the others. So a launch zeroes and sums
  one copy per helper thread that took a chunk (none when the helpers never ran);
  `PrivateRun.reduce` adds them into F after every chunk has finished, before the next task
  of the kernel starts.
"""
from __future__ import annotations

import ctypes
import math
import threading
from dataclasses import dataclass

import numpy as np

from fieldsim.ir.ir import GLOBAL_ACCESS, Op, Stmt, walk
from fieldsim.lang.ndarray import is_slot
from fieldsim.lang.quant import is_quant

SCATTER_KINDS = ("add", "sub")
# one thread's copies, all privatized fields of a task together: the launch zeroes and sums
# threads x this many bytes, which must stay small next to the atomics it saves
PRIVATE_MAX_BYTES = 1 << 20
PRIVATE_MAX_FIELDS = 64  # table entries per chunk (NO_COPIES has this many)
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
              and id(st) not in excluded and not is_quant(f))
        scatter[id(f)] = scatter[id(f)] and ok
    fields, row = [], 0
    for f in order:
        if not scatter[id(f)] or is_slot(f) or f.dtype.bits < 8:
            continue
        n = math.prod(f.storage_shape)
        size = -(-n * (f.dtype.bits // 8) // _ALIGN) * _ALIGN
        if row + size > PRIVATE_MAX_BYTES or len(fields) == PRIVATE_MAX_FIELDS:
            continue
        fields.append(PrivateField(f, row, n))
        row += size
    return PrivateLayout(tuple(fields), row) if fields else None


# With one chunk no copy is used, but the task still loads its (ignored) table entries: the
# ctx word points here then, never at a freed table.
NO_COPIES = np.zeros(PRIVATE_MAX_FIELDS, dtype=np.uint64)


class PrivateBuffers:
    """Per-thread scatter copies and the chunk -> copy table of a launch, reused between
    launches of one Python thread (its launches run one at a time; other threads get their
    own). The views a launch needs are made once per (layout, thread count): a time-stepped
    simulation launches the same task thousands of times."""

    MAX_RUNS = 64  # cached (layout, slots) entries per thread; they keep their fields alive

    def __init__(self):
        self._local = threading.local()

    def start(self, layout: PrivateLayout, chunks: int, slots: int) -> PrivateRun:
        """Copies for `slots` threads sharing `chunks` chunks (zeroed when a thread starts)."""
        local = self._local
        need = slots * layout.row_bytes + _ALIGN
        if getattr(local, "rows", None) is None or local.rows.size < need:
            local.rows = np.empty(max(need, 2 * getattr(local, "rows", _NONE).size), np.uint8)
            local.runs = {}
        entries = chunks * len(layout.fields)
        if getattr(local, "table", None) is None or local.table.size < entries:
            local.table = np.zeros(max(entries, 256), dtype=np.uint64)
        run = local.runs.get((id(layout), slots))
        if run is None or run.layout is not layout:
            if len(local.runs) >= self.MAX_RUNS:
                local.runs.clear()
            skip = (-local.rows.ctypes.data) % _ALIGN
            rows = local.rows[skip:skip + slots * layout.row_bytes].reshape(slots, layout.row_bytes)
            run = local.runs[(id(layout), slots)] = PrivateRun(layout, rows, local.table)
        run.begin()
        return run


_NONE = np.zeros(0, np.uint8)


class PrivateRun:
    """A task's copies: `take(slot, c)` before thread `slot` runs chunk c (each slot is one
    thread's; slot 0, the launching thread, adds into the fields themselves), `reduce()` after
    every chunk has finished."""

    def __init__(self, layout: PrivateLayout, rows: np.ndarray, table: np.ndarray):
        self.layout, self.rows, self.table = layout, rows, table
        self.nf = len(layout.fields)
        base = rows.ctypes.data
        # per slot: the table entries of a chunk it runs (slot 0's: set by `begin`)
        self.pointers = [np.array([base + slot * layout.row_bytes + p.offset
                                   for p in layout.fields], dtype=np.uint64)
                         for slot in range(rows.shape[0])]
        self.used: list[bool] = []
        # per slot: (this field's part of the copy, typed, the field)
        self.parts = [[(rows[slot, p.offset:p.offset + p.elements * np.dtype(p.field.dtype.np).itemsize]
                        .view(p.field.dtype.np), p.field) for p in layout.fields]
                      for slot in range(rows.shape[0])]
        self.targets: dict = {}  # id(field) -> (its storage, the storage's flat view)

    def attach(self, word: int):
        """Point the ctx word at `word` (an address) to this launch's table."""
        self.word = word
        ctypes.c_uint64.from_address(word).value = self.table.ctypes.data

    def detach(self):
        """Point the ctx word back at NO_COPIES: the table may be freed or grown before the
        kernel's next launch."""
        ctypes.c_uint64.from_address(self.word).value = NO_COPIES.ctypes.data

    def begin(self):
        self.used = [False] * self.rows.shape[0]
        self.pointers[0][:] = [p.field.storage.ptr for p in self.layout.fields]

    def take(self, slot: int, chunk: int):
        if slot and not self.used[slot]:  # a helper's first chunk: its copy starts at 0
            self.rows[slot].fill(0)
            self.used[slot] = True
        self.table[chunk * self.nf:(chunk + 1) * self.nf] = self.pointers[slot]

    def reduce(self):
        """Add the copies of the helper threads that ran a chunk into their fields."""
        for slot, used in enumerate(self.used):
            if not used:
                continue
            for part, field in self.parts[slot]:
                storage = field.storage
                known = self.targets.get(id(field))
                if known is None or known[0] is not storage:
                    known = self.targets[id(field)] = (storage, _flat(storage))
                np.add(known[1], part, out=known[1])


def _flat(storage):
    """A field's host storage as the flat array its compiled addresses index (a chunk-major
    field's: its physical array, lang/chunked.py)."""
    return storage.flat() if hasattr(storage, "flat") else storage.array.reshape(-1)


class _NoRun:
    """A launch without copies (one chunk, or nothing privatized)."""

    def take(self, slot: int, chunk: int):
        pass

    def reduce(self):
        pass

    def detach(self):
        pass


NO_RUN = _NoRun()
