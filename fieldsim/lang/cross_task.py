"""Values that cross a task boundary of a kernel's top level, passed through hidden 0-D fields.

`ir.passes.offload` cuts a kernel's top level into tasks at each parallel (or serialized) loop;
a task cannot use a value another task made, nor a local variable another task writes. Names
bound at the top level are kernel variables already (hidden fields, `Frontend.declare`), but a
func inlined at the top level, whose loops are tasks as in Taichi, can leave an operand made
before one of its loops and used after it: a by-value parameter, the left side of `a + f()`
around a func that loops, the variable a non-tail `return` writes. Here each such value is
stored into a hidden field where it is made and loaded in the task that uses it, and each such
local variable becomes a hidden field (zeroed where it was declared, as a local starts at 0).

Values every task recomputes from the arguments (offload's prologue) are left alone, and so
are the field loads a task's loop bounds are made of, in that task (offload evaluates them at
its start).
`spill` returns False, changing nothing, when a crossing local is read as an array (indexed at
run time) or written inside a task's loop (its threads would race on the field): the caller then
builds the kernel again with func loops serial.
"""
from __future__ import annotations

from fieldsim.ir.ir import PURE, Op, Stmt, walk
from fieldsim.lang.field import Field


def is_task(s: Stmt) -> bool:
    return s.op == Op.FOR and (s.attr.parallel or s.attr.serialize)


def spill(fe, body: list[Stmt]) -> bool:
    seg = _segments(body)
    values, locals_ = _crossing(body, seg)
    if not values and not locals_:
        return True
    for _, users in locals_.values():
        for top, u in users:
            if u.op not in (Op.LOCAL_LOAD, Op.LOCAL_STORE) or (u.op == Op.LOCAL_STORE and is_task(top)):
                return False  # read as an array, or written by a task's threads (not atomically)
    for var, users in locals_.values():
        _local_to_field(fe, body, var, [u for _, u in users])
    for value, uses in values.values():
        _pass_value(fe, body, seg, value, uses)
    return True


def _segments(body) -> dict[int, int]:
    """id(top-level statement) -> its segment: a task loop alone, or a run of others."""
    seg, k = {}, 0
    for s in body:
        if is_task(s):
            k += 1
            seg[id(s)] = k
            k += 1
        else:
            seg[id(s)] = k
    return seg


def _recomputed(s: Stmt, seg, loads_too: bool) -> bool:
    """Would offload put `s` in the prologue that every task evaluates for itself?"""
    if id(s) not in seg or s.op not in PURE or (s.op == Op.LOAD and not loads_too):
        return False
    return all(_recomputed(a, seg, loads_too) for a in s.args)


def _bound_chain(loop: Stmt, seg) -> set[int]:
    """The top-level values a task loop's bounds are made of, when offload evaluates them all at
    the task's start (pure statements and field loads): the task may use them anywhere."""
    out: set[int] = set()
    for a in loop.args:
        if _recomputed(a, seg, True):
            stack = [a]
            while stack:
                v = stack.pop()
                if id(v) in seg and id(v) not in out:
                    out.add(id(v))
                    stack.extend(v.args)
    return out


def _crossing(body, seg):
    """({id: (value, [(top, user)])}, {id: (alloca, [(top, user)])}) of the top-level values used,
    and the top-level locals touched, in another segment than their own."""
    values, locals_ = {}, {}
    touched: dict[int, set] = {}
    for top in body:
        own = _bound_chain(top, seg) if is_task(top) else ()
        for u in walk([top]):
            for a in u.args:
                if id(a) not in seg:
                    continue
                if a.op == Op.ALLOCA:
                    touched.setdefault(id(a), set()).add(seg[id(top)])
                    locals_.setdefault(id(a), (a, []))[1].append((top, u))
                elif seg[id(a)] != seg[id(top)] and id(a) not in own and not _recomputed(a, seg, False):
                    values.setdefault(id(a), (a, []))[1].append((top, u))
    locals_ = {k: v for k, v in locals_.items()
               if len(touched[k] | {seg[k]}) > 1}
    return values, locals_


def _hidden(fe, dtype, what) -> Field:
    f = Field(dtype, (), f"{fe.kernel_name}.<{what} {len(fe.hidden_fields)}>",
              needs_grad=dtype.is_float, _role="hidden")
    fe.hidden_fields.append(f)
    return f


def _local_to_field(fe, body, var, users):
    """A local read or written in several tasks: a hidden field, zeroed where it was declared."""
    f = _hidden(fe, var.dtype, "local")
    zero = Stmt(Op.CONST, var.dtype, attr=0.0 if var.dtype.is_float else 0, loc=var.loc)
    at = body.index(var)
    body[at:at + 1] = [zero, Stmt(Op.STORE, None, (zero,), attr=f, loc=var.loc)]
    for u in users:
        if u.op == Op.LOCAL_LOAD:
            u.op, u.args, u.attr = Op.LOAD, (), f
        else:
            u.op, u.args, u.attr = Op.STORE, (u.args[1],), f


def _pass_value(fe, body, seg, value, uses):
    """Stores `value` into a hidden field after it is made; each later segment that uses it
    loads it: a task loop at the top of its body (or just before it, for its bounds), a run of
    other statements before its first user."""
    f = _hidden(fe, value.dtype, "value")
    made = []
    # a field load offload may hoist (it bounds a task's loop) is evaluated at the start of each
    # task using it, the store's too: the store takes a copy made at the value's own place
    stored = _copy_chain(value, seg, made) if _recomputed(value, seg, True) else value
    made.append(Stmt(Op.STORE, None, (stored,), attr=f, loc=value.loc))
    at = body.index(value) + 1
    body[at:at] = made
    loads: dict = {}
    for top, user in uses:
        key = (seg[id(top)], user is top and is_task(top))
        load = loads.get(key)
        if load is None:
            load = loads[key] = Stmt(Op.LOAD, value.dtype, (), attr=f, loc=value.loc)
            if is_task(top) and user is not top:
                top.body.insert(0, load)
            else:
                body.insert(_first_of_segment_user(body, seg, uses, key[0], top), load)
        user.args = tuple(load if a is value else a for a in user.args)


def _copy_chain(s: Stmt, seg, made: list) -> Stmt:
    """A copy of a pure top-level chain (its loads too), appended to `made` in order; the
    arguments and constants every task recomputes are shared."""
    if _recomputed(s, seg, False):
        return s
    copy = Stmt(s.op, s.dtype, tuple(_copy_chain(a, seg, made) for a in s.args), s.attr,
                loc=s.loc)
    made.append(copy)
    return copy


def _first_of_segment_user(body, seg, uses, k, top) -> int:
    """Where a segment's load goes: before its first top-level statement that uses the value."""
    tops = {id(t) for t, _ in uses if seg[id(t)] == k}
    for i, s in enumerate(body):
        if id(s) in tops:
            return i
    return body.index(top)
