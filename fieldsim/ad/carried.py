"""Values a checkpointed step hands to a later step outside its `state` (gh-ckpt).

`fs.ad.checkpoint`'s backward recomputes each segment from its snapshot of the state; every
other field then holds its end-of-forward value. A segment's recomputation is thus wrong exactly
when it reads an element of such a field before writing it (an *exposed* read) and some write,
in that segment or a later one, changes that element after the read: the element carried a
value between steps outside the state. `CarriedReads` follows the forward pass element by
element and finds the first such element, so that `checkpoint` refuses it before the backward
writes any gradient.

Element sets are the checker's boxes (`checks.boxes.access_box`: a launch's accesses with its
argument values substituted; a sound hull of what an access may touch, the whole axis for a
data-dependent index). Every access counts, with every read of the kernel (also one no adjoint
needs: the recomputation replays the forward, where a read that only steers an `if` still
decides what is written). A read that may run marks as exposed every element of its hull not
covered in its segment; a write that may run (store or atomic) is checked against the exposed
elements of its hull, and a hit is refused. Only a *certain* plain store covers: its box is
exact (no data-dependent index, no `if` narrowing it) and it surely runs (only `for` loops
around it, each running at least once, and no `break`, `continue` or `return`), or it is the
last of stores of one element in the branches of `if`s that always take one of them. An atomic
update keeps the old value: it never covers. A read of an element a plain store wrote earlier
in the same iteration (same index forms, the store's enclosing statements enclosing the read)
is not exposed. Conservative (refused though maybe valid): a scratch written under an `if` and
read outside it, partly cleared then read at data-dependent indices, or written only through
atomics or in a sparse struct-for and then read; the error says to add the field to the state
or to write all of it with plain stores at the start of each step. Python-scope writes (`x[i]
= v`, `fill`, `from_numpy`) and reads (`x[i]`, `to_numpy`) are exact and count like launches,
and so do `fs.ndarray`s and NumPy arrays passed to kernels (the checker sees them as fields).

Not carried (accepted): write-once time-indexed outputs (`traj[t + 1] = f(traj[t])`: the
element read is never written again), atomic accumulators never read (`loss[None] += ...`),
scratch fields written before they are read in every step, fields only read, state fields.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from fieldsim.checks.access_rules import AccessKind, arg_env, describe, kernel_check, source, summarize, where
from fieldsim.checks.boxes import access_box, box_of, box_slices, exact_box, field_shape, surely_runs
from fieldsim.errors import AccessRuleError
from fieldsim.ir.ir import Op
from fieldsim.ir.printer import field_name
from fieldsim.lang.ndarray import ExternalArray

_PLANS = 1 << 10  # argument tuples remembered per kernel (a time step `t` makes one per step)


class _Track:
    """One field's elements: `written` in the current segment (certainly), `exposed` (read
    before any write in their segment), `reader` (index into `CarriedReads.events` of the
    first exposed read of each element, -1 for none)."""

    __slots__ = ("exposed", "field", "reader", "written")

    def __init__(self, field, shape):
        self.field = field
        self.written = np.zeros(shape, dtype=bool)
        self.exposed = np.zeros(shape, dtype=bool)
        self.reader = np.full(shape, -1, dtype=np.int32)


class CarriedReads:
    """Follows a checkpoint's forward pass (see the module docstring). `skip`: ids of the fields
    the snapshots restore. `found`: (field, element, reading event, writing event) of the first
    carried element, or None; an event is (kernel name or None, launch number, Access or None,
    Python-scope text, loc)."""

    def __init__(self, skip):
        self.skip = set(skip)
        self.tracks: dict[int, _Track] = {}
        self.events: list = []
        self.found = None
        self.launches = 0
        self._exits: dict = {}

    def _track(self, field):
        if id(field) in self.skip or getattr(field, "role", "primal") not in ("primal", "hidden") \
                or getattr(field, "storage", None) is None:
            return None
        tr = self.tracks.get(id(field))
        if tr is None:
            tr = self.tracks[id(field)] = _Track(field, field_shape(field))
        return tr

    def new_segment(self):
        for tr in self.tracks.values():
            tr.written[...] = False

    def launch(self, name, ck, values):
        self.launches += 1
        if self.found is not None:
            return
        event = (name, self.launches)
        for a, box, cover, own in self._plan(ck, arg_env(values)):
            tr = self._track(a.field)
            if tr is None:
                continue
            sl, ev = box_slices(box, tr.written.shape), event + (a, None, a.loc)
            if a.kind is AccessKind.RMW and not own:  # `x[i] = x[i] * 2` reads what it writes
                self._access(tr, sl, False, ev)
            if own and not a.is_write:
                continue
            self._access(tr, sl, a.is_write, ev,
                         None if cover is None else box_slices(cover, tr.written.shape))
            if self.found is not None:
                return

    def _plan(self, ck, env) -> list:
        """(access, box, cover, own) of every access of a launch, in program order (`f[i] = 0`
        then `f[i] += g` reads what it wrote). `box`: a hull of what it may touch; `cover`: the
        box a plain store certainly writes (`_Kernel.cover`), or None; `own`: a read of what a
        store wrote earlier in the same iteration (`_own_reads`)."""
        check = ck.analyses.check if ck.analyses is not None else kernel_check(ck)
        kern = getattr(check, "carried_plans", None)
        if kern is None:
            kern = check.carried_plans = _Kernel(check.kernel, self._exits)
        return kern.plan(env)

    def python_access(self, field, idx, is_write, what, loc):
        if self.found is not None:
            return
        tr = self._track(field)
        if tr is None:
            return
        if idx is None:
            where_ = ()
        else:
            idx = tuple(idx) if isinstance(idx, (tuple, list)) else (idx,)
            where_ = tuple(slice(int(i), int(i) + 1) for i in idx)
        self._access(tr, where_, is_write, (None, self.launches, None, what, loc), where_)

    def _access(self, tr, sl, is_write, event, cover=None):
        if is_write:
            hit = tr.exposed[sl]
            if hit.any():
                element = tuple(int(i) for i in np.argwhere(hit)[0])
                element = tuple(s.start + i * (s.step or 1) for s, i in zip(sl, element)) + \
                    element[len(sl):]
                self.found = (tr.field, element, self.events[tr.reader[element]], event)
                return
            if cover is not None:
                tr.written[cover] = True
            return
        new = ~tr.written[sl] & ~tr.exposed[sl]
        if new.any():
            tr.exposed[sl] |= new
            tr.reader[sl] = np.where(new, len(self.events), tr.reader[sl])
            self.events.append(event)

    def error(self, step_name, state) -> AccessRuleError:
        field, element, read, write = self.found
        name = field_name(field)
        kept = ", ".join(field_name(f) for f in state)
        text = ", ".join(str(i) for i in element) or "None"
        lines = [
            (f"fs.ad.checkpoint({step_name}): field '{name}' carries values from one step to a later "
            f"one outside state=[{kept}]:"),
            _line("read:", read), _line("overwritten:", write),
            f"  element: {name}[{text}], read before any write in its segment and changed after.",
            ("The backward recomputes each segment from its snapshot of the state, where this "
            f"read would see '{name}' as the forward pass left it, not the value it read; the "
            "gradient would be silently wrong. Nothing was differentiated."),
            _fix(field, kept, name)]
        if read[0] is None:  # fieldsim cannot follow what a Python-scope read's value feeds
            lines.append("If that Python-scope read only reports the value (a print, a log), "
                         "move it out of the step (after the checkpoint call) or add the field to "
                         "state as above: a read inside the step is taken as one the step uses.")
        related = (("read", read[4]),) if read[4] is not None else ()
        return AccessRuleError("\n".join(lines), loc=write[4], related=related)


class _Kernel:
    """One kernel's accesses for `CarriedReads`, with its plans per argument values. Every
    read counts, also one no adjoint needs (`summarize(every_read=True)`): the recomputation
    replays the forward, where a read that only steers an `if` still decides what is written."""

    def __init__(self, kernel, exits):
        self.accesses = sorted(summarize(kernel, every_read=True),
                               key=lambda a: (a.task_index, a.position))
        self.own = _own_reads(self.accesses)
        self.branches = _branch_covers(self.accesses, exits)
        self.exits = exits
        self.plans: dict = {}

    def plan(self, env) -> list:
        key = tuple(sorted(env.items()))
        plan = self.plans.get(key)
        if plan is None:
            if len(self.plans) >= _PLANS:
                self.plans.clear()
            plan = self.plans[key] = [(a, box, self.cover(a, box, env), id(a) in self.own)
                                      for a in self.accesses
                                      for box in (access_box(a, env),) if box is not None]
        return plan

    def cover(self, a, box, env):
        """The elements a plain store surely writes: its exact box when it surely runs (every
        loop around it runs; `_loops_run`), or, for the last of the stores of one element in
        the branches of `if`s that always take one of them (`_branch_covers`), their box
        without the guards' narrowing. None otherwise: an atomic update keeps the old value,
        and a store that may not run or whose box is only a hull may leave some of it."""
        if a.kind not in (AccessKind.STORE, AccessKind.RMW) or not _loops_run(a, env):
            return None
        if exact_box(box) and surely_runs(a, self.exits):
            return box
        if id(a) in self.branches:
            full = box_of(a, env)
            return full if exact_box(full) else None
        return None


def _loops_run(a, env) -> bool:
    """Does every loop around `a` surely run at least once? (A store indexed by `i` alone in
    `for k in range(n)` is not made when n is 0, though its box is exact.)"""
    for v in a.loop_vars:
        if v is None or v.bounds is None:
            return False
        begin, end = (b.subst(env) for b in v.bounds)
        if not (begin.is_const() and end.is_const() and end.const > begin.const):
            return False
    return True


def _branch_covers(accesses: list, exits: dict) -> set:
    """ids of the last plain store of each group of stores of one element (same field, task
    and index forms) whose `if` branches always run one of them (`if c: f[i] = a` / `else:
    f[i] = b`), with only `for` loops around and nothing that leaves them early."""
    groups: dict = {}
    for a in accesses:
        if a.kind in (AccessKind.STORE, AccessKind.RMW) and len(a.path) > 0:
            groups.setdefault((id(a.field), a.task_index, a.indices), []).append(a)
    out = set()
    for group in groups.values():
        if len(group) > 1 and surely_runs(_outside_ifs(group[0]), exits) \
                and _branches_cover([a.path for a in group], 0):
            out.add(id(max(group, key=lambda a: a.position)))
    return out


def _outside_ifs(a):
    """`a` as if its `if`s were not there: for `surely_runs`'s loop and early-exit test."""
    return replace(a, path=tuple(e for e in a.path if e[0].op != Op.IF))


