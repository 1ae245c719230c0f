"""Element sets of field accesses as boxes: what the Tape's checker (`tape_rules`) compares.

Takes an access's symbolic index forms (`index_expr.Affine`) and a launch's kernel-argument
values; gives one `Comp` per index component, the values that component takes: an arithmetic
progression `lo..hi` by `step` (step 0: one value), `exact` when every one of them is touched
(a data-dependent index gives the whole axis, inexact). `LaunchBoxes` caches a kernel's boxes
per argument tuple, and (`.fast`, a `FastPlan`) gives every launch's boxes at once as template
boxes translated by linear forms of the integer arguments, when the arguments enter the indices
only as such translations (not loop bounds or guards); `merge_boxes` writes the same elements
in fewer boxes; `box_slices` and `box_mask` turn a box into numpy selections. Analysis only.
"""
from __future__ import annotations

import itertools
import math
from typing import NamedTuple

import numpy as np

from fieldsim.checks.access_rules import Access
from fieldsim.checks.index_expr import Affine, Arg, Opaque, Var, guard_limits, surely_empty
from fieldsim.ir.ir import walk
from fieldsim.ir.opdefs import Op

ENV_CACHE = 1 << 14  # argument tuples remembered per kernel
BIG = 1 << 62


class Comp(NamedTuple):
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
        return ":" if lo <= -BIG or hi >= BIG else f"{lo}:{hi + 1}"


def field_shape(field) -> tuple:
    shape = getattr(field, "storage_shape", None)
    return tuple(shape if shape is not None else getattr(field, "shape", ()) or ())


def whole(n, exact: bool) -> Comp:
    return Comp(0, n - 1, 1, exact) if n else Comp(-BIG, BIG, 1, False)


def _comp(f: Affine, env: dict, n) -> Comp:
    r = f.bounds(env)  # None where an atom is unbounded (most opaque ones)
    if r is None:
        return whole(n, False)
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
    shape = field_shape(a.field) + (None,) * len(a.indices)
    return tuple(_comp(f.subst(env), env, n) for f, n in zip(a.indices, shape))


def access_box(a: Access, env: dict) -> tuple | None:
    """One access's box for these arguments, not merged with any other (None: it never runs).
    A sound hull of the elements it may touch; `exact_box` when it touches each of them."""
    if _never(a, env):
        return None
    if getattr(a, "guards", ()):
        return guarded_box(a, env, field_shape(a.field) + (None,) * len(a.indices))
    return box_of(a, env)


def _uses_args(f: Affine) -> bool:
    """Does `f` (or the bounds of a loop it uses) depend on kernel arguments?"""
    for atom in f.terms:
        atom = getattr(atom, "atom", atom)  # Primed
        if isinstance(atom, Arg) or (isinstance(atom, Var) and atom.bounds is not None
                                     and any(_uses_args(b) for b in atom.bounds)):
            return True
        if isinstance(atom, Opaque) and atom.of_args:
            return True
    return False


def guarded_box(a: Access, env: dict, shape: tuple) -> tuple | None:
    """The box of an access under integer `if` guards (`i >= 1`, `i < n - 1`): its index
    ranges narrowed by what the guards guarantee, inexact (other conditions may also decide
    which instances run); None when the guards can never all hold."""
    limits = guard_limits(a.guards, env)
    if limits is None:
        return None
    box = []
    for f, n in zip(a.indices, shape):
        f = f.subst(env)
        r = f.bounds(env, limits)
        step = math.gcd(*f.terms.values()) if f.terms else 0
        box.append(whole(n, False) if r is None else Comp(r[0], r[1], step, False))
    return tuple(box)


