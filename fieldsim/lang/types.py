"""The public `fs.types` module: scalar types (from `fieldsim.ir.dtypes`), vector and matrix
type constructors, and the kernel-argument annotations.

`fs.types.vector(n, dt)` / `fs.types.matrix(n, m, dt)` build `MatrixType`s; calling one builds a
value (`vec3(1, 2, 3)`) in either scope.
"""
from __future__ import annotations

from fieldsim.ir.dtypes import (
    ALL_TYPES,
    DataType,
    by_name,
    f16,
    f32,
    f64,
    float16,
    float32,
    float64,
    from_numpy,
    i8,
    i16,
    i32,
    i64,
    int8,
    int16,
    int32,
    int64,
    promote,
    promote_all,
    u1,
    u8,
    u16,
    u32,
    u64,
    uint8,
    uint16,
    uint32,
    uint64,
)

__all__ = ["ALL_TYPES", "DataType", "MatrixType", "by_name", "f16", "f32", "f64", "float16",
           "float32", "float64", "from_numpy", "i8", "i16", "i32", "i64", "int8", "int16",
           "int32", "int64", "is_tensor", "matrix", "promote", "promote_all", "u1", "u8", "u16", "u32",
           "u64", "uint1", "uint8", "uint16", "uint32", "uint64", "vector"]


class MatrixType:
    """`fs.types.vector(n, dt)` / `fs.types.matrix(n, m, dt)`: a shape and an element dtype.

    Calling it builds a value: `vec3(1, 2, 3)` in either scope.
    """

    vector = False  # made by `fs.types.vector` (see __init__)

    def __init__(self, n: int, m: int, dtype, ndim: int, vector: bool = False):
        self.n, self.m, self.dtype, self.ndim = n, m, dtype, ndim
        # Taichi's VectorType (`fs.types.vector`): its values are vectors; a MatrixType of one
        # axis and one column (`MatrixType(3, 1, 1, dt)`) shapes fields as a vector type does,
        # but its values are n x 1 matrices (measured on 1.7.4)
        self.vector = vector

    def __call__(self, *values):
        from fieldsim.lang.matrix import Matrix, Vector

        flat = []
        for v in values:
            flat.extend(_flatten(v))
        if len(flat) == 1 and self.n * self.m > 1:
            flat = flat * (self.n * self.m)
        if self.value_ndim == 1:
            return Vector(flat, dt=self.dtype)
        rows = [flat[r * self.m:(r + 1) * self.m] for r in range(self.n)]
        return Matrix(rows, dt=self.dtype)

    @property
    def value_ndim(self) -> int:
        """The axes of the values a call builds: Taichi's `MatrixType(3, 4, 1, dt)(0)` is still a
        3x4 matrix, and `MatrixType(3, 1, 1, dt)(0)` a 3x1 one (its `ndim` shapes fields,
        ndarrays and arguments only); a vector type's are vectors.

        >>> from fieldsim.lang.matrix import MatrixType
        >>> MatrixType(3, 4, 1, fs.f32).value_ndim, MatrixType(3, 1, 1, fs.f32).value_ndim
        (2, 2)
        >>> fs.math.vec3.value_ndim, fs.types.matrix(3, 1, fs.f32).value_ndim
        (1, 2)
        """
        return 1 if self.vector else 2

    def concrete(self, default_fp, default_ip) -> MatrixType:
        """This type with its element dtype made concrete (None and float read as `default_fp`,
        int as `default_ip`)."""
        dt = concrete_dtype(float if self.dtype is None else self.dtype, default_fp, default_ip)
        return MatrixType(self.n, self.m, dt, self.ndim, self.vector)

    def get_shape(self) -> tuple:
        """Taichi's `get_shape()`: (n,) for a vector type, (n, m) for a matrix type.

        >>> fs.math.vec3.get_shape(), fs.types.matrix(2, 3, fs.f32).get_shape()
        ((3,), (2, 3))
        """
        return (self.n,) if self.ndim == 1 else (self.n, self.m)

    def field(self, shape=None, **kwargs):
        """`vec3.field(shape=...)`: a vector/matrix field of this type."""
        from fieldsim.lang.matrix import Matrix, Vector
        if self.ndim == 1:
            return Vector.field(self.n, self.dtype, shape=shape, **kwargs)
        return Matrix.field(self.n, self.m, self.dtype, shape=shape, **kwargs)

    def ndarray(self, shape, **kwargs):
        """`vec3.ndarray(shape=...)`: an ndarray of this element type (Taichi's `VectorType.ndarray`)."""
        from fieldsim.lang.matrix import Matrix, Vector
        if self.ndim == 1:
            return Vector.ndarray(self.n, self.dtype, shape, **kwargs)
        return Matrix.ndarray(self.n, self.m, self.dtype, shape, **kwargs)

    def to_string(self) -> str:
        """Taichi's name of the type.

        >>> fs.math.vec3.to_string(), fs.types.matrix(2, 3, fs.i32).to_string()
        ('VectorType[3, f32]', 'MatrixType[2,3, i32]')
        """
        dt = self.dtype
        if dt is float or dt is int:  # the current default, as Taichi's cook_dtype
            from fieldsim.lang import runtime
            dt = runtime.get().default_fp if dt is float else runtime.get().default_ip
        if self.ndim == 1:
            return f"VectorType[{self.n}, {dt}]"
        return f"MatrixType[{self.n},{self.m}, {dt}]"

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
    if type(v).__module__ == "numpy" and getattr(v, "ndim", 0) > 0:  # mat4(np.eye(4))
        return v.reshape(-1).tolist()
    return [v]


