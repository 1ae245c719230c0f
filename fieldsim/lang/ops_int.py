"""Taichi's raw arithmetic and bit builtins: `raw_div`, `raw_mod`, `bit_shl`, `bit_sar`,
`bit_shr`, `bit_cast`, and `frexp` (a float's binary mantissa and exponent, read from its bits).

Takes scalars or vectors/matrices (element-wise) in either scope. Guarantees Taichi 1.7.4's
semantics: `raw_div`/`raw_mod` are C's (truncating) division and remainder on kernel values,
not Python's floor versions (on two Python ints `raw_div` is Python's `//`, as Taichi folds it); `bit_sar` is an arithmetic and `bit_shr` a logical right shift whatever the
signedness of the operand; `bit_cast` reinterprets the bits of a scalar as another type of the
same width. Kernel-scope lowering only combines existing IR ops (plus `CAST` with attr "bit").
Also registers Python's `operator.add`-style functions as kernel builtins (Taichi programs call
`ops(a, b)` with `ops = operator.add`) and Taichi's `ti.lang.ops.add`-style names.
"""
from __future__ import annotations

import numbers

import numpy as np

from fieldsim.errors import FieldsimTypeError
from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal
from fieldsim.lang.ops import KERNEL_BUILTINS, _dt

_UNSIGNED = {8: T.u8, 16: T.u16, 32: T.u32, 64: T.u64}
_SIGNED = {8: T.i8, 16: T.i16, 32: T.i32, 64: T.i64}


def _elementwise2(fe, a, b, scalar_fn):
    if isinstance(a, MatVal) or isinstance(b, MatVal):
        a, b = fe.e.broadcast(a, b)
        return MatVal([scalar_fn(fe, x, y) for x, y in zip(a.entries, b.entries)], a.n, a.m, a.ndim)
    return scalar_fn(fe, a, b)


def _py_elementwise(fn):
    def apply(a, b):
        if hasattr(a, "to_numpy") or hasattr(b, "to_numpy"):
            from fieldsim.lang.matrix import _wrap
            av = np.asarray(a.to_numpy() if hasattr(a, "to_numpy") else a).tolist()
            bv = np.asarray(b.to_numpy() if hasattr(b, "to_numpy") else b).tolist()
            # element by element on Python numbers: C semantics, no numpy overflow surprises
            return _wrap(np.vectorize(fn, otypes=[object])(av, bv).astype(
                np.result_type(np.asarray(av), np.asarray(bv))))
        return fn(a, b)
    return apply


# ---- raw_div / raw_mod ------------------------------------------------------------------------
def _py_raw_div(a, b):
    # Taichi 1.7.4 folds raw_div of two Python ints with Python's floor `//` (its c_div), while
    # kernel values divide as C does; programs see both, so each scope keeps its own
    if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral):
        return int(a) // int(b)
    return a / b


def _py_raw_mod(a, b):
    if isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral):
        q = abs(int(a)) // abs(int(b))  # C's truncating quotient (Taichi's c_mod)
        return int(a) - int(b) * (q if (a >= 0) == (b >= 0) else -q)
    return float(np.fmod(a, b))


def raw_div(a, b):
    # Python scope: Taichi's raw_div (see `_py_raw_div`); on vectors Taichi's c_div meets numpy
    # integers, not Python ints, so it divides them truly (docstring: fieldsim/_docstrings.py)
    if hasattr(a, "to_numpy") or hasattr(b, "to_numpy"):
        from fieldsim.lang.matrix import _wrap
        return _wrap(np.asarray(a.to_numpy() if hasattr(a, "to_numpy") else a)
                     / np.asarray(b.to_numpy() if hasattr(b, "to_numpy") else b))
    return _py_raw_div(a, b)


raw_mod = _py_elementwise(_py_raw_mod)
raw_mod.__name__ = "raw_mod"


def _common(fe, a, b):
    dt = T.promote(fe.e.dtype_of(a), fe.e.dtype_of(b))
    return fe.e.value(a, dt), fe.e.value(b, dt), dt


def _raw_div_scalar(fe, a, b):
    if not isinstance(a, Stmt) and not isinstance(b, Stmt):
        return _py_raw_div(a, b)
    av, bv, _ = _common(fe, a, b)
    return fe.b.binary(Op.DIV, av, bv)  # IR DIV: true division for floats, C division for ints


def _raw_mod_scalar(fe, a, b):
    if not isinstance(a, Stmt) and not isinstance(b, Stmt):
        return _py_raw_mod(a, b)
    av, bv, dt = _common(fe, a, b)
    if dt.is_float:
        return fe.b.binary(Op.MOD, av, bv)  # lowered to frem: C's fmod
    return fe.b.sub(av, fe.b.mul(bv, fe.b.binary(Op.DIV, av, bv)))


