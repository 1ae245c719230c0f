"""Typed scalar expressions for the frontend: Taichi's promotion, casts, and constant folding.

An expression value in the frontend is one of: a Python number (a compile-time constant, folded
eagerly), an IR `Stmt` (a runtime scalar), a `MatVal` (a small vector/matrix of scalars), or any
other Python object (fields, funcs, modules: compile-time only). `Emitter` turns operations on
these into IR through an `IRBuilder`; it raises `FieldsimTypeError` on bad operand kinds.
"""
from __future__ import annotations

import math
import numbers
import types

import numpy as np

from fieldsim.errors import FieldsimTypeError, IntPowerError
from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import Op, Stmt
from fieldsim.ir.subnormals import SMALLEST_NORMAL, flushed_constant
from fieldsim.lang import types as T

BINOPS = {"+": Op.ADD, "-": Op.SUB, "*": Op.MUL, "/": Op.DIV, "//": Op.FLOORDIV, "%": Op.MOD,
          "**": Op.POW, "&": Op.BIT_AND, "|": Op.BIT_OR, "^": Op.BIT_XOR, "<<": Op.SHL,
          ">>": Op.SHR, "min": Op.MIN, "max": Op.MAX, "atan2": Op.ATAN2}
CMPOPS = {"<": Op.LT, "<=": Op.LE, ">": Op.GT, ">=": Op.GE, "==": Op.EQ, "!=": Op.NE}
_BOOLEAN_OPS = (Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE, Op.NOT)


def is_boolean(v) -> bool:
    """A value that is 0 or 1: a comparison, a `not`, `&`/`|` of such, a 0/1 constant, or
    `as_bool` of one."""
    if not isinstance(v, Stmt):
        return isinstance(v, (bool, int)) and v in (0, 1)
    if v.op in (Op.BIT_AND, Op.BIT_OR):
        return all(is_boolean(a) for a in v.args)
    return v.op in _BOOLEAN_OPS or (v.op == Op.CAST and v.dtype is T.u1 and is_boolean(v.args[0]))


def unbool(v):
    """The i32 0/1 under `as_bool`'s `u1` cast: conditions keep the comparison itself, which the
    checks' guard analysis reads (`if i + 1 < n and i < 0:`)."""
    while isinstance(v, Stmt) and v.op == Op.CAST and v.dtype is T.u1 and is_boolean(v.args[0]):
        v = v.args[0]
    return v


_PY = {"+": lambda a, b: a + b, "-": lambda a, b: a - b, "*": lambda a, b: a * b,
       "/": lambda a, b: a / b, "//": lambda a, b: a // b, "%": lambda a, b: a % b,
       "**": lambda a, b: a ** b, "&": lambda a, b: a & b, "|": lambda a, b: a | b,
       "^": lambda a, b: a ^ b, "<<": lambda a, b: a << b, ">>": lambda a, b: a >> b,
       "min": min, "max": max, "atan2": math.atan2, "<": lambda a, b: a < b,
       "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b,
       "==": lambda a, b: a == b, "!=": lambda a, b: a != b}


def _fits(v: int, dt) -> bool:
    lo, hi = (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1) if dt.is_signed else (0, (1 << dt.bits) - 1)
    return lo <= v <= hi


class MatVal:
    """A vector (ndim 1, shape (n,)) or matrix (ndim 2, shape (n, m)) of scalar values."""

    __slots__ = ("entries", "m", "n", "ndim")

    def __init__(self, entries, n, m=1, ndim=1):
        self.entries, self.n, self.m, self.ndim = list(entries), n, m, ndim
        assert len(self.entries) == n * m

    @staticmethod
    def vector(entries):
        return MatVal(entries, len(entries), 1, 1)

    @staticmethod
    def rows(rows):
        return MatVal([e for r in rows for e in r], len(rows), len(rows[0]), 2)

    def at(self, i, j=0):
        return self.entries[i * self.m + j]

    def map(self, fn):
        return MatVal([fn(e) for e in self.entries], self.n, self.m, self.ndim)

    @property
    def shape(self):
        return (self.n,) if self.ndim == 1 else (self.n, self.m)


class _KernelValueCheck(type):
    def __instancecheck__(cls, obj):
        return isinstance(obj, (Stmt, MatVal))


