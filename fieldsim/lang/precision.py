"""Taichi's "may lose precision" warnings for kernel assignments and atomics.

Takes the frontend, an assignment target's reference (lang.frontend_refs) or dtype, and the
value assigned. Guarantees, as Taichi 1.7.4 (measured): a store into a variable, a field or an
ndarray element (`x = v`, `x[i] = v`, `v.x = v`, `x *= v`) whose value's type promotes with the
target's to something other than the target's type warns "Assign may lose precision: i32 <- f32";
an atomic (`x += v`, `x -= v`, `ti.atomic_max(x, v)`, ...) "Atomic add may lose precision: ...".
A Python number counts as default_ip/default_fp, as in Taichi; a declaration (annotated or not),
a func argument, a return value or `ti.cast` never warns. One `PrecisionLossWarning` (a
UserWarning) per statement, at the user's file and line, shown once per line by Python's filter.
A Python-scope copy between a field or ndarray and a NumPy array or torch tensor (`from_numpy`,
`from_torch`, `to_numpy(dtype=...)`) that narrows warns the same, as Taichi's copy kernel does when
it is compiled: on a field's first copy from (or to) each array dtype, once per element component.
"""
from __future__ import annotations

import numbers
import warnings

from fieldsim.ir.dtypes import from_numpy, promote
from fieldsim.ir.ir import Stmt
from fieldsim.lang import naming
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal


class PrecisionLossWarning(UserWarning):
    """A kernel assignment or atomic that converts its value to a narrower type (Taichi's
    "Assign may lose precision" warning)."""


_registry: dict = {}  # warn_explicit's once-per-location record, one for all kernels


def target_dtype(ref):
    """The dtype a reference stores into, or None where it is not one scalar type."""
    field = getattr(ref, "field", None)
    if field is not None:
        return field.dtype
    if getattr(ref, "constant_dtype", None) is not None:  # a constant local stored again
        return ref.constant_dtype
    for attr in ("allocas", "refs"):
        items = getattr(ref, attr, None)
        if items:
            first = items[0]
            return target_dtype(first) if attr == "refs" else first.dtype
    mat = getattr(ref, "mat", None)
    return mat.entries[0].dtype if isinstance(mat, MatVal) and mat.entries else None


def value_dtype(fe, value):
    """The type Taichi gives `value` (a vector's: its entries' promoted type), or None."""
    if isinstance(value, MatVal):
        types = [value_dtype(fe, e) for e in value.entries]
        if not types or None in types:
            return None
        out = types[0]
        for t in types[1:]:
            out = promote(out, t)
        return out
    if isinstance(value, Stmt):
        return value.dtype if isinstance(value.dtype, T.DataType) else None
    if isinstance(value, bool) or not isinstance(value, numbers.Number):
        return None
    if isinstance(value, numbers.Integral):
        return fe.e.ip
    return fe.e.fp if isinstance(value, numbers.Real) else None


def narrows(dst, src) -> bool:
    """Whether storing a `src` value into `dst` may lose precision, as Taichi 1.7.4 judges:
    `dst` is not the promoted type of the two; and a u1 (a comparison, a bool array) into an
    8-bit integer, which Taichi also warns about (not into i16 or wider, nor a float)."""
    if src is dst:
        return False
    if src is T.u1 and dst in (T.i8, T.u8):
        return True
    return promote(dst, src) is not dst


def check(fe, what, dst, value, node):
    """Warn, as Taichi, when storing `value` into a `dst`-typed target narrows it. `what` is
    "Assign" or an atomic's kind ("add", "max", ...)."""
    if dst is None or node is None or not isinstance(dst, T.DataType):
        return
    src = value_dtype(fe, value)
    if src is None or not narrows(dst, src):
        return
    label = "Assign" if what == "Assign" else f"Atomic {what}"
    loc = fe.loc(node)
    warnings.warn_explicit(f"{label} may lose precision: {dst} <- {src}", PrecisionLossWarning,
                           loc.file, loc.line, registry=_registry.setdefault(loc.file, {}))


def host_copy(field, dst, src, direction):
    """Warn, as Taichi, where a copy between `field` and a host array stores `src` (a dtype or
    a NumPy dtype) values into `dst` ones and narrows them; `direction` "from" or "to" the
    field. Taichi compiles one copy kernel per field, array dtype and direction, warning once
    per component it assigns; a later copy reuses it silently."""
    # a loop copying the same arrays each step pays one lookup (the dtype search cost 1.5 us)
    seen = field.__dict__.setdefault("_host_copies", set())
    if (direction, dst, src) in seen:
        return
    seen.add((direction, dst, src))
    try:
        dst, src = (from_numpy(t) if not isinstance(t, T.DataType) else t for t in (dst, src))
    except TypeError:  # a dtype fieldsim has no type for: the copy reports it
        return
    if not narrows(dst, src):
        return
    done = field.__dict__.setdefault("_narrowing_copies", set())
    if (direction, src, dst) in done:
        return
    done.add((direction, src, dst))
    frame = naming.user_frame()
    if frame is None:
        return
    where = frame.f_code.co_filename
    for _ in range(1 if field.ndim_el == 0 else field.n if field.ndim_el == 1 else field.n * field.m):
        warnings.warn_explicit(f"Assign may lose precision: {dst} <- {src}", PrecisionLossWarning,
                               where, frame.f_lineno, registry=_registry.setdefault(where, {}))
