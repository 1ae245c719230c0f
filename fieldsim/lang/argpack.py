"""Argument packs: `fs.types.argpack(a=fs.i32, v=vec3, arr=fs.types.ndarray(...), n=inner)`,
the `fs.ArgPack` values its type makes, and the pack a kernel body sees for an argument
annotated with one (Taichi 1.7's `ti.types.argpack` / `ti.ArgPack`).

Takes member annotations: scalar types (Python `int`/`float` too), vector/matrix types, struct
types, ndarray/texture annotations, sparse matrix builders and other argpack types (nesting).
Guarantees: a pack is a reference container, built by its type from keyword or positional
values (vectors/matrices and structs cast to their types, scalars to Python int/float, arrays
kept as given; positional values past the last member are ignored, as Taichi does); a missing member, an unknown annotation or a float for an integer member is a
FieldsimTypeError naming the member; assigning a member (`p.a = 2`, `p["a"] = 2`) is checked the
same way (the pack unchanged when it fails) and keeps the value as given, as Taichi's does. A kernel binds each member as if it were
an argument of its own, named `arg.member` (`kernel.KernelObj._bind_one`); in the kernel body
`arg.member` reads it (a `PackValue`), members cannot be assigned, and a pack can be passed on
to a `ti.template()` function parameter. No gradient flows to a pack's scalars.
"""
from __future__ import annotations

import numbers

from fieldsim.errors import FieldsimSyntaxError, FieldsimTypeError
from fieldsim.ir.ir import Stmt
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal
from fieldsim.lang.host_errors import at_user_line
from fieldsim.lang.matrix import Matrix
from fieldsim.lang.ndarray import NdarrayType
from fieldsim.lang.struct import StructType, StructValue, _py_cast
from fieldsim.lang.triplets import is_builder_annotation


def _is_kept(t) -> bool:
    """An annotation whose member value is kept as given (an array, texture or builder)."""
    return isinstance(t, NdarrayType) or hasattr(t, "bind_value") or is_builder_annotation(t)


def _member_type(name: str, t):
    if isinstance(t, (ArgPackType, StructType, T.MatrixType)) or _is_kept(t):
        return t
    if t is bool:
        return T.u1  # as Taichi's cook_dtype reads it
    if t in (int, float) or isinstance(t, T.DataType):
        return t
    raise FieldsimTypeError(f"argpack member {name!r}: {t!r} is not a type an argument pack can "
                            "hold (a scalar, vector/matrix, struct, ndarray, texture or argpack "
                            "type)")


def _is_int(t) -> bool:
    return T.concrete_dtype(t, T.f32, T.i32).is_int


def _cast(name: str, t, v):
    """`v` as member `name` (annotation `t`) of a pack stores it."""
    if isinstance(t, ArgPackType):
        if isinstance(v, dict):
            return t(**v)
        if not isinstance(v, t):
            raise FieldsimTypeError(f"argpack member {name!r} expects a {t}, got "
                                    f"{type(v).__name__}")
        return v
    if _is_kept(t):
        return v
    if isinstance(t, (StructType, T.MatrixType)):
        try:
            return _py_cast(t, v)
        except (TypeError, ValueError) as e:
            raise FieldsimTypeError(f"argpack member {name!r}: {e}") from None
    return _cast_scalar(name, t, v)


def _cast_scalar(name: str, t, v):
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        v = v.item()
    if not isinstance(v, numbers.Real):
        raise FieldsimTypeError(f"argpack member {name!r} expects a scalar, got "
                                f"{type(v).__name__}")
    if _is_int(t):
        if not isinstance(v, numbers.Integral):  # as Taichi: no float for an integer member
            raise FieldsimTypeError(f"argpack member {name!r} is an integer member: it cannot "
                                    f"take the {type(v).__name__} {v!r}")
        return int(v)
    return float(v)


class ArgPackType:
    """`fs.types.argpack(**members)`: an argument pack's type; calling it makes a pack.

    >>> pt = fs.types.argpack(a=fs.i32, b=fs.f32)
    >>> pt(a=3, b=1)
    {'a': 3, 'b': 1.0}
    """

    def __init__(self, **members):
        if not members:
            raise FieldsimTypeError("an argument pack needs at least one member")
        self.members = {k: _member_type(k, t) for k, t in members.items()}

    @at_user_line
    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and isinstance(args[0], dict):
            args, kwargs = (), args[0]
        entries = {}
        for k, (name, t) in enumerate(self.members.items()):
            if k < len(args):
                entries[name] = _cast(name, t, args[k])
            elif name in kwargs:
                entries[name] = _cast(name, t, kwargs[name])
            else:
                raise FieldsimTypeError(f"{self}: no value given for member {name!r}")
        return ArgPack(self, entries)

    def __instancecheck__(self, instance):
        return isinstance(instance, ArgPack) and _same_type(instance.dtype, self)

    def __str__(self):
        return "<ti.ArgPackType " + ", ".join(f"{k}={v}" for k, v in self.members.items()) + ">"

    __repr__ = __str__


