"""Which reverse-mode contributions must give exactly 0 for an adjoint of exactly 0.

`Guards().guarded(s) -> tuple[bool, ...]`: for a differentiable primal statement `s`, whether
the contribution of its adjoint to operand i is emitted as `select(adj == 0, 0, adj * slope)`.
One `Guards` per kernel: it remembers the signs it proved, by statement (a kernel's statements
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
their code. A nonzero adjoint times an infinite slope stays IEEE (sqrt at 0 reaching the loss:
inf).
"""
from __future__ import annotations

from fieldsim.ir.ir import Op, Stmt

# slopes that can be non-finite at finite operands
_SINGULAR = frozenset({Op.SQRT, Op.LOG, Op.ASIN, Op.ACOS, Op.ATAN2, Op.MOD, Op.POW, Op.DIV})
# ops whose value is finite wherever the operands are (a product's slope passes through them)
_TRANSPARENT = frozenset({Op.CAST, Op.NEG})
_DEPTH = 48  # sign proofs give up beyond this many nested operands (long sums): unproven


class Guards:
    def __init__(self):
        self.signs: dict[int, int] = {}

    def guarded(self, s: Stmt) -> tuple[bool, ...]:
        if s.op == Op.MUL:
            return (self.may_be_nonfinite(s.args[1]), self.may_be_nonfinite(s.args[0]))
        if s.op in _SINGULAR and not self.finite_slope(s):
            return (True,) * len(s.args)
        return ()

    def finite_slope(self, s: Stmt) -> bool:
        if s.op in (Op.SQRT, Op.LOG, Op.DIV):
            return self.safeguarded(s.args[-1])
        if s.op == Op.POW:
            return self.const_power(s, 1)
        return False

    def const_power(self, s: Stmt, least: float) -> bool:
        """`a ** e` with a constant e >= least, integral or over a base >= 0: a finite power."""
        e = s.args[1]
        return e.op == Op.CONST and e.attr >= least and (
            float(e.attr).is_integer() or self.sign(s.args[0]) >= 1)

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
            return self.sign(v.args[0]) == 0
        if v.op in (Op.LOG, Op.DIV):
            return not self.safeguarded(v.args[-1])
        return False

    def safeguarded(self, v: Stmt) -> bool:
        """`v` is provably > 0, or has a positive constant added: the usual guard of a divisor
        (`grid_v / (grid_m + 1e-10)`), taken as nonzero. Its one zero (m = -1e-10 exactly) is
        no natural value; a guard there cost diffmpm's grid_op adjoint 5 %."""
        if v.op == Op.ADD and any(a.op == Op.CONST and a.attr > 0 for a in v.args):
            return True
        return self.sign(v) == 2

    def sign(self, v: Stmt, depth: int = 0) -> int:
        """2: provably > 0 (finite operands), 1: provably >= 0, 0: unknown."""
        known = self.signs.get(id(v))
        if known is None:
            known = self.signs[id(v)] = self._sign(v, depth)
        return known

    def _sign(self, v: Stmt, depth: int) -> int:
        if depth > _DEPTH or v.dtype is None or not v.dtype.is_float and v.op != Op.CONST:
            return 0  # unknown (a sign cut off by the depth stays so: conservative)
        op, a = v.op, v.args
        if op == Op.CONST:
            return 2 if v.attr > 0 else 1 if v.attr == 0 else 0
        if op == Op.ABS or op == Op.MUL and a[0] is a[1]:
            return 1
        if op == Op.CAST:  # a narrowing cast may round a tiny positive to 0
            narrows = a[0].dtype is not None and a[0].dtype.bits > v.dtype.bits
            return min(self.sign(a[0], depth + 1), 1 if narrows else 2)
        if op not in _SIGN_RULES:
            return 0
        return _SIGN_RULES[op]([self.sign(x, depth + 1) for x in a])


_SIGN_RULES = {
    Op.ADD: lambda s: 0 if 0 in s else max(s),
    Op.MUL: min,
    Op.DIV: min,
    Op.SQRT: lambda s: s[0],
    Op.MAX: max,  # max(a, b) is at least the larger of their bounds
}