KERNEL_BUILTINS[raw_div] = lambda fe, n, a, k: _elementwise2(fe, a[0], a[1], _raw_div_scalar)
KERNEL_BUILTINS[raw_mod] = lambda fe, n, a, k: _elementwise2(fe, a[0], a[1], _raw_mod_scalar)


# ---- shifts ---------------------------------------------------------------------------------------
def _py_shift(kind):
    def fn(a, b):
        if not (isinstance(a, numbers.Integral) and isinstance(b, numbers.Integral)):
            raise FieldsimTypeError(f"bit_{kind} needs integer operands, got {a!r} and {b!r}")
        a = int(a)
        if kind == "shl":
            return a << int(b)
        if kind == "sar":
            return a >> int(b)
        return (a & 0xFFFFFFFF if a < 0 else a) >> int(b)  # a Python int is an i32 here
    return fn


def _shift_scalar(kind):
    def lower(fe, a, b):
        if not isinstance(a, Stmt) and not isinstance(b, Stmt):
            return _py_shift(kind)(a, b)
        dt = fe.e.dtype_of(a)
        if not dt.is_int or not fe.e.dtype_of(b).is_int:
            raise FieldsimTypeError(f"bit_{kind} needs integer operands, got {dt} and "
                                    f"{fe.e.dtype_of(b)}")
        av, bv = fe.e.value(a, dt), fe.e.value(b, dt)
        if kind == "shl":
            r = fe.b.binary(Op.SHL, av, bv)
            return fe.e.checked_shl(r)
        # IR SHR is arithmetic on signed and logical on unsigned types: pick the view we need
        view = (_SIGNED if kind == "sar" else _UNSIGNED)[dt.bits]
        r = fe.b.binary(Op.SHR, fe.b.cast(av, view), fe.b.cast(bv, view))
        return fe.b.cast(r, dt)
    return lower


def _def_shift(kind):
    fn = _py_elementwise(_py_shift(kind))
    fn.__name__ = f"bit_{kind}"
    KERNEL_BUILTINS[fn] = lambda fe, n, a, k: _elementwise2(fe, a[0], a[1], _shift_scalar(kind))
    return fn


bit_shl = _def_shift("shl")
bit_sar = _def_shift("sar")
bit_shr = _def_shift("shr")


# ---- bit_cast -------------------------------------------------------------------------------------
def bit_cast(obj, dtype):
    """Python scope: reinterpret a number's bits (numpy view)."""
    src = np.asarray(obj)
    if src.dtype.kind == "f":
        src = src.astype({2: np.float16, 4: np.float32, 8: np.float64}[dtype.np.itemsize]) \
            if src.dtype.itemsize != dtype.np.itemsize else src
    else:
        src = src.astype({1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}[dtype.np.itemsize]) \
            if src.dtype.itemsize != dtype.np.itemsize else src
    return src.view(dtype.np).item()


def _bit_cast_kernel(fe, node, args, kw):
    v = args[0]
    dt = _dt(fe, args[1] if len(args) > 1 else kw["dtype"])
    if isinstance(v, MatVal):
        raise FieldsimTypeError("ti.bit_cast takes a scalar, got " + ("a vector" if v.ndim == 1
                                                                       else "a matrix"))
    v = fe.e.value(v)
    if v.dtype.bits != dt.bits or dt is T.u1 or v.dtype is T.u1:
        raise FieldsimTypeError(f"ti.bit_cast needs types of the same width, got {v.dtype} "
                                f"({v.dtype.bits} bits) to {dt} ({dt.bits} bits)")
    if v.dtype is dt:
        return v
    if v.dtype.is_int and dt.is_int:
        return fe.b.cast(v, dt)  # same width: a plain integer conversion keeps the bits
    return fe.b.emit(Op.CAST, dt, (v,), attr="bit")


KERNEL_BUILTINS[bit_cast] = _bit_cast_kernel


# ---- frexp ----------------------------------------------------------------------------------------
def frexp(x):
    """`(m, e)` with x = m * 2**e and 0.5 <= abs(m) < 1, as C's `frexp` (`(x, 0)` for 0, inf
    and NaN); element-wise on vectors and matrices.

    >>> fs.frexp(12.5)
    (0.78125, 4)
    """
    if hasattr(x, "to_numpy"):
        from fieldsim.lang.matrix import _wrap
        m, e = np.frexp(x.to_numpy())
        return _wrap(m), _wrap(e.astype(np.int32))
    m, e = np.frexp(x)
    return (m.item(), int(e)) if np.ndim(m) == 0 else (m, e.astype(np.int32))