class Expr(metaclass=_KernelValueCheck):
    """Taichi's class of kernel-scope values, for `isinstance(v, ti.lang.expr.Expr)`: true of a
    runtime scalar (`Stmt`) and of a kernel's vector/matrix (`MatVal`, which Taichi 1.7.4 also
    makes an Expr), false of constants and fields. Helpers pick a vector's length from `.n` after
    this test. Never made; a class only to be tested against."""

    def __new__(cls, *args, **kwargs):
        raise TypeError("ti.lang.expr.Expr values are made by kernels, not constructed")


def _source_lines(loc) -> str:
    """Where a kernel expression is, with its line as written (indentation kept) and carets
    under it: the text Taichi's debug-mode warnings show."""
    if loc is None:
        return "a kernel"
    head = f'File "{loc.file}", line {loc.line}' + (f", in {loc.func}" if loc.func else "")
    text = loc.source.rstrip()
    end = loc.end_col if loc.end_col is not None else len(text)
    return f"{head}:\n{text}\n{' ' * loc.col}{'^' * max(1, end - loc.col)}"


class Emitter:
    """Typed operations over frontend values, emitting IR through `b`."""

    def __init__(self, builder: IRBuilder, default_fp, default_ip, debug=False, flush=False):
        self.b, self.fp, self.ip = builder, default_fp, default_ip
        self.debug = debug
        # the kernel runs with flush-to-zero (Taichi's x64 CPU backend): a subnormal constant,
        # folded operand or folded result is a zero of its sign, as Taichi's folder leaves it
        self.flush = flush

    def ftz(self, v: float, dtype) -> float:
        """`v`, a constant of float type `dtype`, as a flushing kernel has it."""
        if self.flush and -SMALLEST_NORMAL[32] < v < SMALLEST_NORMAL[32]:
            return flushed_constant(v, dtype.bits)
        return v

    # -- conversions
    def dtype_of(self, v):
        if isinstance(v, Stmt):
            return v.dtype
        if isinstance(v, float):  # (Python's own types before the ABCs, which are slow)
            return self.fp
        if isinstance(v, (int, numbers.Integral)):  # (bool is an int)
            return self.ip
        if isinstance(v, numbers.Real):
            return self.fp
        raise FieldsimTypeError(f"expected a scalar, got {describe(v)}")

    def resolve(self, dtype):
        """`dtype` with Python's `float`/`int` read as the default types, as Taichi reads them."""
        return T.concrete_dtype(dtype, self.fp, self.ip)

    def value(self, v, dtype=None) -> Stmt:
        """A runtime scalar of `dtype` (or v's own type) from a constant or a Stmt."""
        dtype = self.resolve(dtype)
        if isinstance(v, Stmt):
            return self.cast_stmt(v, dtype) if dtype is not None else v
        if is_number(v):
            dt = dtype or self.dtype_of(v)
            if dt is self.ip and type(v) is int:
                _check_literal_fits(v, dt)
            if isinstance(v, float) and not isinstance(v, bool):
                with np.errstate(over="ignore"):  # 1e300 as an f32 literal is inf, silently
                    v = self.ftz(float(self.fp.np.type(v)), self.fp)  # default_fp first, as Taichi
                if dt.bits == 1:  # as the runtime cast: any nonzero (NaN too) is true, 0.5 too
                    return self.b.const(int(v != 0), dt)
                if not dt.is_float:
                    if not _fits_int(v, dt):  # inf, 3e9 into i32: the backend's conversion
                        return self.b.cast(self.b.const(v, self.fp), dt)
                    v = math.trunc(v)
            else:
                self.check_int_literal(v, dt)
            return self.b.const(v, dt)
        raise FieldsimTypeError(f"expected a scalar, got {describe(v)}")

    def check_int_literal(self, v, dt):
        """A Python integer becoming a constant of integer type `dt` must fit default_ip (then
        it converts as Taichi's cast of a literal does: 300 into a u8 is 44) or `dt` itself
        (e.g. 2**40 added to an i64); one that fits neither would wrap silently (a template
        argument 2**40 + 7 read as 7), and Taichi refuses it: a FieldsimTypeError."""
        if isinstance(v, bool) or dt.is_float or dt.bits == 1 or not isinstance(v, numbers.Integral):
            return
        if not (_fits(v, self.ip) or _fits(v, dt)):
            raise FieldsimTypeError(f"Integer literal {v} exceeded the range of {dt} (and of "
                                    f"default_ip {self.ip}): give it a wider type, e.g. "
                                    f"`ti.i64({v})`/`ti.u64({v})`, or set default_ip in ti.init()")

    def cast(self, v, dtype):
        dtype = self.resolve(dtype)
        if isinstance(v, MatVal):
            return v.map(lambda e: self.cast(e, dtype))
        if isinstance(v, numbers.Number) and not isinstance(v, Stmt):
            if isinstance(v, float) and not dtype.is_float and dtype.bits > 1:
                return self.value(v, dtype)  # out of range: the backend's conversion
            self.check_int_literal(v, dtype)
            return self.b.const(v if dtype.is_float else int(v != 0) if dtype.bits == 1 else math.trunc(v), dtype)
        return self.cast_stmt(self.value(v), dtype)

    def cast_stmt(self, v: Stmt, dtype) -> Stmt:
        """`v` as `dtype`; a float constant to another float type folds, rounded and flushed as
        Taichi's folder does (`ti.cast(c, ti.f32)` of an f64 constant that is subnormal in f32
        is 0)."""
        if v.op == Op.CONST and v.dtype is not dtype and v.dtype.is_float and dtype.is_float:
            source = self.ftz(float(v.dtype.np.type(v.attr)), v.dtype)
            with np.errstate(over="ignore"):
                return self.b.const(self.ftz(float(dtype.np.type(source)), dtype), dtype)
        return self.b.cast(v, dtype)

    # -- scalar arithmetic
    def binop(self, op: str, a, b):
        if isinstance(a, MatVal) or isinstance(b, MatVal):
            return self.elementwise(op, a, b)
        _check_scalar(a, op)
        _check_scalar(b, op)
        if not isinstance(a, Stmt) and not isinstance(b, Stmt):
            out = _PY[op](a, b)
            # a negative Python number to a fractional power: NaN, as NumPy (and Taichi, whose
            # folded constants are NumPy scalars) gives, not Python's complex
            return math.nan if isinstance(out, complex) else out
        if op in CMPOPS:
            return self.compare(op, a, b)
        ta, tb = self.dtype_of(a), self.dtype_of(b)
        # a shift has its left operand's type (Taichi: `u8 << i32 -> u8`); the rest promote
        dt = ta if op in ("<<", ">>") and not tb.is_float else T.promote(ta, tb)
        folded = self._fold_constants(op, a, b, dt)
        if folded is not None:
            return folded
        if op == "/" and not dt.is_float:
            dt = self.fp
        special = self._power_or_atan2(op, a, b, dt, tb)
        if special is not None:
            return special
        if op in ("&", "|", "^", "<<", ">>") and dt.is_float:
            raise FieldsimTypeError(f"bitwise operator {op} needs integer operands, got {ta} and {tb}")
        if op == "//" and dt.is_float:
            return self.b.unary(Op.FLOOR, self.binop("/", a, b))
        if op == "%" and dt.is_float:
            av, bv = self.value(a, dt), self.value(b, dt)
            q = self.b.unary(Op.FLOOR, self.b.div(av, bv))
            return self.b.sub(av, self.b.mul(bv, q))
        return self._one_bit(op, self.b.binary(BINOPS[op], self.value(a, dt), self.value(b, dt)))

    def _one_bit(self, op: str, r: Stmt) -> Stmt:
        """A `u1` result kept to one bit, as Taichi's: `(a < b) + (c < d)` wraps to 0."""
        if r.dtype is T.u1 and op in ("+", "-", "*", "<<"):
            return self.b.binary(Op.BIT_AND, r, self.b.const(1, T.u1))
        return self.checked_shl(r) if op == "<<" else r

    def checked_shl(self, r: Stmt) -> Stmt:
        """`r = a << s`; with debug=True, as Taichi does, a line naming the source is printed
        when the shift loses bits (shifting back, arithmetic on signed and logical on unsigned
        types, does not give `a`), and the kernel carries on with the wrapped value."""
        if not self.debug:
            return r
        a, s = r.args
        where = _source_lines(self.b.loc).replace("%", "%%")
        guard = self.b.if_(self.b.binary(Op.NE, self.b.binary(Op.SHR, r, s), a))
        with self.b.into(guard.blocks[0]):
            self.b.emit(Op.PRINT, None, (), attr=f"Shift left overflow detected in {where}\n\n")
        return r

    def _fold_constants(self, op, a, b, dt):
        """A float `+ - * / //` of two constants as Taichi's constant folder computes it (each
        operand rounded to its own type, then to the op's, as at run time), or `x + 0`, `x * 1`
        with a Python constant (`_fold_identity`); None otherwise."""
        if not (dt.is_float and op in _FOLDED and _is_const(a) and _is_const(b)):
            return _fold_identity(op, a, b, dt)
        av, bv = (dt.np.type(self.ftz(float(dt.np.type(c.dtype.np.type(c.attr))), dt))
                  for c in (v if isinstance(v, Stmt) else self.value(v, dt) for v in (a, b)))
        return self.b.const(self.ftz(_FOLDED[op](av, bv, dt), dt), dt)

    def _power_or_atan2(self, op, a, b, dt, tb):
        """`a ** b` with an integer exponent (integers through f64, `_int_pow`; floats by
        repeated squaring, `_float_int_pow`) and `atan2` of integers (in default_fp); None for
        anything else."""
        if op == "atan2" and not dt.is_float:
            return self.binop(op, self.cast(a, self.fp), b)
        if op != "**" or (dt.is_float and not _integral_exponent(b, tb)):
            return None
        if not dt.is_float:
            return self._int_pow(a, b, self.dtype_of(a))
        whole = _whole_float_exponent(b, tb)
        return self._float_int_pow(self.value(a, dt), b if whole is None else whole)

    def _float_int_pow(self, x: Stmt, n):
        """`x ** n` for a float x and an integer n as Taichi computes it: binary exponentiation
        (a product of repeated squares; 1 / that for n < 0), not libm's pow, whose rounding
        differs in the last bit for about a third of the values (and costs a call). A constant
        x (a func's float argument) with a constant n folds as Taichi's constant folding does:
        the double-precision power rounded once to x's type."""
        if not isinstance(n, Stmt) and x.op == Op.CONST:
            base = self.ftz(float(x.dtype.np.type(x.attr)), x.dtype)
            return self.b.const(self.ftz(_folded_power(base, n, x.dtype), x.dtype), x.dtype)
        if not isinstance(n, Stmt):
            return self._power_by_squaring(x, n)
        r, base = self.b.const(1, x.dtype), x
        mag = self.select(self.compare("<", n, 0), self.binop("-", 0, n), n)
        for k in range(n.dtype.bits - 1):
            rest = self.binop(">>", mag, k)
            if k:  # squares only while bits remain: an overflowed square would NaN the adjoint
                base = self.select(self.compare("!=", rest, 0), self.b.mul(base, base), base)
            bit = self.compare("!=", self.binop("&", rest, 1), 0)
            r = self.select(bit, self.b.mul(r, base), r)
        if not n.dtype.is_signed:
            return r
        return self.select(self.compare("<", n, 0), self.b.div(self.b.const(1, x.dtype), r), r)

    def _power_by_squaring(self, x: Stmt, n: int):
        r, base, k = None, x, abs(n)
        while k:
            if k & 1:
                r = base if r is None else self.b.mul(r, base)
            k >>= 1
            if k:
                base = self.b.mul(base, base)
        if r is None:
            return self.b.const(1, x.dtype)
        return self.b.div(self.b.const(1, x.dtype), r) if n < 0 else r

    def _int_pow(self, a, b, dt):
        """`a ** b` for integers as Taichi 1.7.4 computes it: repeated squaring in the base's
        type `dt` (wrapping on overflow: `i8(3) ** 5 == -13`), the exponent taken by magnitude
        (`3 ** -2 == 9`); never through f64, which rounds i64 powers and saturates. A constant
        negative exponent is refused at compile time and, with debug=True, a runtime one fails
        an assertion, as Taichi's do: `2 ** -1` is not 0.5 here, and silently 2 would be wrong."""
        x = self.value(a, dt)
        if not isinstance(b, Stmt):
            if int(b) < 0:
                raise IntPowerError(f"Negative exponent in pow(int, int) is not allowed: "
                                        f"{dt} ** {int(b)} (write a float base, e.g. "
                                        f"`float(a) ** {int(b)}`, for a fraction)")
            return self._power_by_squaring(x, int(b))
        mag = b if not b.dtype.is_signed else \
            self.select(self.compare("<", b, 0), self.binop("-", 0, b), b)
        if self.debug and b.dtype.is_signed:
            self.b.emit(Op.ASSERT, None, (self.value(self.compare(">=", b, 0), T.i32),),
                        attr="Negative exponent in pow(int, int) is not allowed.")
        r, base = self.b.const(1, dt), x
        for k in range(b.dtype.bits):
            if k:
                base = self.b.mul(base, base)
            bit = self.compare("!=", self.binop("&", self.binop(">>", mag, k), 1), 0)
            r = self.select(bit, self.b.mul(r, base), r)
        return r

    def compare(self, op: str, a, b):
        if not isinstance(a, Stmt) and not isinstance(b, Stmt):
            return int(_PY[op](a, b))
        dt = T.promote(self.dtype_of(a), self.dtype_of(b))
        return self.b.binary(CMPOPS[op], self.value(a, dt), self.value(b, dt))

    def unop(self, op: Op, a, float_only=False):
        if isinstance(a, MatVal):
            return a.map(lambda e: self.unop(op, e, float_only))
        _check_scalar(a, op.name.lower())
        v = self.value(a)
        if float_only and not v.dtype.is_float:
            v = self.b.cast(v, self.fp)
        if op in (Op.FLOOR, Op.CEIL, Op.ROUND) and not v.dtype.is_float:
            return v
        if op == Op.NOT:
            return self.b.emit(Op.NOT, T.i32, (v,))
        if v.dtype is T.u1 and op in (Op.NEG, Op.BIT_NOT, Op.ABS):  # one bit: -b is b, ~b is not b
            return v if op != Op.BIT_NOT else self.b.binary(Op.BIT_XOR, v, self.b.const(1, T.u1))
        if op in _FOLDED_UNARY and v.op == Op.CONST and v.dtype.is_float:
            return self.folded_const(_FOLDED_UNARY[op], v)
        if op in _EXACT_UNARY and v.op == Op.CONST and v.dtype.is_float:  # then a cast folds too
            return self.b.const(_EXACT_UNARY[op](self.ftz(float(v.dtype.np.type(v.attr)), v.dtype)),
                                v.dtype)
        return self.b.unary(op, v)

    def folded_const(self, fns, v: Stmt) -> Stmt:
        """A math function of the float constant `v` folded as Taichi's folder does: of the
        constant's value in its type (an f32 `ti.cast(1e20, ti.f32)` is 100000002004087734272),
        in double precision, rounded once, subnormals flushed on both sides."""
        x = self.ftz(float(v.dtype.np.type(v.attr)), v.dtype)
        return self.b.const(self.ftz(folded_math(fns, x, v.dtype), v.dtype), v.dtype)

    def as_bool(self, v):
        """A scalar comparison's or `not`'s value as Taichi 1.7.4 types it: a `u1`, so `~(a < b)`
        is the logical not, `(a < b) + (a < b)` wraps to 0 and `-(a < b)` is 1."""
        return self.b.cast(v, T.u1) if isinstance(v, Stmt) else v

    def truthy(self, v) -> Stmt | int:
        """An i32 0/1 condition from any scalar."""
        if isinstance(v, MatVal):
            raise FieldsimTypeError("a vector/matrix cannot be used as a condition; "
                                    "use .all()/.any() style reductions explicitly")
        if not isinstance(v, Stmt):
            return int(bool(v))
        v = unbool(v)
        if v.op in (Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE, Op.NOT):
            return v
        if v.dtype.is_float:  # Python's truth: a NaN is true (`!=` is ordered, so false for NaN)
            return self.b.unary(Op.NOT, self.compare("==", v, 0))
        return self.compare("!=", v, 0)

    def branch_dtype(self, v):
        """The type of a select's or conditional expression's side: a Python bool is Taichi's u1
        constant there, so `f = False if c else True` declares a u1 variable."""
        return T.u1 if isinstance(v, bool) else self.dtype_of(v)

    def select(self, c, a, b):
        if isinstance(c, MatVal):
            a = a if isinstance(a, MatVal) else c.map(lambda _: a)
            b = b if isinstance(b, MatVal) else c.map(lambda _: b)
            return MatVal([self.select(ci, x, y) for ci, x, y in zip(c.entries, a.entries, b.entries)],
                          c.n, c.m, c.ndim)
        if isinstance(a, MatVal) or isinstance(b, MatVal):
            a, b = self.broadcast(a, b)
            return MatVal([self.select(c, x, y) for x, y in zip(a.entries, b.entries)],
                          a.n, a.m, a.ndim)
        c = self.truthy(c)
        dt = T.promote(self.branch_dtype(a), self.branch_dtype(b))
        if not isinstance(c, Stmt):  # the result still has both branches' type, as in Taichi
            chosen = a if c else b
            if isinstance(chosen, Stmt):
                return self.b.cast(chosen, dt) if chosen.dtype != dt else chosen
            return float(chosen) if dt.is_float else chosen
        return self.b.select(c, self.value(a, dt), self.value(b, dt))

    # -- vectors and matrices
    def broadcast(self, a, b):
        if not isinstance(a, MatVal):
            a = b.map(lambda _: a)
        if not isinstance(b, MatVal):
            b = a.map(lambda _: b)
        if a.shape != b.shape:
            raise FieldsimTypeError(f"shape mismatch: {a.shape} and {b.shape}")
        return a, b

    def elementwise(self, op: str, a, b):
        a, b = self.broadcast(a, b)
        return MatVal([self.entry_binop(op, x, y) for x, y in zip(a.entries, b.entries)],
                      a.n, a.m, a.ndim)

    def entry_binop(self, op: str, x, y):
        """`x op y` for two matrix entries. Constant float entries are typed as in Taichi, whose
        kernel-scope matrices hold default_fp constants: `gravity * dt` with a Python-scope
        `ti.Vector([0, -9.8, 0])` is an f32 product there (a Python float product rounded
        once differs in the last bit: a cloth falling on a ball then slid off another side)."""
        if op in CMPOPS and is_number(x) and is_number(y):
            # a u1 constant, as Taichi's matrix entries compare: `(v > w).sum()` wraps as at run time
            return self.b.const(int(_PY[op](x, y)), T.u1)
        if isinstance(x, Stmt) or isinstance(y, Stmt) or op in CMPOPS or not (is_number(x) and is_number(y)):
            return self.binop(op, x, y)
        if isinstance(x, int) and isinstance(y, int) and op != "/":
            return self.binop(op, x, y)
        t = self.fp.np.type
        with np.errstate(all="ignore"):
            return float(_PY[op](t(x), t(y)))

    def matmul(self, a: MatVal, b: MatVal):
        if not isinstance(a, MatVal) or not isinstance(b, MatVal):
            raise FieldsimTypeError("@ needs a matrix/vector on both sides")
        if a.ndim == 1 and b.ndim == 1:
            return self.dot(a, b)
        if a.ndim == 1:  # as Taichi: vector @ matrix reads the vector as a row, gives a vector
            if a.n != b.n:
                raise FieldsimTypeError(f"matmul shape mismatch: {a.shape} @ {b.shape}")
            return MatVal.vector(self.matmul(MatVal(a.entries, 1, a.n, 2), b).entries)
        if a.m != b.n:
            raise FieldsimTypeError(f"matmul shape mismatch: {a.shape} @ {b.shape}")
        # With fast_math=False, as Taichi 1.7.4, every entry's sum starts from
        # `a[0, 0] * b[0, 0] * 0`: +0.0 when that product is >= 0, so an entry whose products
        # are all -0.0 is +0.0, and NaN when it is inf or NaN, which reaches every entry. Under
        # fast-math (no signed zeros) the start is left out: it would cost every matmul an add
        # per entry that LLVM cannot fold (x * 0 is NaN for an infinite x).
        from fieldsim.lang import runtime
        zero = None if runtime.get().fast_math else \
            self.entry_binop("*", self.entry_binop("*", a.at(0, 0), b.at(0, 0)), 0)
        out = []
        for r in range(a.n):
            for c in range(b.m):
                acc = zero
                for k in range(a.m):
                    t = self.entry_binop("*", a.at(r, k), b.at(k, c))
                    acc = t if acc is None else self.entry_binop("+", acc, t)
                out.append(acc)
        if b.ndim == 1:
            return MatVal.vector(out)
        return MatVal(out, a.n, b.m, 2)

    def dot(self, a: MatVal, b: MatVal):
        if len(a.entries) != len(b.entries):
            raise FieldsimTypeError(f"dot of shapes {a.shape} and {b.shape}")
        acc = None
        for x, y in zip(a.entries, b.entries):
            t = self.entry_binop("*", x, y)
            acc = t if acc is None else self.entry_binop("+", acc, t)
        return acc

    def reduce(self, op: str, a: MatVal):
        acc = a.entries[0]
        for e in a.entries[1:]:
            acc = self.binop(op, acc, e)
        return acc


