"""Index reasoning for the access-rule checker: symbolic index forms, and whether two accesses can
touch the same field element.

Contract: analysis only. `index_forms.Forms` reads index expressions and guards (never mutates
IR); this module works on forms alone. Every answer is sound: NEVER only when the two index
tuples provably differ.

Forms. An index expression becomes an `Affine`: an int constant plus int multiples of atoms:

* `Arg(pos)`: a scalar kernel argument. On the Tape its value is known and substituted (`env`).
* `Var(loop, stride, size)`: the digit `(i // stride) % size` of a FOR's index `i` (`size` None:
  no modulo). `Var(loop)` is the index itself. The frontend linearises `ndrange` loops into such
  digits; the tuple of all digits of `i` determines `i` (that is what makes `x[i, j]` injective).
* `Opaque(stmt)`: anything else, e.g. a loaded value, a random number, a local stored twice.
  It may carry an interval its value always lies in (`x % c` of any integer x: 0..c-1; for
  `x % m`, m of kernel arguments, once `env` gives m), and a loop index or digit that it is
  a one-to-one function of (`(i + k) % n` over at most n values of i, or a digit of size n).

Each atom has a `scope`: the loops (outermost first) in whose iterations it takes a new value.
An access's loops are the FOR/LOOP statements around it; a parallel task's own FOR is the first.

Decisions. For an earlier access A and a later access B, `overlap(A, B, same_thread, env)`
considers each way an instance of B can follow an instance of A:

* different tasks: no shared per-thread atom;
* same task, other thread (parallel tasks only): B's per-thread atoms renamed, thread index !=;
* same thread, same iteration of every shared loop (B after A in program order, not in the
  other branch of an `if`);
* same thread, a later iteration of a shared loop L: atoms scoped in L renamed, index of L later.

Per component, the difference of the two forms is zero, provably nonzero (its interval excludes 0,
or the gcd of its coefficients does not divide its constant), or `c*(v - v')` + k for a digit v
of the renamed loop (then v' = v + k/c). If the digits pinned equal determine the iteration, the
renamed instance is the same one, a contradiction: NEVER. Anything left over is MAYBE (a possible
collision, decided from indices alone) or UNDECIDED (opaque atoms are involved).

Intervals. An atom's interval comes from its loop's bounds, narrowed by guards: each access
carries the `if` conditions around it (`Forms.guards`: integer comparisons, through `and`, `or`,
`not`, as forms g >= 0), and a guard on a single loop-index atom bounds it where the access runs
(`guard_limits`; b's guards are renamed with b's atoms). In a later iteration i' > i of an
ascending loop, i' >= min(i) + 1; in another thread i' != i cuts a pinned value off an end of
the other's interval. The equations a collision needs then narrow the intervals further (interval
propagation); guards or equations that cannot hold together mean the pair never meets.
A guard `i != c` is not used (it makes a hole, not an interval).
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

from fieldsim.ir.ir import Op, Stmt


class Answer(enum.IntEnum):
    """Can two accesses touch the same element? Ordered by severity, so `max` combines cases."""

    NEVER = 0
    UNDECIDED = 1  # data-dependent indices: cannot be proven either way
    MAYBE = 2  # some values of the indices make them equal
    SAME = 3  # the very same element, every time


# ------------------------------------------------------------------------------------ atoms
@dataclass(frozen=True)
class Arg:
    pos: int

    @property
    def scope(self) -> tuple:
        return ()

    def __str__(self) -> str:
        return f"arg{self.pos}"


@dataclass(frozen=True)
class Var:
    loop: Stmt
    stride: int = 1
    size: int | None = None
    scope: tuple = field(default=(), compare=False)
    bounds: tuple | None = field(default=None, compare=False)  # (begin, end) Affine forms

    @property
    def full(self) -> bool:
        return self.stride == 1 and self.size is None

    def __str__(self) -> str:
        name = f"i{id(self.loop) % 997}"
        if self.stride != 1:
            name = f"({name}//{self.stride})"
        return f"({name}%{self.size})" if self.size is not None else name


@dataclass(frozen=True)
class Opaque:
    stmt: Stmt
    scope: tuple = field(default=(), compare=False)
    bounds: tuple | None = field(default=None, compare=False)  # inclusive (lo, hi) ints
    one_to_one: Any = field(default=None, compare=False)  # a Var: equal values iff equal Vars
    modulus: Any = field(default=None, compare=False)  # `x % m`, m of kernel arguments (Affine)
    # `a * b`, both of kernel arguments: (a, b, the machine type's range), a constant once a
    # launch gives them (PlasticineLab's `range(s * n_substeps, (s + 1) * n_substeps)`)
    product: Any = field(default=None, compare=False)

    @property
    def of_args(self) -> bool:
        """Is the value fixed by the kernel arguments alone (known per launch)?"""
        return self.modulus is not None or self.product is not None

    def __str__(self) -> str:
        return f"?{self.stmt.op.name.lower()}{id(self.stmt) % 997}"


@dataclass(frozen=True)
class Primed:
    """The same atom in another instance (another thread or a later iteration)."""

    atom: Any

    @property
    def scope(self) -> tuple:
        return self.atom.scope

    def __str__(self) -> str:
        return f"{self.atom}'"


def _base(atom):
    return atom.atom if isinstance(atom, Primed) else atom


# ----------------------------------------------------------------------------------- Affine
class Affine:
    """`const + sum(coeff * atom)`, immutable; zero coefficients are dropped."""

    __slots__ = ("const", "terms")

    def __init__(self, const: int = 0, terms: dict | None = None):
        self.const = int(const)
        self.terms = {a: c for a, c in (terms or {}).items() if c}

    @staticmethod
    def of(atom) -> Affine:
        return Affine(0, {atom: 1})

    def __add__(self, other: Affine) -> Affine:
        terms = dict(self.terms)
        for a, c in other.terms.items():
            terms[a] = terms.get(a, 0) + c
        return Affine(self.const + other.const, terms)

    def scale(self, k: int) -> Affine:
        return Affine(self.const * k, {a: c * k for a, c in self.terms.items()})

    def __sub__(self, other: Affine) -> Affine:
        return self + other.scale(-1)

    def __eq__(self, other) -> bool:
        return isinstance(other, Affine) and (self.const, self.terms) == (other.const, other.terms)

    def __hash__(self) -> int:
        return hash((self.const, frozenset(self.terms.items())))

    def is_const(self) -> bool:
        return not self.terms

    def has_opaque(self) -> bool:
        return any(isinstance(_base(a), Opaque) for a in self.terms)

    def map(self, fn) -> Affine:
        """Replace each atom `a` by the Affine `fn(a)`."""
        const, terms = self.const, {}
        for a, c in self.terms.items():
            f = fn(a)
            const += f.const * c
            for b, d in f.terms.items():
                terms[b] = terms.get(b, 0) + d * c
        return Affine(const, terms)

    def subst(self, env: dict | None) -> Affine:
        """Substitute known kernel-argument values (`env`: position -> int)."""
        if not env or not any(isinstance(a, Arg) or _product(a) for a in self.terms):
            return self
        return self.map(lambda a: _subst_atom(a, env))

    def bounds(self, env: dict | None = None, limits: dict | None = None) -> tuple[int, int] | None:
        """Inclusive interval of values, or None when some atom is unbounded."""
        lo = hi = self.const
        for a, c in self.terms.items():
            r = atom_range(a, env, limits)
            if r is None:
                return None
            lo, hi = lo + min(c * r[0], c * r[1]), hi + max(c * r[0], c * r[1])
        return lo, hi

    def __str__(self) -> str:
        parts = [f"{c}*{a}" if c != 1 else str(a) for a, c in self.terms.items()]
        if self.const or not parts:
            parts.append(str(self.const))
        return " + ".join(parts)

    __repr__ = __str__


class Guard(Affine):
    """A guard form g >= 0 read from comparing machine integers (`operands`: their forms, each
    with its type's inclusive range). It says something only where they held their exact
    values: `if a + k <= k:` at k = 2**31 - 1 wraps for every a >= 1 and holds there too."""

    __slots__ = ("operands",)

    def __init__(self, g: Affine, operands: tuple):
        super().__init__(g.const, g.terms)
        self.operands = operands

    def map(self, fn) -> Guard:
        return Guard(Affine.map(self, fn), tuple((f.map(fn), r) for f, r in self.operands))

    def subst(self, env: dict | None) -> Guard:
        if not env:
            return self
        return Guard(Affine.subst(self, env), tuple((f.subst(env), r) for f, r in self.operands))

    def exact(self, env: dict | None) -> bool:
        """No operand can leave its type's range. One whose bounds are unknown (a kernel
        argument, a loop over `range(n)` before a launch gives n) is trusted only as a bare
        value: a constant, an argument or one index atom."""
        for f, span in self.operands:
            r = f.bounds(env)
            if r is None:
                if f.const and f.terms or any(c != 1 for c in f.terms.values()) or len(f.terms) > 1:
                    return False
            elif not (span[0] <= r[0] and r[1] <= span[1]):
                return False
        return True


def surely_empty(f: Affine, env: dict | None = None) -> bool:
    """Does `f` use the index of a loop that runs no iteration (`range(0, i)` with a static
    `i == 0`, or `range(t)` at `t = 0`): its smallest begin at or past its largest end? An
    access indexed by it never runs (its inverted interval must not read as a range)."""
    for atom in f.terms:
        atom = _base(atom)
        if isinstance(atom, Var) and atom.bounds is not None:
            begin, end = (b.bounds(env) for b in atom.bounds)
            if begin is not None and end is not None and begin[0] >= end[1]:
                return True
    return False


def _product(atom) -> bool:
    return isinstance(atom, Opaque) and atom.product is not None


def _subst_atom(atom, env: dict) -> Affine:
    if isinstance(atom, Arg) and atom.pos in env:
        return Affine(env[atom.pos])
    if _product(atom):
        r = _product_range(atom.product, env)
        if r is not None and r[0] == r[1]:
            return Affine(r[0])
    return Affine.of(atom)


def _product_range(product: tuple, env: dict | None) -> tuple[int, int] | None:
    """Interval of `a * b` (a, b of kernel arguments), None while unknown or where the
    machine product may wrap."""
    a, b, machine = product
    ra, rb = a.bounds(env), b.bounds(env)
    if ra is None or rb is None:
        return None
    corners = [x * y for x in ra for y in rb]
    lo, hi = min(corners), max(corners)
    return (lo, hi) if machine[0] <= lo and hi <= machine[1] else None


def atom_range(atom, env: dict | None, limits: dict | None = None) -> tuple[int, int] | None:
    """Inclusive value interval of an atom, when known (`limits`: narrower intervals that
    guards give, see `guard_limits`)."""
    if limits and atom in limits:
        return limits[atom]
    atom = _base(atom)
    if isinstance(atom, Arg):
        return (env[atom.pos],) * 2 if env and atom.pos in env else None
    if isinstance(atom, Opaque):
        if atom.product is not None:
            return _product_range(atom.product, env)
        return atom.bounds if atom.modulus is None else _modulo_range(atom.modulus, env)
    if not isinstance(atom, Var) or atom.bounds is None:
        return None
    if atom.size is not None:
        return 0, atom.size - 1
    begin, end = (b.bounds(env) for b in atom.bounds)
    if begin is None or end is None:
        return None
    return begin[0] // atom.stride, (end[1] - 1) // atom.stride


def _modulo_range(m, env: dict | None) -> tuple[int, int] | None:
    """`x % m` for a divisor of kernel arguments, known once a launch gives their values:
    0..m-1, or m+1..0 for a negative m (Python's modulo, as Taichi's)."""
    m = m.subst(env)
    if not m.is_const() or m.const == 0:
        return None
    return (0, m.const - 1) if m.const > 0 else (m.const + 1, 0)


# ------------------------------------------------------------------------------- guards
_BIG = 1 << 62


def guard_limits(guards, env: dict | None) -> dict | None:
    """Intervals of the index atoms that `guards` (forms g >= 0, already renamed where they
    belong to another instance) bound by themselves, narrowed from the atoms' own ranges;
    None when the guards cannot all hold (the access never runs)."""
    limits: dict = {}
    for g in guards:
        g = g.subst(env)
        if isinstance(g, Guard) and not g.exact(env):
            continue  # a wrapped operand: the comparison says nothing about the atoms
        if g.is_const():
            if g.const < 0:
                return None
            continue
        if len(g.terms) != 1:
            continue
        (atom, c), = g.terms.items()
        if not isinstance(_base(atom), Var):
            continue
        lo, hi = limits.get(atom) or atom_range(atom, env) or (-_BIG, _BIG)
        if c > 0:
            lo = max(lo, -(g.const // c))  # c*v + k >= 0  ->  v >= ceil(-k / c)
        else:
            hi = min(hi, g.const // -c)
        if lo > hi:
            return None
        limits[atom] = (lo, hi)
    return limits


# -------------------------------------------------------------------------------- decisions
class Meet(NamedTuple):
    """The worst way two accesses can meet: the answer, how ('same', 'iteration', 'thread',
    'task'), and the loop involved (the renamed loop) or None."""

    answer: Answer
    how: str
    loop: Stmt | None


NO_MEET = Meet(Answer.NEVER, "", None)


def same_element_possible(a, b, same_thread: bool, env: dict | None = None) -> Answer:
    """Can an instance of access `b` after one of `a` touch `a`'s element?

    `a`, `b` have `.indices`, `.task_index`, `.position`, `.path`, `.loops`, `.thread_mode`.
    `same_thread`: the two instances run in the same thread (else in two threads of one
    parallel task). Accesses in different tasks are compared regardless of `same_thread`.
    """
    return overlap(a, b, same_thread, env).answer


def overlap(a, b, same_thread: bool, env: dict | None = None) -> Meet:
    if a.task_index != b.task_index:
        return Meet(_judge(a, b, None, None, env), "task", None)
    if not same_thread:
        if a.thread_mode != "parallel":
            return NO_MEET
        top = a.loops[0]
        return Meet(_judge(a, b, top, "ne", env), "thread", top)
    meets = []
    if b.position > a.position and not exclusive(a.path, b.path):
        meets.append(Meet(_judge(a, b, None, None, env), "same", None))
    for loop in _shared_loops(a, b):
        rel = "gt" if loop.op == Op.FOR else None
        meets.append(Meet(_judge(a, b, loop, rel, env), "iteration", loop))
    return max(meets, key=lambda m: m.answer, default=NO_MEET)


def _judge(a, b, loop: Stmt | None, rel: str | None, env) -> Answer:
    """`_decide` for b's instance renamed in `loop` (None: the same instance), with the
    limits both accesses' guards put on the atoms."""
    rename = _renamer(loop)
    guards = tuple(getattr(a, "guards", ())) + tuple(g.map(rename) for g in getattr(b, "guards", ()))
    limits = guard_limits(guards, env) if guards else {}
    var = _var(a, loop) if loop is not None else None
    relate = _relation(rel, var, env)
    if limits is not None:
        limits = relate(limits)
    if limits is None:
        return Answer.NEVER
    diffs = [p for d in _diffs(a, b, loop, env) for p in _bounded_carry_parts(d, env, limits)]
    diffs = [_one_to_one(d, loop, var) for d in diffs]
    if guards:  # the guards bound some atoms: let the equations a collision needs narrow them
        limits = _propagate(diffs + _combinations(diffs, loop), limits, env, relate)
        if limits is None:
            return Answer.NEVER
    return _decide(diffs, loop, rel, env, var, limits)