def _branches_cover(paths: list, depth: int) -> bool:
    """Does one of these paths (sharing their first `depth` statements) run whenever their
    common block does: one ends there, or they continue into one `for` that does, or into
    both branches of one `if`, each of which does?"""
    if any(len(p) == depth for p in paths):
        return True
    heads: dict = {}
    for p in paths:
        heads.setdefault(id(p[depth][0]), []).append(p)
    for group in heads.values():
        stmt = group[0][depth][0]
        if stmt.op in (Op.FOR, Op.SERIAL) and _branches_cover(group, depth + 1):
            return True
        if stmt.op == Op.IF and all(_branches_cover([p for p in group if p[depth][1] == b],
                                                    depth + 1) for b in (0, 1)):
            return True
    return False


def _own_reads(accesses: list) -> set:
    """ids of the reads (loads, the read of an `rmw`) of an element a plain store wrote earlier
    in the same iteration: same task, same index forms (the same element wherever both run),
    and the store's enclosing statements enclose the read too, so the read never runs without
    it (`if m[i] > 0: tmp[i] = ...; y[i] = tmp[i]`). Such a read sees a value of its segment,
    whatever the store's box and `if`s; a value from an earlier step is never read there."""
    stores: dict = {}
    own = set()
    for a in accesses:
        key = (id(a.field), a.task_index, a.indices)
        if (not a.is_write or a.kind is AccessKind.RMW) and any(
                a.path[:len(w.path)] == w.path for w in stores.get(key, ())):
            own.add(id(a))
        if a.kind in (AccessKind.STORE, AccessKind.RMW):
            stores.setdefault(key, []).append(a)
    return own


def _fix(field, kept, name) -> str:
    state = f"state=[{kept + ', ' if kept else ''}{name}]"
    if isinstance(field, ExternalArray):  # a NumPy array: no field to name in `state`
        return (f"To fix: pass an fs.ndarray instead of the NumPy array '{name}' and add it to "
                f"{state}, or save and restore the array with save=/restore=.")
    return (f"To fix: add it to {state} (or save and restore it with save=/restore=); or, if "
            "each step sets it before it reads it (a scratch), write all of it with plain stores "
            f"at the start of each step (`{name}.fill(0)`): a write under an `if`, at a "
            "data-dependent index or to part of the field is not known to cover what a read "
            "may reach.")


def _line(label, event) -> str:
    kernel, n, a, what, loc = event
    if kernel is None:
        who = f"Python-scope `{what}`"
    else:
        who = f"kernel '{kernel}' (launch {n} in the checkpoint) {describe(a)}"
    return f"  {label:<13}{where(loc)}  {who}:  {source(loc)}"
