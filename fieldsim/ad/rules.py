"""Derivative rules, one per differentiable `Op`: `RULES[op] = Rule(vjp, jvp)`.

`vjp(b, s, adj, primal) -> ((operand index, contribution), ...)`: emits, with the `IRBuilder`
`b`, the contribution of `adj` (the adjoint of statement `s`) to each differentiable operand.
`primal(v)` returns the value of primal statement `v` (an operand of `s`, or `s` itself) at the
current point of the reverse code; rules call it only for values they use.

`jvp(b, s, tangents) -> Stmt | None`: emits the tangent of `s` from its operands' tangents
(`None` = zero), reading primal values directly (`s` and `s.args` are available where the
forward-mode code is emitted). Returns None when the tangent is zero. The rules of ops with a
slope (`_chain`) take `guard`, `ad.zero_adjoint.Guards.guarded(s)`: operand i's term is then
exactly 0 for a tangent of exactly 0, whatever its slope.

Ops in `ir.NONDIFF`, integer-valued statements and comparisons have no rule: they carry no
derivative. Every rule emits only arithmetic (no memory, no control flow), so a caller may
drop unused contributions. Kinks follow Taichi: MIN/MAX route to the second operand on a tie,
ABS has slope 0 at 0, and d(a**b)/db is 0 where a <= 0.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import Op, Stmt


@dataclass(frozen=True)
class Rule:
    vjp: Callable
    jvp: Callable


def _c(b: IRBuilder, value, like: Stmt) -> Stmt:
    return b.const(value, like.dtype)


def _un(op, b, x):
    return b.unary(op, x)


def _sq(b, x):
    return b.mul(x, x)


def _sign(b, x):
    """-1, 0 or 1 as a float of x's dtype."""
    zero = _c(b, 0, x)
    pos = b.select(b.binary(Op.GT, x, zero), _c(b, 1, x), zero)
    return b.select(b.binary(Op.LT, x, zero), _c(b, -1, x), pos)


# ---- partial derivatives: d(result)/d(operand) as IR, from operand values and the result -----
# Each takes (b, operands, result) where `result()` gives the statement's own value.

def _d_sqrt(b, xs, y):
    return [b.div(_c(b, 0.5, xs[0]), y())]


def _d_tan(b, xs, y):
    r = y()
    return [b.add(_c(b, 1, r), _sq(b, r))]


def _d_asin(b, xs, y):
    x = xs[0]
    return [b.div(_c(b, 1, x), _un(Op.SQRT, b, b.sub(_c(b, 1, x), _sq(b, x))))]


def _d_acos(b, xs, y):
    return [b.neg(_d_asin(b, xs, y)[0])]


def _d_atan(b, xs, y):
    x = xs[0]
    return [b.div(_c(b, 1, x), b.add(_c(b, 1, x), _sq(b, x)))]


def _d_tanh(b, xs, y):
    r = y()
    return [b.sub(_c(b, 1, r), _sq(b, r))]


UNARY_PARTIALS = {
    Op.ABS: lambda b, xs, y: [_sign(b, xs[0])],
    Op.SQRT: _d_sqrt,
    Op.SIN: lambda b, xs, y: [_un(Op.COS, b, xs[0])],
    Op.COS: lambda b, xs, y: [b.neg(_un(Op.SIN, b, xs[0]))],
    Op.TAN: _d_tan,
    Op.ASIN: _d_asin,
    Op.ACOS: _d_acos,
    Op.ATAN: _d_atan,
    Op.TANH: _d_tanh,
    Op.EXP: lambda b, xs, y: [y()],
    Op.LOG: lambda b, xs, y: [b.div(_c(b, 1, xs[0]), xs[0])],
}


def _d_div(b, xs, y):
    inv = b.div(_c(b, 1, xs[1]), xs[1])
    return [inv, b.neg(b.mul(y(), inv))]


def _d_pow(b, xs, y):
    a, e = xs
    d_base = b.mul(e, b.binary(Op.POW, a, b.sub(e, _c(b, 1, e))))
    if e.op != Op.CONST:  # a ** 0 is 1 for every a: slope 0, not 0 * 0 ** -1 = NaN at a = 0
        d_base = b.select(b.binary(Op.EQ, e, _c(b, 0, e)), _c(b, 0, e), d_base)
    safe = b.select(b.binary(Op.GT, a, _c(b, 0, a)), a, _c(b, 1, a))  # log(1) = 0 where a <= 0
    return [d_base, b.mul(y(), _un(Op.LOG, b, safe))]


def _d_atan2(b, xs, y):
    yy, xx = xs
    r2 = b.add(_sq(b, xx), _sq(b, yy))
    return [b.div(xx, r2), b.neg(b.div(yy, r2))]


# EXACT_RULES, for `fast_math=False`: reverse rules that divide the adjoint itself, in Taichi
# 1.7.4's order of operations, so that exact-mode gradients are Taichi's bits: `adj * (1 / d)`
# is an ulp or so off `adj / d`, and the difference compounds along an optimisation (a softmax
# classifier's weights parted from Taichi's after a few steps). Fast-math adjoints keep RULES'
# form, whose divisions by one value share one reciprocal (codegen.shared_divisors).

