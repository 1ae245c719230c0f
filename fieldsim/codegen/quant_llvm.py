"""Kernel loads, stores and atomics of quantized fields (`fieldsim.lang.quant`), in LLVM.

Takes the lowering (`llvm.Lowering`: builder `b`, function `fn`, `v()`, `field_ptr`,
`linear`) and a LOAD/STORE/ATOMIC statement whose field `is_quant`; the element's word is
found in the container field of the component's slot (in the kernel's field table), a
quant_array cell's bits at a run-time offset in it. Guarantees the values and bits of `fieldsim.lang.quant_codec` (Taichi 1.7.4's x64
code), step for step: a load decodes the word to the compute dtype; a store and every atomic
kind run a compare-and-swap loop on the whole word, so that threads writing other fields of
the same word never lose each other's bits; an atomic returns the old value. A fixed-point
`+=` that other threads may race with adds digits (Taichi's `atomic_add_partial_bits`: the
added value is rounded once); otherwise an atomic decodes, combines in the compute dtype and
re-encodes. A store into a float with a shared exponent re-encodes every float of its group.

Stores into one word (fields of one bitpack, the same index statements) in one straight-line
stretch of a block with no read of the bitpack between them are fused into one store where the
last of them is, as Taichi's `quant_opt_store_fusion` does: a shared exponent is then chosen
from all the new values.
"""
from __future__ import annotations

from llvmlite import ir as L

from fieldsim.errors import FieldsimTypeError
from fieldsim.ir.ir import Op
from fieldsim.lang.quant import is_quant, placed_slots
from fieldsim.lang.quant_types import QuantFixed, QuantFloat, QuantInt, QuantSlot

I32 = L.IntType(32)
F32 = L.FloatType()


def _c(ty, v):
    return L.Constant(ty, v)


def _i32(v):
    return L.Constant(I32, v & 0xFFFFFFFF)


def word_type(slot: QuantSlot):
    return L.IntType(slot.container_bits)


# ---- bits in a word -----------------------------------------------------------------------------
def extract(b, word, offset: int, bits: int, signed: bool, ty):
    """The `bits`-bit field at `offset` of `word`, sign- or zero-extended (or truncated) to `ty`."""
    width = word.type.width
    v = b.shl(word, _c(word.type, width - offset - bits))
    v = b.ashr(v, _c(word.type, width - bits)) if signed else b.lshr(v, _c(word.type, width - bits))
    if ty.width > width:
        return b.sext(v, ty) if signed else b.zext(v, ty)
    return b.trunc(v, ty) if ty.width < width else v


def insert(b, word, offset: int, bits: int, value):
    """`word` with the `bits`-bit field at `offset` replaced by the low bits of `value`."""
    wt = word.type
    v = value
    if v.type.width < wt.width:
        v = b.zext(v, wt)
    elif v.type.width > wt.width:
        v = b.trunc(v, wt)
    m = ((1 << bits) - 1) << offset
    v = b.and_(b.shl(v, _c(wt, offset)), _c(wt, m))
    return b.or_(b.and_(word, _c(wt, ~m & ((1 << wt.width) - 1))), v)


def insert_parts(b, word, fields, parts):
    """`word` with the bits of `fields` ((offset, bits)) replaced by the OR of `parts`
    ((i32 value, offset)), values not cut to their field (Taichi's carry into the next bits)."""
    wt = word.type
    m = 0
    for offset, bits in fields:
        m |= ((1 << bits) - 1) << offset
    m &= (1 << wt.width) - 1
    v = _c(wt, 0)
    for value, offset in parts:
        x = b.zext(value, wt) if wt.width > 32 else b.trunc(value, wt) if wt.width < 32 else value
        v = b.or_(v, b.shl(x, _c(wt, offset)))
    return b.or_(b.and_(word, _c(wt, ~m & ((1 << wt.width) - 1))), b.and_(v, _c(wt, m)))


