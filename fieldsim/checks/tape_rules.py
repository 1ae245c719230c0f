"""Rule 1 across the launches recorded on one Tape (API.md, "the static checker").

Contract: analysis only; reads kernel summaries (`access_rules.summarize`), never the data. A
`TapeState` lives as long as one Tape's recording. Per field it keeps the elements read so far
and written so far, as boxes: one `Comp` per index component, the values an index form takes
once the launch's kernel arguments are substituted (an arithmetic progression `lo..hi` by
`step`; data-dependent indices give the whole axis, marked inexact).

`launch` first runs the in-kernel rules (`check_kernel`, with the actual argument values), then
refuses a write (by a kernel or in Python scope) to an element an earlier launch read (rule 1 across
kernels): a 'violation' when the boxes overlap on exact indices, 'undecided' when only an inexact
(data-dependent) box makes them overlap. Overwriting an element nobody has read is allowed: a
plain store's adjoint consumes the element's gradient, so the last write wins (Taichi's
`test_ad_set_loss_grad`). Inside `unit(...)` (a `grad_replaced` function) launches are neither
checked in-kernel nor against each other, only against what was read before the unit.
"""
from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass

from fieldsim.checks.access_rules import (
    RULE_TEXT,
    UNDECIDED_TEXT,
    Access,
    Finding,
    KernelCheck,
    arg_env,
    describe,
    source,
    to_error,
    where,
)
from fieldsim.checks.index_expr import Affine, Arg, Var
from fieldsim.errors import Loc
from fieldsim.lang.printer import field_name

_BIG = 1 << 62


@dataclass(frozen=True)
class Comp:
    """The values one index component takes: `lo, lo+step, ..., hi` (step 0: one value).
    `exact`: every one of them is touched (no data-dependent or approximated index)."""

    lo: int
    hi: int
    step: int
    exact: bool

    def meets(self, o: Comp) -> bool:
        if self.lo > o.hi or o.lo > self.hi:
            return False
        g = math.gcd(self.step, o.step)
        return g == 0 or (self.lo - o.lo) % g == 0

    def surely_meets(self, o: Comp) -> bool:
        if self.exact and o.exact:
            return True
        return any(a.exact and a.step <= 1 and a.lo <= b.lo and b.hi <= a.hi
                   for a, b in ((self, o), (o, self)))

    def text(self, o: Comp) -> str:
        lo, hi = max(self.lo, o.lo), min(self.hi, o.hi)
        if lo == hi:
            return str(lo)
        return ":" if lo <= -_BIG or hi >= _BIG else f"{lo}:{hi + 1}"


def _shape(field) -> tuple:
    shape = getattr(field, "storage_shape", None)
    return tuple(shape if shape is not None else getattr(field, "shape", ()) or ())


def _whole(n, exact: bool) -> Comp:
    return Comp(0, n - 1, 1, exact) if n else Comp(-_BIG, _BIG, 1, False)


def _comp(f: Affine, env: dict, n) -> Comp:
    r = None if f.has_opaque() else f.bounds(env)
    if r is None:
        return _whole(n, False)
    step = math.gcd(*f.terms.values()) if f.terms else 0
    return Comp(r[0], r[1], step, _exact(f, env))


def _exact(f: Affine, env: dict) -> bool:
    """Does `f` take every value of its progression? A constant, or one loop index or digit
    over constant bounds that run through all of the digit's values."""
    if len(f.terms) != 1:
        return not f.terms
    atom = next(iter(f.terms))
    if not isinstance(atom, Var) or atom.bounds is None:
        return False
    begin, end = (b.subst(env) for b in atom.bounds)
    if not (begin.is_const() and end.is_const()):
        return False
    return atom.size is None or end.const - begin.const >= atom.stride * atom.size


def box_of(a: Access, env: dict) -> tuple:
    shape = _shape(a.field) + (None,) * len(a.indices)
    return tuple(_comp(f.subst(env), env, n) for f, n in zip(a.indices, shape))


def _uses_args(f: Affine) -> bool:
    """Does `f` (or the bounds of a loop it uses) depend on kernel arguments?"""
    for atom in f.terms:
        atom = getattr(atom, "atom", atom)  # Primed
        if isinstance(atom, Arg) or (isinstance(atom, Var) and atom.bounds is not None
                                     and any(_uses_args(b) for b in atom.bounds)):
            return True
    return False


class _Boxes:
    """The boxes of one kernel's accesses, one per distinct (field, read/write, indices).
    Components that do not depend on the kernel's arguments are computed once."""

    def __init__(self, accesses: list[Access]):
        self.items, seen = [], set()
        for a in accesses:
            key = (id(a.field), a.is_write, a.indices)
            if key not in seen:
                seen.add(key)
                shape = _shape(a.field) + (None,) * len(a.indices)
                comps = tuple(f if _uses_args(f) else _comp(f, {}, n)
                              for f, n in zip(a.indices, shape))
                self.items.append((a, comps, shape))

    def of_launch(self, env: dict):
        for a, comps, shape in self.items:
            yield a, tuple(c if isinstance(c, Comp) else _comp(c.subst(env), env, n)
                           for c, n in zip(comps, shape))


@dataclass(frozen=True, eq=False)
class Origin:
    """Who made an access: a kernel launch (name, number, args) or a Python-scope write."""

    access: Access
    kernel: str | None
    launch: int
    args: str = ""
    unit: str | None = None
    what: str | None = None  # a Python-scope write: "x.fill(0)", "x[3] = ..."

    def who(self) -> str:
        if self.kernel is None:
            return f"Python-scope `{self.what}` "
        inside = f"inside `{self.unit}`, " if self.unit else ""
        args = f", {self.args}" if self.args else ""
        return f"{inside}kernel '{self.kernel}' (launch {self.launch}{args}) "

    def line(self, label: str) -> str:
        verb = "writes " + field_name(self.access.field) if self.what else describe(self.access)
        return f"  {label:<18}{where(self.access.loc)}  {self.who()}{verb}:  {source(self.access.loc)}"


