"""Small Taichi builtins without a home elsewhere: `fs.static_assert`, `fs.raw_div`,
`fs.raw_mod`, `fs.bit_shr`.

Takes frontend values (constants fold in Python, `Stmt`s emit IR, vectors apply per entry).
Guarantees Taichi's meaning: `raw_div`/`raw_mod` are C's `/` and `%` (truncation toward zero,
remainder with the dividend's sign; floats divide exactly and `raw_mod` is `fmod`); `bit_shr` is
a logical (zero-filling) right shift of the operand's bits at its own width; `static_assert`
checks a compile-time condition and refuses a runtime one with a `FieldsimTypeError`.
Each is also usable in Python scope.
"""
from __future__ import annotations

import math

import numpy as np

from fieldsim.errors import FieldsimSyntaxError, FieldsimTypeError
from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang import ops
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal

_UNSIGNED = {8: T.u8, 16: T.u16, 32: T.u32, 64: T.u64}


def static_assert(cond, msg=None):
    """Python scope: a plain check (kernels check at compile time)."""
    if not cond:
        raise AssertionError(msg or "static_assert failed")


def _static_assert(fe, node, args, kw):
    cond = args[0] if args else kw.get("cond")
    msg = args[1] if len(args) > 1 else kw.get("msg")
    if isinstance(cond, (Stmt, MatVal)):
        raise FieldsimTypeError("Static assert with non-static condition: fs.static_assert needs a "
                                "value known at compile time (a constant, a field's shape or dtype, "
                                "a template argument)")
    if not cond:
        raise FieldsimSyntaxError(f"static assertion failed: {msg}" if msg else "static assertion failed")


def _c_div(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def raw_div(a, b):
    return _c_div(a, b)


def raw_mod(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return math.fmod(a, b)
    return a - b * _c_div(a, b)


def bit_shr(a, b):
    """Logical right shift of a 32-bit value (Python ints have no width; numpy ints keep theirs)."""
    if isinstance(a, np.integer):
        bits = a.dtype.itemsize * 8
        return type(a)((int(a) & ((1 << bits) - 1)) >> int(b))
    return (a & 0xFFFFFFFF) >> b


def _elementwise(fn):
    def handler(fe, node, args, kw):
        a, b = args
        if isinstance(a, MatVal) or isinstance(b, MatVal):
            a, b = fe.e.broadcast(a, b)
            return MatVal([fn(fe, x, y) for x, y in zip(a.entries, b.entries)], a.n, a.m, a.ndim)
        return fn(fe, a, b)
    return handler


def _raw_div(fe, a, b):
    if not isinstance(a, Stmt) and not isinstance(b, Stmt):
        return _c_div(a, b)
    dt = T.promote(fe.e.dtype_of(a), fe.e.dtype_of(b))
    return fe.b.binary(Op.DIV, fe.e.value(a, dt), fe.e.value(b, dt))  # C division for ints


def _raw_mod(fe, a, b):
    if not isinstance(a, Stmt) and not isinstance(b, Stmt):
        return raw_mod(a, b)
    dt = T.promote(fe.e.dtype_of(a), fe.e.dtype_of(b))
    av, bv = fe.e.value(a, dt), fe.e.value(b, dt)
    q = fe.b.binary(Op.DIV, av, bv)
    if dt.is_float:  # fmod: the quotient truncated toward zero
        q = fe.e.select(fe.e.compare(">=", q, 0.0), fe.b.unary(Op.FLOOR, q), fe.b.unary(Op.CEIL, q))
    return fe.b.sub(av, fe.b.mul(bv, fe.e.value(q, dt)))


def _bit_shr(fe, a, b):
    if not isinstance(a, Stmt) and not isinstance(b, Stmt):
        return bit_shr(a, b)
    dt = fe.e.dtype_of(a)
    if dt.is_float or fe.e.dtype_of(b).is_float:
        raise FieldsimTypeError(f"fs.bit_shr needs integer operands, got {dt} and {fe.e.dtype_of(b)}")
    udt = _UNSIGNED[dt.bits]
    shifted = fe.b.binary(Op.SHR, fe.e.value(a, udt), fe.e.value(b, udt))  # unsigned: logical
    return fe.b.cast(shifted, dt)


ops.KERNEL_BUILTINS[static_assert] = _static_assert
ops.KERNEL_BUILTINS[raw_div] = _elementwise(_raw_div)
ops.KERNEL_BUILTINS[raw_mod] = _elementwise(_raw_mod)
ops.KERNEL_BUILTINS[bit_shr] = _elementwise(_bit_shr)
