"""Which reverse-mode contributions must give exactly 0 for an adjoint of exactly 0.

`Guards().guarded(s) -> tuple[bool, ...]`: for a differentiable primal statement `s`, whether
the contribution of its adjoint to operand i is emitted as `select(adj == 0, 0, adj * slope)`.
One `Guards` per kernel: it remembers the bounds it proved, by statement (a kernel's statements
outlive it), so that an expression DAG is walked once, not once per path.

Why: a contribution is `adj * slope`, and IEEE's 0 * inf and 0 * NaN are NaN. An adjoint is
exactly 0 where the value does not reach the loss (a diagnostic field that needs a gradient:
`speed[i] = v[i].norm()` with v = 0) or where a `select` / min / max routes it away (the branch
not taken in `ti.select(x > 0, ti.sqrt(x), 0.0)` at x <= 0). That NaN then spreads through the
whole backward, although the true derivative is finite. Taichi 1.7.4, JAX and PyTorch give the
NaN; the contribution of a zero adjoint is 0 by the chain rule, so fieldsim gives 0.

Only slopes that can be non-finite at finite operands are guarded: those of sqrt, log, asin,
acos, atan2, mod, pow and division, and a product's slope for one operand where the other is
such an op's value (`v * (1 / |v|)`, `normalized()`'s form). Where the slope is provably finite
(a square root or divisor of a sum of squares plus a positive constant, a positive constant
divisor, a power with a constant exponent >= 1) nothing changes, so the benchmark adjoints keep
their code. The proofs carry lower bounds, not signs: the kernels flush subnormals to zero, so
`x * x + 1e-45` in f32, or a divisor whose square underflows (`1 / (x * x + 1e-20)` in f32),
proves nothing. A nonzero adjoint times an infinite slope stays IEEE (sqrt at 0 reaching the loss:
inf).

Facts of enclosing branches (`with guards.branch(cond, taken)`, entered by both modes at an `if`'s
blocks): inside `if m > 0`, `m >= c` (c > 0), `c < m`, `ti.abs(m) > c` or `m != 0`, a use of m
may assume its bound (or, for a divisor, its magnitude). A NaN fails every such comparison, so m
is no NaN there. Where the kernels flush subnormals (`flushing`: the float widths, from
`ir.subnormals.flushing_widths`), DAZ makes a subnormal compare as 0, so `m > 0` means m >= the
smallest normal: `a / m` there has a finite slope 1 / m for a, while the slope for m, -(a/m) / m,
needs m * m normal and keeps its guard (mpm88's `update_grid`). The bounds are cached per set of
facts: m computed before the `if` is the same statement, and only its uses inside may assume them.
"""
from __future__ import annotations

import contextlib
import math

import numpy as np

from fieldsim.ir.ir import Op, Stmt

# slopes that can be non-finite at finite operands
_SINGULAR = frozenset({Op.SQRT, Op.LOG, Op.ASIN, Op.ACOS, Op.ATAN2, Op.MOD, Op.POW, Op.DIV})
# ops whose value is finite wherever the operands are (a product's slope passes through them)
_TRANSPARENT = frozenset({Op.CAST, Op.NEG})
_DEPTH = 48  # bound proofs give up beyond this many nested operands (long sums): unproven