def _div_vjp(b, s, adj, primal):
    a, d = primal(s.args[0]), primal(s.args[1])
    dd = _sq(b, d)
    taichi = b.neg(b.div(b.mul(adj, a), dd))
    # d*d under- or overflows where the quotient does not (|d| < 1e-19 in f32: FTZ makes it 0
    # and Taichi's rule inf): there, -(adj * (a/d)) / d
    plain = b.neg(b.div(b.mul(adj, primal(s)), d))
    info = np.finfo(d.dtype.np)
    normal = b.binary(Op.GE, dd, b.const(float(info.tiny), d.dtype))
    finite = b.binary(Op.LE, dd, b.const(float(info.max), d.dtype))
    return ((0, b.div(adj, d)), (1, b.select(normal, b.select(finite, taichi, plain), plain)))


def _log_vjp(b, s, adj, primal):
    return ((0, b.div(adj, primal(s.args[0]))),)


def _atan2_vjp(b, s, adj, primal):
    yy, xx = primal(s.args[0]), primal(s.args[1])
    r2 = b.add(_sq(b, xx), _sq(b, yy))
    return ((0, b.div(b.mul(adj, xx), r2)), (1, b.neg(b.div(b.mul(adj, yy), r2))))


def _d_mod(b, xs, y):
    a, m = xs
    return [_c(b, 1, a), b.neg(_un(Op.FLOOR, b, b.div(a, m)))]


BINARY_PARTIALS = {
    Op.MUL: lambda b, xs, y: [xs[1], xs[0]],
    Op.DIV: _d_div,
    Op.POW: _d_pow,
    Op.ATAN2: _d_atan2,
    Op.MOD: _d_mod,
}


def _chain(partials):
    """Rule for an op whose derivative is `sum_i d_i * t_i`, from its partials."""

    def vjp(b, s, adj, primal):
        ds = partials(b, [primal(a) for a in s.args], lambda: primal(s))
        return tuple((i, b.mul(adj, d)) for i, d in enumerate(ds))

    def jvp(b, s, tangents, guard=()):
        if all(t is None for t in tangents):
            return None
        ds = partials(b, list(s.args), lambda: s)
        terms = [_term(b, t, d, i < len(guard) and guard[i])
                 for i, (t, d) in enumerate(zip(tangents, ds)) if t is not None]
        return _sum(b, terms)

    return Rule(vjp, jvp)


def _term(b, t, d, guarded: bool):
    """`t * d`; where `guarded`, exactly 0 for a tangent of exactly 0: the slope `d` may be
    inf or NaN at finite operands, and 0 * inf is NaN (ad.zero_adjoint's forward twin)."""
    out = b.mul(t, d)
    if not guarded:
        return out
    zero = _c(b, 0, t)
    return b.select(b.binary(Op.EQ, t, zero), zero, out)


def _sum(b, terms):
    out = terms[0]
    for t in terms[1:]:
        out = b.add(out, t)
    return out


def _linear(signs):
    """ADD / SUB / NEG: operand i contributes signs[i] * adj."""

    def vjp(b, s, adj, primal):
        return tuple((i, adj if k > 0 else b.neg(adj)) for i, k in enumerate(signs))

    def jvp(b, s, tangents):
        out = None
        for t, k in zip(tangents, signs):
            if t is None:
                continue
            if out is None:
                out = t if k > 0 else b.neg(t)
            else:
                out = b.add(out, t) if k > 0 else b.sub(out, t)
        return out

    return Rule(vjp, jvp)


def _route(cond, first: int, second: int):
    """MIN / MAX / SELECT: the adjoint goes to operand `first` where `cond` holds, else `second`."""

    def vjp(b, s, adj, primal):
        c = cond(b, s, primal)
        zero = _c(b, 0, adj)
        return ((first, b.select(c, adj, zero)), (second, b.select(c, zero, adj)))

    def jvp(b, s, tangents):
        ta, tb = tangents[first], tangents[second]
        if ta is None and tb is None:
            return None
        zero = _c(b, 0, s)
        return b.select(cond(b, s, lambda v: v), ta or zero, tb or zero)

    return Rule(vjp, jvp)


def _cmp(op):
    return lambda b, s, primal: b.binary(op, primal(s.args[0]), primal(s.args[1]))


def _cast_vjp(b, s, adj, primal):
    x = s.args[0]
    if not (x.dtype.is_float and s.dtype.is_float):
        return ()
    return ((0, b.cast(adj, x.dtype)),)


def _cast_jvp(b, s, tangents):
    t = tangents[0]
    if t is None or not (s.args[0].dtype.is_float and s.dtype.is_float):
        return None
    return b.cast(t, s.dtype)


RULES: dict[Op, Rule] = {
    Op.NEG: _linear((-1,)),
    Op.ADD: _linear((1, 1)),
    Op.SUB: _linear((1, -1)),
    **{op: _chain(p) for op, p in UNARY_PARTIALS.items()},
    **{op: _chain(p) for op, p in BINARY_PARTIALS.items()},
    # strict comparisons: a tie goes to the second operand, as Taichi 1.7.4's adjoints measure
    # (`ti.max(h, 0.0)` at h == 0 gives h no gradient there)
    Op.MIN: _route(_cmp(Op.LT), 0, 1),
    Op.MAX: _route(_cmp(Op.GT), 0, 1),
    Op.SELECT: _route(lambda b, s, primal: primal(s.args[0]), 1, 2),
    Op.CAST: Rule(_cast_vjp, _cast_jvp),
}
EXACT_RULES: dict[Op, Rule] = {
    **RULES,
    **{op: Rule(vjp, RULES[op].jvp)
       for op, vjp in ((Op.DIV, _div_vjp), (Op.LOG, _log_vjp), (Op.ATAN2, _atan2_vjp))},
}