def _fold_identity(op, a, b, dt):
    """x + 0, x - 0, x * 1, 0 + x, 1 * x with a constant (a Python number or a typed constant,
    such as an entry of `Matrix.zero(ti.f64, ...)`: Taichi's simplifier folds both, so
    `-0.0 + 0` stays -0.0): the other operand, if typed alike."""
    bv, av = _const_number(b), _const_number(a)
    if isinstance(a, Stmt) and bv is not None and a.dtype is dt and (
            (op in ("+", "-") and bv == 0) or (op == "*" and bv == 1)
            or (op == "//" and bv == 1 and not dt.is_float)):
        return a
    if isinstance(b, Stmt) and av is not None and b.dtype is dt and (
            (op == "+" and av == 0) or (op == "*" and av == 1)):
        return b
    return None


def _const_number(v):
    if is_number(v):
        return v
    if isinstance(v, Stmt) and v.op == Op.CONST and is_number(v.attr):
        return v.attr
    return None


def _is_const(v) -> bool:
    return not isinstance(v, Stmt) or v.op == Op.CONST


def _folded_floordiv(a, b, dtype) -> float:
    """floor(a / b) of two constants, the quotient in double (`0.2 // 0.002` of f32 values is
    99, where the f32 quotient rounds to 100), as Taichi folds it."""
    with np.errstate(all="ignore"):
        return float(dtype.np.type(np.floor(np.float64(a) / np.float64(b))))