class LaunchBoxes:
    """The boxes of one kernel's accesses, one per distinct (field, read/write, indices,
    guards). Components that depend neither on the kernel's arguments nor on guards are
    computed once.

    Per new argument tuple the work is kept small (a time-stepped program launches each kernel
    with a new `t` every step): an access whose argument-dependent components are `R + A(args)`,
    with `R` free of arguments (also in its loops' bounds), has the box of `R` translated by
    `A(args)`. Such accesses are deduplicated and merged once, in groups that share the same
    shifts (a common translation keeps a merge valid), and per launch only the few merged
    template boxes are translated; the rest (guarded accesses, arguments in loop bounds) are
    computed in full, as before."""

    def __init__(self, accesses: list[Access]):
        self.items, seen = [], set()
        for a in accesses:
            key = (id(a.field), a.is_write, a.indices, tuple(getattr(a, "guards", ())))
            if key not in seen:
                seen.add(key)
                shape = field_shape(a.field) + (None,) * len(a.indices)
                if getattr(a, "guards", ()):
                    comps = None  # narrowed per launch: guards may use the arguments
                else:
                    comps = tuple(f if _uses_args(f) else _comp(f, {}, n)
                                  for f, n in zip(a.indices, shape))
                self.items.append((a, comps, shape))
        self._by_env: dict = {}  # a time-stepped program repeats its argument values per Tape
        self.by_values: dict = {}  # the Tape's whole plan per raw argument values (tape_rules)
        self._templates, self._general, self._arg_pos, never = _templates(self.items)
        # (field, kind)s whose boxes come from more than one template group or from a box
        # computed in full: only these can merge further once translated
        sources: dict = {}
        for k, a, _, shifts in self._templates:
            sources.setdefault((id(a.field), a.is_write), set()).add(shifts)
        self._in_full = [k for k in range(len(self.items))
                         if k not in self._general and k not in never]
        for k in self._in_full:
            a = self.items[k][0]
            sources.setdefault((id(a.field), a.is_write), set()).add(("full", k))
        self._remerge = {key for key, srcs in sources.items() if len(srcs) > 1}
        self._moves = [(k, a, base, _moves(shifts)) for k, a, base, shifts in self._templates]
        # every launch as one parametric plan (None: per argument values, `plan`)
        self.fast = None if self._in_full or self._remerge else fast_plan(
            sorted(self._moves, key=_first), range_limits(self._general, self.items))

    def of_launch(self, env: dict, per_access: bool = False) -> list:
        """(access, box) pairs for these argument values. Unless `per_access` (run-time
        validation, which watches each access), accesses of one field and kind whose boxes
        are equal count once: they touch the same elements, and the first names them."""
        key = tuple(sorted(env.items()))
        cached = self._by_env.get(key)
        if cached is None:
            if len(self._by_env) >= ENV_CACHE:
                self._by_env.clear()
            cached = self._by_env[key] = [None, None, None]
        slot = 0 if per_access else 1
        if cached[slot] is None:
            if not self._arg_pos.issubset(env):  # an argument without a value: in full
                cached[slot] = self._full(env, per_access)
            elif per_access:
                cached[slot] = self._per_access(env)
            else:
                cached[slot] = self._unique(env)
        return cached[slot]

    def plan(self, env: dict) -> tuple:
        """`of_launch(env)` split for the Tape's fast path: (writes, reads), each a list of
        (access, box, bucket key), made once per argument values."""
        key = tuple(sorted(env.items())) if env else ()
        cached = self._by_env.get(key)
        if cached is None or cached[2] is None:
            unique = self.of_launch(env)
            cached = self._by_env[key]
            cached[2] = ([(a, box, bucket_key(box)) for a, box in unique if a.is_write],
                         [(a, box, bucket_key(box)) for a, box in unique if not a.is_write])
        return cached[2]

    def _box(self, a, comps, shape, env):
        """The box of one item for `env` (None: its guards never hold, or a loop it is indexed
        by runs no iteration), computed in full."""
        if _never(a, env):
            return None
        if comps is None:
            return guarded_box(a, env, shape)
        return tuple(c if isinstance(c, Comp) else _comp(c.subst(env), env, n)
                     for c, n in zip(comps, shape))

    def _full(self, env: dict, per_access: bool) -> list:
        boxes = []
        for a, comps, shape in self.items:
            box = self._box(a, comps, shape, env)
            if box is not None:  # else: the access never runs
                boxes.append((a, box))
        return boxes if per_access else merge_boxes(_dedup(boxes))

    def _per_access(self, env: dict) -> list:
        out = []
        for k, (a, comps, shape) in enumerate(self.items):
            t = self._general.get(k)
            if t is None:
                box = self._box(a, comps, shape, env)
                if box is not None:
                    out.append((a, box))
            else:
                base, shifts = t
                out.append((a, _shifted(base, shifts, env)))
        return out

    def _unique(self, env: dict) -> list:
        """Translated templates and fully computed boxes in access order, deduplicated and
        merged again (merges across template groups, e.g. `x[t, i]` beside `x[t + 1, i]`)."""
        boxes = [(k, a, _moved(base, moves, env) if moves else base)
                 for k, a, base, moves in self._moves]
        for k in self._in_full:
            a, comps, shape = self.items[k]
            box = self._box(a, comps, shape, env)
            if box is not None:
                boxes.append((k, a, box))
        boxes.sort(key=lambda e: e[0])
        if not self._remerge:
            return _dedup([(a, box) for _, a, box in boxes])
        number = {id(a): k for k, a, _ in boxes}
        keep = [(k, a, box) for k, a, box in boxes if (id(a.field), a.is_write) not in self._remerge]
        more = merge_boxes(_dedup([(a, box) for k, a, box in boxes
                                   if (id(a.field), a.is_write) in self._remerge]))
        keep += [(number[id(a)], a, box) for a, box in more]
        keep.sort(key=lambda e: e[0])
        return _dedup([(a, box) for _, a, box in keep])


