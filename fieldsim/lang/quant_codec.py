"""Quantized values to and from container words, in numpy (Python scope: `x[i]`, `fill`,
`to_numpy`, `from_numpy` of a quantized field).

Takes a `QuantSlot` and an array of container words (uint64, whatever the container's width);
guarantees the values and bits Taichi 1.7.4's x64 code generator gives, bit for bit, so that
Python scope and kernels (`fieldsim.codegen.quant_llvm`, the same steps in LLVM) agree:
- int: stores keep the low `bits` bits of the compute-type value (wrap); reads sign-extend.
- fixed: store `digits = trunc(v / scale + copysign(0.5, v))` in the compute type (an
  out-of-range conversion gives the x86 result: 0x80000000 signed, all ones unsigned), then
  wrap to `bits` bits; read `digits * scale`.
- float (f32 compute): round to nearest by adding half an ulp to the f32 bits, keep the top
  digit bits and the re-biased exponent (flushed to zero below the smallest normal, wrapped
  modulo 2**exp above the largest); with a shared exponent, every float of the group is
  re-encoded against the largest exponent among them.
"""
from __future__ import annotations

import numpy as np

from fieldsim.lang.quant_types import QuantFixed, QuantFloat, QuantInt, QuantSlot

M32 = 0xFFFFFFFF


def mask(bits: int) -> int:
    return (1 << bits) - 1


def get_bits(words, offset: int, bits: int) -> np.ndarray:
    return (np.asarray(words, dtype=np.uint64) >> np.uint64(offset)) & np.uint64(mask(bits))


def put_bits(words, offset: int, bits: int, value) -> np.ndarray:
    m = np.uint64(mask(bits) << offset)
    v = (np.asarray(value).astype(np.uint64) << np.uint64(offset)) & m
    return (np.asarray(words, dtype=np.uint64) & ~m) | v


def put_parts(words, fields, parts) -> np.ndarray:
    """`words` with the bits of `fields` ((offset, bits) pairs) replaced by the OR of `parts`
    ((value, offset) pairs, values not cut to their field: a carry reaches the next bits)."""
    m = 0
    for offset, bits in fields:
        m |= mask(bits) << offset
    m &= mask(64)
    v = np.zeros(np.shape(words), dtype=np.uint64)
    for value, offset in parts:
        v |= np.asarray(value).astype(np.uint64) << np.uint64(offset)
    return (np.asarray(words, dtype=np.uint64) & np.uint64(~m & mask(64))) | (v & np.uint64(m))


def _signed(raw, bits: int) -> np.ndarray:
    """An n-bit field as a signed int64 (two's complement)."""
    r = raw.astype(np.int64)
    if bits >= 64:
        return r
    return np.where(raw >= np.uint64(1 << (bits - 1)), r - (1 << bits), r)


def _f32_bits(v) -> np.ndarray:
    v = np.asarray(v, dtype=np.float32)
    return np.ascontiguousarray(v).view(np.uint32).astype(np.int64).reshape(v.shape)


def _f32_of(bits) -> np.ndarray:
    return (np.asarray(bits, dtype=np.int64) & M32).astype(np.uint32).view(np.float32)


# ---- ints and fixed -----------------------------------------------------------------------------
def int_digits(qt: QuantInt, values) -> np.ndarray:
    """The stored bits of compute-type values: zero-extended, then the low `bits` kept."""
    v = np.asarray(values).astype(qt.compute.np)
    u = np.ascontiguousarray(v).view(np.dtype(f"u{qt.compute.np.itemsize}")).astype(np.uint64)
    return u.reshape(v.shape) & np.uint64(mask(qt.bits))


def fixed_digits(qt: QuantFixed, values) -> np.ndarray:
    ft = qt.compute.np.type
    x = np.asarray(values).astype(ft) * ft(1.0 / qt.scale)
    x = x + np.copysign(ft(0.5), x).astype(ft)
    x64 = x.astype(np.float64)
    with np.errstate(invalid="ignore"):
        if qt.signed:
            ok = (x64 > -2.0 ** 31 - 1) & (x64 < 2.0 ** 31)
            d = np.where(ok, np.trunc(np.where(ok, x64, 0)), -2.0 ** 31).astype(np.int64)
        else:
            ok = (x64 > -1) & (x64 < 2.0 ** 32)
            d = np.where(ok, np.trunc(np.where(ok, x64, 0)), float(M32)).astype(np.int64)
    return (d & mask(qt.bits)).astype(np.uint64)


def fixed_value(qt: QuantFixed, raw) -> np.ndarray:
    ft = qt.compute.np.type
    d = _signed(raw, qt.bits) if qt.signed else raw.astype(np.int64)
    return d.astype(ft) * ft(qt.scale)


# ---- floats -------------------------------------------------------------------------------------
def float_encode(qt: QuantFloat, values) -> tuple[np.ndarray, np.ndarray]:
    """(digits, exponent) of f32 values, exponent not yet wrapped to `exp` bits."""
    d = qt.digit_bits
    b = _f32_bits(values)
    if d < 23:
        b = (b + (1 << (22 - d))) & M32
    ex = (b >> 23) & 255
    digits = (b >> (23 - d)) & mask(d)
    if qt.signed:
        digits |= (b & 0x80000000) >> (31 - d)
    ex = np.maximum(ex - np.where(ex != 0, qt.exponent_shift, 0), 0)
    digits = np.where(ex != 0, digits, 0)
    return digits.astype(np.uint64), ex.astype(np.uint64)


