"""Taichi's quantized types (`ti.types.quant.int/fixed/float`) and where a quantized field's
bits sit in its container word.

Takes the arguments Taichi 1.7's constructors take; guarantees the same defaults (compute type
`default_ip` / an unsigned int of its width for ints, `default_fp` for fixed and float; a fixed
type's scale `max_value / 2**(bits - signed)` unless `scale=` is given) and a clear error, at
the user's line, for what Taichi's own type factory refuses (a float computed in anything but
f32) or what its code generator cannot encode (fixed types over 32 bits). A `QuantSlot` says
where one field's bits are in its container word: the digits' bit offset and, for a float, its
exponent's offset and the fields sharing that exponent. Used by `fieldsim.lang.quant` (layout,
Python scope), `fieldsim.lang.quant_codec` (numpy) and `fieldsim.codegen.quant_llvm` (kernels).
"""
from __future__ import annotations

import numbers
from dataclasses import dataclass
from types import SimpleNamespace

from fieldsim.errors import FieldsimTypeError
from fieldsim.lang import runtime
from fieldsim.lang import types as T


class QuantType:
    """A quantized type: `bits` bits in a container word, read and written as `compute`."""

    bits: int
    signed: bool
    compute: T.DataType


@dataclass(frozen=True, eq=False)
class QuantInt(QuantType):
    bits: int
    signed: bool
    compute: T.DataType

    def __repr__(self):
        return f"{'qi' if self.signed else 'qu'}{self.bits}"


@dataclass(frozen=True, eq=False)
class QuantFixed(QuantType):
    bits: int
    signed: bool
    scale: float
    compute: T.DataType

    def __repr__(self):
        return f"qfx(d={'qi' if self.signed else 'qu'}{self.bits} c={self.compute} s={self.scale})"


@dataclass(frozen=True, eq=False)
class QuantFloat(QuantType):
    exp: int  # exponent bits (unsigned, bias 2**(exp - 1) - 1 as in IEEE)
    frac: int  # digit bits, the sign bit included when signed
    signed: bool
    compute: T.DataType

    @property
    def bits(self) -> int:
        return self.exp + self.frac

    @property
    def digit_bits(self) -> int:
        """Fraction bits proper (the sign bit left out)."""
        return self.frac - int(self.signed)

    @property
    def exponent_shift(self) -> int:
        """What turns a stored exponent into f32's: 127 - (2**(exp - 1) - 1)."""
        return 128 - (1 << (self.exp - 1))

    def __repr__(self):
        s = "qi" if self.signed else "qu"
        return f"qfl(d={s}{self.frac} e=qu{self.exp} c={self.compute})"


@dataclass(frozen=True, eq=False)
class QuantSlot:
    """Where a quantized field's bits are: `offset` of its digits in a `container_bits`-bit
    word; a float's exponent at `exp_offset`; with a shared exponent, `group` lists
    (type, digits offset) of every float sharing it, this one at `group[index]`. In a
    quant_array, `lanes` says which cells share a word: a cell's bits start at its row-major
    number among them times the type's bits."""

    qtype: QuantType
    container_bits: int
    offset: int
    exp_offset: int = -1
    group: tuple = ()
    index: int = 0
    lanes: tuple = ()  # a quant_array: (dimension, cells per word along it) pairs
    pack: object = None  # the BitpackedFields whose container field (`pack.words`) holds it

    @property
    def lane_sizes(self) -> dict:
        return dict(self.lanes)

    @property
    def shared(self) -> bool:
        return len(self.group) > 1


def _check_bits(what, bits, low, high):
    if not isinstance(bits, numbers.Integral) or isinstance(bits, bool) or not low <= bits <= high:
        from fieldsim.lang.naming import user_loc
        raise FieldsimTypeError(f"ti.types.quant.{what}: bits must be an int in [{low}, {high}], "
                                f"got {bits!r}", user_loc())


def _compute(compute, default, what):
    from fieldsim.lang.field import _resolve_dtype
    dt = _resolve_dtype(default if compute is None else compute, runtime.get())
    if what == "int" and dt.is_float:
        from fieldsim.lang.naming import user_loc
        raise FieldsimTypeError(f"ti.types.quant.int: compute type {dt} is not an integer type",
                                user_loc())
    return dt


def quant_int(bits, signed=True, compute=None) -> QuantInt:
    """A quantized integer of `bits` bits (Taichi's `ti.types.quant.int`); stores wrap.

    >>> qi5 = fs.types.quant.int(5, True)
    >>> qi5.bits, qi5.signed, qi5.compute
    (5, True, i32)
    """
    _check_bits("int", bits, 1, 64)
    rt = runtime.get()
    default = rt.default_ip if signed else (T.u64 if rt.default_ip.bits == 64 else T.u32)
    return QuantInt(bits, bool(signed), _compute(compute, default, "int"))


def quant_fixed(bits, signed=True, max_value=1.0, compute=None, scale=None) -> QuantFixed:
    """A quantized fixed-point real (`ti.types.quant.fixed`): value = digits x scale.

    >>> qf = fs.types.quant.fixed(8, True, max_value=2.0)
    >>> qf.scale
    0.015625
    """
    _check_bits("fixed", bits, 1, 32)
    if scale is None:
        scale = max_value / 2 ** (bits - 1) if signed else max_value / 2 ** bits
    return QuantFixed(bits, bool(signed), float(scale), _compute(compute, runtime.get().default_fp,
                                                                  "fixed"))


def quant_float(exp, frac, signed=True, compute=None) -> QuantFloat:
    """A quantized float (`ti.types.quant.float`): `exp` exponent bits and `frac` digit bits
    (the sign bit among them when signed); computed in f32.

    >>> qf = fs.types.quant.float(exp=5, frac=10, signed=True)
    >>> qf.bits
    15
    """
    _check_bits("float", exp, 1, 8)
    _check_bits("float", frac, 1 + bool(signed), 23 + bool(signed))
    dt = _compute(compute, runtime.get().default_fp, "float")
    if dt is not T.f32:
        from fieldsim.lang.naming import user_loc
        raise FieldsimTypeError(f"ti.types.quant.float: the compute type must be f32 (as in "
                                f"Taichi), got {dt}", user_loc())
    return QuantFloat(exp, frac, bool(signed), dt)


quant = SimpleNamespace(int=quant_int, fixed=quant_fixed, float=quant_float)