def _bounded_carry_parts(d: Affine, env, limits: dict) -> list[Affine]:
    """`d == 0` as simpler equations: `c*(v - v') + r == 0` where every value of `r` lies
    strictly between -|c| and |c| holds only when v == v' and r == 0 (the digits of a mixed
    radix: `x[cell * 16 + k]` with k in [0, 16), a blocked struct-for's index; k may be
    another loop's index or any bounded atom. `_radix_parts` below solves the sums of one
    loop's digits that a constant offsets)."""
    for atom, c in sorted(d.terms.items(), key=lambda t: -abs(t[1])):
        if isinstance(atom, Primed) or d.terms.get(Primed(atom)) != -c:
            continue
        rest = Affine(d.const, {a: k for a, k in d.terms.items() if _base(a) != atom})
        if rest.is_const():
            break  # c*(v - v') + k: `_digit_step`'s case
        r = rest.bounds(env, limits)
        if r is not None and -abs(c) < r[0] and r[1] < abs(c):
            return [Affine(0, {atom: 1, Primed(atom): -1}), *_bounded_carry_parts(rest, env, limits)]
    return [d]


def _one_to_one(d: Affine, loop: Stmt | None, var: Var | None) -> Affine:
    """`c*(o - o')` of an atom equal in two iterations of `loop` only where the loop's index
    (or one of its digits) is: `c*(v - v')` (a rotated store `y[(i + 1) % n]` in two
    threads; `z[i, (j + 1) % n]` over an ndrange's digit j of size n)."""
    if var is None or d.const or len(d.terms) != 2:
        return d
    (x, cx), (y, cy) = d.terms.items()
    if isinstance(x, Primed):
        (x, cx), (y, cy) = (y, cy), (x, cx)
    if not (isinstance(x, Opaque) and y == Primed(x) and cy == -cx):
        return d
    v = x.one_to_one
    if v is None or v.loop is not loop:
        return d
    return Affine(0, {v: cx, Primed(v): -cx})


