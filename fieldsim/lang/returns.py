"""Kernel return values: scalars, vectors/matrices, structs and tuples of them.

Takes a kernel's return annotation (`fs.f32`, `int`, `fs.types.vector(2, fs.u64)`,
`(fs.i32, fs.f32)`, `tuple[...]`, `typing.Tuple[...]`) and gives a *return spec*: a `DataType`
(a scalar, unchanged from before), a `MatrixType` with a concrete dtype, a `StructType` whose
members are return specs, or a `RetTuple`. The
kernel's RETURN statement carries the value flattened to scalars, each cast to its slot's dtype
(`flatten`); the launcher reads one 8-byte word per scalar and `rebuild`s the Python value
(unsigned types read as unsigned, vectors/matrices as `fs.Vector`/`fs.Matrix`, structs as
Python-scope struct values of their type, tuples as lists, as Taichi 1.7 returns them).
Guarantees: a value whose shape does not match the annotation raises `FieldsimTypeError`
naming the kernel, never a silently reshaped or truncated result.
"""
from __future__ import annotations

import numbers
import typing

import numpy as np

from fieldsim.errors import FieldsimTypeError
from fieldsim.ir.ir import Stmt
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal, describe
from fieldsim.lang.struct import StructType, StructValue


class RetTuple:
    """`-> (a, b)`: a tuple of return specs."""

    def __init__(self, items):
        self.items = list(items)

    def __repr__(self):
        return "(" + ", ".join(map(repr, self.items)) + ")"


def ret_spec(ann, rt, kname: str):
    """The return spec of an annotation (None for no return value)."""
    if ann is None or ann is type(None):
        return None
    ann = T.concrete_dtype(ann, rt.default_fp, rt.default_ip)
    if isinstance(ann, T.DataType):
        return ann
    if isinstance(ann, T.MatrixType):
        return ann.concrete(rt.default_fp, rt.default_ip)
    if isinstance(ann, StructType):  # members resolved; same name and methods
        st = StructType({k: ret_spec(t, rt, kname) for k, t in ann.members.items()},
                        ann.methods, ann.name)
        st.pycls = ann.pycls  # values are instances of the user's type
        return st
    if isinstance(ann, (tuple, list)):
        return RetTuple(ret_spec(a, rt, kname) for a in ann)
    if typing.get_origin(ann) is tuple:
        return RetTuple(ret_spec(a, rt, kname) for a in typing.get_args(ann))
    raise FieldsimTypeError(f"kernel {kname!r}: unsupported return annotation {ann!r}; use a "
                            "scalar type (fs.f32, fs.i32, float, int), fs.types.vector/matrix, a "
                            "struct type, or a tuple of those")


def flat_dtypes(spec) -> list:
    if spec is None:
        return []
    if isinstance(spec, T.DataType):
        return [spec]
    if isinstance(spec, T.MatrixType):
        return [spec.dtype] * (spec.n * spec.m)
    if isinstance(spec, StructType):
        return [d for t in spec.members.values() for d in flat_dtypes(t)]
    return [d for item in spec.items for d in flat_dtypes(item)]


def _signature(spec):
    """A comparable form of a return spec (member names, shapes and dtypes)."""
    if isinstance(spec, StructType):
        return ("struct", tuple((k, _signature(t)) for k, t in spec.members.items()))
    if isinstance(spec, T.MatrixType):
        return ("mat", spec.n, spec.m, spec.ndim, str(spec.dtype))
    if isinstance(spec, RetTuple):
        return ("tuple", tuple(_signature(t) for t in spec.items))
    return str(spec)


def flatten(fe, spec, value, kname: str) -> list:
    """The returned value as scalars cast to the spec's dtypes."""
    if isinstance(spec, T.DataType):
        if isinstance(value, MatVal) or not isinstance(value, (Stmt, numbers.Number)):
            raise FieldsimTypeError(f"kernel {kname!r} returns {spec} but the value is {describe(value)}")
        return [fe.e.value(fe.e.cast(value, spec), spec)]
    if isinstance(spec, T.MatrixType):
        shape = (spec.n,) if spec.ndim == 1 else (spec.n, spec.m)
        if not isinstance(value, MatVal) or len(value.entries) != spec.n * spec.m \
                or (value.ndim == 2 and value.shape != shape and spec.ndim == 2):
            raise FieldsimTypeError(f"kernel {kname!r} returns a {spec!r} but the value is "
                                    f"{describe(value)}")
        return [fe.e.value(fe.e.cast(v, spec.dtype), spec.dtype) for v in value.entries]
    if isinstance(spec, StructType):
        # as Taichi: a struct of another type (even one that would cast) is refused
        if not isinstance(value, StructValue) or value.names() != list(spec.members) or (
                value.stype is not None
                and _signature(ret_spec(value.stype, fe.rt, kname)) != _signature(spec)):
            what = f"a {value.stype!r}" if getattr(value, "stype", None) is not None \
                else describe(value)
            raise FieldsimTypeError(f"kernel {kname!r} returns a {spec!r} but the value is {what}")
        return [s for k, t in spec.members.items()
                for s in flatten(fe, t, value.member(fe, k), kname)]
    if not isinstance(value, (tuple, list)) or len(value) != len(spec.items):
        raise FieldsimTypeError(f"kernel {kname!r} returns a tuple of {len(spec.items)} values but "
                                f"the value is {describe(value)}")
    return [s for item, v in zip(spec.items, value) for s in flatten(fe, item, v, kname)]


def _scalar(dt, word):
    w = np.array([word], dtype=np.int64)
    if dt.is_float:
        return float(w.view(np.float64)[0])
    if not dt.is_signed:
        return int(w.view(np.uint64)[0]) & ((1 << max(dt.bits, 1)) - 1)
    return int(w[0])


def rebuild(spec, words):
    """The Python value of a kernel's return words (one int64 word per scalar)."""
    value, _ = _rebuild(spec, list(words), 0)
    return value


def _rebuild(spec, words, pos):
    if isinstance(spec, T.DataType):
        return _scalar(spec, words[pos]), pos + 1
    if isinstance(spec, T.MatrixType):
        from fieldsim.lang.matrix import Matrix, Vector
        k = spec.n * spec.m
        vals = np.array([_scalar(spec.dtype, w) for w in words[pos:pos + k]], dtype=spec.dtype.np)
        if spec.ndim == 1:
            return Vector(vals, dt=spec.dtype), pos + k
        return Matrix(vals.reshape(spec.n, spec.m), dt=spec.dtype), pos + k
    if isinstance(spec, StructType):
        members = {}
        for k, t in spec.members.items():
            members[k], pos = _rebuild(t, words, pos)
        obj = spec.pycls.__new__(spec.pycls)
        object.__setattr__(obj, "_entries", members)
        return obj, pos
    out = []
    for item in spec.items:
        v, pos = _rebuild(item, words, pos)
        out.append(v)
    return out, pos  # a list, as Taichi's: `k()[0] = ...` and `k() == [a, b]` work as there