def bucket_key(box: tuple):
    """A box's constant first index (a time step `x[t, ...]`), or None: the Tape's read logs
    are bucketed by it."""
    return box[0].lo if box and box[0].lo == box[0].hi else None


def _dedup(boxes: list) -> list:
    seen, unique = set(), []
    for a, box in boxes:
        k = (id(a.field), a.is_write, box)
        if k not in seen:
            seen.add(k)
            unique.append((a, box))
    return unique


def _split(f: Affine, n):
    """`f` as (Comp of its argument-free part R, shift: an Affine of arguments or None), or
    None when the arguments also enter R (through a loop's bounds)."""
    shift = {a: c for a, c in f.terms.items() if isinstance(a, Arg)}
    rest = Affine(f.const, {a: c for a, c in f.terms.items() if not isinstance(a, Arg)})
    if _uses_args(rest):
        return None
    if rest.bounds({}) is None:
        return whole(n, False), None  # the whole axis, whatever the arguments
    return _comp(rest, {}, n), (Affine(0, shift) if shift else None)


def _split_guarded(f: Affine, n, limits: dict):
    """`_split` for an access under guards free of arguments (`guarded_box`'s component,
    inexact, narrowed by the guards' `limits`)."""
    shift = {a: c for a, c in f.terms.items() if isinstance(a, Arg)}
    rest = Affine(f.const, {a: c for a, c in f.terms.items() if not isinstance(a, Arg)})
    if _uses_args(rest):
        return None
    r = rest.bounds({}, limits)
    if r is None:
        return whole(n, False), None  # the whole axis, whatever the arguments
    step = math.gcd(*rest.terms.values()) if rest.terms else 0
    return Comp(r[0], r[1], step, False), (Affine(0, shift) if shift else None)


def _never(a: Access, env: dict) -> bool:
    """Is `a` indexed by a loop that runs no iteration for these arguments?"""
    return any(surely_empty(f.subst(env), env) for f in a.indices)


def _item_parts(a: Access, comps, shape):
    """An item's components as (base Comp, shift or None) pairs; None when the arguments
    enter more than a translation (a loop's bounds, a guard); "never" when its guards can
    never hold together or a loop it is indexed by runs no iteration."""
    if _never(a, {}):
        return "never"
    if comps is not None:
        return [(c, None) if isinstance(c, Comp) else _split(c, n) for c, n in zip(comps, shape)]
    if any(_uses_args(g) for g in a.guards):
        return None  # the guards' narrowing moves with the arguments
    limits = guard_limits(a.guards, {})
    if limits is None:
        return "never"
    return [_split_guarded(f, n, limits) for f, n in zip(a.indices, shape)]


