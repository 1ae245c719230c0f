"""Index reasoning for the access-rule checker: symbolic index forms, and whether two accesses can
touch the same field element.

Contract: analysis only. `Forms` reads index expressions (never mutates IR); the rest works on
forms alone. Every answer is sound: NEVER only when the two index tuples provably differ.

Forms. An index expression becomes an `Affine`: an int constant plus int multiples of atoms:

* `Arg(pos)`: a scalar kernel argument. On the Tape its value is known and substituted (`env`).
* `Var(loop, stride, size)`: the digit `(i // stride) % size` of a FOR's index `i` (`size` None:
  no modulo). `Var(loop)` is the index itself. The frontend linearises `ndrange` loops into such
  digits; the tuple of all digits of `i` determines `i` (that is what makes `x[i, j]` injective).
* `Opaque(stmt)`: anything else, e.g. a loaded value, a random number, a local stored twice.

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
"""
from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

from fieldsim.lang.ir import Op, Stmt


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
        if not env or not any(isinstance(a, Arg) for a in self.terms):
            return self
        return self.map(lambda a: Affine(env[a.pos]) if isinstance(a, Arg) and a.pos in env
                        else Affine.of(a))

    def bounds(self, env: dict | None = None) -> tuple[int, int] | None:
        """Inclusive interval of values, or None when some atom is unbounded."""
        lo = hi = self.const
        for a, c in self.terms.items():
            r = atom_range(a, env)
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


def atom_range(atom, env: dict | None) -> tuple[int, int] | None:
    """Inclusive value interval of an atom, when known."""
    atom = _base(atom)
    if isinstance(atom, Arg):
        return (env[atom.pos],) * 2 if env and atom.pos in env else None
    if not isinstance(atom, Var) or atom.bounds is None:
        return None
    if atom.size is not None:
        return 0, atom.size - 1
    begin, end = (b.bounds(env) for b in atom.bounds)
    if begin is None or end is None:
        return None
    return begin[0] // atom.stride, (end[1] - 1) // atom.stride


# ------------------------------------------------------------------------------------ forms
class Site(NamedTuple):
    """Where a statement sits: program order, top-level task, enclosing blocks and loops."""

    position: int
    task: int
    path: tuple  # ((control stmt, block index), ...), outermost first
    loops: tuple  # enclosing FOR/LOOP statements, outermost first


