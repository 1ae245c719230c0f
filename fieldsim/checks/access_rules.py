"""The global data access rules, checked statically on one kernel's IR (API.md, "the static checker").

Contract: analysis only, read-only. `summarize(kernel)` is the one function that walks the IR: it
makes an effect table, one `Access` per field touch (a LOAD, a STORE, an ATOMIC, and the read of
an ATOMIC whose old value is used), in program order. The rules are pure functions over that list:

* Rule 1 (read, then never write): no write (plain or atomic) may follow a read of the same
  element: in the same thread, from another thread of a parallel loop, or in a later task.
  A kernel that writes no field with a gradient has an adjoint with nothing to recompute: its
  reads are left out of the table, and so are, in any kernel, the reads no adjoint value depends
  on (`adjoint_needs`: a counter read only to update that counter), nor the read of an in-place
  linear update `x[i] = a * x[i] + b` with `a` carrying no derivative (`linear_updates`).
* Rule 2 (accumulate only): on a field with a gradient, a write may follow a write of the same
  element only if it is an atomic add/sub (`+=`, `-=`), or if both are the same atomic min/max;
  in program order (the same thread, or a later task) also if it is a plain store, or if the
  first write's value carries no derivative (AD's activity analysis: it depends on no field
  with a gradient, e.g. `p[i] += i`): the overwrite's adjoint consumes the element's gradient
  (a store's zeroes it), and nothing upstream was owed a share.

Each rule returns `Finding`s: 'violation' when index reasoning (`index_expr`) shows the two
accesses can touch one element, 'undecided' when data-dependent indices leave it open.
`KernelCheck` judges a kernel once with its arguments symbolic and re-judges only the flagged
pairs with each launch's argument values; `check_kernel` is the one-shot form. Both raise
`AccessRuleError` for the worst finding, naming the rule, kernel, field and both source lines.
"""
from __future__ import annotations

import enum
import numbers
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, NamedTuple

from fieldsim.checks.index_expr import NO_MEET, Affine, Answer, Meet, exclusive, overlap
from fieldsim.checks.index_forms import Forms, Site
from fieldsim.checks.linear_updates import free_loads, linear_loads
from fieldsim.errors import AccessRuleError, Loc
from fieldsim.ir.activity import activity, adjoint_needs, writes_derivatives
from fieldsim.ir.ir import GLOBAL_ACCESS, Kernel, Op, Stmt, replayed_block, walk
from fieldsim.ir.printer import field_name


class AccessKind(str, enum.Enum):
    """What an `Access` does to its element (a str, so older comparisons with the text hold)."""

    LOAD = "load"
    STORE = "store"
    ATOMIC_ADD = "atomic_add"  # add/sub
    ATOMIC_OTHER = "atomic_other"  # min/max/mul/and/or/xor
    RMW = "rmw"  # a store of a value computed from a load of the same element


class Verdict(str, enum.Enum):
    """How sure a `Finding` is: the rule is broken, or the analysis cannot decide."""

    VIOLATION = "violation"
    UNDECIDED = "undecided"


WRITES = frozenset({AccessKind.STORE, AccessKind.ATOMIC_ADD, AccessKind.ATOMIC_OTHER,
                    AccessKind.RMW})


_UPDATED = (AccessKind.STORE, AccessKind.ATOMIC_ADD)


@dataclass(frozen=True, eq=False)
class Access:
    """One field touch. `kind`: 'load', 'store', 'atomic_add' (add/sub), 'atomic_other'
    (min/max/mul/and/or/xor; `op` names it), or 'rmw' (a store of a value computed from a load
    of the same element, e.g. `x[i] *= 2`; the load is its own 'load' Access). A 'load' with
    `op` set is the old value returned by that atomic. `loops`: the enclosing FOR/LOOP statements,
    outermost first; for a parallel task the first is the task's own loop (the thread index).
    `guards`: what the enclosing `if`s say about the index atoms where the access runs (so
    `if i >= 1: x[i] = x[0]` never writes the x[0] it reads)."""

    field: Any
    indices: tuple[Affine, ...]
    kind: AccessKind
    task_index: int
    position: int
    thread_mode: str  # 'parallel' or 'serial'
    loops: tuple
    loc: Loc | None
    op: str | None = None
    path: tuple = ()
    stmt: Stmt | None = None
    loop_vars: tuple = ()  # per loop in `loops`: its index atom (`index_expr.Var`), None for LOOP
    guards: tuple = ()  # forms g >= 0 that the enclosing `if`s guarantee (`Forms.guards`)
    inert: bool = False  # a write whose value carries no derivative (not active for reverse AD)
    linear: bool = False  # an update whose reads no adjoint uses (`linear_updates`)
    free: bool = False  # a read whose value no adjoint uses: not logged on a Tape (`free_loads`)

    @property
    def is_write(self) -> bool:
        return self.kind in WRITES


