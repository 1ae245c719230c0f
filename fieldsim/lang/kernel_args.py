"""Kernel arguments annotated with a vector/matrix type (`v: fs.types.vector(3, fs.f32)`) or a
struct type (`s: my_struct`).

Takes the annotation and the value a launch passes (a fs.Vector/Matrix, a list, a numpy array;
for a struct, a struct value, a field element or a dict); gives the resolved type and its
scalars (vector/matrix entries row-major, struct leaves in member order), which travel to the
kernel as that many scalar arguments (the frontend rebuilds the vector/matrix or struct value).
Guarantees: a value of another shape, with non-numeric entries or unknown members, or a lone
number for a struct, raises a FieldsimTypeError naming the kernel and the argument; a
fractional float given to an integer vector/matrix entry is refused, as for a scalar argument
(Taichi refuses any float there); one given to an integer struct member truncates, as Taichi's
struct cast does; a struct member of another shape is refused (never truncated or shifted into
the next member). No gradient flows to these arguments.
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import ArgumentTypeError, FieldsimTypeError
from fieldsim.lang import types as T
from fieldsim.lang.matrix import Matrix

_CONCRETE: dict = {}  # (n, m, dtype, ndim, vector, default fp, default ip) -> the resolved MatrixType


def _concrete(ann: T.MatrixType, rt) -> T.MatrixType:
    """`ann.concrete(...)`, made once per annotation and defaults (a launch resolves it)."""
    key = (ann.n, ann.m, ann.dtype, ann.ndim, ann.vector, rt.default_fp, rt.default_ip)
    spec = _CONCRETE.get(key)
    if spec is None:
        spec = _CONCRETE[key] = ann.concrete(rt.default_fp, rt.default_ip)
    return spec


def bind_matrix_arg(ann: T.MatrixType, value, rt, kname: str, pname: str, loc=None):
    """(resolved MatrixType, list of Python scalars) for one launch's argument."""
    spec = _concrete(ann, rt)
    if isinstance(value, Matrix):  # its entries as they are (read, never kept): no copy
        arr = value._a
    else:
        v = value.to_numpy() if hasattr(value, "to_numpy") else value
        try:
            arr = np.asarray(v)
        except Exception:  # noqa: BLE001 - whatever a user's value raises on conversion
            arr = None
    if arr is None or arr.dtype == object or arr.dtype.kind not in "biuf":
        raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} expects a {spec!r}, got "
                                f"{type(value).__name__}", loc)
    want = (spec.n,) if spec.ndim == 1 else (spec.n, spec.m)
    # an n-vector also comes as an n x 1 (or 1 x n) matrix; a matrix needs its exact shape
    if arr.shape != want and not (spec.ndim == 1 and arr.size == spec.n and arr.ndim == 2
                                  and 1 in arr.shape):
        raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} expects a {spec!r} (shape "
                                f"{want}), got a value of shape {arr.shape}", loc)
    flat = arr.reshape(-1)
    if spec.dtype.is_int and flat.dtype.kind == "f":
        if not np.all(np.isfinite(flat)) or np.any(flat != np.trunc(flat)):
            # as a scalar integer argument (Taichi refuses any float here)
            raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} expects a {spec!r} "
                                    f"(integer entries), got {flat.tolist()}", loc)
        flat = flat.astype(np.int64)
    return spec, flat.tolist()


def bind_struct_arg(ann, value, rt, kname: str, pname: str, loc=None):
    """(resolved StructType, [(dtype, Python scalar)] in member order, nested members and
    vector/matrix entries flattened) for a kernel argument annotated with a struct type."""
    from fieldsim.lang.returns import ret_spec
    from fieldsim.lang.struct import Struct, StructElement, _py_cast
    spec = ret_spec(ann, rt, kname)
    if not isinstance(value, (Struct, StructElement, dict, list, tuple)):
        # a lone number would fill the first member and zero the rest (Taichi refuses it too)
        raise ArgumentTypeError(f"kernel {kname!r}: argument {pname!r} expects a struct {ann.name} value "
                                f"(a struct, a field element or a dict), got "
                                f"{type(value).__name__} {value!r}", loc)
    try:
        py = _py_cast(ann, value)  # dicts, fs.Struct values and field elements, cast per member
    except (TypeError, ValueError, FieldsimTypeError) as e:
        msg = e.message if isinstance(e, FieldsimTypeError) else str(e)
        raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} expects a {ann!r}: {msg}",
                                loc) from None
    out: list = []
    _flatten_struct(spec, py, out)
    return spec, out


def _flatten_struct(spec, py, out):
    for k, t in spec.members.items():
        v = getattr(py, k)
        if isinstance(t, T.MatrixType):
            out.extend((t.dtype, x) for x in np.asarray(v.to_numpy()).reshape(-1).tolist())
        elif isinstance(t, T.DataType):
            out.append((t, v))
        else:
            _flatten_struct(t, v, out)


def leaf_dtypes(spec) -> list:
    """The dtypes of a struct spec's scalar arguments, in the order `bind_struct_arg` gives."""
    from fieldsim.lang.returns import flat_dtypes
    return flat_dtypes(spec)