def _relation(rel: str | None, var: Var | None, env):
    """limits -> limits narrowed by how the renamed loop index relates to the first (or None
    when that cannot hold): `_later` for 'gt', `_other` for 'ne', else unchanged."""
    if rel not in ("gt", "ne") or var is None or not var.full:
        return lambda limits: limits
    step = _later if rel == "gt" else _other
    return lambda limits: step(limits, var, env)


def _propagate(eqs: list[Affine], limits: dict, env, relate, rounds: int = 3) -> dict | None:
    """Narrow the index atoms' intervals by the equations `d == 0` that a collision needs (a
    few rounds of interval propagation, re-applying the loop relation); None if one empties."""
    limits = dict(limits)
    for _ in range(rounds):
        before = dict(limits)
        for d in eqs:
            for atom, c in d.terms.items():
                if not isinstance(_base(atom), Var):
                    continue
                rest = d - Affine(0, {atom: c})
                r = rest.bounds(env, limits)
                if r is None:
                    continue
                lo, hi = atom_range(atom, env, limits) or (-_BIG, _BIG)
                ends = (Fraction(-r[0], c), Fraction(-r[1], c))  # c * atom == -rest
                lo, hi = max(lo, math.ceil(min(ends))), min(hi, math.floor(max(ends)))
                if lo > hi:
                    return None
                limits[atom] = (lo, hi)
        limits = relate(limits)
        if limits is None or limits == before:
            return limits
    return limits


