"""Typed arguments and returns of `@fs.func` / `fs.real_func` (Taichi's func semantics).

Takes a func's annotations and the values a call passes; gives the values the inlined body sees.
Guarantees, as in Taichi: a parameter annotated with a scalar type (`fs.f32`, `int`) receives
the value cast to that type, one annotated with a vector/matrix type a copy of that shape
(another shape raises `FieldsimSyntaxError`), a `fs.template()` or `fs.ref(...)` parameter
passed a caller's variable *is* that variable (`x += 1` in the func changes the caller's `x`),
and a declared return type casts what the func returns (`-> fs.i32` returning 1.5 gives 1).
A vector/matrix meeting a scalar annotation of a plain `@fs.func` is cast element-wise (Taichi
casts it whole; a `real_func` refuses it). A Python float passed to an unannotated or float-annotated
parameter is a runtime value of default_fp (of the annotated type), as Taichi copies it into a
variable: arithmetic on it in the func rounds in that type.
`fs.real_func` needs every parameter annotated (checked when decorated) and a return
annotation when it returns a value.
"""
from __future__ import annotations

import ast
import inspect
import numbers

from fieldsim.errors import FieldsimCompilationError, FieldsimSyntaxError, FieldsimTypeError
from fieldsim.ir.ir import Stmt
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal, describe


class RefType:
    """`fs.ref(dtype)`: the parameter is the caller's variable (assignments reach the caller)."""

    def __init__(self, dtype=None):
        self.dtype = dtype

    def __repr__(self):
        return f"ref({self.dtype})"


def ref(dtype=None):
    """Annotation for a `@fs.func` argument passed by reference: writes reach the caller.

    >>> @fs.func
    ... def bump(v: fs.ref()):
    ...     v += 1
    >>> r = fs.field(fs.i32, shape=())
    >>> @fs.kernel
    ... def k():
    ...     a = 1
    ...     bump(a)
    ...     r[None] = a
    >>> k(); r[None]
    2
    """
    return RefType(dtype)


def annotations(func, fdef) -> dict:
    """{parameter name or 'return': resolved annotation} of a func."""
    if getattr(func, "_ann_cache", None) is None:
        from fieldsim.lang.kernel import _resolve_annotation
        raw = getattr(func.fn, "__annotations__", {}) or {}
        func._ann_cache = {k: _resolve_annotation(v, func.fn) for k, v in raw.items()}
    return func._ann_cache


def check_real_func(fn):
    """`fs.real_func` parameters must all be annotated (Taichi checks this when decorating)."""
    sig = inspect.signature(fn)
    parts = getattr(fn, "__qualname__", "").split(".")
    in_class = len(parts) >= 2 and parts[-2] != "<locals>"
    for pos, p in enumerate(sig.parameters.values()):
        if pos == 0 and in_class:
            continue  # a method's `self` (a data-oriented object) is bound at compile time
        if p.annotation is inspect.Parameter.empty:
            raise FieldsimSyntaxError(f"Argument {p.name!r} of real function {fn.__name__!r} must be "
                                      "type annotated (e.g. fs.i32, fs.types.vector(3, fs.f32), "
                                      "fs.template())", _def_loc(fn))


def _def_loc(fn):
    """The `def` line of a function, for errors raised outside a kernel's compilation."""
    from fieldsim.errors import Loc
    try:
        lines, start = inspect.getsourcelines(fn)
        idx = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
        return Loc(inspect.getsourcefile(fn) or "?", start + idx, 0, None, fn.__name__,
                   lines[idx].rstrip("\n"))
    except (OSError, TypeError, StopIteration):
        return None


def is_by_reference(a) -> bool:
    from fieldsim.lang.kernel import Template
    return isinstance(a, (Template, RefType)) or a is Template


def return_type(fe, func, fdef, ann):
    """The declared return type (None if undeclared), checked against the body's returns."""
    returns_value = any(isinstance(n, ast.Return) and n.value is not None
                        and not (isinstance(n.value, ast.Constant) and n.value.value is None)
                        for n in ast.walk(fdef))
    rtype = ann.get("return")
    if rtype is None or rtype is type(None):
        if returns_value and getattr(func, "is_real", False):
            raise FieldsimCompilationError(f"real function {func.fn.__name__!r}: its return value "
                                           "must be annotated (e.g. `-> fs.i32`)")
        return None
    if not returns_value:
        raise FieldsimSyntaxError(f"Function has a return type but does not have a return "
                                  f"statement: func {func.fn.__name__!r} declares {rtype!r}")
    return rtype


def coerce(fe, a, value, what: str, func):
    """`value` as the parameter/return annotated `a` receives it."""
    name = getattr(getattr(func, "fn", func), "__name__", "?")
    if isinstance(a, RefType):
        a = a.dtype
    if a is float or a is int or isinstance(a, T.DataType):
        if isinstance(value, MatVal) and not getattr(func, "is_real", False):
            return fe.e.cast(value, fe.e.resolve(a))
        return _coerce_scalar(fe, a, value, what, name)
    if isinstance(a, T.MatrixType):
        return _coerce_matrix(fe, a, value, what, name)
    if isinstance(a, tuple) and isinstance(value, tuple) and len(a) == len(value):
        return tuple(coerce(fe, ai, v, what, func) for ai, v in zip(a, value))
    if a is None and isinstance(value, float):
        # Taichi copies a by-value argument into a variable: a Python float is a default_fp
        # value there, so `h * h` in the func rounds as f32 arithmetic does (not Python's)
        return fe.e.value(value)
    return value


def _coerce_scalar(fe, a, value, what: str, name: str):
    """A scalar annotated `a` (float, int or a dtype): a constant stays one, a Stmt is cast."""
    dt = fe.e.resolve(a)
    if isinstance(value, MatVal) or not isinstance(value, (Stmt, numbers.Number)):
        raise FieldsimTypeError(f"func {name!r}: {what} is annotated {dt} but is {describe(value)}")
    if isinstance(value, float) and dt.is_float:  # a variable of that type, as in Taichi
        return fe.e.value(value, dt)
    if not isinstance(value, Stmt):  # an integer constant stays one (static conditions fold)
        if dt.is_float or dt.bits == 1:
            return dt.np.type(value).item()
        fe.e.check_int_literal(value, dt)
        return _wrapped(int(value), dt)
    return fe.e.cast(value, dt)


def _wrapped(v: int, dt) -> int:
    """`v` converted to the integer type `dt` as Taichi's cast of a literal does: `-> ti.i8`
    returning 7 + 27 * 7 gives -60, `-> ti.u8` returning -1 gives 255 (NumPy refuses both)."""
    v &= (1 << dt.bits) - 1
    return v - (1 << dt.bits) if dt.is_signed and v >> (dt.bits - 1) else v


def _coerce_matrix(fe, a, value, what: str, name: str):
    """A matrix/vector annotated `a`: its shape must match; cast to its dtype when it has one."""
    if not isinstance(value, MatVal):
        raise FieldsimTypeError(f"func {name!r}: {what} is annotated {a!r} but is {describe(value)}")
    if value.n != a.n:
        raise FieldsimSyntaxError(f"func {name!r}: {what} is expected to be a Matrix with n "
                                  f"{a.n}, but got {value.n}")
    if a.ndim == 2 and value.m != a.m:
        raise FieldsimSyntaxError(f"func {name!r}: {what} is expected to be a Matrix with m "
                                  f"{a.m}, but got {value.m}")
    if a.dtype is not None:
        value = fe.e.cast(value, fe.e.resolve(a.dtype))
    return value