@dataclass(frozen=True, eq=False)
class Finding:
    rule: int  # 1 or 2
    verdict: Verdict
    field: Any
    first: Access
    second: Access
    message: str
    how: str = ""  # 'same', 'iteration', 'thread' or 'task': how the second access follows


def kernel_check(ck) -> KernelCheck:
    """A compiled kernel's `KernelCheck` (effect table and symbolic findings), made once and
    kept in its analyses; `.run(values)` re-judges only the flagged pairs with a launch's
    argument values."""
    from fieldsim.checks.analyses import analyses_of  # (that module builds on this one)
    return analyses_of(ck).check


# --------------------------------------------------------------------------------- summary
def summarize(kernel: Kernel, every_read: bool = False) -> list[Access]:
    """The kernel's effect table: every field access with its symbolic index forms. Reads no
    adjoint needs are left out unless `every_read` (a checkpoint's recomputation replays the
    forward, where a read that only steers an `if` still decides what it writes)."""
    ix = _index(kernel)
    forms = Forms(ix.sites, ix.stores)
    if every_read:
        found = _all_accesses(ix, forms, kernel)
        return [_label_rmw(a, found, ix.stores) for a in found]
    active = activity(kernel.body)
    needed = adjoint_needs(kernel.body)
    accesses = []
    for s in ix.access_stmts:
        if getattr(s.field, "role", None) == "listing":  # rebuilt by each launch and adjoint
            continue
        found = _accesses_of(s, ix.sites[id(s)], forms, kernel, id(s) in ix.used)
        if id(s) in ix.unreplayed or id(s) not in needed:
            # its reads are never recomputed, or feed nothing the adjoint computes: only its
            # writes matter
            found = [a for a in found if a.is_write]
        if s.op != Op.LOAD and id(s.value) not in active:
            found = [replace(a, inert=True) if a.is_write else a for a in found]
        accesses.extend(found)
    if not writes_derivatives(kernel.body):
        # its adjoint writes no gradient, so it recomputes nothing from what it read (a binning
        # kernel's `slot = ti.atomic_add(count[c], 1)` into integer fields): only its writes matter
        accesses = [a for a in accesses if a.is_write]
    accesses = _mark_free(accesses, active, kernel.body)
    linear = linear_loads(accesses, active, kernel.body)
    if linear:
        # `x[i] *= c`: the adjoint uses no value of these reads (`linear_updates`). Their
        # writes become 'rmw', so Rule 2 refuses any other write of the element from another
        # thread (an atomic add included), whose adjoint could run after the dropped read's
        updates = {id(w) for w in linear.values()}
        accesses = [a for a in accesses if a.is_write or id(a.stmt) not in linear]
        return [replace(a, kind=AccessKind.RMW, linear=True) if id(a.stmt) in updates and a.kind in _UPDATED
                else _label_rmw(a, accesses, ix.stores) for a in accesses]
    return [_label_rmw(a, accesses, ix.stores) for a in accesses]


def _all_accesses(ix, forms: Forms, kernel: Kernel) -> list[Access]:
    return [a for s in ix.access_stmts if getattr(s.field, "role", None) != "listing"
            for a in _accesses_of(s, ix.sites[id(s)], forms, kernel, id(s) in ix.used)]


def _mark_free(accesses: list[Access], active: set, body: list) -> list[Access]:
    """Mark the reads no adjoint value depends on (`linear_updates.free_loads`)."""
    loads = [a.stmt for a in accesses if a.kind is AccessKind.LOAD and a.op is None]
    free = free_loads(loads, active, body)
    if not free:
        return accesses
    return [replace(a, free=True) if a.kind is AccessKind.LOAD and id(a.stmt) in free else a
            for a in accesses]


