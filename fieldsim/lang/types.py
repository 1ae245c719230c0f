"""Primitive data types, Taichi's promotion rules, and vector/matrix type constructors.

A `DataType` is an interned value object (`f32 is f32`), so passes compare dtypes with `is`.
`promote(a, b)` follows Taichi: any float wins over any int, wider wins over narrower, and at
equal width an unsigned int wins over a signed one.
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


class MatrixType:
    """`fs.types.vector(n, dt)` / `fs.types.matrix(n, m, dt)`: a shape and an element dtype.

    Calling it builds a value: `vec3(1, 2, 3)` in either scope.
    """

    def __init__(self, n: int, m: int, dtype, ndim: int):
        self.n, self.m, self.dtype, self.ndim = n, m, dtype, ndim

    def __call__(self, *values):
        from fieldsim.lang.matrix import Matrix, Vector

        flat = []
        for v in values:
            flat.extend(_flatten(v))
        if len(flat) == 1 and self.n * self.m > 1:
            flat = flat * (self.n * self.m)
        if self.ndim == 1:
            return Vector(flat, dt=self.dtype)
        rows = [flat[r * self.m:(r + 1) * self.m] for r in range(self.n)]
        return Matrix(rows, dt=self.dtype)

    def field(self, shape=None, **kwargs):
        """`vec3.field(shape=...)`: a vector/matrix field of this type."""
        from fieldsim.lang.matrix import Matrix, Vector
        if self.ndim == 1:
            return Vector.field(self.n, self.dtype, shape=shape, **kwargs)
        return Matrix.field(self.n, self.m, self.dtype, shape=shape, **kwargs)

    def __repr__(self) -> str:
        if self.ndim == 1:
            return f"vector({self.n}, {self.dtype})"
        return f"matrix({self.n}, {self.m}, {self.dtype})"


def _flatten(v):
    if isinstance(v, (list, tuple)):
        out = []
        for e in v:
            out.extend(_flatten(e))
        return out
    if hasattr(v, "entries"):
        return list(v.entries)
    return [v]


def vector(n: int, dtype=None) -> MatrixType:
    return MatrixType(n, 1, dtype, 1)


def matrix(n: int, m: int, dtype=None) -> MatrixType:
    return MatrixType(n, m, dtype, 2)