# ---- decode ---------------------------------------------------------------------------------------
def decode(lw, word, slot: QuantSlot, offset=None):
    """The value of `slot` (its digits at `offset`, default its own) in `word`."""
    from fieldsim.codegen.llvm import ll_type
    b, qt = lw.b, slot.qtype
    off = slot.offset if offset is None else offset
    if isinstance(qt, QuantInt):
        return extract(b, word, off, qt.bits, qt.signed, ll_type(qt.compute))
    if isinstance(qt, QuantFixed):
        digits = extract(b, word, off, qt.bits, qt.signed, I32)
        ft = ll_type(qt.compute)
        x = b.sitofp(digits, ft) if qt.signed else b.uitofp(digits, ft)
        return b.fmul(x, _c(ft, qt.scale))
    digits = extract(b, word, off, qt.frac, False, I32)
    exponent = extract(b, word, slot.exp_offset, qt.exp, False, I32)
    bits = (_shared_bits if slot.shared else _float_bits)(b, qt, digits, exponent)
    return b.bitcast(bits, F32)


def _float_bits(b, qt: QuantFloat, digits, exponent):
    d = qt.digit_bits
    shift = b.select(b.icmp_unsigned("!=", exponent, _i32(0)), _i32(qt.exponent_shift), _i32(0))
    dg = b.shl(digits, _i32(23 - d))
    bits = b.or_(b.shl(b.add(exponent, shift), _i32(23)), b.and_(dg, _i32((1 << 23) - 1)))
    if qt.signed:
        bits = b.or_(bits, b.shl(b.and_(dg, _i32(1 << 23)), _i32(8)))
    return bits


def _shared_bits(b, qt: QuantFloat, digits, exponent):
    d = qt.digit_bits
    nonzero_exp = b.icmp_unsigned("!=", exponent, _i32(0))
    shift = _i32(qt.exponent_shift) if qt.exp >= 8 else \
        b.select(nonzero_exp, _i32(qt.exponent_shift), _i32(0))
    dg, sign = digits, None
    if qt.signed:
        sign = b.and_(dg, _i32(1 << d))
        dg = b.shl(b.xor(dg, sign), _i32(1))
        sign = b.shl(sign, _i32(31 - d))
    ctlz = b.module.declare_intrinsic("llvm.ctlz", [I32], L.FunctionType(I32, [I32, L.IntType(1)]))
    extra = b.sub(_i32(31 - d), b.call(ctlz, [dg, L.Constant(L.IntType(1), 0)]))
    shift = b.add(shift, extra if qt.signed else b.add(extra, _i32(1)))
    dshift = b.sub(_i32(23 - d), extra)
    dg = b.select(b.icmp_signed(">=", dshift, _i32(0)), b.shl(dg, dshift),
                  b.lshr(dg, b.sub(_i32(0), dshift)))
    bits = b.or_(b.shl(b.add(exponent, shift), _i32(23)), b.and_(dg, _i32((1 << 23) - 1)))
    zero = b.or_(b.icmp_unsigned("==", exponent, _i32(0)), b.icmp_unsigned("==", digits, _i32(0)))
    bits = b.select(zero, _i32(0), bits)
    return b.or_(bits, sign) if sign is not None else bits


# ---- encode ---------------------------------------------------------------------------------------
def fixed_digits(lw, qt: QuantFixed, value):
    """trunc(value / scale + copysign(0.5, ...)) as i32, out-of-range giving x86's results."""
    b = lw.b
    ft = value.type
    x = b.fmul(value, _c(ft, 1.0 / qt.scale))
    copysign = b.module.declare_intrinsic("llvm.copysign", [ft], L.FunctionType(ft, [ft, ft]))
    x = b.fadd(x, b.call(copysign, [_c(ft, 0.5), x]))
    if qt.signed:
        lo, hi, bad = -2.0 ** 31 - 1, 2.0 ** 31, -(1 << 31)
    else:
        lo, hi, bad = -1.0, 2.0 ** 32, (1 << 32) - 1
    ok = b.and_(b.fcmp_ordered(">", x, _c(ft, lo)), b.fcmp_ordered("<", x, _c(ft, hi)))
    safe = b.select(ok, x, _c(ft, 0.0))
    conv = b.fptosi(safe, L.IntType(64))
    return b.select(ok, b.trunc(conv, I32), _i32(bad))