class Forms:
    """Index forms of the IR values of one kernel.

    `sites` maps id(stmt) to its `Site`; `stores` maps id(alloca) to its LOCAL_STOREs. A local is
    followed to its stored value only when it has one store and that store dominates the load.
    """

    def __init__(self, sites: dict, stores: dict):
        self.sites, self.stores, self.memo = sites, stores, {}

    def form(self, s: Stmt) -> Affine:
        key = id(s)
        if key not in self.memo:
            self.memo[key] = self._form(s)
        return self.memo[key]

    def opaque(self, s: Stmt) -> Affine:
        return Affine.of(Opaque(s, self.sites[id(s)].loops if id(s) in self.sites else ()))

    def _form(self, s: Stmt) -> Affine:
        integral = s.dtype is None or s.dtype.is_int
        if s.op == Op.CONST and integral:
            return Affine(s.attr)
        if s.op == Op.ARG and integral:
            return Affine.of(Arg(s.attr))
        if s.op == Op.FOR:
            return Affine.of(self.loop_var(s))
        if s.op in (Op.ADD, Op.SUB, Op.NEG, Op.MUL) and integral:
            return self._arith(s)
        if s.op == Op.CAST and integral and s.args[0].dtype is not None and s.args[0].dtype.is_int:
            return self.form(s.args[0])
        if s.op in (Op.FLOORDIV, Op.MOD) and integral:
            return self._digit(s)
        if s.op == Op.LOCAL_LOAD:
            return self._local(s)
        return self.opaque(s)

    def _arith(self, s: Stmt) -> Affine:
        a = self.form(s.args[0])
        if s.op == Op.NEG:
            return a.scale(-1)
        b = self.form(s.args[1])
        if s.op == Op.ADD:
            return a + b
        if s.op == Op.SUB:
            return a - b
        if a.is_const():
            return b.scale(a.const)
        return a.scale(b.const) if b.is_const() else self.opaque(s)

    def loop_var(self, loop: Stmt, stride: int = 1, size: int | None = None) -> Var:
        """The atom of a FOR's index (or of one of its digits), with the loop's bounds."""
        site = self.sites.get(id(loop))
        scope = (site.loops if site else ()) + (loop,)
        bounds = (self.form(loop.args[0]), self.form(loop.args[1])) if loop.args else None
        return Var(loop, stride, size, scope, bounds)

    def _digit(self, s: Stmt) -> Affine:
        """`i // c` and `i % c` of a loop index (or of one of its digits): a new digit atom."""
        x, c = self.form(s.args[0]), self.form(s.args[1])
        if not c.is_const() or c.const <= 0:
            return self.opaque(s)
        c = c.const
        if x.is_const():
            return Affine(x.const // c if s.op == Op.FLOORDIV else x.const % c)
        atom = next(iter(x.terms)) if len(x.terms) == 1 else None
        if not isinstance(atom, Var) or x.terms[atom] != 1 or x.const != 0:
            return self.opaque(s)
        if s.op == Op.FLOORDIV and atom.size is None:
            return Affine.of(self.loop_var(atom.loop, atom.stride * c, None))
        if s.op == Op.MOD and (atom.size is None or atom.size % c == 0):
            return Affine.of(self.loop_var(atom.loop, atom.stride, c))
        return self.opaque(s)

    def _local(self, s: Stmt) -> Affine:
        stores = self.stores.get(id(s.args[0]), [])
        if len(stores) == 1 and self._dominates(stores[0], s):
            return self.form(stores[0].value)
        return self.opaque(s)

    def _dominates(self, a: Stmt, b: Stmt) -> bool:
        sa, sb = self.sites.get(id(a)), self.sites.get(id(b))
        if sa is None or sb is None or sa.position >= sb.position:
            return False
        return sb.path[:len(sa.path)] == sa.path


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
        return Meet(_decide(_diffs(a, b, None, env), None, None, env), "task", None)
    if not same_thread:
        if a.thread_mode != "parallel":
            return NO_MEET
        top = a.loops[0]
        return Meet(_decide(_diffs(a, b, top, env), top, "ne", env, _var(a, top)), "thread", top)
    meets = []
    if b.position > a.position and not exclusive(a.path, b.path):
        meets.append(Meet(_decide(_diffs(a, b, None, env), None, None, env), "same", None))
    for loop in _shared_loops(a, b):
        rel = "gt" if loop.op == Op.FOR else None
        answer = _decide(_diffs(a, b, loop, env), loop, rel, env, _var(a, loop))
        meets.append(Meet(answer, "iteration", loop))
    return max(meets, key=lambda m: m.answer, default=NO_MEET)


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


def _diffs(a, b, loop: Stmt | None, env: dict | None) -> list[Affine]:
    """Component-wise `a - b`, with b's atoms scoped in `loop` renamed (another instance)."""
    def rename(atom):
        return Affine.of(Primed(atom) if loop is not None and loop in atom.scope else atom)

    return [fa.subst(env) - fb.subst(env).map(rename) for fa, fb in zip(a.indices, b.indices)]


def _decide(diffs: list[Affine], loop: Stmt | None, rel: str | None, env,
            var: Var | None = None) -> Answer:
    """Can every difference be zero, given that `loop`'s renamed iteration is related by `rel`
    ('ne': another thread, 'gt': a later iteration, None: any other iteration)? `var` is the
    loop's index atom, for its bounds."""
    steps, unknown = {}, False
    for d in diffs + _combinations(diffs, loop):
        if d.is_const() and d.const == 0:
            continue
        if _nonzero(d, env):
            return Answer.NEVER
        match = _digit_step(d, loop)
        if match is not None:
            digit, step = match
            if step is None or steps.setdefault(digit, step) != step:
                return Answer.NEVER
            continue
        unknown = unknown or d.has_opaque()
    if loop is not None and not _other_instance_possible(steps, rel, env, var):
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


def _nonzero(d: Affine, env) -> bool:
    r = d.bounds(env)
    if r is not None and (r[0] > 0 or r[1] < 0):
        return True
    g = math.gcd(*d.terms.values()) if d.terms else 0
    return g > 1 and d.const % g != 0


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


def _other_instance_possible(steps: dict, rel: str | None, env, var: Var | None) -> bool:
    """Can the renamed iteration differ from the first (and come later, for 'gt')?"""
    if rel is None:
        return True
    for digit, step in steps.items():
        r = atom_range(digit, env)
        if r is not None and abs(step) > r[1] - r[0]:
            return False
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
        sizes = [z for s, z in equal if s == stride and z is not None]
        if not sizes:
            r = atom_range(Var(var.loop, bounds=var.bounds), env) if var is not None else None
            return r is not None and r[0] // stride == r[1] // stride
        stride *= sizes[0]
    return True
