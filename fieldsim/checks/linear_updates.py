"""In-place linear updates (`x[i] *= c`, `x[i] = a * x[i] + b`): the reads whose value no
adjoint ever uses (API.md, "the static checker", in-place linear updates).

Contract: analysis only, read-only; used by `access_rules.summarize`. A store `x[i] = V` to a
field with a gradient, where V is affine in loads of that same element (same index forms, same
task and loops, before the store, outside custom-gradient regions) with coefficients that carry
no derivative and do not depend on those loads, has the adjoint `g = x.grad[i]; x.grad[i] =
a * g` (the store's adjoint takes and zeroes the element's gradient, the load's adds `a * g`
back) and `b`'s inputs get `g`: no primal value of the overwritten element is used. Such a
load is left out of the effect table, so Rule 1 does not protect it, provided every use of it
(and of the values between it and V) stays on that affine chain: a load also used elsewhere
(`t = x[i]; x[i] = t * c; y[i] = t ** 2`) keeps its read. The store becomes a linear 'rmw'
Access: Rule 2 refuses a write of the element from another thread, and lets it follow another
write in program order (its adjoint scales the gradient before that write's adjoint takes it).

A companion read (`p[i] += v[i] * dt; v[i] *= c`: a load of the updated element, before the
update in the same iteration, whose value only reaches field writes through an affine chain with
coefficients that carry no derivative) is left out too: its adjoint adds `a * g` to
`x.grad[i]` after the update's adjoint took that gradient, and uses no value of it either.

Any load whose value reaches only field writes that way, with no update of its element after it
in the kernel (`x[i] += dt * v[i]`), is a free read (`free_loads`): it stays in the effect table,
so the in-kernel rules still refuse a race on it, but the Tape does not log it, so a later launch
may overwrite the element (`v[i] *= damping`, `v[i] = f(y[i])`): that launch's adjoint runs first
and the read's adjoint, `v.grad[i] += c * g`, uses no value of `v`.
"""
from __future__ import annotations

from fieldsim.ir.ir import Op, Stmt, walk

_ADDITIVE = frozenset({Op.ADD, Op.SUB, Op.NEG})


def linear_loads(accesses: list, active: set, kernel_body: list) -> dict[int, Stmt]:
    """id(LOAD) -> the STORE it feeds linearly, for the loads whose value no adjoint uses.
    `accesses`: the effect table (`access_rules.Access`es, loads included), `active`: the
    kernel's `activity`."""
    pairs = _candidates(accesses)
    if not pairs:
        return {}
    users, custom = _users(kernel_body), _custom(kernel_body)
    out: dict[int, Stmt] = {}
    for store, loads in pairs:
        chain = _affine_chain(store.value, loads, active) if store.op == Op.STORE else None
        if chain is not None and _uses_stay_on(chain, store, users):
            out.update((id(x), store) for x in loads if id(x) in chain)
        else:
            chain = set()
        out.update((id(x), store) for x in loads
                   if id(x) not in chain and _only_linear_writes(x, users, active, custom))
    return out


def free_loads(loads: list[Stmt], active: set, kernel_body: list) -> set[int]:
    """ids of the `loads` (LOADs of the effect table, no atomic's old value) whose value
    reaches only the values of field writes, affinely with coefficients that carry no
    derivative (`x[i] += dt * v[i]`): their adjoint adds `c * g` to `v.grad[i]` and uses no
    value of `v`, so a later launch on a Tape may overwrite what they read."""
    if not loads:
        return set()
    users, custom = _users(kernel_body), _custom(kernel_body)
    return {id(x) for x in loads
            if id(x) not in custom and _only_linear_writes(x, users, active, custom)}


def _custom(kernel_body: list) -> set[int]:
    """ids of the statements inside custom-gradient regions: a user adjoint may use any value
    there."""
    return {id(s) for c in walk(kernel_body) if c.op == Op.CUSTOM_GRAD
            for b in c.blocks for s in walk(b)}


def _only_linear_writes(load: Stmt, users: dict, active: set, custom: set) -> bool:
    """Whether every value computed from `load` is affine in it with coefficients that carry no
    derivative and ends in the value (not an index) of a field STORE or atomic add/sub whose
    old value is unused: no adjoint then uses the value `load` read."""
    seen = {id(load): load}
    work = [load]
    while work:
        for u in users.get(id(work.pop()), ()):
            if id(u) not in seen:
                seen[id(u)] = u
                if u.op not in (Op.STORE, Op.ATOMIC):
                    work.append(u)
    return all(k not in custom and _linear_step(u, seen, users, active)
               for k, u in seen.items() if k != id(load))