def _folded_arith(fn):
    def fold(a, b, dtype):
        with np.errstate(all="ignore"):
            return float(dtype.np.type(fn(a, b)))
    return fold


# Float ops of two constants (a local bound once to a number, a func's float argument) fold at
# compile time, each rounded in its type, as Taichi's constant folder: `c / s` of constants is
# the quotient, not a multiplication by fast-math's reciprocal of the constant divisor
def _folded_atan2(a, b, dtype) -> float:
    return folded_math((math.atan2, np.arctan2), float(a), dtype, float(b))


_FOLDED = {"+": _folded_arith(np.add), "-": _folded_arith(np.subtract),
           "*": _folded_arith(np.multiply), "/": _folded_arith(np.divide), "//": _folded_floordiv,
           "atan2": _folded_atan2}


def _rsqrt(x):
    return 1 / math.sqrt(x)


def _np_rsqrt(x):
    return 1 / np.sqrt(x)


# Taichi's constant folder evaluates these on a constant float operand (a local bound once to a
# number, a func's float argument, a folded product) in double precision and rounds once to the
# operand's type; the run-time f32 functions differ in the last bit for some inputs (measured on
# 1.7.4, 120 f32 values each: tan 4 differ, tanh 26, acos 8; `ti.tan(fov / 2)` of a camera)
_FOLDED_UNARY = {Op.SIN: (math.sin, np.sin), Op.COS: (math.cos, np.cos),
                 Op.TAN: (math.tan, np.tan), Op.ASIN: (math.asin, np.arcsin),
                 Op.ACOS: (math.acos, np.arccos), Op.ATAN: (math.atan, np.arctan),
                 Op.TANH: (math.tanh, np.tanh), Op.EXP: (math.exp, np.exp),
                 Op.LOG: (math.log, np.log), Op.SQRT: (math.sqrt, np.sqrt)}
