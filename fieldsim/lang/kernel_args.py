"""Kernel arguments annotated with a vector/matrix type (`v: fs.types.vector(3, fs.f32)`).

Takes the annotation and the value a launch passes (a fs.Vector/Matrix, a list, a numpy array);
gives the resolved `MatrixType` and its entries in row-major order, which travel to the kernel
as that many scalar arguments (the frontend rebuilds the vector/matrix value from them).
Guarantees: a value of another shape, or with non-numeric entries, raises a FieldsimTypeError
naming the kernel and the argument; a float given to an integer matrix truncates, as Taichi's
argument cast does.
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import FieldsimTypeError
from fieldsim.lang import types as T


def resolve(ann: T.MatrixType, rt) -> T.MatrixType:
    """The annotation with its element dtype made concrete (float/int/None -> the defaults)."""
    dt = ann.dtype
    dt = rt.default_fp if dt in (None, float) else rt.default_ip if dt is int else dt
    return T.MatrixType(ann.n, ann.m, dt, ann.ndim)


def bind_matrix_arg(ann: T.MatrixType, value, rt, kname: str, pname: str, loc=None):
    """(resolved MatrixType, list of Python scalars) for one launch's argument."""
    spec = resolve(ann, rt)
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
        flat = np.trunc(flat)
    return spec, flat.tolist()