class _Index(NamedTuple):
    sites: dict  # id(stmt) -> Site
    stores: dict  # id(alloca) -> its LOCAL_STOREs
    used: set  # ids of statements used as operands
    access_stmts: list  # LOAD/STORE/ATOMIC, in program order
    unreplayed: set  # ids of statements in func_replay regions' forward code (the adjoint
    #                  recomputes the user's replay code instead: what they read may change)


_ACCESS_OPS = GLOBAL_ACCESS
_make_site = tuple.__new__  # Site(...) without its Python-level __new__: one per statement


def _index(kernel: Kernel) -> _Index:
    """One pass over the kernel: every statement's site and what `summarize` needs."""
    ix = _Index({}, {}, set(), [], set())
    sites, used = ix.sites, ix.used

    def visit(block, task, path, loops):
        for s in block:
            sites[id(s)] = _make_site(Site, (len(sites), task, path, loops))
            used.update(map(id, s.args))
            op = s.op
            if op in _ACCESS_OPS:
                ix.access_stmts.append(s)
            elif op == Op.LOCAL_STORE:
                ix.stores.setdefault(id(s.args[0]), []).append(s)
            if s.blocks:
                inner = loops + (s,) if op in (Op.FOR, Op.LOOP) else loops
                for bi, b in enumerate(s.blocks):
                    visit(b, task, path + ((s, bi),), inner)
                if op == Op.CUSTOM_GRAD and replayed_block(s) is not s.blocks[0]:
                    ix.unreplayed.update(id(x) for x in walk(s.blocks[0]))

    for task, s in enumerate(kernel.body):
        visit([s], task, (), ())
    return ix


def is_parallel_task(s: Stmt) -> bool:
    return s.op == Op.FOR and s.attr is not None and s.attr.parallel and not s.attr.serialize


def _accesses_of(s: Stmt, site: Site, forms: Forms, kernel: Kernel, used: bool) -> list[Access]:
    mode = "parallel" if is_parallel_task(kernel.body[site.task]) else "serial"
    common = {"field": s.field, "indices": tuple(forms.form(i) for i in s.indices),
              "task_index": site.task, "position": site.position, "thread_mode": mode,
              "loops": site.loops, "loc": s.loc, "path": site.path, "stmt": s,
              "loop_vars": tuple(forms.loop_var(lp) if lp.op == Op.FOR else None
                                 for lp in site.loops),
              "guards": forms.guards(site.path)}
    if s.op == Op.LOAD:
        # a load nothing uses (the frontend's copy of `f(x[i])` for a `ti.template()` parameter,
        # which aliases the element instead) feeds no adjoint: no read to protect
        return [Access(kind=AccessKind.LOAD, **common)] if used else []
    if s.op == Op.STORE:
        return [Access(kind=AccessKind.STORE, **common)]
    op = s.attr[1]
    write = Access(kind=AccessKind.ATOMIC_ADD if op in ("add", "sub") else AccessKind.ATOMIC_OTHER,
                   op=op, **common)
    return [Access(kind=AccessKind.LOAD, op=op, **common), write] if used else [write]


def _label_rmw(a: Access, accesses: list[Access], stores: dict) -> Access:
    """A store whose value comes from a load of the same element, same thread, same iteration."""
    if a.kind is not AccessKind.STORE:
        return a
    for r in accesses:
        if (r.kind is AccessKind.LOAD and r.op is None and r.field is a.field and r.position < a.position
                and r.task_index == a.task_index and r.indices == a.indices
                and not exclusive(r.path, a.path)
                and _depends(a.stmt.value, r.stmt, stores)):
            return replace(a, kind=AccessKind.RMW)
    return a


def _depends(value: Stmt, target: Stmt, stores: dict, limit: int = 512) -> bool:
    todo, seen = [value], set()
    while todo and len(seen) < limit:
        s = todo.pop()
        if s is target:
            return True
        if id(s) in seen:
            continue
        seen.add(id(s))
        todo.extend(s.args)
        if s.op == Op.LOCAL_LOAD:
            todo.extend(st.value for st in stores.get(id(s.args[0]), []))
    return False


