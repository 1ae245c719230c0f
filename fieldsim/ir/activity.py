"""Activity analysis: which IR values carry a derivative.

`stopped_loads(body)` gives the LOADs whose gradient an `fs.stop_grad` marker (Op.STOP_GRAD)
stops: those of the marker's field in the marker's block (reads before it included, as in
Taichi) and the blocks inside it; a marker at the kernel's top level (offload put it in a SERIAL
task) covers the whole kernel. `activity(body)` gives the active statements: float values that
depend on a LOAD of a field with an attached gradient (`field.adjoint`), through differentiable
ops (opdefs) or locals, not through stopped LOADs; and the float ALLOCAs that store one. Reverse
AD differentiates only active values, forward AD (seeded with the fields whose duals may be
nonzero) gives tangents only to active values; the access-rule checker's Rule 2 guards only writes of
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


def activity(body, stopped: set[int] | None = None, seeded=None, old_values=False) -> set[int]:
    """ids of the active statements and of the float ALLOCAs that store one. `stopped`: the
    kernel's `stopped_loads`, when `body` is one task of it (a marker may sit in another task).
    `seeded(field)`: whether a LOAD of `field` starts a derivative; by default, whether it has
    a gradient (reverse mode); forward mode gives the fields whose duals may be nonzero.
    `old_values`: an ATOMIC's result (the element's old value) starts one too, as a LOAD does
    (forward mode, which can give it the dual's old value)."""
    stopped = stopped_loads(body) if stopped is None else stopped
    seeded = _has_adjoint if seeded is None else seeded
    active: set[int] = set()
    stmts = [s for s in walk(body) if id(s) not in stopped]
    changed = True
    while changed:
        changed = False
        for s in stmts:
            for v in _activates(s, active, seeded, old_values):
                if id(v) not in active and v.dtype is not None and v.dtype.is_float:
                    active.add(id(v))
                    changed = True
    return active


def _has_adjoint(field) -> bool:
    return field.adjoint is not None


def _activates(s: Stmt, active, seeded, old_values=False) -> tuple:
    """The statements (`s`, or the ALLOCAs it writes) that `s` makes active."""
    if s.op == Op.LOCAL_STORE:
        return (s.args[0],) if id(s.value) in active else ()
    if s.op == Op.CUSTOM_GRAD and has_user_adjoint(s):  # it may pass gradients the code cannot
        return tuple(s.attr.outputs) if any(id(a) in active for a in s.args) else ()
    if s.op == Op.LOAD or (old_values and s.op == Op.ATOMIC):
        return (s,) if seeded(s.field) else ()
    if s.op == Op.LOCAL_LOAD or OPDEFS[s.op].differentiable:
        return (s,) if any(id(a) in active for a in s.args) else ()
    return ()


def writes_derivatives(body: list[Stmt]) -> bool:
    """Whether an adjoint of `body` has work: a plain or atomic write to a field with a gradient
    (the only source of adjoints), or a custom-gradient region. Without one, the adjoint
    recomputes nothing and needs none of the values the kernel read."""
    return any((s.op in (Op.STORE, Op.ATOMIC) and getattr(s.field, "adjoint", None) is not None)
               or s.op == Op.CUSTOM_GRAD for s in walk(body))


# Ops an adjoint always keeps (debug asserts, returns, custom-gradient and AD-stack plumbing,
# and every RAND: the replay draws the forward's random numbers only if it makes the same draws
# in the same order): what decides them, and the branches around them, is needed too.
_ALWAYS_NEEDED = frozenset({Op.ASSERT, Op.RETURN, Op.RAND, Op.CUSTOM_GRAD,
                            Op.CUSTOM_ADJ_IN, Op.CUSTOM_ADJ_OUT, Op.STACK_ALLOCA, Op.STACK_PUSH,
                            Op.STACK_POP, Op.STACK_TOP, Op.STOP_GRAD})
_EXITS = (Op.BREAK, Op.CONTINUE)


def adjoint_needs(body: list[Stmt]) -> set[int]:
    """ids of the statements whose values an adjoint of `body` may use: the indices and values
    of writes to fields with a gradient (and custom-gradient regions), and, closed backwards,
    their operands, the conditions and bounds of the branches and loops around them, the
    `break`s and `continue`s of those loops, the stores to the locals they read, and the writes
    to the fields they load; also whatever decides how many `fs.random()` draws run before each one. A LOAD
    outside it (a bookkeeping read of an integer counter in an `if` that only updates that
    counter, or deciding when a loop holding only bookkeeping stops) is never recomputed to any
    effect, so overwriting its element afterwards changes no gradient; nor is an active value
    that reaches no such write (`plain[i] = fs.sin(x[i])`, `plain` without a gradient): no
    adjoint flows into it."""
    parent: dict[int, Stmt | None] = {}
    writers: dict[int, list[Stmt]] = {}  # id(alloca, field or loop) -> its writers (exits)
    seeds: list[Stmt] = []

    def visit(block, up, loop, in_custom):
        for s in block:
            parent[id(s)] = up
            _note_writer(s, loop, writers)
            if in_custom or _seeds_adjoint(s):
                seeds.append(s)
            inner = s if s.op in (Op.FOR, Op.LOOP) else loop
            for b in s.blocks:
                visit(b, s, inner, in_custom or s.op == Op.CUSTOM_GRAD)

    visit(body, None, None, False)
    return _closed(seeds, parent, writers)


def _closed(seeds: list[Stmt], parent: dict, writers: dict) -> set[int]:
    needed: set[int] = set()
    stack = seeds
    while stack:
        s = stack.pop()
        if id(s) in needed:
            continue
        needed.add(id(s))
        stack.extend(a for a in s.args if isinstance(a, Stmt))
        if parent[id(s)] is not None:
            stack.append(parent[id(s)])
        if s.op in (Op.ALLOCA, Op.FOR, Op.LOOP):
            stack.extend(writers.get(id(s), ()))
        elif s.op == Op.LOAD:
            stack.extend(writers.get(id(s.field), ()))
    return needed


def _note_writer(s: Stmt, loop: Stmt | None, writers: dict) -> None:
    if s.op == Op.LOCAL_STORE:
        writers.setdefault(id(s.args[0]), []).append(s)
    elif s.op in (Op.STORE, Op.ATOMIC):
        writers.setdefault(id(s.field), []).append(s)
    elif s.op in _EXITS and loop is not None:  # a loop's exits decide its trip count
        writers.setdefault(id(loop), []).append(s)


def _seeds_adjoint(s: Stmt) -> bool:
    return (s.op in _ALWAYS_NEEDED
            or (s.op in (Op.STORE, Op.ATOMIC) and getattr(s.field, "adjoint", None) is not None))
