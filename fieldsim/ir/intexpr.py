"""Integer expressions known at launch: a statement's value as a function of the kernel's scalar
arguments, when it is built from constants, arguments and integer ops only.

`launch_expr(s)` reads one from the IR (None when the value depends on anything else: a loop
index, a field, a local); `evaluate(e, args)` computes it with the compiled code's semantics
(opdefs' evaluators: C division, no trap on a zero divisor). AD stack sizing, the launch size
hints of both backends, and the CPU scheduler all read trip counts through here, so they agree.
"""
from __future__ import annotations

from fieldsim.ir.ir import Op, Stmt
from fieldsim.ir.opdefs import OPDEFS, Operands, Result
from fieldsim.ir.opdefs import evaluate as evaluate_op

# An expression is ("const", value) | ("arg", position) | (Op, operand expressions...).
_FOLDABLE = frozenset(op for op, d in OPDEFS.items()
                      if d.evaluate is not None and d.int_ok and d.result is Result.OPERAND
                      and d.operands is not Operands.FLOAT) | {Op.CAST}


def launch_expr(s: Stmt):
    """The launch-time expression of an integer statement, or None when it is not one."""
    if s.op == Op.CONST:
        return ("const", s.attr)
    if s.op == Op.ARG:
        return ("arg", s.attr)
    if s.op not in _FOLDABLE or (s.dtype is not None and not s.dtype.is_int):
        return None
    kids = tuple(launch_expr(a) for a in s.args)
    return None if any(k is None for k in kids) else (s.op, *kids)


def evaluate(e, args) -> int:
    """The value of a launch expression for these argument values (KeyError for an argument
    position beyond `args`)."""
    head = e[0]
    if head == "const":
        return int(e[1])
    if head == "arg":
        if e[1] >= len(args):
            raise KeyError(e[1])
        return int(args[e[1]])
    values = [evaluate(k, args) for k in e[1:]]
    return int(values[0]) if head == Op.CAST else int(evaluate_op(head, *values))


def trip_count(loop: Stmt, args):
    """How many times a FOR runs its body for these arguments, or None when not known at
    launch."""
    if loop.op != Op.FOR:
        return None
    return range_length(launch_expr(loop.args[0]), launch_expr(loop.args[1]), args)


def range_length(lo, hi, args):
    """max(0, hi - lo) for launch expressions `lo`, `hi` (None when either is None or needs an
    argument beyond `args`)."""
    if lo is None or hi is None:
        return None
    try:
        return max(0, evaluate(hi, args) - evaluate(lo, args))
    except KeyError:
        return None
