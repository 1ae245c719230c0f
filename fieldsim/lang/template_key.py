"""The in-memory compile-cache key of a template argument: by value, never by `id()`.

`template_key(v)` returns a hashable key such that two arguments with equal keys compile to the
same kernel. Fields key by (uid, generation); lists, tuples and dicts by their contents
(recursively); a Python-scope vector/matrix by its dtype, shape and entries (a kernel reads
them at compile time, so changing an entry recompiles: Taichi issue #4389); numpy arrays (whose data a kernel reads at launch, never at compile time) by
dtype, shape and identity; other hashable values by (type, value),
so `1`, `1.0` and `True` stay apart. An unhashable object of another kind keys by its identity
and the key holds a reference to it, so its id cannot be reused by a new object while the
compiled kernel is cached (mutating such an object in place is not seen: pass a value instead).
"""
from __future__ import annotations

import numpy as np

_field = [None]
_matrix = [None]


class _Identity:
    """Keys an unhashable object by identity while keeping it alive."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def __hash__(self):
        return id(self.obj)

    def __eq__(self, other):
        return isinstance(other, _Identity) and other.obj is self.obj


def template_key(v):
    if _field[0] is None:  # imported late: lang.field imports the kernel module's neighbours
        from fieldsim.lang.field import Field
        from fieldsim.lang.matrix import Matrix
        _field[0], _matrix[0] = Field, Matrix
    if isinstance(v, _field[0]):
        return ("f", v.uid, v.generation)
    if isinstance(v, _matrix[0]):
        a = v.to_numpy()
        return ("mat", type(v).__name__, str(v.dtype), a.shape, a.dtype.str, a.tobytes())
    if isinstance(v, (list, tuple)):
        return (type(v).__name__, tuple(template_key(x) for x in v))
    if isinstance(v, dict):
        return ("dict", tuple(sorted(((repr(k), template_key(x)) for k, x in v.items()))))
    if isinstance(v, np.ndarray):  # its data is read at launch: keyed without its contents
        return ("ndarray", v.dtype.str, v.shape, _Identity(v))
    try:
        hash(v)
    except TypeError:
        return ("id", _Identity(v))
    return ("v", type(v), v)