def arg_env(arg_values) -> dict[int, int]:
    """Integer kernel arguments by ARG position (a mapping, or a sequence indexed by position)."""
    if arg_values is None:
        return {}
    items = arg_values.items() if isinstance(arg_values, Mapping) else enumerate(arg_values)
    # `type(v) is int` first: the abc check costs microseconds per launch on a Tape
    return {int(p): int(v) for p, v in items
            if type(v) is int or (type(v) is not float and isinstance(v, numbers.Integral))}


# ----------------------------------------------------------------------------------- rules
def later_meet(first: Access, second: Access, env: dict | None = None) -> Meet:
    """How an instance of `second` can touch `first`'s element after it (or concurrently)."""
    if first.task_index > second.task_index:
        return NO_MEET
    if first.task_index < second.task_index:
        return overlap(first, second, False, env)
    return max(overlap(first, second, True, env), overlap(first, second, False, env),
               key=lambda m: m.answer)


def rule1(accesses: list[Access], env: dict | None = None, kernel: str = "?") -> list[Finding]:
    """Rule 1: no write of an element after a read of it."""
    out = []
    for group in _by_field(accesses):
        writes = [w for w in group if w.is_write]
        for r in (a for a in group if a.kind is AccessKind.LOAD):
            for w in writes:
                meet = later_meet(r, w, env)
                if meet.answer:
                    out.append(_finding(1, kernel, r, w, meet))
    return out


def rule2(accesses: list[Access], env: dict | None = None, kernel: str = "?") -> list[Finding]:
    """Rule 2: after a write, only atomic adds (or the same atomic min/max) on fields with grads."""
    out = []
    for group in _by_field(accesses):
        if getattr(group[0].field, "adjoint", None) is None:
            continue
        writes = [w for w in group if w.is_write]
        for w1 in writes:
            for w2 in writes:
                if _accumulates(w1, w2):
                    continue
                meet = rule2_meet(w1, w2, env)
                if meet.answer:
                    out.append(_finding(2, kernel, w1, w2, meet))
    return out


def rule2_meet(w1: Access, w2: Access, env: dict | None = None) -> Meet:
    """How `w2` can overwrite `w1`'s element, for Rule 2: never, when `w2` can only follow it
    in order and `w1` writes no derivative or `w2` is a plain store (whose adjoint takes the
    element's whole gradient and zeroes it, so nothing reaches `w1`'s value, as is right) or a
    linear update (whose adjoint scales that gradient before `w1`'s adjoint takes it), unless
    `w1` is an atomic min/max, whose adjoint compares with the element's final value."""
    relaxed = w2.kind is AccessKind.STORE or ((w1.inert or w2.linear) and not _extremum(w1))
    if relaxed and _in_order(w1, w2, env):
        return NO_MEET
    return later_meet(w1, w2, env)


def _in_order(w1: Access, w2: Access, env: dict | None) -> bool:
    """Can `w2` meet `w1`'s element only after it in program order (the same thread, or a
    later task), never from another thread running at the same time?"""
    if w1.task_index != w2.task_index or w1.thread_mode != "parallel":
        return True
    return not overlap(w1, w2, False, env).answer


def _extremum(w: Access) -> bool:
    """An atomic min/max: its adjoint finds its winner by comparing with the element's final
    value, so only a plain store (which takes the gradient) or the same min/max may follow."""
    return w.kind is AccessKind.ATOMIC_OTHER and w.op in ("min", "max")


def _accumulates(w1: Access, w2: Access) -> bool:
    if w2.kind is AccessKind.ATOMIC_ADD:
        return not _extremum(w1)
    return w1.kind == w2.kind is AccessKind.ATOMIC_OTHER and w1.op == w2.op and w1.op in ("min", "max")


def _by_field(accesses: list[Access]) -> list[list[Access]]:
    groups: dict[int, list[Access]] = {}
    for a in accesses:
        groups.setdefault(id(a.field), []).append(a)
    return list(groups.values())


