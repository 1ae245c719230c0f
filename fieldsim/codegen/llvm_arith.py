"""Arithmetic lowering table: `LOWER_FLOAT[Op]` / `LOWER_INT[Op]` map a scalar op to llvmlite.

Each entry takes `(lowering, builder, dtype, *operands)`; float ops carry the lowering's
fast-math flags (`lw.fmf`, empty in exact mode). Comparisons return i32 0/1. Integer
division and modulo never trap: by zero they give 0, and INT_MIN / -1 wraps to INT_MIN (x86
would raise SIGFPE for both). Python semantics for `//` and `%`. Shifts by an amount outside
[0, bits) give what Python's shift truncated to the type gives (0, or -1 for a negative signed
value shifted right), never LLVM's poison.
"""
from __future__ import annotations

from llvmlite import ir as L

from fieldsim.codegen import vector_math
from fieldsim.ir.ir import COMPARE, Op, Stmt

I32 = L.IntType(32)
_CMP = {Op.LT: "<", Op.LE: "<=", Op.GT: ">", Op.GE: ">=", Op.EQ: "==", Op.NE: "!="}


def _math(name):
    def lower(lw, b, dt, *a):
        target = lw.cg.target
        libm = name in vector_math.FUNCTIONS and dt.is_float and dt.bits in (32, 64)
        vectors = lw.fmf and target.vector_math is not None
        if libm and target.scalar_libm and not vectors:
            return vector_math.scalar_call(b, lw.cg.module, name, dt.bits, list(a))
        v = target.math(b, lw.cg.module, name, dt, list(a))
        # sqrt only, with the target's approx_math too (the CPU's adds nothing: an estimate
        # needs `afn`, which only fast_rsqrt asks for; CUDA's `afn` is sqrt.approx). Not pow
        # (LLVM would turn pow(x, float(n)) into llvm.powi, a call to libgcc's __powisf2 the
        # JIT cannot link).
        if lw.fmf and name == "sqrt" and isinstance(v, L.CallInstr):
            for f in lw.approx_fmf:
                v.fastmath.add(f)
        if libm and vectors and isinstance(v, L.CallInstr):
            target.vector_math.attach(v, lw.cg.module, name, v.type)
        return v
    return lower


# Functions that take 1/sqrt estimates get LLVM's bare hardware estimate (x86 `rsqrtps`, 12 bits,
# or `vrsqrt14ps`, 14 bits) without LLVM's own Newton step, whose form gives NaN at x = 0 and is
# not exact where the result is; and 512-bit vectors where the machine has them (16 lanes per
# instruction and the 14-bit estimate; LLVM prefers 256 bits on x86 by default).
RSQRT_ESTIMATE_ATTRS = ('"prefer-vector-width"="512"', '"reciprocal-estimates"="sqrtf:0,vec-sqrtf:0"')
_FINITE = 0x1F8  # llvm.is.fpclass: negative or positive normal, subnormal or zero


def fast_rsqrt(lw, b, x):
    """1/sqrt(x), f32, under fast-math: the hardware estimate and one third-order Newton step.

    Why: a square root and a division share x86's divider (8 lanes per 5-6 cycles each), and
    gravity's pair loop waits on it; the estimate and its refinement are eight pipelined
    instructions. With e = 1 - x y^2 (an FMA residual), y (1 + e/2 + 3e^2/8) is within about an
    ulp of the rounded 1/sqrt(x) from a 12- or 14-bit estimate alike (every lane and machine
    agrees to an ulp), and exact where the result is: x a power of 4, e.g. 1/sqrt(4) = 0.5,
    which the polar decomposition of an identity deformation needs for a zero stress at rest.
    x = +-0, +inf, negative or NaN give the estimate itself: +-inf, 0, NaN, IEEE's values. A
    subnormal x gives the refined value where the estimate takes subnormals (`vrsqrt14ps`) and
    +inf where it treats them as 0 (`rsqrtps`), as denormals-are-zero does under -ffast-math.
    Tests: tests/codegen/test_rsqrt_estimate.py."""
    for attr in RSQRT_ESTIMATE_ATTRS:
        set.add(lw.fn.attributes, attr)  # string attributes: llvmlite knows only keyword ones
    module, ty = lw.cg.module, x.type

    def c(value):
        return L.Constant(ty, value)

    root = b.call(module.declare_intrinsic("llvm.sqrt", [ty]), [x])
    root.fastmath.add("afn")
    estimate = b.fdiv(c(1.0), root, flags=("arcp", "afn"))
    t = b.fmul(x, estimate)
    # x y finite: x positive and finite, its estimate finite (0 * inf, inf * 0, NaN are not)
    is_class = module.declare_intrinsic("llvm.is.fpclass", [ty],
                                        L.FunctionType(L.IntType(1), [ty, I32]))
    refinable = b.call(is_class, [t, L.Constant(I32, _FINITE)])
    fma = module.declare_intrinsic("llvm.fma", [ty], L.FunctionType(ty, [ty] * 3))
    e = b.call(fma, [b.fneg(t), estimate, c(1.0)])
    y = b.call(fma, [estimate, b.fmul(e, b.call(fma, [e, c(0.375), c(0.5)])), estimate])
    return b.select(refinable, y, estimate)