def _templates(items: list):
    """Per item that translates with the arguments: its base box and shifts (`general`, by
    item number), and the merged template boxes (item number of the access naming each, access,
    base box, shifts). Also the argument positions the shifts use, and the items whose guards
    never hold (no box for any arguments)."""
    general, groups, arg_pos, never = {}, {}, set(), set()
    for k, (a, comps, shape) in enumerate(items):
        parts = _item_parts(a, comps, shape)
        if parts == "never":
            never.add(k)
            continue
        if parts is None or any(p is None for p in parts):
            continue
        base, shifts = tuple(p[0] for p in parts), tuple(p[1] for p in parts)
        for s in shifts:
            if s is not None:
                arg_pos.update(atom.pos for atom in s.terms)
        general[k] = (base, shifts)
        groups.setdefault(shifts, []).append((k, a, base))
    templates = []
    for shifts, members in groups.items():
        number = {id(a): k for k, a, _ in members}
        # merged only where they share the component the Tape's read logs bucket by (the
        # first one-value one): `v[t - 1]` and `v[t]` stay two boxes, each in its time step's
        # bucket, so a write of `v[t]` looks at one bucket, not at every read of the Tape
        by_bucket: dict = {}
        for _, a, box in members:
            by_bucket.setdefault(_bucket_component(box), []).append((a, box))
        for part in by_bucket.values():
            for a, box in merge_boxes(_dedup(part)):
                templates.append((number[id(a)], a, box, shifts))
    return templates, general, arg_pos, never


def _bucket_component(box: tuple):
    """(axis, value) of a box's first one-value component (Tmpl.ax, Tmpl.b0), or None."""
    return next(((d, c.lo) for d, c in enumerate(box) if c.lo == c.hi), None)


def _moves(shifts: tuple) -> tuple:
    """The shifts as (component, constant, ((argument position, coefficient), ...))."""
    return tuple((d, s.const, tuple((atom.pos, c) for atom, c in s.terms.items()))
                 for d, s in enumerate(shifts) if s is not None)


def _first(template: tuple) -> int:
    return template[0]


_TIDS = itertools.count(1)  # template ids: the Tape's read logs are keyed by these ints


class Tmpl(NamedTuple):
    """One box of a launch plan for the Tape's fast path (`FastPlan`): `base` translated along
    `dims` by the plan's argument forms numbered `fis`. The read logs bucket a box by its first
    component that is one value (`ax`: its axis, -1: none; `b0`: its value in `base`; `fi0`:
    the form translating it, -1: none), e.g. the time step of `x[t, i]` or of `y[i, t]`.
    `kind` 0: no translation; 1: along `ax` only (the bucket's value then fixes the box); 2:
    otherwise. `singles`: every one-value axis -> (its value in `base`, its form or -1)."""

    fid: int
    tid: int
    kind: int
    ax: int
    b0: int | None
    fi0: int
    fis: tuple
    access: Access
    base: tuple
    dims: tuple
    singles: dict

    def key(self, deltas: tuple):
        """The bucket value (on axis `ax`) of this box translated by `deltas`."""
        if self.b0 is None or self.fi0 < 0:
            return self.b0
        return self.b0 + deltas[self.fi0]

    def value_at(self, axis: int, deltas: tuple):
        """The one value this box (translated by `deltas`) takes on `axis`; None: several."""
        s = self.singles.get(axis)
        if s is None:
            return None
        return s[0] if s[1] < 0 else s[0] + deltas[s[1]]

    def box(self, deltas) -> tuple:
        """The box translated by the form values `deltas` (per form) of one launch."""
        return translate(self.base, self.dims, tuple(deltas[i] for i in self.fis))


def translate(base: tuple, dims: tuple, shifts: tuple) -> tuple:
    if not dims:
        return base
    box = list(base)
    for d, s in zip(dims, shifts):
        if s:
            lo, hi, step, exact = box[d]
            box[d] = Comp(lo + s, hi + s, step, exact)
    return tuple(box)