# (fraction bits, exponent mask, exponent of 0.5's bits)
_FLOAT_LAYOUT = {32: (23, 0xFF, 126), 64: (52, 0x7FF, 1022)}


def _frexp_scalar(fe, x):
    b = fe.b
    v = fe.e.value(x)
    if not v.dtype.is_float:
        v = b.cast(v, fe.e.fp)
    elif v.dtype.bits == 16:
        v = b.cast(v, T.f32)
    frac, mask, half = _FLOAT_LAYOUT[v.dtype.bits]
    ut = _UNSIGNED[v.dtype.bits]

    def const(k):
        return b.const(k, ut)

    def exponent_bits(bits):
        return b.binary(Op.BIT_AND, b.binary(Op.SHR, bits, const(frac)), const(mask))
    raw = exponent_bits(b.emit(Op.CAST, ut, (v,), attr="bit"))
    # a subnormal is scaled into the normal range first (exactly: a power of two)
    subnormal = b.binary(Op.EQ, raw, const(0))
    w = fe.e.select(subnormal, b.mul(v, b.const(2.0 ** 64, v.dtype)), v)
    bits = b.emit(Op.CAST, ut, (w,), attr="bit")
    e = b.sub(b.cast(exponent_bits(bits), T.i32), b.const(half, T.i32))
    e = fe.e.select(subnormal, b.sub(e, b.const(64, T.i32)), e)
    keep = ~(mask << frac) & ((1 << v.dtype.bits) - 1)  # sign and fraction
    m_bits = b.binary(Op.BIT_OR, b.binary(Op.BIT_AND, bits, const(keep)), const(half << frac))
    m = b.emit(Op.CAST, v.dtype, (m_bits,), attr="bit")
    special = b.binary(Op.BIT_OR, b.binary(Op.EQ, v, b.const(0.0, v.dtype)),
                       b.binary(Op.EQ, raw, const(mask)))  # 0, inf, NaN: (x, 0)
    return fe.e.select(special, v, m), fe.e.select(special, 0, e)


def _frexp_kernel(fe, node, args, kw):
    x = args[0]
    if isinstance(x, MatVal):
        parts = [_frexp_scalar(fe, v) for v in x.entries]
        return (MatVal([p[0] for p in parts], x.n, x.m, x.ndim),
                MatVal([p[1] for p in parts], x.n, x.m, x.ndim))
    return _frexp_scalar(fe, x)


KERNEL_BUILTINS[frexp] = _frexp_kernel


# ---- Python's `operator` functions and Taichi's `ti.lang.ops.add`-style names in kernels -------
def _operator_builtins():
    import operator

    from fieldsim.lang import ops as ops_module

    binary = {operator.add: "+", operator.sub: "-", operator.mul: "*", operator.truediv: "/",
              operator.floordiv: "//", operator.mod: "%", operator.pow: "**",
              operator.lshift: "<<", operator.rshift: ">>", operator.and_: "&",
              operator.or_: "|", operator.xor: "^", operator.eq: "==", operator.ne: "!=",
              operator.lt: "<", operator.le: "<=", operator.gt: ">", operator.ge: ">="}

    def lower(op):
        def handler(fe, node, args, kw):
            from fieldsim.lang.frontend_expr import coerce_pair
            a, b = coerce_pair(*args)
            if not isinstance(a, (Stmt, MatVal)) and not isinstance(b, (Stmt, MatVal)):
                from fieldsim.lang.expr import _PY
                return _PY[op](a, b)
            return fe.e.binop(op, a, b)
        return handler

    for fn, op in binary.items():
        KERNEL_BUILTINS[fn] = lower(op)
    KERNEL_BUILTINS[operator.matmul] = lambda fe, node, args, kw: fe.e.matmul(args[0], args[1])
    KERNEL_BUILTINS[operator.neg] = lambda fe, node, args, kw: fe.e.unop(Op.NEG, args[0]) \
        if isinstance(args[0], (Stmt, MatVal)) else -args[0]
    # Taichi's `ti.lang.ops` module names (Python scope: the operator itself)
    for name, fn in (("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
                     ("truediv", operator.truediv), ("floordiv", operator.floordiv),
                     ("mod", operator.mod), ("neg", operator.neg), ("matmul", operator.matmul),
                     ("bit_and", operator.and_), ("bit_or", operator.or_),
                     ("bit_xor", operator.xor)):
        if not hasattr(ops_module, name):
            setattr(ops_module, name, fn)
    ops_module.raw_div, ops_module.raw_mod = raw_div, raw_mod
    ops_module.bit_shl, ops_module.bit_sar, ops_module.bit_shr = bit_shl, bit_sar, bit_shr
    ops_module.bit_cast = bit_cast


_operator_builtins()