def _zero(v):
    return L.Constant(v.type, 0)


def _safe_divisor(b, d):
    """`d`, with 0 and -1 replaced by 1: `sdiv`/`srem` trap (SIGFPE on x86) for a zero divisor
    and for INT_MIN / -1; the callers select the defined results for those cases."""
    bad = b.or_(b.icmp_signed("==", d, _zero(d)), b.icmp_signed("==", d, L.Constant(d.type, -1)))
    return b.select(bad, L.Constant(d.type, 1), d)


def _int_div(lw, b, dt, x, y):
    if not dt.is_signed:
        y1 = b.select(b.icmp_unsigned("==", y, _zero(y)), L.Constant(y.type, 1), y)
        return b.select(b.icmp_unsigned("==", y, _zero(y)), _zero(x), b.udiv(x, y1))
    q = b.sdiv(x, _safe_divisor(b, y))
    # x / -1 is -x, wrapping for INT_MIN as two's-complement hardware would
    q = b.select(b.icmp_signed("==", y, L.Constant(y.type, -1)), b.neg(x), q)
    return b.select(b.icmp_signed("==", y, _zero(y)), _zero(x), q)


def _int_floordiv(lw, b, dt, x, y):
    if not dt.is_signed:
        return _int_div(lw, b, dt, x, y)
    y1 = _safe_divisor(b, y)
    q, r = b.sdiv(x, y1), b.srem(x, y1)
    adjust = b.and_(b.icmp_signed("!=", r, _zero(r)),
                    b.icmp_signed("!=", b.icmp_signed("<", r, _zero(r)), b.icmp_signed("<", y1, _zero(y1))))
    q = b.select(adjust, b.sub(q, L.Constant(q.type, 1)), q)
    q = b.select(b.icmp_signed("==", y, L.Constant(y.type, -1)), b.neg(x), q)
    return b.select(b.icmp_signed("==", y, _zero(y)), _zero(x), q)


def _int_mod(lw, b, dt, x, y):
    if not dt.is_signed:
        y1 = b.select(b.icmp_unsigned("==", y, _zero(y)), L.Constant(y.type, 1), y)
        return b.select(b.icmp_unsigned("==", y, _zero(y)), _zero(x), b.urem(x, y1))
    y1 = _safe_divisor(b, y)  # x % -1 is 0, and srem(x, 1) is 0
    r = b.srem(x, y1)
    adjust = b.and_(b.icmp_signed("!=", r, _zero(r)),
                    b.icmp_signed("!=", b.icmp_signed("<", r, _zero(r)), b.icmp_signed("<", y1, _zero(y1))))
    r = b.select(adjust, b.add(r, y1), r)
    return b.select(b.icmp_signed("==", y, _zero(y)), _zero(x), r)


def _int_abs(lw, b, dt, x):
    if not dt.is_signed:
        return x
    return b.select(b.icmp_signed("<", x, _zero(x)), b.neg(x), x)


def _int_minmax(pred):
    def lower(lw, b, dt, x, y):
        cmp = b.icmp_signed(pred, x, y) if dt.is_signed else b.icmp_unsigned(pred, x, y)
        return b.select(cmp, x, y)
    return lower


def _shift_too_far(b, y):
    """A shift amount outside [0, bits) (negative amounts compare as huge unsigned ones);
    LLVM's shifts give poison there, so these are defined explicitly."""
    return b.icmp_unsigned(">=", y, L.Constant(y.type, y.type.width))


def _shl(lw, b, dt, x, y):
    far = _shift_too_far(b, y)
    # As Python's `x << y` truncated to the type: every bit shifted out.
    return b.select(far, _zero(x), b.shl(x, b.select(far, _zero(y), y)))


def _shr(lw, b, dt, x, y):
    far = _shift_too_far(b, y)
    if dt.is_signed:  # the sign fills every bit: 0 or -1, as Python's `x >> y`
        return b.ashr(x, b.select(far, L.Constant(y.type, y.type.width - 1), y))
    return b.select(far, _zero(x), b.lshr(x, b.select(far, _zero(y), y)))


def _fminmax(b, cmp, x, y):
    """Taichi 1.7.4's float min/max (LLVM's minnum/maxnum on x86, measured): a NaN operand is
    ignored (`ti.max(1.0, nan)` is 1.0), and of two equal operands (+0.0, -0.0) the first."""
    take_y = b.or_(b.fcmp_ordered(cmp, y, x), b.fcmp_unordered("uno", x, x))
    return b.select(take_y, y, x)