def encode_into(lw, word, slot: QuantSlot, value):
    """`word` with `value` (compute dtype) stored into `slot`."""
    b, qt = lw.b, slot.qtype
    if isinstance(qt, QuantInt):
        return insert(b, word, slot.offset, qt.bits, value)
    if isinstance(qt, QuantFixed):
        return insert(b, word, slot.offset, qt.bits, fixed_digits(lw, qt, value))
    if slot.shared:
        return _store_shared(lw, word, slot, {slot.index: value})
    digits, exponent = _float_fields(b, qt, b.bitcast(value, I32))
    return insert_parts(b, word, [(slot.exp_offset, qt.exp), (slot.offset, qt.frac)],
                        [(exponent, slot.exp_offset), (digits, slot.offset)])


def _float_fields(b, qt: QuantFloat, bits):
    d = qt.digit_bits
    if d < 23:
        bits = b.add(bits, _i32(1 << (22 - d)))
    ex = b.and_(b.lshr(bits, _i32(23)), _i32(255))
    digits = b.and_(b.lshr(bits, _i32(23 - d)), _i32((1 << d) - 1))
    if qt.signed:
        digits = b.or_(digits, b.lshr(b.and_(bits, _i32(0x80000000)), _i32(31 - d)))
    shift = b.select(b.icmp_unsigned("!=", ex, _i32(0)), _i32(qt.exponent_shift), _i32(0))
    ex = b.sub(ex, shift)
    ex = b.select(b.icmp_signed(">", ex, _i32(0)), ex, _i32(0))
    digits = b.select(b.icmp_unsigned("!=", ex, _i32(0)), digits, _i32(0))
    return digits, ex


def _store_shared(lw, word, slot: QuantSlot, new: dict):
    """`word` with the floats of `slot`'s group given in `new` (member index -> value) stored
    and the others re-encoded against the group's new exponent."""
    b = lw.b
    members = [QuantSlot(t, slot.container_bits, off, slot.exp_offset, slot.group, k)
               for k, (t, off) in enumerate(slot.group)]
    values = [new[k] if k in new else decode(lw, word, m) for k, m in enumerate(members)]
    bits = [b.bitcast(v, I32) for v in values]
    exps = [b.and_(b.lshr(x, _i32(23)), _i32(255)) for x in bits]
    top = exps[0]
    for e in exps[1:]:
        top = b.select(b.icmp_unsigned(">", e, top), e, top)
    first = slot.group[0][0]
    shift = b.select(b.icmp_unsigned("!=", top, _i32(0)), _i32(first.exponent_shift), _i32(0))
    stored = b.sub(top, shift)
    stored = b.select(b.icmp_signed(">", stored, _i32(0)), stored, _i32(0))
    fields, parts = [(slot.exp_offset, first.exp)], [(stored, slot.exp_offset)]
    for (qt, off), x, e in zip(slot.group, bits, exps):
        right = 24 - qt.digit_bits
        full = b.or_(b.and_(x, _i32((1 << 23) - 1)), _i32(1 << 23))
        gap = b.sub(top, e)
        gap = b.select(b.icmp_unsigned("<", gap, _i32(31)), gap, _i32(31))
        dg = b.add(b.lshr(full, gap), _i32(1 << (right - 1)))
        dg = b.select(b.icmp_unsigned("<", dg, _i32((1 << 24) - 1)), dg, _i32((1 << 24) - 1))
        dg = b.lshr(dg, _i32(right))
        if qt.signed:
            dg = b.or_(dg, b.lshr(b.and_(x, _i32(0x80000000)), _i32(31 - qt.digit_bits)))
        fields.append((off, qt.frac))
        parts.append((dg, off))
    return insert_parts(b, word, fields, parts)


