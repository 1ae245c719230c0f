"""`demote_kernel_variables(kernel, fields)`: kernel variables that one serial task alone uses
become locals of that task, in place.

The frontend puts every variable of a kernel's top level in a hidden 0-D field, so that it can
cross tasks. One that a single SERIAL task reads and writes (a kernel without loops, or a value
the loops never see) needs no field, and must not be one for AD: a field keeps only the last
launch's value, so the adjoint of an earlier launch of the same kernel on a Tape read the later
launch's value (a silently wrong gradient with `kernel.grad()`, a rule-1 refusal on a Tape),
where Taichi recomputes the local. Its atomics (`s += v`) become a load, the update and a
store; accesses at run-time component indices, and atomics a local cannot do (an exchange, a
value of another type), keep the field.
"""
from __future__ import annotations

from fieldsim.ir.ir import Kernel, Op, Stmt, walk


def demote_kernel_variables(kernel: Kernel, fields) -> Kernel:
    wanted = {id(f) for f in fields}
    if not wanted:
        return kernel
    uses = _uses(kernel, wanted)
    for task, accesses in uses.values():
        if task is not None and all(_demotable(s) for s in accesses):
            _to_locals(task, accesses)
    return kernel


def _uses(kernel: Kernel, wanted: set) -> dict:
    """id(field) -> (the one SERIAL task touching it, or None, [its accesses])."""
    uses: dict = {}
    for top in kernel.body:
        task = top if top.op == Op.SERIAL else None
        for s in walk([top]):
            if s.op in (Op.LOAD, Op.STORE, Op.ATOMIC) and id(s.field) in wanted:
                seen = uses.setdefault(id(s.field), [task, []])
                if seen[0] is not task:
                    seen[0] = None
                seen[1].append(s)
    for f in kernel.funcs:
        for s in walk(f.body):
            if s.op in (Op.LOAD, Op.STORE, Op.ATOMIC) and id(s.field) in wanted:
                uses.setdefault(id(s.field), [None, []])[0] = None
    return uses


# an atomic on a variable of one serial task has no other thread to race: a load, the update
# and a store of the local (the atomic's value is the old one, the load's)
_UPDATES = {"add": Op.ADD, "sub": Op.SUB, "mul": Op.MUL, "min": Op.MIN, "max": Op.MAX,
            "and": Op.BIT_AND, "or": Op.BIT_OR, "xor": Op.BIT_XOR}


def _demotable(s: Stmt) -> bool:
    if s.op == Op.ATOMIC and (s.attr[1] not in _UPDATES or s.value.dtype is not s.field.dtype):
        return False
    return all(i.op == Op.CONST for i in s.indices)


def _to_locals(task: Stmt, accesses: list[Stmt]):
    """One ALLOCA per component, at the top of the task (a local starts at 0, as the field
    was zeroed where the variable was declared)."""
    slots: dict = {}
    updates: dict = {}  # id(atomic, now its old value's load) -> the update and store after it
    for s in accesses:
        key = tuple(i.attr for i in s.indices)
        var = slots.get(key)
        if var is None:
            var = slots[key] = Stmt(Op.ALLOCA, s.field.dtype, loc=s.loc)
        if s.op == Op.LOAD:
            s.op, s.args, s.attr = Op.LOCAL_LOAD, (var,), None
        elif s.op == Op.STORE:
            s.op, s.args, s.attr = Op.LOCAL_STORE, (var, s.value), None
        else:
            value, kind = s.value, s.attr[1]
            s.op, s.args, s.attr = Op.LOCAL_LOAD, (var,), None
            new = Stmt(_UPDATES[kind], s.dtype, (s, value), loc=s.loc)
            updates[id(s)] = (new, Stmt(Op.LOCAL_STORE, None, (var, new), loc=s.loc))
    if updates:
        _insert_updates(task.blocks, updates)
    task.body[0:0] = list(slots.values())


def _insert_updates(blocks, updates: dict) -> None:
    for block in blocks:
        out = []
        for st in block:
            out.append(st)
            out.extend(updates.get(id(st), ()))
            _insert_updates(st.blocks, updates)
        block[:] = out