def _same_type(a: ArgPackType, b: ArgPackType) -> bool:
    if a is b:
        return True
    if list(a.members) != list(b.members):
        return False
    return all(_same_member(s, t) for s, t in zip(a.members.values(), b.members.values()))


def _same_member(s, t) -> bool:
    if isinstance(s, ArgPackType) and isinstance(t, ArgPackType):
        return _same_type(s, t)
    if isinstance(s, NdarrayType) and isinstance(t, NdarrayType):  # made afresh per pack type
        return vars(s) == vars(t)
    return s == t


class ArgPack:
    """A pack of member values (see the module docstring); members read and set as attributes
    or by name, `to_dict()`, and Taichi's `keys` and `items` properties.

    >>> view_t = fs.types.argpack(far=fs.f32, eye=fs.types.vector(3, fs.f32))
    >>> view = view_t(far=10.0, eye=[0, 1, 2])
    >>> @fs.kernel
    ... def depth(p: view_t) -> fs.f32:
    ...     return p.far - p.eye.z
    >>> depth(view)
    8.0
    >>> view.far = 4
    >>> depth(view), view.keys
    (2.0, ['far', 'eye'])
    """

    def __init__(self, dtype: ArgPackType, entries: dict):
        object.__setattr__(self, "dtype", dtype)
        object.__setattr__(self, "_entries", dict(entries))

    def __getattr__(self, name):
        entries = self.__dict__.get("_entries", {})
        if name in entries:
            return entries[name]
        raise AttributeError(f"argument pack {self.dtype} has no member {name!r}")

    def __setattr__(self, name, value):
        if name in self._entries:
            self[name] = value
        else:  # programs hang their own attributes on a pack (its type, helper functions)
            object.__setattr__(self, name, value)

    def __getitem__(self, key):
        return getattr(self, key)

    @at_user_line
    def __setitem__(self, key, value):
        if key not in self._entries:
            raise FieldsimTypeError(f"argument pack {self.dtype} has no member {key!r}")
        _cast(key, self.dtype.members[key], value)  # refused before anything changes
        self._entries[key] = value  # kept as given, as Taichi's pack does (a launch casts it)

    @property
    def keys(self):
        return list(self._entries)

    @property
    def items(self):
        return self._entries.items()

    def __len__(self):
        return len(self._entries)

    def __iter__(self):
        return iter(self._entries.values())

    def to_dict(self) -> dict:
        """Members by name: nested packs as dicts, vectors/matrices as lists."""
        return {k: v.to_dict() if isinstance(v, ArgPack) else
                v.to_list() if isinstance(v, Matrix) else v for k, v in self._entries.items()}

    def __str__(self):
        return str(self.to_dict())

    __repr__ = __str__


def argpack(**members) -> ArgPackType:
    """`fs.types.argpack(center=vec3, radius=float)`: an argument pack type (Taichi's).

    >>> sphere_t = fs.types.argpack(center=fs.math.vec3, radius=float)
    >>> sphere_t(center=[0, 0, 1], radius=2)
    {'center': [0.0, 0.0, 1.0], 'radius': 2.0}
    """
    return ArgPackType(**members)


def pack_members(ptype: ArgPackType, value, kname: str, pname: str):
    """[(member, annotation, value)] of a launch's argument `pname` annotated `ptype`."""
    if not isinstance(value, ArgPack) or not _same_type(value.dtype, ptype):
        got = value.dtype if isinstance(value, ArgPack) else type(value).__name__
        raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} expects an argument pack "
                                f"{ptype}, got {got}")
    return [(k, t, value._entries[k]) for k, t in ptype.members.items()]


class PackValue:
    """An argument pack in a kernel body: each member as the body sees an argument of its
    kind (a scalar, a vector/matrix value, a struct value, an ndarray, a nested pack)."""

    def __init__(self, name: str, ptype: ArgPackType, members: dict):
        self.name, self.ptype, self.members = name, ptype, members

    def __getattr__(self, name):
        members = self.__dict__.get("members", {})
        if name in members:
            return members[name]
        raise FieldsimTypeError(f"argument pack {self.name!r} ({self.__dict__.get('ptype')}) "
                                f"has no member {name!r}")

    def member_to_store(self, name):
        """Member `name` as the target of a store (`q.arr[i] = v`): an array, a texture or a
        nested pack; Taichi's packs hold their scalars, vectors and structs read-only."""
        member = getattr(self, name)
        if not isinstance(member, (Stmt, MatVal, StructValue)):
            return member
        raise FieldsimSyntaxError(f"cannot assign to {self.name}.{name}: the scalar, vector and "
                                  "struct members of an argument pack are read-only in a kernel "
                                  f"(copy it first: `v = {self.name}.{name}`)")

    def __repr__(self):
        return f"argument pack {self.name!r}"


__all__ = ["ArgPack", "ArgPackType", "argpack"]