def findings(accesses: list[Access], env: dict | None = None, kernel: str = "?") -> list[Finding]:
    """All findings, worst first: violations before undecided; then those in program order
    before those between threads (whose order is unknown); then by the offending access."""
    return sorted(rule1(accesses, env, kernel) + rule2(accesses, env, kernel), key=_severity)


def _severity(f: Finding) -> tuple:
    return (f.verdict is not Verdict.VIOLATION, f.how == "thread", f.second.position, -f.rule,
            f.first.position)


class KernelCheck:
    """The rules for one kernel, judged once with its arguments symbolic. A pair proven apart
    for every argument value stays apart for any value, so `run` re-judges only the pairs that
    were flagged, with the launch's values: cheap enough to run at every launch on a Tape."""

    def __init__(self, kernel: Kernel, summary: list[Access] | None = None):
        self.kernel = kernel
        self.accesses = summarize(kernel) if summary is None else summary
        self.symbolic = findings(self.accesses, {}, kernel.name)
        self._judged: dict = {}  # argument values -> findings (judged once per values)
        self.grad_launches_passed: set = set()  # `tape_rules.check_grad_launch`'s verdicts

    def judge(self, arg_values=None) -> list[Finding]:
        """The findings for these argument values, worst first."""
        if not self.symbolic:
            return self.symbolic
        return self.judge_env(arg_env(arg_values))

    def judge_env(self, env: dict) -> list[Finding]:
        """`judge` given the integer arguments by position (`arg_env`)."""
        if not env or not self.symbolic:
            return self.symbolic
        key = tuple(sorted(env.items()))
        cached = self._judged.get(key)
        if cached is not None:
            return cached
        if len(self._judged) >= 1 << 14:
            self._judged.clear()
        found = self._judged[key] = self._judge(env)
        return found

    def _judge(self, env: dict) -> list[Finding]:
        found = []
        for f in self.symbolic:
            meet = (rule2_meet if f.rule == 2 else later_meet)(f.first, f.second, env)
            if meet.answer:
                found.append(_finding(f.rule, self.kernel.name, f.first, f.second, meet))
        return sorted(found, key=_severity)

    def run(self, arg_values=None, allow_undecided: bool = False) -> list[Finding]:
        """Raise `AccessRuleError` for the worst violation (or undecided finding, unless
        `allow_undecided`); return the undecided findings (empty when everything is proven)."""
        found = self.judge(arg_values)
        for f in found:
            if f.verdict is Verdict.VIOLATION or not allow_undecided:
                raise to_error(f)
        return found


def check_kernel(kernel: Kernel, arg_values=None, allow_undecided: bool = False,
                 summary: list[Access] | None = None) -> list[Finding]:
    """One-shot `KernelCheck(kernel, summary).run(arg_values, allow_undecided)`."""
    return KernelCheck(kernel, summary).run(arg_values, allow_undecided)


def to_error(f: Finding) -> AccessRuleError:
    related = (("earlier access", f.first.loc),) if f.first.loc is not None else ()
    return AccessRuleError(f.message, loc=f.second.loc, related=related)


# -------------------------------------------------------------------------------- messages
RULE_TEXT = {
    1: "Rule 1 (read, then never write): once a field element is read, it is not written again "
       "(plain store or atomic) in that kernel, by any thread, nor by a later kernel or "
       "Python-scope write recorded on the same Tape.",
    2: "Rule 2 (accumulate only): once a field element has been written in a kernel, every "
       "further write to it is an atomic add (`+=`, `-=`, fs.atomic_add/sub), or a plain store "
       "that surely follows the first write in program order.",
}

UNDECIDED_TEXT = (
    "The checker cannot prove that the two accesses touch different elements: their indices "
    "depend on data (a value loaded from a field, a random number, or a local assigned more "
    "than once). If they never overlap, record the Tape with `fs.ad.Tape(..., validation=True)`, "
    "which checks these accesses element by element at run time; otherwise ")


def where(loc: Loc | None) -> str:
    return f"{loc.file}:{loc.line}" if loc is not None else "<unknown location>"


def source(loc: Loc | None) -> str:
    return loc.source.strip() if loc is not None and loc.source else "<source unavailable>"


