"""Vector scatters: neighbouring components of one element added together, as one access.

Takes one offloaded task and the ids of its discarded atomics (`demote.discarded_atomics`:
parallel adds and subs whose old value no statement reads). Returns a `VectorScatters`:
`groups` maps the id of the first ATOMIC of each group to the group's statements, `absorbed`
holds the ids of the others (the group's first emits them). A group is 4 (else 2)
consecutive statements of one block that add (kind "add") f32 values into components
c, c+1, ... of one element of one field: the same field (not an ndarray argument), the same
index statements but the last, and as the last, index constants c, c+1, ... in order. The
last index must be the storage's innermost axis (`Lowerer.element_ptr` addresses row-major),
so the components' bytes are contiguous, and the element's extent and c must keep the first
component aligned to the group's size (8 or 16 bytes) in every element.

Why: CUDA's `red.global.add.v2.f32`/`.v4.f32` (sm_90) adds such a group as one L2 operation.
MPM's scatter `grid_v[base + offset] += ...` of a 2D velocity sends half as many atomics,
and atomics, not bytes, bound it (BENCHMARKS.md, the H200 sections).

Guarantees: analysis only (reads IR, never changes it). Only consecutive statements are
grouped, so nothing runs between the additions that the first statement then makes at once,
and every value they add is computed before the first.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from fieldsim.ir import dtypes as T
from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang.ndarray import is_slot

WIDTHS = (4, 2)  # components per group, the widest tried first


@dataclass
class VectorScatters:
    groups: dict[int, list[Stmt]] = field(default_factory=dict)
    absorbed: set[int] = field(default_factory=set)


def vector_scatters(task: Stmt, discarded: set[int]) -> VectorScatters:
    found = VectorScatters()
    if not discarded:
        return found
    blocks = [task.body]
    while blocks:
        block = blocks.pop()
        k = 0
        while k < len(block):
            s = block[k]
            blocks.extend(s.blocks)
            width = _group_width(block, k, discarded)
            if width:
                found.groups[id(s)] = block[k:k + width]
                found.absorbed.update(id(t) for t in block[k + 1:k + width])
                blocks.extend(b for t in block[k + 1:k + width] for b in t.blocks)
            k += max(width, 1)
    return found


def _group_width(block: list[Stmt], k: int, discarded: set[int]) -> int:
    first = block[k]
    if not _candidate(first, discarded):
        return 0
    c0 = _component(first)
    itemsize = first.field.dtype.bits // 8
    extent = first.field.storage_shape[-1]
    for width in WIDTHS:
        if (k + width > len(block) or c0 + width > extent
                or (c0 * itemsize) % (width * itemsize) or (extent * itemsize) % (width * itemsize)):
            continue
        if all(_candidate(t, discarded) and t.field is first.field and _component(t) == c0 + j
               and all(_same(a, b) for a, b in zip(t.indices[:-1], first.indices[:-1]))
               for j, t in enumerate(block[k + 1:k + width], 1)):
            return width
    return 0


def _candidate(s: Stmt, discarded: set[int]) -> bool:
    if s.op != Op.ATOMIC or id(s) not in discarded or s.attr[1] != "add":
        return False
    f = s.field
    shape = getattr(f, "storage_shape", None)
    return (f.dtype == T.f32 and not is_slot(f) and getattr(f, "index_map", None) is None
            and bool(shape) and len(s.indices) == len(shape) and _component(s) is not None)


def _component(s: Stmt) -> int | None:
    last = s.indices[-1]
    return last.attr if last.op == Op.CONST and isinstance(last.attr, int) else None


def _same(a: Stmt, b: Stmt) -> bool:
    return a is b or (a.op == Op.CONST and b.op == Op.CONST and a.attr == b.attr and a.dtype == b.dtype)