class _Log:
    """Boxes of one field with the first origin of each, bucketed by a constant first index."""

    def __init__(self):
        self.buckets: dict = {}

    def add(self, box: tuple, origin: Origin):
        self.buckets.setdefault(_key(box), {}).setdefault(box, origin)

    def meeting(self, box: tuple):
        key = _key(box)
        keys = (key, None) if key is not None else list(self.buckets)
        for k in keys:
            for b, origin in self.buckets.get(k, {}).items():
                if all(x.meets(y) for x, y in zip(b, box)):
                    yield b, origin


def _key(box: tuple):
    return box[0].lo if box and box[0].lo == box[0].hi else None


class TapeState:
    """Rule 1 across the launches and Python-scope writes recorded on one Tape."""

    def __init__(self, validation: bool = False):
        self.validation = validation
        self.reads: dict[int, _Log] = {}
        self.writes: dict[int, _Log] = {}
        self.launches = 0
        self._units: list = []
        self._checks: dict[int, tuple] = {}  # id(kernel IR) -> (KernelCheck holding it, _Boxes)
        self._pending: list = []

    def launch(self, kernel_ir, kernel_name: str | None = None, summary=None,
               arg_values=None) -> list[Finding]:
        """Check one launch before it runs, then record it. Raises `AccessRuleError`; returns
        the undecided findings when `validation` is on (else they raise too)."""
        if id(kernel_ir) not in self._checks:
            check = KernelCheck(kernel_ir, summary)
            self._checks[id(kernel_ir)] = (check, _Boxes(check.accesses))
        check, boxes = self._checks[id(kernel_ir)]
        found = [] if self._units else check.run(arg_values, self.validation)
        env = arg_env(arg_values)
        self.launches += 1
        name, args = kernel_name or kernel_ir.name, _args_text(kernel_ir, env)
        unit = self._units[-1][0] if self._units else None
        entries = [(a, box, Origin(a, name, self.launches, args, unit))
                   for a, box in boxes.of_launch(env)]
        for a, box, origin in entries:
            if a.is_write:
                found += self._check(box, origin)
        self._record(entries)
        return found

    def python_write(self, field, index, loc: Loc | None, what: str) -> list[Finding]:
        """A Python-scope write (`x[i] = v`, `x.fill`, `x.from_numpy`; `index` None: all)."""
        idx = () if index is None else (tuple(index) if isinstance(index, (tuple, list)) else (index,))
        shape = _shape(field)
        box = tuple(Comp(int(i), int(i), 0, True) for i in idx)
        box += tuple(_whole(n, True) for n in shape[len(idx):])
        access = Access(field, tuple(Affine(int(i)) for i in idx), "store", -1, -1, "serial", (), loc)
        unit = self._units[-1][0] if self._units else None
        origin = Origin(access, None, self.launches, unit=unit, what=what)
        found = self._check(box, origin)
        self._record([(access, box, origin)])
        return found

    @contextlib.contextmanager
    def unit(self, name: str, loc: Loc | None = None):
        """A `grad_replaced` call: one unit, recorded as a whole when it ends."""
        self._units.append((name, loc))
        try:
            yield self
        finally:
            self._units.pop()
            if not self._units:
                entries, self._pending = self._pending, []
                self._store(entries)

    def _record(self, entries: list):
        if self._units:
            self._pending.extend(entries)
        else:
            self._store(entries)

    def _store(self, entries: list):
        for a, box, origin in entries:
            logs = self.writes if a.is_write else self.reads
            logs.setdefault(id(a.field), _Log()).add(box, origin)

    def _check(self, box: tuple, origin: Origin) -> list[Finding]:
        log = self.reads.get(id(origin.access.field))
        hits = list(log.meeting(box)) if log is not None else []
        sure = [(b, o) for b, o in hits if all(x.surely_meets(y) for x, y in zip(b, box))]
        if sure or (hits and not self.validation):
            raise to_error(_finding(*(sure or hits)[0], box, origin, sure))
        return [_finding(*hits[0], box, origin, sure)] if hits else []


def _args_text(kernel_ir, env: dict) -> str:
    """`t=3, n=128`: ARG positions count the runtime (non-template) parameters only."""
    params = [p for p in getattr(kernel_ir, "params", []) if not p.template]
    names = {i: p.name for i, p in enumerate(params)}
    return ", ".join(f"{names.get(p, f'arg{p}')}={v}" for p, v in sorted(env.items()))


def _finding(read_box: tuple, first: Origin, box: tuple, second: Origin, sure: list) -> Finding:
    verdict = "violation" if sure else "undecided"
    name = field_name(first.access.field)
    elements = ", ".join(x.text(y) for x, y in zip(read_box, box))
    fix = ("write to a separate field per time step (`x[t+1, i] = f(x[t, i])`), or do the "
           "Python-scope write before the Tape starts; if the overwrite is intended (a step "
           "reusing its state buffer), checkpoint the step with `@fs.ad.grad_replaced`.")
    message = "\n".join([
        RULE_TEXT[1],
        (f"On this Tape, {second.who()}writes elements of field '{name}' that {first.who()}"
         "read earlier:"),
        first.line("first access:"), second.line("offending access:"),
        f"  elements in both: {name}[{elements}]" if elements else f"  element: {name}[None]",
        (UNDECIDED_TEXT if verdict == "undecided" else "To fix: ") + fix])
    return Finding(1, verdict, first.access.field, first.access, second.access, message)