class FastPlan(NamedTuple):
    """Every launch of a kernel (or one launch, `positions` empty) for the Tape's fast path:
    its deduplicated write and read boxes (`Tmpl`s, in access order; `moving_reads`: those
    that translate) as translations by linear forms of the integer arguments (`forms`:
    (constant, ((position, coefficient), ...))) reading `positions`. Made once: a new argument
    value needs no new plan, so nothing here grows with the number of launches."""

    writes: tuple
    reads: tuple
    moving_reads: tuple  # the reads of kind 1 and 2
    forms: tuple
    positions: tuple
    single: int  # the forms are one argument itself (`x[t, i]`): its position; else -1
    moving_keys: tuple  # per moving read, (tid, kind, b0, fi0, fis): what a launch logs
    # per form: (form, lowest, highest value) that keeps every exact index of an access that
    # surely runs inside its field; `outside`: such (access, axis, Comp) out of range whatever
    # the arguments (`range_limits`)
    limits: tuple = ()
    outside: tuple = ()
    range_items: tuple = ()  # (form, lowest, highest, access, axis, Comp): names a violation

    def deltas(self, values) -> tuple | None:
        """The forms' values for a launch's argument values (a sequence by position); None
        when a position the forms use holds no Python int (the plan per values is used)."""
        if not self.forms:
            return ()
        try:  # (the caller skips this call when there are no forms)
            if self.single >= 0:
                v = values[self.single]
                return (v,) if type(v) is int else None
            for p in self.positions:
                if type(values[p]) is not int:
                    return None
        except (IndexError, KeyError, TypeError):
            return None
        return tuple(const + sum(c * values[p] for p, c in terms) if terms else const
                     for const, terms in self.forms)


def fast_plan(moves: list, ranges: tuple = ((), ())) -> FastPlan:
    """A `FastPlan` from (item number, access, base box, moves) in access order (`_moves`);
    `ranges`: `range_limits` of the kernel's items, keyed by their moves."""
    forms: dict = {}
    writes, reads = [], []
    for _, a, base, mv in moves:
        dims = tuple(d for d, _, _ in mv)
        fis = tuple(forms.setdefault((const, terms), len(forms)) for _, const, terms in mv)
        form_of = dict(zip(dims, fis))
        singles = {d: (c.lo, form_of.get(d, -1)) for d, c in enumerate(base) if c.lo == c.hi}
        ax = min(singles, default=-1)
        b0, fi0 = singles.get(ax, (None, -1))
        kind = 0 if not dims else 1 if dims == (ax,) else 2
        t = Tmpl(id(a.field), next(_TIDS), kind, ax, b0, fi0, fis, a, base, dims, singles)
        (writes if a.is_write else reads).append(t)
    positions = tuple(sorted({p for _, terms in forms for p, _ in terms}))
    (const, terms), = forms if len(forms) == 1 else [(None, None)]
    single = terms[0][0] if const == 0 and terms and len(terms) == 1 and terms[0][1] == 1 else -1
    moving = tuple(t for t in reads if t.kind)
    by_move, outside = ranges
    limits: dict = {}
    items = []
    for key, lo, hi, *named in by_move:
        fi = forms.get(key)
        if fi is not None:
            old = limits.get(fi, (-BIG, BIG))
            limits[fi] = (max(old[0], lo), min(old[1], hi))
            items.append((fi, lo, hi, *named))
    return FastPlan(tuple(writes), tuple(reads), moving, tuple(forms), positions, single,
                    tuple((t.tid, t.kind, t.b0, t.fi0, t.fis) for t in moving),
                    tuple((fi, lo, hi) for fi, (lo, hi) in limits.items()), outside,
                    tuple(items))


def surely_runs(a: Access, exits: dict | None = None) -> bool:
    """Does access `a` run on every iteration of the loops around it: only `for` loops (and
    the serial task of top-level statements) enclose it, and no `break`, `continue` or
    `return` inside the outermost one can skip it? `exits`: id(outermost loop) -> whether it
    holds one, shared by a kernel's accesses (each walk is the loop's whole body)."""
    if any(s.op not in (Op.FOR, Op.SERIAL) for s, _ in a.path):
        return False
    if not a.path:
        return True
    outer = a.path[0][0]
    found = exits.get(id(outer)) if exits is not None else None
    if found is None:
        found = any(s.op in (Op.BREAK, Op.CONTINUE, Op.RETURN) for s in walk(outer.body))
        if exits is not None:
            exits[id(outer)] = found
    return not found