def _later(limits: dict, var: Var, env) -> dict | None:
    """A later iteration i' > i of an ascending loop: i' >= min(i) + 1 and i <= max(i') - 1."""
    lo, hi = atom_range(var, env, limits) or (-_BIG, _BIG)
    lo2, hi2 = atom_range(Primed(var), env, limits) or (-_BIG, _BIG)
    lo2, hi = max(lo2, lo + 1), min(hi, hi2 - 1)
    if lo > hi or lo2 > hi2:
        return None
    return {**limits, var: (lo, hi), Primed(var): (lo2, hi2)}


def _other(limits: dict, var: Var, env) -> dict | None:
    """Another thread i' != i: where one of them is pinned to an end of the other's range,
    that end is cut off."""
    r = atom_range(var, env, limits) or (-_BIG, _BIG)
    r2 = atom_range(Primed(var), env, limits) or (-_BIG, _BIG)
    for _ in range(2):  # cutting one side may pin the other
        r2 = _cut(r2, r)
        r = _cut(r, r2)
    if r is None or r2 is None:
        return None
    return {**limits, var: r, Primed(var): r2}


def _cut(r: tuple | None, pinned: tuple | None) -> tuple | None:
    """Interval `r` without the value of a one-value interval `pinned`, if that is an end."""
    if r is None or pinned is None or pinned[0] != pinned[1]:
        return r
    lo, hi = r[0] + (r[0] == pinned[0]), r[1] - (r[1] == pinned[0])
    return (lo, hi) if lo <= hi else None


