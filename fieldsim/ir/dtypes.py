"""Scalar machine types (`f32`, `i32`, ...) and Taichi's promotion rules: the IR's dtypes.

A `DataType` is an interned value object (`f32 is f32`), so passes compare dtypes with `is`.
`promote(a, b)` follows Taichi: any float wins over any int, wider wins over narrower, and at
equal width an unsigned int wins over a signed one. The public `fs.types` module
(`fieldsim.lang.types`) re-exports these beside the vector/matrix/struct type constructors.
"""
from __future__ import annotations

import numpy as np


class DataType:
    """A scalar machine type: kind 'f' (float), 'i' (signed int) or 'u' (unsigned int/bool)."""

    __slots__ = ("bits", "kind", "name", "np")

    def __init__(self, name: str, kind: str, bits: int, np_dtype):
        self.name, self.kind, self.bits, self.np = name, kind, bits, np.dtype(np_dtype)

    @property
    def is_float(self) -> bool:
        return self.kind == "f"

    @property
    def is_int(self) -> bool:
        return self.kind in "iu"

    @property
    def is_signed(self) -> bool:
        return self.kind != "u"

    def __repr__(self) -> str:
        return self.name

    def to_string(self) -> str:
        """Taichi's name for the type (`cfg.default_fp.to_string() == "f32"` in programs).

        >>> fs.f32.to_string(), fs.u1.to_string()
        ('f32', 'u1')
        """
        return self.name

    def __reduce__(self):  # pickling keeps the singleton
        return (by_name, (self.name,))

    def __call__(self, value):
        """`fs.f32(1)` in Python scope: a numpy scalar of this type."""
        return self.np.type(value)


f16 = DataType("f16", "f", 16, np.float16)
f32 = DataType("f32", "f", 32, np.float32)
f64 = DataType("f64", "f", 64, np.float64)
i8 = DataType("i8", "i", 8, np.int8)
i16 = DataType("i16", "i", 16, np.int16)
i32 = DataType("i32", "i", 32, np.int32)
i64 = DataType("i64", "i", 64, np.int64)
u1 = DataType("u1", "u", 1, np.bool_)
u8 = DataType("u8", "u", 8, np.uint8)
u16 = DataType("u16", "u", 16, np.uint16)
u32 = DataType("u32", "u", 32, np.uint32)
u64 = DataType("u64", "u", 64, np.uint64)

ALL_TYPES = (f16, f32, f64, i8, i16, i32, i64, u1, u8, u16, u32, u64)
_BY_NAME = {t.name: t for t in ALL_TYPES}
float16, float32, float64 = f16, f32, f64
int8, int16, int32, int64 = i8, i16, i32, i64
uint8, uint16, uint32, uint64 = u8, u16, u32, u64


def by_name(name: str) -> DataType:
    return _BY_NAME[name]


def from_numpy(dt) -> DataType:
    dt = np.dtype(dt)
    for t in ALL_TYPES:
        if t.np == dt:
            return t
    raise TypeError(f"numpy dtype {dt} has no fieldsim equivalent")


def promote(a: DataType, b: DataType) -> DataType:
    """Taichi's binary-op promotion."""
    if a is b:
        return a
    if a.is_float or b.is_float:
        if a.is_float and b.is_float:
            return a if a.bits >= b.bits else b
        return a if a.is_float else b
    if a.bits != b.bits:
        return a if a.bits > b.bits else b
    return a if not a.is_signed else b


def promote_all(dtypes) -> DataType:
    out = dtypes[0]
    for d in dtypes[1:]:
        out = promote(out, d)
    return out
