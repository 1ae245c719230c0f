"""Activity analysis: which IR values carry a derivative.

`stopped_loads(body)` gives the LOADs whose gradient an `fs.stop_grad` marker (Op.STOP_GRAD)
stops: those of the marker's field in the marker's block (reads before it included, as in
Taichi) and the blocks inside it; a marker at the kernel's top level (offload put it in a SERIAL
task) covers the whole kernel. `activity(body)` gives the active statements: float values that
depend on a LOAD of a field with an attached gradient (`field.adjoint`), through differentiable
ops (opdefs) or locals, not through stopped LOADs; and the float ALLOCAs that store one. Reverse
AD differentiates only active values; the access-rule checker's Rule 2 guards only writes of
active values. `writes_derivatives(body)`: whether a kernel's adjoint has any work. Analysis only.
"""
from __future__ import annotations

from fieldsim.ir.ir import OPDEFS, Op, Stmt, has_user_adjoint, walk


def stopped_loads(body: list[Stmt]) -> set[int]:
    """ids of the LOADs whose gradient is stopped by an `fs.stop_grad` marker."""
    top = set()
    for s in body:  # the kernel's own block: offload put its statements in SERIAL tasks
        blocks = s.blocks[:1] if s.op == Op.SERIAL else [[s]]
        top.update(id(m.attr) for blk in blocks for m in blk if m.op == Op.STOP_GRAD)
    if not top and not any(s.op == Op.STOP_GRAD for s in walk(body)):
        return set()
    out: set[int] = set()

    def visit(block, stopped):
        here = stopped | {id(s.attr) for s in block if s.op == Op.STOP_GRAD}
        for s in block:
            if s.op == Op.LOAD and id(s.field) in here:
                out.add(id(s))
            for blk in s.blocks:
                visit(blk, here)

    visit(body, frozenset(top))
    return out


def activity(body, stopped: set[int] | None = None) -> set[int]:
    """ids of the active statements and of the float ALLOCAs that store one. `stopped`: the
    kernel's `stopped_loads`, when `body` is one task of it (a marker may sit in another task)."""
    stopped = stopped_loads(body) if stopped is None else stopped
    active: set[int] = set()
    stmts = [s for s in walk(body) if id(s) not in stopped]
    changed = True
    while changed:
        changed = False
        for s in stmts:
            for v in _activates(s, active):
                if id(v) not in active and v.dtype is not None and v.dtype.is_float:
                    active.add(id(v))
                    changed = True
    return active


def _activates(s: Stmt, active) -> tuple:
    """The statements (`s`, or the ALLOCAs it writes) that `s` makes active."""
    if s.op == Op.LOCAL_STORE:
        return (s.args[0],) if id(s.value) in active else ()
    if s.op == Op.CUSTOM_GRAD and has_user_adjoint(s):  # it may pass gradients the code cannot
        return tuple(s.attr.outputs) if any(id(a) in active for a in s.args) else ()
    if s.op == Op.LOAD:
        return (s,) if s.field.adjoint is not None else ()
    if s.op == Op.LOCAL_LOAD or OPDEFS[s.op].differentiable:
        return (s,) if any(id(a) in active for a in s.args) else ()
    return ()


def writes_derivatives(body: list[Stmt]) -> bool:
    """Whether an adjoint of `body` has work: a plain or atomic write to a field with a gradient
    (the only source of adjoints), or a custom-gradient region. Without one, the adjoint
    recomputes nothing and needs none of the values the kernel read."""
    return any((s.op in (Op.STORE, Op.ATOMIC) and getattr(s.field, "adjoint", None) is not None)
               or s.op == Op.CUSTOM_GRAD for s in walk(body))