def _var(a, loop: Stmt) -> Var | None:
    """The index atom of one of `a`'s enclosing loops (None for a `while` loop)."""
    loop_vars = getattr(a, "loop_vars", ())
    for stmt, var in zip(a.loops, loop_vars):
        if stmt is loop:
            return var
    return None


def _shared_loops(a, b) -> list:
    shared = []
    for la, lb in zip(a.loops, b.loops):
        if la is not lb:
            break
        shared.append(la)
    return shared[1:] if a.thread_mode == "parallel" else shared


def exclusive(pa: tuple, pb: tuple) -> bool:
    """True when the two paths part in different branches of one `if`."""
    for (sa, ia), (sb, ib) in zip(pa, pb):
        if sa is not sb:
            return False
        if ia != ib:
            return sa.op == Op.IF
    return False


def _renamer(loop: Stmt | None):
    """Atom -> Affine: atoms scoped in `loop` become those of another instance (Primed)."""
    def rename(atom):
        return Affine.of(Primed(atom) if loop is not None and loop in atom.scope else atom)
    return rename


def _diffs(a, b, loop: Stmt | None, env: dict | None) -> list[Affine]:
    """Component-wise `a - b`, with b's atoms scoped in `loop` renamed (another instance).
    (`fa - fb.map(_renamer(loop))`, built in one pass: the checker's hottest loop.)"""
    out = []
    for fa, fb in zip(a.indices, b.indices):
        fa, fb = fa.subst(env), fb.subst(env)
        terms = dict(fa.terms)
        for atom, c in fb.terms.items():
            if loop is not None and loop in atom.scope:
                atom = Primed(atom)
            terms[atom] = terms.get(atom, 0) - c
        out.append(Affine(fa.const - fb.const, terms))
    return out