RSQRT_FNS = (_rsqrt, _np_rsqrt)
# exact on a constant: folded, so a narrowing cast of the result folds and flushes as Taichi's
# (`ti.abs(ti.f64(1e-45))` stored to an f32 is 0)
_EXACT_UNARY = {Op.ABS: abs, Op.NEG: lambda x: -x}


def folded_math(fns, x: float, dtype, *more: float) -> float:
    """`fns[0](x, *more)` (C's double libm, as Taichi's constant folder) rounded to `dtype`;
    outside the domain numpy's value (`log(-1)` NaN, `exp(1000)` inf, `1 / sqrt(0)` inf)."""
    try:
        r = fns[0](x, *more)
    except (ValueError, OverflowError, ZeroDivisionError):
        with np.errstate(all="ignore"):
            r = float(fns[1](np.float64(x), *map(np.float64, more)))
    with np.errstate(over="ignore"):
        return float(dtype.np.type(r))


def _fits_int(v: float, dt) -> bool:
    """Whether the float constant v truncates to a value of the integer type dt."""
    if not math.isfinite(v):
        return False
    lo, hi = (-(2 ** (dt.bits - 1)), 2 ** (dt.bits - 1)) if dt.is_signed else (0, 2 ** dt.bits)
    return lo <= math.trunc(v) < hi