def concrete_dtype(dtype, default_fp, default_ip):
    """`dtype` with Python's `float`/`int`/`bool` read as `default_fp`/`default_ip`/u1, as
    Taichi's cook_dtype reads them; anything else (a DataType, a MatrixType, None) comes back
    unchanged."""
    if dtype is bool:
        return u1
    return default_fp if dtype is float else default_ip if dtype is int else dtype


def vector(n: int, dtype=None) -> MatrixType:
    return MatrixType(n, 1, dtype, 1, vector=True)


def matrix(n: int, m: int, dtype=None) -> MatrixType:
    return MatrixType(n, m, dtype, 2)


# ---- Taichi's `ti.types.primitive_types` lists and `ti.types.is_*` predicates -----------------
real_types = [f16, f32, f64, float]
integer_types = [i8, i16, i32, i64, u1, u8, u16, u32, u64, int]
all_types = real_types + integer_types


def is_real(dt) -> bool:
    return dt is float or (isinstance(dt, DataType) and dt.is_float)


def is_integral(dt) -> bool:
    return dt is int or (isinstance(dt, DataType) and dt.is_int)


def is_signed(dt) -> bool:
    if dt in (int, float):
        return True
    if not isinstance(dt, DataType):
        raise TypeError(f"is_signed: {dt!r} is not a primitive type")
    return dt.is_signed


def is_tensor(dt) -> bool:
    """Taichi's `ti.types.is_tensor`: whether a primitive `DataType` is a tensor type. No
    primitive is (a vector or matrix type is a `MatrixType`, which Taichi's refuses too).

    >>> fs.types.is_tensor(fs.f32)
    False
    """
    if not isinstance(dt, DataType):
        raise TypeError(f"is_tensor: {dt!r} is not a primitive type")
    return False


uint1 = u1
primitive_types = __import__("sys").modules[__name__]  # `ti.types.primitive_types.all_types`
utils = primitive_types  # `ti.types.utils.is_real`, ... (Taichi's module of these four)


# Names of `fs.types` defined in modules that import this one: resolved on first use.
_ELSEWHERE = {
    "ndarray": ("fieldsim.lang.ndarray", "NdarrayType"),
    "template": ("fieldsim.lang.kernel", "template"),
    "texture": ("fieldsim.lang.texture", "texture"),
    "rw_texture": ("fieldsim.lang.texture", "rw_texture"),
    "struct": ("fieldsim.lang.struct", "struct"),
    "argpack": ("fieldsim.lang.argpack", "argpack"),
    "quant": ("fieldsim.lang.quant_types", "quant"),
    "sparse_matrix_builder": ("fieldsim.lang.triplets", "sparse_matrix_builder"),
}


def __getattr__(name):
    where = _ELSEWHERE.get(name)
    if where is None:
        raise AttributeError(f"module 'fieldsim.types' has no attribute {name!r}")
    import importlib
    return getattr(importlib.import_module(where[0]), where[1])