def range_limits(general: dict, items: list) -> tuple:
    """What keeps the exact indices of the accesses that surely run (`surely_runs`) inside
    their fields: ((move key, lowest, highest translation), ...) for the components that the
    arguments translate (with the access, axis and base Comp), and the (access, axis,
    Comp)s out of range whatever the arguments.
    An out-of-range index would read or write outside the field's memory (Taichi does not
    check it either without `debug=True`)."""
    by_move, outside = [], []
    exits: dict = {}
    for k, (base, shifts) in general.items():
        a, _, shape = items[k]
        if not surely_runs(a, exits):
            continue
        for d, (c, s, n) in enumerate(zip(base, shifts, shape)):
            if not c.exact or n is None or n <= 0:
                continue
            n = int(n)
            if s is None:
                if c.lo < 0 or c.hi > n - 1:
                    outside.append((a, d, c))
            else:
                (_, const, terms), = _moves((s,))
                by_move.append(((const, terms), -c.lo, n - 1 - c.hi, a, d, c))
    return tuple(by_move), tuple(outside)


def constant_plan(writes: list, reads: list) -> FastPlan:
    """A `FastPlan` of one launch's boxes ((access, box, key) lists, `LaunchBoxes.plan`)."""
    moves = [(k, a, box, ()) for k, (a, box, _) in enumerate(writes + reads)]
    return fast_plan(moves)


def _moved(base: tuple, moves: tuple, env: dict) -> tuple:
    box = list(base)
    for d, const, terms in moves:
        for pos, c in terms:
            const += c * env[pos]
        if const:
            lo, hi, step, exact = box[d]
            box[d] = Comp(lo + const, hi + const, step, exact)
    return tuple(box)


def _shifted(base: tuple, shifts: tuple, env: dict) -> tuple:
    out = []
    for c, s in zip(base, shifts):
        if s is not None:
            d = s.const
            for atom, k in s.terms.items():
                d += k * env[atom.pos]
            if d:
                c = Comp(c.lo + d, c.hi + d, c.step, c.exact)
        out.append(c)
    return tuple(out)


def merge_boxes(entries: list) -> list:
    """The same elements in fewer boxes: exact boxes of one field and kind (read or write) that
    differ in one component, where their values continue one arithmetic progression, become
    one box (a statically unrolled loop reading `w[i, 0]`, `w[i, 1]`, ... `w[i, 15]` gives one
    `w[i, 0:16]`). The first access of a merged run names it."""
    ndim = max((len(box) for _, box in entries), default=0)
    for d in range(ndim):
        groups: dict = {}
        order = []  # ("keep", entry) or ("group", key), in first-seen order
        for a, box in entries:
            if len(box) <= d or not all(c.exact for c in box):
                order.append(("keep", (a, box)))
                continue
            key = (id(a.field), a.is_write, box[:d] + box[d + 1:])
            if key not in groups:
                groups[key] = []
                order.append(("group", key))
            groups[key].append((a, box))
        entries = []
        for kind, item in order:
            entries.extend(_merge_runs(groups[item], d) if kind == "group" else [item])
    return entries


def _merge_runs(members: list, d: int) -> list:
    """Members share every component but `d`: merge consecutive progressions along `d`."""
    if len(members) == 1:
        return members
    members = sorted(members, key=lambda e: e[1][d].lo)
    out = []
    a, box = members[0]
    cur = box[d]
    for b, other in members[1:]:
        c = other[d]
        step = cur.step or (c.lo - cur.hi)
        if step > 0 and c.lo == cur.hi + step and (c.step in (0, step)) and c.lo <= c.hi:
            cur = Comp(cur.lo, c.hi, step, True)
        else:
            out.append((a, box[:d] + (cur,) + box[d + 1:]))
            a, box, cur = b, other, c
    out.append((a, box[:d] + (cur,) + box[d + 1:]))
    return out


def _slice(c: Comp, n: int) -> slice:
    if c.step == 0 or c.lo == c.hi:
        return slice(c.lo, c.lo + 1) if 0 <= c.lo < n else slice(0, 0)
    lo, hi = c.lo, min(c.hi, n - 1)
    if lo < 0:
        lo += -(lo // c.step) * c.step
    return slice(lo, hi + 1, c.step) if lo <= hi else slice(0, 0)


def box_slices(box: tuple, shape: tuple) -> tuple:
    """numpy slices of the elements a box's hull covers (a component's whole progression)."""
    return tuple(_slice(c, n) for c, n in zip(box, shape))


def box_mask(box: tuple, shape: tuple) -> np.ndarray:
    mask = np.zeros(shape, dtype=bool)
    mask[box_slices(box, shape)] = True
    return mask


def exact_box(box) -> bool:
    return all(c.exact for c in box)