def _check_literal_fits(v: int, ip) -> None:
    """A Python int becoming a default_ip value must fit it: Taichi 1.7.4 refuses the literal at
    compile time (fieldsim wrapped it silently: `x = 3000000000` was -1294967296)."""
    lo, hi = (-(1 << (ip.bits - 1)), 1 << (ip.bits - 1)) if ip.is_signed else (0, 1 << ip.bits)
    if not lo <= v < hi:
        raise FieldsimTypeError(f"Integer literal {v} exceeded the range of default_ip: {ip}, "
                                f"please specify the dtype via e.g. `ti.u64({v})` or set a "
                                "different `default_ip` in `ti.init()`")


def _folded_power(x: float, n: int, dtype) -> float:
    """C's pow(x, n) in double (what Taichi's constant folder calls), rounded to `dtype`."""
    try:
        r = math.pow(x, n)
    except (OverflowError, ValueError):
        r = math.inf if x > 0 or n % 2 == 0 else -math.inf
        if x == 0:
            r = math.copysign(math.inf, x) if n % 2 else math.inf
    with np.errstate(over="ignore"):
        return float(dtype.np.type(r))


# Taichi 1.7.4 also raises a float to a constant float exponent with a whole value up to this
# magnitude by repeated squaring (measured: `x ** 3.0`, `ti.pow(x, -32.0)` equal the product
# bit for bit; `x ** 33.0` is libm's pow)
_WHOLE_EXPONENT_MAX = 32