def _pow(lw, b, dt, x, y):
    """Taichi 1.7.4 replaces `pow(x, 0.5)` with a known exponent 0.5 by `sqrt(x)` (measured;
    numpy's `np.power(x, 0.5)` does too): `pow(-inf, 0.5)` is NaN and `pow(-0.0, 0.5)` -0.0
    there, where C's pow gives inf and 0.0. Other exponents keep C's pow."""
    known = y
    while isinstance(known, L.CastInstr) and known.opname in ("fpext", "fptrunc"):
        known = known.operands[0]  # `h = 0.5` in default_fp, widened for an f64 x: still known
    if isinstance(known, L.Constant) and getattr(known, "constant", None) == 0.5:
        return _math("sqrt")(lw, b, dt, x)
    return _math("pow")(lw, b, dt, x, y)


LOWER_FLOAT = {
    Op.NEG: lambda lw, b, dt, x: b.fneg(x, flags=lw.fmf),
    Op.ABS: _math("fabs"), Op.SQRT: _math("sqrt"), Op.SIN: _math("sin"), Op.COS: _math("cos"),
    Op.TAN: _math("tan"), Op.ASIN: _math("asin"), Op.ACOS: _math("acos"), Op.ATAN: _math("atan"),
    Op.TANH: _math("tanh"), Op.EXP: _math("exp"), Op.LOG: _math("log"), Op.FLOOR: _math("floor"),
    Op.CEIL: _math("ceil"), Op.ROUND: _math("round"), Op.POW: _pow, Op.ATAN2: _math("atan2"),
    # `lw.fmf`: the fast-math flags, empty in exact mode (fieldsim.codegen.llvm.FAST_MATH_FLAGS)
    Op.ADD: lambda lw, b, dt, x, y: b.fadd(x, y, flags=lw.fmf),
    Op.SUB: lambda lw, b, dt, x, y: b.fsub(x, y, flags=lw.fmf),
    Op.MUL: lambda lw, b, dt, x, y: b.fmul(x, y, flags=lw.fmf),
    Op.DIV: lambda lw, b, dt, x, y: b.fdiv(x, y, flags=lw.approx_fmf),
    Op.MOD: lambda lw, b, dt, x, y: b.frem(x, y),
    Op.MIN: lambda lw, b, dt, x, y: _fminmax(b, "<", x, y),
    Op.MAX: lambda lw, b, dt, x, y: _fminmax(b, ">", x, y),
}
LOWER_INT = {
    Op.NEG: lambda lw, b, dt, x: b.neg(x), Op.ABS: _int_abs,
    Op.BIT_NOT: lambda lw, b, dt, x: b.not_(x),
    Op.POPCNT: lambda lw, b, dt, x: b.call(lw.cg.module.declare_intrinsic("llvm.ctpop", [x.type]), [x]),
    Op.CLZ: lambda lw, b, dt, x: b.call(lw.cg.module.declare_intrinsic(
        "llvm.ctlz", [x.type], L.FunctionType(x.type, [x.type, L.IntType(1)])),
        [x, L.Constant(L.IntType(1), 0)]),  # defined for 0: the width
    Op.ADD: lambda lw, b, dt, x, y: b.add(x, y), Op.SUB: lambda lw, b, dt, x, y: b.sub(x, y),
    Op.MUL: lambda lw, b, dt, x, y: b.mul(x, y), Op.DIV: _int_div, Op.FLOORDIV: _int_floordiv,
    Op.MOD: _int_mod, Op.MIN: _int_minmax("<"), Op.MAX: _int_minmax(">"),
    Op.BIT_AND: lambda lw, b, dt, x, y: b.and_(x, y), Op.BIT_OR: lambda lw, b, dt, x, y: b.or_(x, y),
    Op.BIT_XOR: lambda lw, b, dt, x, y: b.xor(x, y), Op.SHL: _shl,
    Op.SHR: _shr,
}


def lower_arith(lw, s: Stmt):
    b = lw.b
    args = [lw.v(a) for a in s.args]
    if s.op in COMPARE:
        dt = s.args[0].dtype
        if dt.is_float:  # all ordered, `!=` too: a NaN is unequal to nothing (Taichi 1.7.4's CPU)
            c = b.fcmp_ordered(_CMP[s.op], *args)
        elif dt.is_signed:
            c = b.icmp_signed(_CMP[s.op], *args)
        else:
            c = b.icmp_unsigned(_CMP[s.op], *args)
        return b.zext(c, I32)
    if s.op == Op.NOT:
        x = args[0]
        c = b.fcmp_ordered("==", x, L.Constant(x.type, 0)) if s.args[0].dtype.is_float \
            else b.icmp_signed("==", x, _zero(x))
        return b.zext(c, I32)
    dt = s.args[0].dtype
    table = LOWER_FLOAT if dt.is_float else LOWER_INT
    fn = table.get(s.op)
    if fn is None:
        raise NotImplementedError(f"no lowering for {s.op.name} on {dt}")
    return fn(lw, b, dt, *args)

