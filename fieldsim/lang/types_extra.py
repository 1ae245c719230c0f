"""Taichi's type predicates and type namespaces on `ti.types`: `is_integral`, `is_real`,
`is_signed`, `primitive_types.all_types`, and `quant` (which fieldsim does not support).

Takes `DataType`s (or Python's `int`/`float`); guarantees Taichi's answers for every primitive
type and a clear `FieldsimTypeError` for quantized types rather than a silently wrong layout.
"""
from __future__ import annotations

from types import SimpleNamespace

from fieldsim.errors import FieldsimTypeError
from fieldsim.lang import types as T


def _dtype(dt):
    if dt is int:
        return T.i32
    if dt is float:
        return T.f32
    if not isinstance(dt, T.DataType):
        raise FieldsimTypeError(f"expected a primitive type such as ti.f32, got {dt!r}")
    return dt


def is_integral(dt) -> bool:
    return _dtype(dt).is_int


def is_real(dt) -> bool:
    return _dtype(dt).is_float


def is_signed(dt) -> bool:
    return _dtype(dt).is_signed  # floats count as signed


_INTEGRAL = [T.i8, T.i16, T.i32, T.i64, T.u8, T.u16, T.u32, T.u64]
_REAL = [T.f16, T.f32, T.f64]
primitive_types = SimpleNamespace(
    all_types=_REAL + _INTEGRAL, integer_types=_INTEGRAL, real_types=_REAL,
    **{t.name: t for t in T.ALL_TYPES})


def _unsupported(kind):
    def make(*args, **kwargs):
        from fieldsim.lang.compat import user_loc as _user_loc
        raise FieldsimTypeError(
            f"ti.types.quant.{kind} (quantized types stored in bit-packed fields) is not "
            "supported by fieldsim; use a primitive type such as ti.i8/ti.i16/ti.f16", _user_loc())
    make.__name__ = kind
    return make


quant = SimpleNamespace(int=_unsupported("int"), fixed=_unsupported("fixed"),
                        float=_unsupported("float"))


# ---- linear algebra Taichi has and fieldsim does not (yet): a clear error in both scopes -----
def _unsupported_linalg(name, hint):
    from fieldsim.lang import ops

    def fn(*args, **kwargs):
        from fieldsim.lang.compat import user_loc as _user_loc
        raise FieldsimTypeError(f"ti.{name} is not supported by fieldsim; {hint}", _user_loc())

    def kernel(fe, node, args, kw):
        raise FieldsimTypeError(f"ti.{name} is not supported by fieldsim; {hint}")

    fn.__name__ = name
    ops.KERNEL_BUILTINS[fn] = kernel
    return fn


sym_eig = _unsupported_linalg("sym_eig", "use ti.svd (for a symmetric positive semi-definite "
                                         "matrix its singular values are the eigenvalues)")
eig = _unsupported_linalg("eig", "use ti.svd or ti.polar_decompose")