def _decide(diffs: list[Affine], loop: Stmt | None, rel: str | None, env,
            var: Var | None = None, limits: dict | None = None) -> Answer:
    """Can every difference be zero, given that `loop`'s renamed iteration is related by `rel`
    ('ne': another thread, 'gt': a later iteration, None: any other iteration)? `var` is the
    loop's index atom, for its bounds; `limits` the atoms' intervals under the guards."""
    steps, unknown = {}, False
    equations = [part for eq in diffs + _combinations(diffs, loop)
                 for part in _radix_parts(eq, loop, env, limits)]
    for d in equations:
        if d.is_const() and d.const == 0:
            continue
        if _nonzero(d, env, limits):
            return Answer.NEVER
        match = _digit_step(d, loop)
        if match is not None:
            digit, step = match
            if step is None or steps.setdefault(digit, step) != step:
                return Answer.NEVER
            continue
        unknown = unknown or d.has_opaque()
    steps = {**_guard_pinned(loop, limits), **steps}
    if loop is not None and not _other_instance_possible(steps, rel, env, var, limits):
        return Answer.NEVER
    if all(d.is_const() for d in diffs):
        return Answer.SAME
    return Answer.UNDECIDED if unknown else Answer.MAYBE


def _combinations(diffs: list[Affine], loop: Stmt | None) -> list[Affine]:
    """More equations the differences imply: Gaussian elimination over the rationals, removing
    other atoms before the digits of `loop`, so that `i + k = i' + k'` and `k = k'` give `i = i'`
    (and `i + 3 = j`, `i + 1 = j + 1` give `0 = 2`)."""
    rows = [{**d.terms, None: Fraction(d.const)} for d in diffs if not d.is_const()]
    if len(rows) < 2:
        return []
    atoms = list(dict.fromkeys(a for r in rows for a in r if a is not None))
    atoms.sort(key=lambda a: isinstance(_base(a), Var) and _base(a).loop is loop)
    used: list[dict] = []
    for atom in atoms:
        pivot = next((r for r in rows if r.get(atom) and not any(r is u for u in used)), None)
        if pivot is None:
            continue
        used.append(pivot)
        for r in rows:
            if r is not pivot and r.get(atom):
                k = Fraction(r[atom]) / pivot[atom]
                for a, c in pivot.items():
                    r[a] = r.get(a, 0) - k * c
    return [_integral(r) for r in rows]