# ---- loads, stores, atomics -----------------------------------------------------------------------
def slot_of(s):
    """The slot of the component a LOAD/STORE/ATOMIC touches (constant component indices)."""
    f = s.field
    comps = s.indices[len(f.shape):]
    if any(ix.op != Op.CONST for ix in comps):
        raise FieldsimTypeError(f"quantized field {f.ir_name!r}: its components can only be "
                                "indexed with compile-time constants (ti.static)", s.loc)
    k = 0
    for ix, n in zip(comps, f.element_shape):
        k = k * n + ix.attr
    return placed_slots(f)[k]


def word_ptr(lw, s):
    """The pointer to the container word of the element `s` touches."""
    slot = slot_of(s)
    if slot.lanes:
        return array_word(lw, s)[0]
    words = slot.pack.words
    nd = len(s.field.shape)
    indices = [lw.index_i64(ix) for ix in s.indices[:nd]]
    sizes = [lw.i64_constant(n) for n in words.shape]
    ptr = lw.b.gep(lw.field_ptr(words), [lw.linear(indices, sizes)], source_etype=word_type(slot))
    return lw.memory_ptr(ptr)


def array_word(lw, s):
    """A quant_array cell: (pointer to its word, its bit offset in the word)."""
    b, slot = lw.b, slot_of(s)
    lanes = slot.lane_sizes
    i64 = L.IntType(64)
    indices, lane = [], L.Constant(i64, 0)
    for d, ix in enumerate(s.indices):
        i, n = lw.index_i64(ix), L.Constant(i64, lanes.get(d, 1))
        indices.append(b.udiv(i, n) if d in lanes else i)
        if d in lanes:
            lane = b.add(b.mul(lane, n), b.urem(i, n))
    sizes = [lw.i64_constant(n) for n in slot.pack.words.shape]
    ptr = b.gep(lw.field_ptr(slot.pack.words), [lw.linear(indices, sizes)],
                source_etype=word_type(slot))
    off = b.mul(lane, L.Constant(i64, slot.qtype.bits))
    wt = word_type(slot)
    off = b.trunc(off, wt) if wt.width < 64 else off
    return lw.memory_ptr(ptr), off


def in_lane(lw, s, new_word):
    """`new_word` (which updates bits [0, bits) of a word) applied to a quant_array cell's
    bits, wherever they are in its word; a plain field's `new_word` as it is."""
    slot = s.field.quant[0]
    if not slot.lanes:
        return new_word
    _, off = array_word(lw, s)
    b, wt = lw.b, word_type(slot)
    m = _c(wt, (1 << slot.qtype.bits) - 1)

    def update(old):
        field = b.and_(new_word(b.lshr(old, off)), m)
        return b.or_(b.and_(old, b.xor(b.shl(m, off), _c(wt, -1))), b.shl(field, off))
    return update


def load(lw, s):
    slot = slot_of(s)
    word = lw.b.load(word_ptr(lw, s), typ=word_type(slot))
    if slot.lanes:
        word = lw.b.lshr(word, array_word(lw, s)[1])
    return decode(lw, word, slot)


def store(lw, s):
    group = lw.quant_stores.get(id(s))
    if group is not None and group[-1] is not s:
        return  # fused into the group's last store
    stores = group or [s]
    latest = {id(slot_of(st)): (slot_of(st), st) for st in stores}  # stored twice: the later
    slots = [(slot, lw.v(st.value)) for slot, st in latest.values()]
    cas_loop(lw, word_ptr(lw, s), slots[0][0],
             in_lane(lw, s, lambda old: encode_many(lw, old, slots)))


def encode_many(lw, word, slots):
    """`word` with each (slot, value) stored; the floats of a shared exponent encoded at once."""
    shared = [(slot, v) for slot, v in slots if slot.shared]
    for slot, v in slots:
        if not slot.shared:
            word = encode_into(lw, word, slot, v)
    while shared:
        group = shared[0][0].group
        mine = {sl.index: v for sl, v in shared if sl.group is group}
        shared = [(sl, v) for sl, v in shared if sl.group is not group]
        word = _store_shared(lw, word, shared_slot(slots, group), mine)
    return word


def shared_slot(slots, group):
    return next(slot for slot, _ in slots if slot.group is group)