class Guards:
    def __init__(self, flushing: frozenset = frozenset()):
        self.flushing = flushing  # float widths (bits) whose kernels flush subnormals (DAZ)
        self.facts: tuple = ()  # (id(stmt), lower bound or None, magnitude or None) of branches
        self.caches: dict[tuple, dict] = {(): {}}
        self.bounds: dict[int, float | None] = self.caches[()]

    @contextlib.contextmanager
    def branch(self, cond: Stmt, taken: bool):
        """Within: the code an `if cond` runs when cond is `taken` (only a taken branch of an
        ordered comparison says anything: a NaN makes the condition false)."""
        saved = self.facts, self.bounds
        if taken:
            self.facts = saved[0] + tuple(branch_facts(cond, self.flushing))
            self.bounds = self.caches.setdefault(self.facts, {})
        try:
            yield
        finally:
            self.facts, self.bounds = saved

    def fact(self, v: Stmt, kind: int) -> float | None:
        """The largest lower bound (kind 1) or magnitude (kind 2) the branches give `v`."""
        found = [f[kind] for f in self.facts if f[0] == id(v) and f[kind] is not None]
        return max(found) if found else None

    def guarded(self, s: Stmt) -> tuple[bool, ...]:
        if s.op == Op.MUL:
            return (self.may_be_nonfinite(s.args[1]), self.may_be_nonfinite(s.args[0]))
        if s.op == Op.DIV:  # the numerator's slope 1 / d; the divisor's -(a/d) / d needs d * d
            return (not self.safeguarded(s.args[1], signed=True),
                    not self.safeguarded(s.args[1], squared=True, signed=True))
        if s.op in _SINGULAR and not self.finite_slope(s):
            return (True,) * len(s.args)
        return ()

    def finite_slope(self, s: Stmt) -> bool:
        if s.op in (Op.SQRT, Op.LOG):
            return self.safeguarded(s.args[-1])
        if s.op == Op.POW:
            return self.const_power(s, 1)
        return False

    def const_power(self, s: Stmt, least: float) -> bool:
        """`a ** e` with a constant e >= least, integral or over a base >= 0: a finite power."""
        e = s.args[1]
        return e.op == Op.CONST and e.attr >= least and (
            float(e.attr).is_integer() or self.bound(s.args[0]) is not None)

    def may_be_nonfinite(self, v: Stmt) -> bool:
        """`v`, a product's other operand, is the value of a singular op that may be inf or
        NaN."""
        while v.op in _TRANSPARENT:
            v = v.args[0]
        if v.op in (Op.ASIN, Op.ACOS, Op.MOD):
            return True
        if v.op == Op.POW:
            return not self.const_power(v, 0)
        if v.op == Op.SQRT:
            return self.bound(v.args[0]) is None
        if v.op == Op.LOG:
            return not self.safeguarded(v.args[-1])
        if v.op == Op.DIV:
            return not self.safeguarded(v.args[-1], signed=True)
        return False

    def safeguarded(self, v: Stmt, squared: bool = False, signed: bool = False) -> bool:
        """`v` is provably at least the smallest normal of its type (its square too, for a
        divisor), or has such a positive constant added: the usual guard of a divisor
        (`grid_v / (grid_m + 1e-10)`), taken as nonzero. Its one zero (m = -1e-10 exactly) is
        no natural value; a guard there cost diffmpm's grid_op adjoint 5 %. The kernels flush
        subnormals to zero (codegen.denormals), so `x * x + 1e-45` in f32 is no guard.
        `signed` (a divisor): a magnitude the branches give `v` (`m != 0`) counts too."""
        least = _tiny(v.dtype) ** (0.5 if squared else 1.0)
        if v.op == Op.ADD and any(_safeguard(a, v.args, least) for a in v.args):
            return True
        m = self.fact(v, 2) if signed else None
        if m is not None and m >= least:
            return True
        b = self.bound(v)
        return b is not None and b >= least

    def bound(self, v: Stmt, depth: int = 0) -> float | None:
        """A lower bound of `v` for finite operands, as a flushing kernel computes it: >= 0, or
        None where its sign is unknown. A bound, not a sign: a product of tiny positives (or a
        subnormal constant) is 0 in the kernel."""
        if id(v) not in self.bounds:
            self.bounds[id(v)] = self._bound_with_facts(v, depth)
        return self.bounds[id(v)]

    def _bound(self, v: Stmt, depth: int) -> float | None:
        if depth > _DEPTH or v.dtype is None or not v.dtype.is_float and v.op != Op.CONST:
            return None  # unknown (a bound cut off by the depth stays so: conservative)
        op, a = v.op, v.args
        if op == Op.CONST:
            return _rounded(float(v.attr), v.dtype) if v.attr >= 0 else None
        if op == Op.ABS:
            return 0.0
        if op == Op.MUL and a[0] is a[1]:  # a square: >= 0, and >= b * b where a >= b >= 0
            b = self.bound(a[0], depth + 1)
            return 0.0 if b is None else _rounded(b * b, v.dtype)
        if op not in _BOUND_RULES:
            return None
        found = _BOUND_RULES[op]([self.bound(x, depth + 1) for x in a])
        return None if found is None else _rounded(found, v.dtype)

    def _bound_with_facts(self, v: Stmt, depth: int) -> float | None:
        b, known = self._bound(v, depth), self.fact(v, 1)
        return b if known is None else known if b is None else max(b, known)


_MIRRORED = {Op.GT: Op.LT, Op.GE: Op.LE, Op.LT: Op.GT, Op.LE: Op.GE, Op.NE: Op.NE}
_COMPARISONS = frozenset(_MIRRORED) | {Op.EQ}