def _integral(row: dict) -> Affine:
    scale = math.lcm(*(Fraction(c).denominator for c in row.values()))
    terms = {a: int(c * scale) for a, c in row.items() if a is not None}
    return Affine(int(row.get(None, 0) * scale), terms)


def _nonzero(d: Affine, env, limits: dict | None = None) -> bool:
    r = d.bounds(env, limits)
    if r is not None and (r[0] > 0 or r[1] < 0):
        return True
    if r is None and _one_sided(d, env, limits):
        return True
    g = math.gcd(*d.terms.values()) if d.terms else 0
    return g > 1 and d.const % g != 0


def _radix_parts(d: Affine, loop: Stmt | None, env, limits: dict | None) -> list[Affine]:
    """`d == 0` as one equation per digit, where it decides each digit's step: `d` is a sum of
    `c*(v - v') + k` over digits v of `loop`, each |c| exceeding what the smaller ones can add
    up to (a mixed radix), so at most one set of steps solves it. taichi-nerfs' tri-plane
    stores `out[i, j + 2 + 8*l]` with j < 2, l < 4 (an ndrange's digits `sn // 4`, `sn % 4`):
    `j + 8*l == j' + 2 + 8*l'` has no solution, `j + 8*l == j' + 8*l'` only j = j', l = l'."""
    pairs = _radix_pairs(d, loop, env, limits)
    if pairs is None:
        return [d]
    found = _radix_solutions(pairs, -d.const)
    if not found:
        return [Affine(1)]  # no instance pair meets: an equation that cannot hold
    if len(found) > 1:
        return [d]
    return [Affine(-c * step, {x: c, Primed(x): -c}) for (c, x, _), step in zip(pairs, found[0])]


def _guard_pinned(loop: Stmt | None, limits: dict | None) -> dict:
    """Digits of `loop` that guards hold at one value in both instances (`if a == 0:` around
    both accesses of `for i, a in ti.ndrange(n, 2)`): equal there, as if an index pinned them."""
    if loop is None or not limits:
        return {}
    return {x: 0 for x, r in limits.items()
            if isinstance(x, Var) and x.loop is loop and r[0] == r[1] and limits.get(Primed(x)) == r}


def _radix_pairs(d: Affine, loop: Stmt | None, env, limits: dict | None) -> list | None:
    """[(c, digit, spread)] of `d`'s `c*(v - v')` terms, largest |c| first, when they form a
    mixed radix (|c| > the sum of the smaller |c| * spread); else None."""
    if loop is None or len(d.terms) < 4 or len(d.terms) % 2:
        return None
    pairs = []
    for x, c in d.terms.items():
        if isinstance(x, Primed):
            continue
        ranges = [atom_range(a, env, limits) for a in (x, Primed(x))]
        if not (isinstance(x, Var) and x.loop is loop) or None in ranges or d.terms.get(Primed(x)) != -c:
            return None
        pairs.append((c, x, max(r[1] for r in ranges) - min(r[0] for r in ranges)))
    if 2 * len(pairs) != len(d.terms):
        return None
    pairs.sort(key=lambda p: abs(p[0]))
    reach = 0
    for c, _, spread in pairs:
        if abs(c) <= reach:
            return None
        reach += abs(c) * spread
    return pairs[::-1]