def _whole_float_exponent(b, tb) -> int | None:
    """A constant float exponent with a whole value (`3.0`), within _WHOLE_EXPONENT_MAX, as an
    int; None for anything else."""
    if isinstance(b, Stmt):
        if not tb.is_float or b.op != Op.CONST:
            return None
        b = float(b.attr)
    if not isinstance(b, float) or not b.is_integer() or abs(b) > _WHOLE_EXPONENT_MAX:
        return None
    return int(b)


def _integral_exponent(b, tb) -> bool:
    """An exponent Taichi raises a float to by repeated squaring: an integer (a Python int or
    an integer-typed value; not bool, which Python also counts as int), or a constant float
    with a whole value (`_whole_float_exponent`)."""
    if _whole_float_exponent(b, tb) is not None:
        return True
    if isinstance(b, Stmt):
        return not tb.is_float
    return isinstance(b, int) and not isinstance(b, bool)


def is_number(v) -> bool:
    """`isinstance(v, numbers.Number)`, with Python's int and float and the IR's `Stmt` decided
    first: an ABC check costs about 1 us, and the frontend asks thousands of times a kernel."""
    if isinstance(v, (int, float)):
        return True
    return not isinstance(v, Stmt) and isinstance(v, numbers.Number)


def _check_scalar(v, op):
    if isinstance(v, Stmt) or is_number(v):
        return
    raise FieldsimTypeError(f"unsupported operand for {op}: {describe(v)}")