def branch_facts(cond: Stmt, flushing: frozenset):
    """(id(v), lower bound, magnitude) that `cond` being true proves of float values v: from
    ordered comparisons with a constant (`m > 0`, `c <= m`, `ti.abs(m) > c`, `m < 0`,
    `m != 0`) and each part of an `and` of them."""
    for part in _conjuncts(cond):
        if part.op not in _MIRRORED or len(part.args) != 2:
            continue
        x, c, op = part.args[0], part.args[1], part.op
        if x.op == Op.CONST:
            x, c, op = c, x, _MIRRORED[op]
        if c.op == Op.CONST and _floating(x):
            yield from _compared(x, op, float(c.attr), _tiny(x.dtype) if x.dtype.bits in flushing else 0.0)


def _conjuncts(cond: Stmt) -> list[Stmt]:
    """Truth values all true where `cond` is: the parts of `a & b`, and of Python's `a and b`
    over truth values (the front end's `select(a != 0, b, a)`)."""
    work, out = [cond], []
    while work:
        v = _truth(work.pop())
        if v.op == Op.BIT_AND:
            work.extend(v.args)
        elif v.op == Op.SELECT and _python_and(v):
            work.extend(v.args[:2])
        else:
            out.append(v)
    return out


def _python_and(v: Stmt) -> bool:
    """`select(a != 0, b, a)` for a comparison a (0 or 1: its casts all test the same)."""
    a = _truth(v.args[0])
    return a is _truth(v.args[2]) and a.op in _COMPARISONS


def _truth(v: Stmt) -> Stmt:
    """The value a truth test `v` tests: x of an integer `x != 0`, and of an integer cast of x
    (comparisons are cast to u1 and back)."""
    while not _floating(v) and v.args and not _floating(v.args[0]) and (
            v.op == Op.CAST or v.op == Op.NE and v.args[1].op == Op.CONST and v.args[1].attr == 0):
        v = v.args[0]
    return v


def _floating(v: Stmt) -> bool:
    return v.dtype is not None and v.dtype.is_float


def _compared(x: Stmt, op, c: float, tiny: float):
    """Facts of `x op c` true (`tiny`: the smallest normal where x's type flushes, else 0:
    there a nonzero x compares as nonzero only where it is at least that)."""
    if op == Op.NE:
        if c == 0 and tiny:
            yield id(x), None, tiny
        return
    strict = op in (Op.GT, Op.LT)
    least = abs(c) if c else 0.0
    if strict or c:
        least = max(least, tiny)
    if op in (Op.GT, Op.GE) and c >= 0:
        yield id(x), least, (least or None)
        if x.op == Op.ABS and least:
            yield id(x.args[0]), None, least
    elif op in (Op.LT, Op.LE) and c <= 0 and least:
        yield id(x), None, least


def _safeguard(c: Stmt, terms, least: float) -> bool:
    """`c`, a term of a sum, is a constant safeguard (at least `least`), and not a whole number
    added to an integer made float: `ti.cast(n, f32) + 1.0` is exactly 0 at n = -1, a natural
    value of an integer."""
    if c.op != Op.CONST or not c.attr >= least:
        return False
    return not (float(c.attr).is_integer()
                and any(t.op == Op.CAST and not t.args[0].dtype.is_float for t in terms))


def _tiny(dtype) -> float:
    return float(np.finfo(dtype.np).tiny) if dtype is not None and dtype.is_float else 0.0


def _rounded(b: float, dtype) -> float:
    """`b` lowered by one rounding of `dtype`, and 0 where the kernel flushes it (subnormal)."""
    if not dtype.is_float:
        return b
    b *= 1.0 - float(np.finfo(dtype.np).eps)
    return b if b >= _tiny(dtype) else 0.0


def _known(f):
    return lambda bs: None if None in bs else f(bs)


_BOUND_RULES = {
    Op.ADD: _known(sum),
    Op.MUL: _known(lambda bs: bs[0] * bs[1]),
    Op.DIV: _known(lambda bs: 0.0),  # no upper bound of the divisor: a quotient may underflow
    Op.SQRT: _known(lambda bs: math.sqrt(bs[0])),
    Op.CAST: _known(lambda bs: bs[0]),  # a narrowing cast rounds (and flushes) in `_rounded`
    # max(a, b) is at least the larger of their bounds
    Op.MAX: lambda bs: None if bs == [None] * len(bs) else max(b for b in bs if b is not None),
}