def _linear_step(u: Stmt, chain: dict, users: dict, active: set) -> bool:
    deps = [id(a) in chain for a in u.args]
    if u.op in (Op.STORE, Op.ATOMIC):
        sink = u.op == Op.STORE or (u.attr[1] in ("add", "sub") and id(u) not in users)
        return sink and deps[-1] and not any(deps[:-1])
    return _combine(u, deps, active) is True


def _candidates(accesses: list) -> list[tuple[Stmt, list[Stmt]]]:
    """(write, the loads of its element before it in the same iteration) for each store or
    atomic add/sub to a field with a gradient that has such loads."""
    out = []
    for w in accesses:
        if (w.stmt is None or not _overwrites_or_adds(w.stmt)
                or getattr(w.field, "adjoint", None) is None or _in_custom(w)):
            continue
        loads = [r.stmt for r in accesses
                 if r.stmt is not None and r.stmt.op == Op.LOAD and r.field is w.field
                 and r.task_index == w.task_index and r.position < w.position
                 and r.indices == w.indices and r.loops == w.loops and not _in_custom(r)]
        if loads:
            out.append((w.stmt, loads))
    return out


def _overwrites_or_adds(s: Stmt) -> bool:
    """A STORE (its adjoint takes and zeroes the element's gradient) or an atomic add/sub (its
    adjoint leaves that gradient as it is): neither uses the element's old value."""
    return s.op == Op.STORE or (s.op == Op.ATOMIC and s.attr[1] in ("add", "sub"))


def _in_custom(a) -> bool:
    return any(s.op == Op.CUSTOM_GRAD for s, _ in a.path)


def _users(body: list) -> dict[int, list[Stmt]]:
    users: dict[int, list[Stmt]] = {}
    for s in walk(body):
        for a in s.args:
            users.setdefault(id(a), []).append(s)
    return users


def _affine_chain(value: Stmt, loads: list[Stmt], active: set) -> set[int] | None:
    """ids of the statements of `value`'s expression that depend on `loads` (the loads
    included), when `value` is affine in them with coefficients that carry no derivative and do
    not depend on them; else None."""
    targets = {id(x) for x in loads}
    memo: dict[int, bool | None] = {}  # id -> depends (True), independent (False), nonlinear (None)
    work = [(value, False)]
    while work:  # post-order without recursion: expressions can be long
        v, ready = work.pop()
        if id(v) in memo:
            continue
        if id(v) in targets or _leaf(v):
            memo[id(v)] = id(v) in targets
        elif not ready:
            work.append((v, True))
            work.extend((a, False) for a in v.args if id(a) not in memo)
        else:
            memo[id(v)] = _combine(v, [memo[id(a)] for a in v.args], active)
    if not memo[id(value)]:
        return None
    return {k for k, dep in memo.items() if dep}


def _leaf(v: Stmt) -> bool:
    """A value not followed to its operands: another load, a local (the use check sees every
    flow from the loads into a local), a constant or argument."""
    return v.op in (Op.LOAD, Op.LOCAL_LOAD) or not v.args


def _combine(v: Stmt, deps: list, active: set) -> bool | None:
    """Whether `v` depends on the loads: affinely (True), not at all (False), or otherwise (None)."""
    if None in deps:
        return None
    if not any(deps):
        return False
    if v.op in _ADDITIVE:
        return True
    if v.op == Op.CAST:
        return True if v.dtype.is_float and v.args[0].dtype.is_float else None
    if v.op == Op.MUL:
        return True if _coefficient(v.args, deps, active) else None
    if v.op == Op.DIV:  # x / a, not a / x
        return True if deps == [True, False] and id(v.args[1]) not in active else None
    if v.op == Op.SELECT:  # a condition that does not depend on the loads
        return True if not deps[0] else None
    return None


def _coefficient(args, deps, active: set) -> bool:
    """One factor depends on the loads affinely, the other not at all and carries no derivative."""
    return sum(deps) == 1 and all(id(a) not in active for a, d in zip(args, deps) if not d)


def _uses_stay_on(chain: set[int], store: Stmt, users: dict) -> bool:
    """Every use of a chain value is another chain value or the store's value (not its index):
    no other statement, branch or local sees the old value."""
    for key in chain:
        for u in users.get(key, ()):
            if id(u) in chain:
                continue
            if u is store and store.value is not None and id(store.value) == key \
                    and all(id(i) != key for i in store.indices):
                continue
            return False
    return True
