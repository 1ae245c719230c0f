"""Float-to-integer conversions with the results Taichi 1.7.4's x64 backend gives.

LLVM leaves an out-of-range `fptosi`/`fptoui` undefined (poison); Taichi's x64 code runs
whatever instruction LLVM picks, so its results are x86's (measured, scalar and vectorised
loops alike):

- i32 and i64: truncation toward zero; NaN or a value outside the type is the "integer
  indefinite" INT_MIN (`cvttss2si`).
- i8, i16, u8 and u16: the i32 conversion above, then its low bits (`ti.cast(330.0, ti.u8)` is
  74, `ti.cast(-3.0, ti.u8)` is 253, `ti.cast(3e9, ti.u8)` is 0): image code that scales an
  unclamped colour by 255 sees these values.
- u32 and u64, on a CPU with AVX-512 (`vcvttss2usi`): NaN, a value <= -1 or >= 2^bits is all
  ones. Without AVX-512, LLVM converts a u32 through i64 (its low bits) and a u64 by halves.

`x86_float_to_int(b, v, src_bits, dst, ty, avx512)` emits one of these; every path converts an
in-range value only, so no poison reaches the result.
"""
from llvmlite import ir as L


def _in_range(b: L.IRBuilder, v, lo: float, hi: float, lo_exclusive: bool = False):
    """v (ordered, so NaN is out) in [lo, hi), or (lo, hi) with `lo_exclusive`."""
    low = b.fcmp_ordered(">" if lo_exclusive else ">=", v, L.Constant(v.type, lo))
    return b.and_(low, b.fcmp_ordered("<", v, L.Constant(v.type, hi)))


def _guarded(b: L.IRBuilder, v, ok, convert, ty, fallback: int):
    """convert(v) where ok, else the constant `fallback`; v is zeroed where not ok first."""
    safe = b.select(ok, v, L.Constant(v.type, 0.0))
    return b.select(ok, convert(safe, ty), L.Constant(ty, fallback))


def _signed(b: L.IRBuilder, v, bits: int):
    """x86's signed conversion to `bits` (32 or 64): out of range or NaN is INT_MIN."""
    ty = L.IntType(bits)
    ok = _in_range(b, v, -(2.0 ** (bits - 1)), 2.0 ** (bits - 1))
    return _guarded(b, v, ok, b.fptosi, ty, -(2 ** (bits - 1)))


def _unsigned_wide(b: L.IRBuilder, v, bits: int, avx512: bool):
    """u32/u64 as LLVM's x86 code gives them, with or without AVX-512."""
    ty = L.IntType(bits)
    if avx512:
        ok = _in_range(b, v, -1.0, 2.0 ** bits, lo_exclusive=True)
        return _guarded(b, v, ok, b.fptoui, ty, 2 ** bits - 1)
    if bits == 32:
        return b.trunc(_signed(b, v, 64), ty)
    # u64 by halves: below 2^63 the signed conversion, else that of v - 2^63 with the top bit set
    top = L.Constant(v.type, 2.0 ** 63)
    low = b.fcmp_ordered("<", v, top)
    high_half = b.xor(_signed(b, b.fsub(v, top), 64), L.Constant(ty, 1 << 63))
    return b.select(low, _signed(b, v, 64), high_half)


def x86_float_to_int(b: L.IRBuilder, v, dst_bits: int, dst_signed: bool, ty, avx512: bool):
    """The conversion of float `v` to the integer type `ty` (`dst_bits` wide) on x86-64."""
    if isinstance(v.type, L.HalfType):  # exact; the range bounds (2^31, 2^63) are not halves
        v = b.fpext(v, L.FloatType())
    if dst_bits <= 16:
        return b.trunc(_signed(b, v, 32), ty)
    if dst_signed:
        return _signed(b, v, dst_bits)
    return _unsigned_wide(b, v, dst_bits, avx512)
