"""An index's block and place in it, read off the index's IR, for block- and chunk-major
storage (lang/mapped_storage.py).

Takes an integer index statement `j` and a block size `n` (a power of two). Guarantees: where
`block_parts` returns `(outer, inner)`, j == n * sum(outer) + sum(inner) on every execution
with 0 <= sum(inner) < n, so j // n is sum(outer) and j % n sum(inner) exactly; `outer` holds
(statement, factor) pairs (statement None: the constant factor), `inner` statements and
constants. That is the case for an index a struct-for builds over a block (its block origin, a
multiple of n, plus loop variables of constant bounds, scaled): the code then indexes the
block's cells affinely in the loop variables and a walk through a block still vectorizes,
where `j >> s` and `j & m` hide the stride from LLVM's loop vectorizer. Anything else: None
(the caller shifts and masks).
"""
from __future__ import annotations

from fieldsim.ir.ir import Op, Stmt


def block_parts(j: Stmt, n: int):
    """`(outer, inner)` of index `j` and block size `n`, or None (see the module doc)."""
    outer, inner, lo, hi = [], [], 0, 0
    for term, sign in _terms(j, 1, 0):
        if term is None:
            return None
        factor = _factor(term)
        if _is_const(term):
            c = sign * term.attr
            outer.append((None, c // n))
            if c % n:
                inner.append(c % n)
                lo, hi = lo + c % n, hi + c % n
        elif factor is not None and factor % n == 0 and sign == 1:
            outer.append((term.args[0] if _is_const(term.args[1]) else term.args[1], factor // n))
        else:
            span = index_interval(term) if sign == 1 else None
            if span is None:
                return None
            inner.append(term)
            lo, hi = lo + span[0], hi + span[1]
    if lo < 0 or hi >= n:
        return None
    return outer, inner


def _terms(s: Stmt, sign: int, depth: int):
    """The summands of an ADD/SUB chain, with their signs (None: too deep to follow)."""
    if depth > 8:
        yield None, sign
        return
    if s.op == Op.ADD:
        yield from _terms(s.args[0], sign, depth + 1)
        yield from _terms(s.args[1], sign, depth + 1)
    elif s.op == Op.SUB:
        yield from _terms(s.args[0], sign, depth + 1)
        yield from _terms(s.args[1], -sign, depth + 1)
    else:
        yield s, sign


def _is_const(s: Stmt) -> bool:
    return s.op == Op.CONST and isinstance(s.attr, int) and not isinstance(s.attr, bool)


def _factor(s: Stmt) -> int | None:
    """c of a MUL by the constant c, else None."""
    if s.op != Op.MUL:
        return None
    a, b = s.args
    return b.attr if _is_const(b) else a.attr if _is_const(a) else None


def index_interval(s: Stmt, depth: int = 0):
    """[lo, hi] of an integer statement built from loop variables of constant bounds,
    constants, MULs by constants and (of non-negative values) floor divisions and remainders by
    positive constants; None for anything else."""
    if depth > 8:
        return None
    if _is_const(s):
        return s.attr, s.attr
    if s.op == Op.FOR and all(_is_const(a) for a in s.args) and s.args[1].attr > s.args[0].attr:
        return s.args[0].attr, s.args[1].attr - 1
    factor = _factor(s)
    if factor is not None:
        x = s.args[0] if _is_const(s.args[1]) else s.args[1]
        span = index_interval(x, depth + 1)
        if span is None:
            return None
        ends = (span[0] * factor, span[1] * factor)
        return min(ends), max(ends)
    if s.op in (Op.FLOORDIV, Op.MOD) and _is_const(s.args[1]) and s.args[1].attr > 0:
        span = index_interval(s.args[0], depth + 1)  # ti.ndrange's `flat // n`, `flat % n`
        if span is None or span[0] < 0:
            return None
        c = s.args[1].attr
        return (span[0] // c, span[1] // c) if s.op == Op.FLOORDIV else (0, min(c - 1, span[1]))
    if s.op in (Op.ADD, Op.SUB):
        a, b = (index_interval(x, depth + 1) for x in s.args)
        if a is None or b is None:
            return None
        return (a[0] + b[0], a[1] + b[1]) if s.op == Op.ADD else (a[0] - b[1], a[1] - b[0])
    return None