def _radix_solutions(pairs: list, target: int) -> list[tuple]:
    """Steps (v - v' per digit) with sum c*step == target and |step| <= spread; at most two."""
    if not pairs:
        return [()] if target == 0 else []
    (c, _, spread), rest = pairs[0], pairs[1:]
    reach = sum(abs(ci) * si for ci, _, si in rest)
    out = []
    lo, hi = -((reach - target) // abs(c)), (target + reach) // abs(c)  # c*s within target -+ reach
    for s in range(max(lo, -spread), min(hi, spread) + 1):
        step = s if c > 0 else -s
        out += [(step,) + tail for tail in _radix_solutions(rest, target - c * step)]
        if len(out) > 1:
            break
    return out


def _one_sided(d: Affine, env, limits: dict | None) -> bool:
    """Is `d` surely positive, or surely negative, by the atoms' known sides alone? A loop
    index over `range(0, n)` with `n` loaded from a field is at least 0, so `s + 1 - s0` with
    `s = s0 + j` is at least 1 (taichi-nerfs' `T[start]` and `T[start + j + 1]`)."""
    lo = hi = d.const
    for a, c in d.terms.items():
        below, above = _sides(a, env, limits)
        lo = None if lo is None or (below if c > 0 else above) is None else lo + c * (below if c > 0 else above)
        hi = None if hi is None or (above if c > 0 else below) is None else hi + c * (above if c > 0 else below)
    return (lo is not None and lo > 0) or (hi is not None and hi < 0)


def _sides(atom, env, limits: dict | None) -> tuple:
    """(least, greatest) value of an atom, either None where unknown."""
    r = atom_range(atom, env, limits)
    if r is not None:
        return r
    base = _base(atom)
    if not isinstance(base, Var) or base.bounds is None or base.size is not None:
        return None, None
    begin, end = (b.bounds(env) for b in base.bounds)
    return (None if begin is None else begin[0] // base.stride,
            None if end is None else (end[1] - 1) // base.stride)


def _digit_step(d: Affine, loop: Stmt | None):
    """`c*v - c*v' + k` for a digit v of `loop` -> (v, k/c: v' - v, or None if not an int)."""
    if loop is None or len(d.terms) != 2:
        return None
    (x, cx), (y, cy) = d.terms.items()
    if isinstance(x, Primed):
        (x, cx), (y, cy) = (y, cy), (x, cx)
    if not (isinstance(x, Var) and x.loop is loop and y == Primed(x) and cy == -cx):
        return None
    return x, (d.const // cx if d.const % cx == 0 else None)


def _other_instance_possible(steps: dict, rel: str | None, env, var: Var | None,
                             limits: dict | None = None) -> bool:
    """Can the renamed iteration differ from the first (and come later, for 'gt')? A digit
    v and its renamed v' = v + step must both lie in their (guarded) ranges."""
    for digit, step in steps.items():
        r, r2 = atom_range(digit, env, limits), atom_range(Primed(digit), env, limits)
        if r is not None and r2 is not None and max(r[0], r2[0] - step) > min(r[1], r2[1] - step):
            return False
    if rel is None:
        return True
    for digit, step in steps.items():
        if rel == "gt" and digit.full and step <= 0:
            return False
    return not _pinned(steps, env, var or next(iter(steps), None))


def _pinned(steps: dict, env, var: Var | None) -> bool:
    """Do the digits pinned equal (step 0) force equal loop indices? The index's own range
    (from `var`, or any digit: they share the loop's bounds) says when the higher digits cannot
    differ; a loop of one iteration is always pinned."""
    equal = {(d.stride, d.size) for d, s in steps.items() if s == 0}
    stride = 1
    while (stride, None) not in equal:
        # a digit of size 1 (`ti.ndrange(n, k, 1)`) is always 0: it never moves the stride on
        sizes = [z for s, z in equal if s == stride and z is not None and z > 1]
        if not sizes:
            r = atom_range(Var(var.loop, bounds=var.bounds), env) if var is not None else None
            return r is not None and r[0] // stride == r[1] // stride
        stride *= sizes[0]
    return True