def _describe_items(v) -> str:
    """A list/tuple of kernel values by its items: their reprs are internal objects."""
    items = ", ".join(describe(e) for e in v[:4]) + (", ..." if len(v) > 4 else "")
    return f"a Python {type(v).__name__} of {len(v)} ({items})"


def describe(v) -> str:
    if isinstance(v, MatVal):
        return f"a {'vector' if v.ndim == 1 else 'matrix'} of shape {v.shape}"
    if isinstance(v, Stmt):
        return f"a {v.dtype} value"
    from fieldsim.lang.field import Field
    if isinstance(v, Field):
        return f"{v._what} (index it, e.g. x[i])"
    from fieldsim.lang.struct import StructValue
    if isinstance(v, StructValue):  # not "StructFieldRef an element of ..."
        return v.describe()
    if isinstance(v, types.ModuleType):  # its repr carries a long path: the name says enough
        return f"module {v.__name__!r}"
    if isinstance(v, (list, tuple)) and any(isinstance(e, (MatVal, Stmt)) for e in v):
        return _describe_items(v)
    if isinstance(v, dict):  # its values' reprs would be fieldsim's IR statements
        return (f"a Python dict (keys {', '.join(map(repr, v))}; kernels compute with "
                "vectors and structs, not dicts)")
    text = repr(v)
    if len(text) > 80:  # shorten long reprs visibly, never mid-name without a mark
        text = text[:77] + "..."
    return f"{type(v).__name__} {text}"
