"""Bounds of a kernel's outermost loop that cross into the loop's task.

The offload pass (`fieldsim.ir.passes.offload`) runs each outermost loop as its own task, and
each task re-evaluates at its start the pure statements (loads included) its bounds depend on;
every other top-level statement runs in a serial task of its own. A bound computed from an
impure statement (a real call, an atomic, a random draw, a func's local variable) therefore
cannot be re-evaluated there. Takes the frontend and the (begin, end) pairs of an outermost
loop; gives pairs in which each such bound is stored, where it is computed, into a hidden 0-D
field of the kernel and read back (a load, which the loop's task re-evaluates), as Taichi keeps
such values in its global temporaries. Bounds that are constants or pure chains are unchanged.
"""
from __future__ import annotations

from fieldsim.ir.ir import PURE, Stmt


def task_safe_dims(fe, dims) -> list:
    """`dims` with each bound the loop's task cannot re-evaluate passed through a hidden field."""
    return [(_task_safe(fe, begin), _task_safe(fe, end)) for begin, end in dims]


def _task_safe(fe, value):
    if not isinstance(value, Stmt) or _pure_chain(value):
        return value
    from fieldsim.lang.field import Field
    hidden = Field(value.dtype, (), f"{fe.kernel_name}.bound{len(fe.hidden_fields)}",
                   _role="hidden")
    fe.hidden_fields.append(hidden)
    fe.b.store(hidden, [], value)
    return fe.b.load(hidden, [])


def _pure_chain(value: Stmt) -> bool:
    seen, stack = set(), [value]
    while stack:
        s = stack.pop()
        if id(s) in seen:
            continue
        if s.op not in PURE:
            return False
        seen.add(id(s))
        stack.extend(a for a in s.args if isinstance(a, Stmt))
    return True
