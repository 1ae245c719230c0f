"""Element sets of field accesses as boxes: what the Tape's checker (`tape_rules`) compares.

Takes an access's symbolic index forms (`index_expr.Affine`) and a launch's kernel-argument
values; gives one `Comp` per index component, the values that component takes: an arithmetic
progression `lo..hi` by `step` (step 0: one value), `exact` when every one of them is touched
(a data-dependent index gives the whole axis, inexact). `LaunchBoxes` caches a kernel's boxes
per argument tuple; `merge_boxes` writes the same elements in fewer boxes; `box_slices` and
`box_mask` turn a box into numpy selections. Analysis only.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from fieldsim.checks.access_rules import Access
from fieldsim.checks.index_expr import Affine, Arg, Var, guard_limits

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
    r = None if f.has_opaque() else f.bounds(env)
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


def _uses_args(f: Affine) -> bool:
    """Does `f` (or the bounds of a loop it uses) depend on kernel arguments?"""
    for atom in f.terms:
        atom = getattr(atom, "atom", atom)  # Primed
        if isinstance(atom, Arg) or (isinstance(atom, Var) and atom.bounds is not None
                                     and any(_uses_args(b) for b in atom.bounds)):
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
        r = None if f.has_opaque() else f.bounds(env, limits)
        step = math.gcd(*f.terms.values()) if f.terms else 0
        box.append(whole(n, False) if r is None else Comp(r[0], r[1], step, False))
    return tuple(box)


class LaunchBoxes:
    """The boxes of one kernel's accesses, one per distinct (field, read/write, indices,
    guards). Components that depend neither on the kernel's arguments nor on guards are
    computed once."""

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

    def of_launch(self, env: dict, per_access: bool = False) -> list:
        """(access, box) pairs for these argument values. Unless `per_access` (run-time
        validation, which watches each access), accesses of one field and kind whose boxes
        are equal count once: they touch the same elements, and the first names them."""
        key = tuple(sorted(env.items()))
        cached = self._by_env.get(key)
        if cached is None:
            boxes = []
            for a, comps, shape in self.items:
                if comps is None:
                    box = guarded_box(a, env, shape)
                    if box is not None:  # else: the access never runs
                        boxes.append((a, box))
                    continue
                boxes.append((a, tuple(c if isinstance(c, Comp) else _comp(c.subst(env), env, n)
                                       for c, n in zip(comps, shape))))
            seen, unique = set(), []
            for a, box in boxes:
                k = (id(a.field), a.is_write, box)
                if k not in seen:
                    seen.add(k)
                    unique.append((a, box))
            unique = merge_boxes(unique)
            if len(self._by_env) >= ENV_CACHE:
                self._by_env.clear()
            cached = self._by_env[key] = (boxes, unique)
        return cached[0] if per_access else cached[1]


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