def describe(a: Access) -> str:
    """What an access does to its field, as a verb phrase: 'reads x', 'stores to x', ..."""
    name = field_name(a.field)
    if a.kind is AccessKind.LOAD:
        return f"reads the old value of {name} returned by atomic_{a.op}" if a.op else f"reads {name}"
    return {AccessKind.STORE: f"stores to {name}",
            AccessKind.RMW: f"updates {name} in place (read-modify-write)",
            AccessKind.ATOMIC_ADD: f"atomically {'subtracts from' if a.op == 'sub' else 'adds to'} {name}",
            }.get(a.kind, f"applies atomic_{a.op} to {name}")


def access_lines(first: Access, second: Access, first_who: str = "", second_who: str = "") -> str:
    rows = [("first access:", first, first_who), ("offending access:", second, second_who)]
    return "\n".join(f"  {label:<18}{where(a.loc)}  {who}{describe(a)}:  {source(a.loc)}"
                     for label, a, who in rows)


def _how(meet: Meet) -> str:
    line = f" at line {meet.loop.loc.line}" if meet.loop is not None and meet.loop.loc else ""
    if meet.how == "thread":
        return f"from another thread of the parallel loop{line} (threads run in no fixed order)"
    if meet.how == "iteration":
        kind = "loop" if meet.loop.op == Op.FOR else "`while` loop"
        return f"in a later iteration of the {kind}{line}"
    if meet.how == "task":
        return "in a later top-level loop or block of the kernel"
    return "later in the same thread"


def _relation(rule: int, meet: Meet) -> str:
    done = "read" if rule == 1 else "written"
    hit = {Answer.SAME: "hits the very element", Answer.MAYBE: "can hit an element",
           Answer.UNDECIDED: "may hit an element"}[meet.answer]
    return f"The offending access {hit} {done} by the first access, {_how(meet)}."


def fix_hint(rule: int, second: Access, how: str = "", first: Access | None = None) -> str:
    """What to change, for a finding of `rule` whose offending access is `second`."""
    if rule == 1 and first is not None and first.kind is AccessKind.LOAD and first.op is not None:
        return ("the adjoint cannot recompute the value an atomic returned (a counter, a slot): "
                "put the atomic in an `@fs.func` and give it an `@fs.ad.func_replay` that "
                "returns the value the forward pass stored (e.g. `slot[i]`), or compute the "
                "value in a kernel outside the Tape.")
    if rule == 2 and second.kind is AccessKind.STORE:
        return ("write each element once per kernel: accumulate with `+=` (an atomic add), or "
                "combine the values in a local and store it once; or split the kernel, since a "
                "later kernel on the Tape may overwrite an element that nobody has read yet.")
    if rule == 2:
        return ("`*=`, `/=` and atomic_mul/min/max are not linear in the earlier writes: compute "
                "the whole value in a local and write it once, or write the result to another "
                "field in a separate kernel (`loss2[None] = loss[None] * x[i]`).")
    if second.kind is AccessKind.RMW:
        return ("do not update in place: write the result to another field (`y[i] = x[i] * 2`), "
                "or keep one slice per time step (`x[t+1, i] = f(x[t, i])`).")
    if how == "thread":
        return ("double-buffer: read from one field and write another (`x_new[i] = f(x[i-1], "
                "x[i+1])`), or index the field by time step (`x[t+1, i] = f(x[t, i-1], x[t, i+1])`).")
    return ("use a separate field per time step (`x[t+1, i] = f(x[t, i])`) or another field for "
            "the new values; if the overwrite is intended (a step reusing its state buffer), "
            "checkpoint it with `@fs.ad.grad_replaced` and give its gradient.")


def _finding(rule: int, kernel: str, first: Access, second: Access, meet: Meet) -> Finding:
    verdict = Verdict.VIOLATION if meet.answer >= Answer.MAYBE else Verdict.UNDECIDED
    hint = fix_hint(rule, second, meet.how, first)
    fix = UNDECIDED_TEXT + hint if verdict is Verdict.UNDECIDED else "To fix: " + hint
    message = "\n".join([
        RULE_TEXT[rule],
        f"Kernel '{kernel}' breaks it on field '{field_name(first.field)}':",
        access_lines(first, second), _relation(rule, meet), fix])
    return Finding(rule, verdict, first.field, first, second, message, meet.how)