def store_groups(task) -> dict:
    """id(store) -> the stores fused with it, for every fused group of `task`."""
    out: dict = {}
    blocks = [task.body] if task.blocks else []
    while blocks:
        run: dict = {}
        for st in blocks.pop():
            blocks.extend(st.blocks)
            if st.blocks:  # a loop or branch ends the straight-line stretch
                _close(run, out)
                run = {}
            elif st.op == Op.STORE and is_quant(st.field):
                cell = st.indices[:len(st.field.shape)]
                key = (id(slot_of(st).pack), tuple(_index_key(ix) for ix in cell))
                run.setdefault(key, []).append(st)
            elif st.op in (Op.LOAD, Op.ATOMIC) and is_quant(st.field):
                # a read of the bitpack in between: what was stored before it stays before it
                pack = id(slot_of(st).pack)
                _close({k: v for k, v in run.items() if k[0] == pack}, out)
                run = {k: v for k, v in run.items() if k[0] != pack}
        _close(run, out)
    return out


def _index_key(ix):
    return ("c", ix.attr) if ix.op == Op.CONST else ("s", id(ix))


def _close(run: dict, out: dict):
    for stores in run.values():
        if len(stores) > 1:
            for st in stores:
                out[id(st)] = stores


def atomic(lw, s):
    """An atomic of any kind on a quantized field element; the old value."""
    slot = slot_of(s)
    _, kind = s.attr
    value = lw.v(s.value)
    ptr = word_ptr(lw, s)
    qt = slot.qtype
    olds = []
    if isinstance(qt, QuantFixed) and kind in ("add", "sub") and id(s) not in lw.demoted:
        step = fixed_digits(lw, qt, value)  # rounded once, as Taichi's atomic partial add
        def new_word(old):
            olds.append(decode(lw, old, slot))
            digits = extract(lw.b, old, slot.offset, qt.bits, False, I32)
            d = lw.b.add(digits, step) if kind == "add" else lw.b.sub(digits, step)
            return insert(lw.b, old, slot.offset, qt.bits, d)
    else:
        def new_word(old):
            before = decode(lw, old, slot)
            olds.append(before)
            return encode_into(lw, old, slot, combine(lw.b, kind, before, value, qt.compute))
    cas_loop(lw, ptr, slot, in_lane(lw, s, new_word))
    return olds[0]


def combine(b, kind: str, old, value, dt):
    if kind == "xchg":
        return value
    if dt.is_float:
        if kind in ("min", "max"):
            less = b.fcmp_ordered("<", value, old) if kind == "min" else \
                b.fcmp_ordered(">", value, old)
            return b.select(less, value, old)
        return {"add": b.fadd, "sub": b.fsub, "mul": b.fmul}[kind](old, value)
    if kind in ("min", "max"):
        cmp = b.icmp_signed if dt.is_signed else b.icmp_unsigned
        return b.select(cmp("<" if kind == "min" else ">", value, old), value, old)
    return {"add": b.add, "sub": b.sub, "mul": b.mul, "and": b.and_, "or": b.or_,
            "xor": b.xor}[kind](old, value)


def cas_loop(lw, ptr, slot: QuantSlot, new_word):
    """Replace the word at `ptr` by `new_word(old)` atomically (retried until no other thread
    changed the word in between); `new_word` builds its code once, inside the loop."""
    b = lw.b
    wt = word_type(slot)
    start = b.load_atomic(ptr, "monotonic", slot.container_bits // 8, typ=wt)
    entry = b.block
    loop_bb = lw.fn.append_basic_block("quant.cas")
    done_bb = lw.fn.append_basic_block("quant.cas.done")
    b.branch(loop_bb)
    b.position_at_end(loop_bb)
    old = b.phi(wt)
    old.add_incoming(start, entry)
    pair = b.cmpxchg(ptr, old, new_word(old), "monotonic", "monotonic")
    old.add_incoming(b.extract_value(pair, 0), b.block)
    b.cbranch(b.extract_value(pair, 1), done_bb, loop_bb)
    b.position_at_end(done_bb)