def float_value(qt: QuantFloat, digits, exponent) -> np.ndarray:
    d = qt.digit_bits
    e = exponent.astype(np.int64)
    shift = np.where(e != 0, qt.exponent_shift, 0)
    dg = (digits.astype(np.int64) << (23 - d)) & M32
    bits = (((e + shift) << 23) | (dg & mask(23))) & M32
    if qt.signed:
        bits |= (dg & (1 << 23)) << 8
    return _f32_of(bits)


def _clz32(x) -> np.ndarray:
    x = np.asarray(x, dtype=np.int64)
    n = np.zeros(x.shape, dtype=np.int64)
    for k in range(32):  # leading zeros: bits above the highest set one
        n = np.where(x >= (1 << (31 - k)), n, k + 1)
    return np.where(x == 0, 32, n)


def shared_value(qt: QuantFloat, digits, exponent) -> np.ndarray:
    d = qt.digit_bits
    e = exponent.astype(np.int64)
    raw = digits.astype(np.int64) & mask(qt.frac)
    shift = np.where((e != 0) | (qt.exp >= 8), qt.exponent_shift, 0)
    sign = None
    dg = raw
    if qt.signed:
        sign = dg & (1 << d)
        dg = (dg ^ sign) << 1
        sign = sign << (31 - d)
    extra = (31 - d) - _clz32(dg)
    shift = shift + extra + (0 if qt.signed else 1)
    dshift = (23 - d) - extra
    dg = np.where(dshift >= 0, dg << np.maximum(dshift, 0), dg >> np.maximum(-dshift, 0)) & M32
    bits = (((e + shift) << 23) | (dg & mask(23))) & M32
    bits = np.where((e == 0) | (raw == 0), 0, bits)
    if qt.signed:
        bits |= sign
    return _f32_of(bits)


def shared_encode(group, values) -> tuple[list, np.ndarray]:
    """Digits of each float of a shared-exponent group (values: one f32 array per member) and
    the shared exponent, not yet wrapped."""
    bits = [_f32_bits(v) for v in values]
    exps = [(b >> 23) & 255 for b in bits]
    top = exps[0]
    for x in exps[1:]:
        top = np.maximum(top, x)
    first = group[0][0]
    stored = np.maximum(top - np.where(top != 0, first.exponent_shift, 0), 0)
    out = []
    for (qt, _), b, x in zip(group, bits, exps):
        right = 24 - qt.digit_bits
        full = (b & mask(23)) | (1 << 23)
        dg = full >> np.minimum(top - x, 31)
        dg = np.minimum(dg + (1 << (right - 1)), mask(24)) >> right
        if qt.signed:
            dg |= (b & 0x80000000) >> (31 - qt.digit_bits)
        out.append(dg.astype(np.uint64))
    return out, stored.astype(np.uint64)


# ---- one slot in container words ------------------------------------------------------------------
def decode(slot: QuantSlot, words) -> np.ndarray:
    """The values (compute dtype) of `slot` in container words."""
    qt = slot.qtype
    raw = get_bits(words, slot.offset, qt.frac if isinstance(qt, QuantFloat) else qt.bits)
    if isinstance(qt, QuantInt):
        v = _signed(raw, qt.bits) if qt.signed else raw
        return v.astype(qt.compute.np)
    if isinstance(qt, QuantFixed):
        return fixed_value(qt, raw)
    exponent = get_bits(words, slot.exp_offset, qt.exp)
    if slot.shared:
        return shared_value(qt, raw, exponent)
    return float_value(qt, raw, exponent)


def encode_many(words, stores) -> np.ndarray:
    """Container words with each (slot, values) of `stores` stored, in one go: the other slots
    kept, except the floats sharing an exponent with a stored one, re-encoded against the
    group's new exponent (chosen from all the new values of the group at once)."""
    words = np.asarray(words, dtype=np.uint64)
    shared = []
    for slot, values in stores:
        values = np.broadcast_to(np.asarray(values), words.shape)
        if slot.shared:
            shared.append((slot, values))
        else:
            words = _encode_one(slot, words, values)
    while shared:
        group = shared[0][0].group
        new = {slot.index: v for slot, v in shared if slot.group is group}
        words = _encode_shared(shared[0][0], words, new)
        shared = [(slot, v) for slot, v in shared if slot.group is not group]
    return words


def _encode_one(slot: QuantSlot, words, values) -> np.ndarray:
    qt = slot.qtype
    if isinstance(qt, QuantInt):
        return put_bits(words, slot.offset, qt.bits, int_digits(qt, values))
    if isinstance(qt, QuantFixed):
        return put_bits(words, slot.offset, qt.bits, fixed_digits(qt, values))
    digits, exponent = float_encode(qt, values)
    return put_parts(words, [(slot.exp_offset, qt.exp), (slot.offset, qt.frac)],
                     [(exponent, slot.exp_offset), (digits, slot.offset)])


def _encode_shared(slot: QuantSlot, words, new: dict) -> np.ndarray:
    qt = slot.qtype
    members = [QuantSlot(t, slot.container_bits, off, slot.exp_offset, slot.group, k)
               for k, (t, off) in enumerate(slot.group)]
    current = [new[k] if k in new else decode(m, words) for k, m in enumerate(members)]
    digits, exponent = shared_encode(slot.group, current)
    return put_parts(words, [(slot.exp_offset, qt.exp)] + [(off, t.frac) for t, off in slot.group],
                     [(exponent, slot.exp_offset)] + [(dg, off) for (_, off), dg in
                                                       zip(slot.group, digits)])
