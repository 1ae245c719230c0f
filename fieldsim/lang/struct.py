"""Structs: `fs.types.struct(...)`, `fs.Struct`, `fs.Struct.field`, `@fs.dataclass`.

Takes member declarations (name -> scalar dtype, `fs.types.vector/matrix`, or another struct
type). Guarantees: a struct field is stored as one ordinary field per leaf member (per-member
SNodes, all of the struct's shape), so kernels, AD and the access checker see only plain fields;
in kernels a struct value is flattened to its members (`StructVal` for rvalues, `StructLocalRef`
for locals, `StructFieldRef` for field elements) and never reaches the IR as one object.
Construction follows Taichi: positional arguments fill members in order, keywords by name,
missing members are 0, a dict argument gives members by name, and values are cast to the
member types. Misuse (unknown members, wrong kinds) raises a `FieldsimTypeError` in kernels
(located by the frontend) or a TypeError/KeyError naming the struct in Python scope.
"""
from __future__ import annotations

import inspect
import numbers

import numpy as np

from fieldsim.errors import FieldsimSyntaxError, FieldsimTypeError, MissingMemberError
from fieldsim.lang import field as F
from fieldsim.lang import naming, runtime
from fieldsim.lang import types as T
from fieldsim.lang.host_errors import at_user_line, located_subclasses
from fieldsim.lang.matrix import Matrix


# ---- types ------------------------------------------------------------------------------------
class StructType:
    """An ordered set of named members; calling it builds a value in either scope."""

    def __init__(self, members: dict, methods: dict | None = None, name: str | None = None):
        self.members = {}
        for k, t in members.items():
            if isinstance(t, dict):
                t = StructType(t)
            if t is bool:  # Taichi's `hit: bool` member: a u1
                t = T.u1
            if not (t in (float, int) or isinstance(t, (T.DataType, T.MatrixType, StructType))):
                raise TypeError(f"struct member {k!r}: unsupported type {t!r}; use a scalar "
                                "dtype, fs.types.vector/matrix, or a struct type")
            self.members[k] = t
        self.methods = dict(methods or {})
        self.name = name or "Struct"
        # Python-scope values of this type: a Struct subclass carrying the type's methods
        self.pycls = type(self.name, (Struct,), {**self.methods, "_fs_type": self})

    @at_user_line
    def __call__(self, *args, **kwargs):
        return _py_construct(self, args, kwargs)

    @at_user_line
    def field(self, shape=None, name="", offset=None, needs_grad=False, needs_dual=False,
              layout=None) -> StructField:
        _refuse_offset(offset, name)
        return StructField(self, shape, name, needs_grad, needs_dual)

    def __repr__(self):
        inner = ", ".join(f"{k}={v!r}" for k, v in self.members.items())
        return f"{self.name}({inner})"


def _refuse_offset(offset, name):
    """A struct field takes no `offset=`: it was silently ignored (`s[-2]` out of range), and
    Taichi 1.7.4 refuses every such field ("shape cannot be None when offset is set")."""
    if offset is not None:
        label = f" {name!r}" if name else ""
        raise FieldsimSyntaxError(f"struct field{label}: offset={offset!r} is not supported for "
                                  "struct fields (Taichi 1.7.4 refuses it too); index from 0 or "
                                  "place the members as separate fields with offset=")


def struct(**members) -> StructType:
    """`fs.types.struct(a=fs.f32, v=vec3)`; `__struct_methods={"name": fn}` attaches methods,
    as `@fs.dataclass` does."""
    methods = members.pop("__struct_methods", None)
    return StructType(members, methods)


def dataclass(cls) -> StructType:
    """`@fs.dataclass`: a struct type from a class's annotations; its methods (plain or
    `@fs.func`) are callable on values of the type, `@fs.func` ones also in kernels."""
    import sys
    if not isinstance(cls, type):
        raise TypeError(f"@dataclass decorates a class, got {cls!r}")
    ann = dict(inspect.get_annotations(cls))
    # string annotations (`from __future__ import annotations`) resolve in the module and in
    # the scope that defines the class (a class inside a function names its locals)
    scope = dict(getattr(sys.modules.get(cls.__module__), "__dict__", {}))
    scope.update(sys._getframe(1).f_locals)
    for k, t in ann.items():
        if isinstance(t, str):
            try:
                ann[k] = eval(t, scope)
            except Exception:  # noqa: BLE001 - whatever the user's annotation raises
                raise TypeError(f"@dataclass {cls.__name__}: cannot resolve the annotation "
                                f"{t!r} of member {k!r}") from None
    defaulted = [k for k in ann if hasattr(cls, k)]
    if defaulted:  # Taichi refuses it too; a struct value would silently start at zero
        raise FieldsimSyntaxError(
            f"Default value in @dataclass is not supported: {cls.__name__}.{defaulted[0]} = "
            f"{getattr(cls, defaulted[0])!r}. Pass the member to the constructor instead.",
            naming.user_loc())
    methods = {}
    for base in reversed(cls.__mro__[:-1]):  # as in Taichi, methods of base classes too
        methods.update({k: v for k, v in base.__dict__.items()
                        if not (k.startswith("__") and k.endswith("__")) and k not in ann})
    return StructType(ann, methods, cls.__name__)


# ---- Python-scope values ------------------------------------------------------------------------
class Struct:
    """`fs.Struct({"a": 1, "b": v})` or `fs.Struct(a=1, b=v)`: a Python-scope struct value
    (members by attribute). `fs.Struct.field({...}, shape=...)` makes a struct field."""

    def __init__(self, *args, **kwargs):
        if len(args) > 1 or (args and not isinstance(args[0], (dict, Struct))):
            raise TypeError("fs.Struct takes a dict of members and/or keyword members")
        entries = dict(args[0].to_dict(nested=False) if args and isinstance(args[0], Struct)
                       else args[0] if args else {})
        entries.update(kwargs)
        entries = {k: Struct(v) if isinstance(v, dict) else v for k, v in entries.items()}
        object.__setattr__(self, "_entries", entries)

    @staticmethod
    @at_user_line
    def field(members, shape=None, name="", offset=None, needs_grad=False, needs_dual=False,
              layout=None) -> StructField:
        _refuse_offset(offset, name)
        return StructField(StructType(dict(members)), shape, name, needs_grad, needs_dual)

    def __getattr__(self, name):
        entries = object.__getattribute__(self, "_entries")
        if name in entries:
            return entries[name]
        raise AttributeError(f"struct {type(self).__name__} has no member {name!r} "
                             f"(members: {', '.join(entries)})")

    def __setattr__(self, name, value):
        entries = object.__getattribute__(self, "_entries")
        if name not in entries:
            raise AttributeError(f"struct {type(self).__name__} has no member {name!r}")
        stype = getattr(type(self), "_fs_type", None)
        entries[name] = _py_cast(stype.members[name], value) if stype is not None else value

    @property
    def keys(self):
        return list(self._entries)

    @property
    def methods(self) -> dict:
        """Taichi's `Struct.methods`: the methods of the value's `@dataclass` type (a member
        named `methods` wins)."""
        entries = object.__getattribute__(self, "_entries")
        if "methods" in entries:
            return entries["methods"]
        stype = getattr(type(self), "_fs_type", None)
        return dict(stype.methods) if stype is not None else {}

    @property
    def entries(self):
        return list(self._entries.values())

    def items(self):
        return self._entries.items()

    def to_dict(self, nested=True):
        if not nested:  # the copy constructor's: members as they are
            return dict(self._entries)
        return {k: _dict_value(v) for k, v in self._entries.items()}

    def __eq__(self, other):
        if not isinstance(other, Struct) or other.keys != self.keys:
            return NotImplemented
        return all(np.array_equal(np.asarray(a), np.asarray(b)) if not isinstance(a, Struct)
                   else a == b for a, b in zip(self.entries, other.entries))

    __hash__ = object.__hash__

    def __repr__(self):
        # as Taichi: the dict's text, also where a container prints its members' reprs
        return str(_printable(self))

    __str__ = __repr__


def _dict_value(v):
    """A member as Taichi's `to_dict` gives it: nested structs as dicts, vectors and matrices as
    lists (`{'b': [0.5, 0.5]}`, printed as a list)."""
    if isinstance(v, (Struct, StructElement)):
        return v.to_dict()
    return v.to_list() if isinstance(v, Matrix) else v


def _resolve(dt):
    rt = runtime.get()
    return T.concrete_dtype(float if dt is None else dt, rt.default_fp, rt.default_ip)


def _distribute(stype: StructType, args, kwargs) -> dict:
    """Member name -> raw value, Taichi's way (dict, positional in order, keywords, else 0)."""
    names = list(stype.members)
    if len(args) == 1 and not kwargs and isinstance(args[0], dict):
        kwargs, args = dict(args[0]), ()
    if len(args) > len(names):
        raise FieldsimTypeError(f"struct {stype.name} has {len(names)} member(s) "
                                f"({', '.join(names)}), got {len(args)} positional values")
    unknown = [k for k in kwargs if k not in stype.members]
    if unknown:
        raise FieldsimTypeError(f"struct {stype.name} has no member(s) {', '.join(unknown)} "
                                f"(members: {', '.join(names)})")
    out = {}
    for pos, k in enumerate(names):
        if pos < len(args):
            if k in kwargs:
                raise FieldsimTypeError(f"struct {stype.name}: member {k!r} given twice")
            out[k] = args[pos]
        else:
            out[k] = kwargs.get(k, 0)
    return out


def _py_construct(stype: StructType, args, kwargs) -> Struct:
    values = _distribute(stype, args, kwargs)
    obj = stype.pycls.__new__(stype.pycls)
    entries = {}
    for k, v in values.items():
        try:
            entries[k] = _py_cast(stype.members[k], v)
        except TypeError as e:
            if type(e) is not TypeError:
                raise
            raise TypeError(f"struct {stype.name} member {k!r}: {e}") from None
    object.__setattr__(obj, "_entries", entries)
    return obj


def _py_cast(t, v):
    """A Python-scope value `v` as a member of type `t`."""
    if isinstance(t, StructType):
        if isinstance(v, (Struct, StructElement)):
            return _py_construct(t, (), dict(v.items()))
        if isinstance(v, dict):
            return _py_construct(t, (v,), {})
        if isinstance(v, (list, tuple)):
            return _py_construct(t, tuple(v), {})
        return _py_construct(t, (v,), {})
    if isinstance(t, T.MatrixType):
        rt = runtime.get()
        conc = t.concrete(rt.default_fp, rt.default_ip)
        value = conc(v)
        got = np.shape(value.to_numpy())
        if got != t.get_shape():  # e.g. a 3-vector for a vec2 member: never truncated or shifted
            raise TypeError(f"a {conc!r} cannot hold a value of shape {got}")
        return value
    dt = _resolve(t)
    if hasattr(v, "item"):
        v = v.item()
    if not isinstance(v, numbers.Number):
        raise TypeError(f"cannot use {type(v).__name__} {v!r} as a {dt} struct member")
    return float(v) if dt.is_float else int(v)


# ---- struct fields ---------------------------------------------------------------------------
# StructField attributes fieldsim's loops and placement rely on: a member of one of these names
# is reached through `x.get_member_field(name)` (in Taichi a member `shape` shadows it too)
_INTERNAL_NAMES = frozenset({"members", "stype", "leaves", "ir_name", "get_member_field",
                             "get_field_members", "shape", "ndim", "snode"})


@located_subclasses
class StructField:
    """A field of structs: one plain field per member (nested structs recursively)."""

    def __init__(self, stype: StructType, shape=None, name="", needs_grad=False,
                 needs_dual=False, _members=None):
        if isinstance(stype, dict):
            # Taichi's own signature, StructField(field_dict, struct_methods, name, is_primal):
            # a struct over member fields the caller already made (and places itself)
            stype, _members = _type_of_fields(stype, shape), dict(stype)
            shape, needs_grad, needs_dual = None, False, False
        object.__setattr__(self, "stype", stype)
        object.__setattr__(self, "name", name or "")
        if _members is None and (needs_grad or needs_dual):
            _check_differentiable(stype, name or stype.name)
        # members are named after the struct field (unnamed ones after their first field's
        # uid) so that errors and tape pictures say `struct5.pos`, not `field6`
        base = name or naming.assigned_name() or f"{stype.name.lower()}{len(runtime.get().fields)}"
        object.__setattr__(self, "_base", base)
        if _members is None:
            _members = {}
            for k, t in stype.members.items():
                mname = f"{base}.{k}"
                if isinstance(t, StructType):
                    _members[k] = StructField(t, shape, mname, needs_grad, needs_dual)
                else:
                    _members[k] = F.field(_resolve(t) if not isinstance(t, T.MatrixType) else t,
                                          shape, mname, needs_grad=needs_grad, needs_dual=needs_dual)
        object.__setattr__(self, "members", _members)

    # -- structure
    def __getattribute__(self, name):
        # as in Taichi, a member shadows the struct field's attribute of its name (a BVH node's
        # `nodes.parent`, an SDF's `sdf.grad`); fieldsim's own internal names stay reachable
        if name[:1] != "_" and name not in _INTERNAL_NAMES:
            members = object.__getattribute__(self, "__dict__").get("members")
            if members is not None and name in members:
                return members[name]
        return object.__getattribute__(self, name)

    def __getattr__(self, name):
        members = object.__getattribute__(self, "members")
        if name in members:
            return members[name]
        raise AttributeError(f"struct field {self.ir_name!r} has no member {name!r} "
                             f"(members: {', '.join(members)})")

    def __setattr__(self, name, value):
        raise AttributeError(f"struct field {self.ir_name!r}: members cannot be replaced; "
                             f"assign elements instead (x[i].{name} = ...)")

    @property
    def ir_name(self):
        return self._base

    @property
    def keys(self):
        return list(self.members)

    def get_member_field(self, key):
        return self.members[key]

    def leaves(self) -> list:
        out = []
        for m in self.members.values():
            out.extend(m.leaves() if isinstance(m, StructField) else [m])
        return out

    def get_field_members(self):
        return self.leaves()

    @property
    def snode(self):
        """As Taichi's: the representative SNode, its first member's (`x.snode.parent()` is the
        node the struct field is placed under)."""
        leaves = self.leaves()
        return leaves[0].snode if leaves else None

    def parent(self, n=1):
        node = self.snode
        return node.parent(n) if node is not None else None

    @property
    def shape(self):
        leaves = self.leaves()
        return leaves[0].shape if leaves else None

    @property
    def ndim(self):
        return len(self.shape)

    def __len__(self):
        return self.shape[0] if self.shape else 1

    def _place(self, shape):
        for leaf in self.leaves():
            leaf._place(shape)

    def _twins(self, role):
        twins = {}
        for k, m in self.members.items():
            # a member's placed twin (x.grad of a plain float field always exists, unplaced)
            t = m._twins(role) if isinstance(m, StructField) else \
                getattr(m, "adjoint" if role == "grad" else "tangent")
            if t is None:
                return None
            twins[k] = t
        return StructField(self.stype, name=f"{self._base}.{role}",
                           _members=twins)

    @property
    def grad(self):
        """The member gradients as a struct field (None if a member has none, e.g. an int)."""
        return self._twins("grad")

    @property
    def dual(self):
        return self._twins("dual")

    # -- Python-scope access
    def __getitem__(self, key):
        leaves = self.leaves()
        if leaves:
            leaves[0]._index(key)  # checks the index once, naming the member field
        return StructElement(self, key)

    def __setitem__(self, key, value):
        StructElement(self, key)._assign(value)

    def fill(self, value):
        # a member's fill in a kernel is a kernel loop; the whole struct's would run once, while
        # the kernel compiles (Taichi refuses it in Taichi scope)
        runtime.python_scope_call(f"struct field {self.ir_name!r}.fill()")
        for m in self.members.values():
            if isinstance(m, StructField):
                m.fill(value)
            else:
                m.fill(_leaf_cast(m, value))

    def to_numpy(self):
        return {k: m.to_numpy() for k, m in self.members.items()}

    def from_numpy(self, data: dict):
        missing = [k for k in self.members if isinstance(data, dict) and k not in data]
        if missing:  # Taichi reads data[member]: a KeyError
            raise MissingMemberError(f"struct field {self.ir_name!r}.from_numpy: the dict has no "
                                     f"{', '.join(missing)} (expected keys "
                                     f"{', '.join(self.members)})", naming.user_loc())
        if not _struct_data_fits(data, self.members):
            raise ValueError(f"struct field {self.ir_name!r}.from_numpy: expected a dict (or a "
                             f"NumPy record array) with keys {', '.join(self.members)}")
        for k, m in self.members.items():
            m.from_numpy(data[k])

    def to_torch(self, device=None):
        """As Taichi's: a dict of the members' torch tensors (nested structs as dicts)."""
        return {k: m.to_torch(device=device) for k, m in self.members.items()}

    def from_torch(self, data: dict):
        """As Taichi's: each member from the dict's tensor of its name."""
        if not isinstance(data, dict) or set(data) != set(self.members):
            raise ValueError(f"struct field {self.ir_name!r}.from_torch: expected a dict with "
                             f"keys {', '.join(self.members)}")
        for k, m in self.members.items():
            m.from_torch(data[k])

    def copy_from(self, other: StructField):
        for k, m in self.members.items():
            m.copy_from(other.members[k])

    def __repr__(self):
        return f"<fs.Struct.field {self.ir_name!r} shape={self.shape} type={self.stype!r}>"

    def __str__(self):
        return str(self.to_numpy())  # Taichi's `print(field)`


def _type_of_fields(fields: dict, methods) -> StructType:
    """The struct type whose members are these fields' element types."""
    members = {}
    for k, f in fields.items():
        if isinstance(f, StructField):
            members[k] = f.stype
        elif isinstance(f, F.Field) and f.ndim_el:
            members[k] = T.vector(f.n, f.dtype) if f.ndim_el == 1 else T.matrix(f.n, f.m, f.dtype)
        elif isinstance(f, F.Field):
            members[k] = f.dtype
        else:
            raise TypeError(f"StructField member {k!r}: expected a field, got "
                            f"{type(f).__name__} {f!r}")
    if methods is not None and not isinstance(methods, dict):
        raise TypeError(f"StructField: struct_methods must be a dict of functions, got "
                        f"{type(methods).__name__}")
    return StructType(members, methods)


def _struct_data_fits(data, members) -> bool:
    """`from_numpy` data: a dict of the members, or a NumPy record array naming them all (as
    Taichi reads `data[member]`, a structured array from `np.empty(n, dtype=[...])` works)."""
    if isinstance(data, np.ndarray):
        return set(members) <= set(data.dtype.names or ())
    return isinstance(data, dict) and set(data) == set(members)


def _check_differentiable(stype: StructType, path: str):
    """As in Taichi: a struct field with grads/duals must have real members only."""
    from fieldsim.errors import FieldsimRuntimeError
    for k, t in stype.members.items():
        if isinstance(t, StructType):
            _check_differentiable(t, f"{path}.{k}")
            continue
        dt = _resolve(t.dtype if isinstance(t, T.MatrixType) else t)
        if not dt.is_float:
            raise FieldsimRuntimeError(
                f"struct field {path!r}, member {k!r}: {dt} is not supported for field with "
                "`needs_grad=True` or `needs_dual=True`. Give the member a real dtype, or keep "
                "integer data in a separate field.")


def _leaf_cast(leaf, value):
    """A Python value converted for a leaf field's dtype (floats truncate into int fields)."""
    if hasattr(value, "to_numpy"):
        value = value.to_numpy()
    arr = np.asarray(value)
    if leaf.dtype.is_int and arr.dtype.kind == "f":
        arr = np.trunc(arr).astype(leaf.dtype.np)
    return arr


class StructElement:
    """`x[i]` of a struct field in Python scope: members read and write the field."""

    def __init__(self, sfield: StructField, key):
        object.__setattr__(self, "_field", sfield)
        object.__setattr__(self, "_key", key)

    def __getattr__(self, name):
        sf = object.__getattribute__(self, "_field")
        key = object.__getattribute__(self, "_key")
        if name in sf.members:
            m = sf.members[name]
            if isinstance(m, StructField):
                return StructElement(m, key)
            return m[key]  # a vector/matrix member is bound to the member field
        method = sf.stype.methods.get(name)
        if method is not None and hasattr(method, "__get__"):
            return method.__get__(self, type(self))
        raise AttributeError(f"struct field {sf.ir_name!r} has no member {name!r} "
                             f"(members: {', '.join(sf.members)})")

    def __setattr__(self, name, value):
        sf, key = self._field, self._key
        if name not in sf.members:
            raise AttributeError(f"struct field {sf.ir_name!r} has no member {name!r}")
        m = sf.members[name]
        if isinstance(m, StructField):
            StructElement(m, key)._assign(value)
        else:
            m[key] = _leaf_cast(m, value)

    def items(self):
        return [(k, getattr(self, k)) for k in self._field.members]

    # `x[i]["a"]` reads and writes member a, as Taichi's struct elements allow
    def __getitem__(self, name):
        if not isinstance(name, str):
            raise TypeError(f"struct field {self._field.ir_name!r}: an element's members are "
                            f"indexed by name, got {name!r}")
        return self.__getattr__(name)

    def __setitem__(self, name, value):
        if not isinstance(name, str):
            raise TypeError(f"struct field {self._field.ir_name!r}: an element's members are "
                            f"indexed by name, got {name!r}")
        self.__setattr__(name, value)

    def to_dict(self):
        return {k: _dict_value(v) for k, v in self.items()}

    def _assign(self, value):
        sf = self._field
        if isinstance(value, (Struct, StructElement)):
            given = dict(value.items())
        elif isinstance(value, dict):
            given = value
        elif isinstance(value, numbers.Number):
            given = {k: value for k in sf.members}
        else:
            raise TypeError(f"struct field {sf.ir_name!r}: cannot assign {type(value).__name__} "
                            "to an element (use a struct value or a dict)")
        missing = [k for k in sf.members if k not in given]
        extra = [k for k in given if k not in sf.members]
        if missing or extra:
            raise KeyError(f"struct field {sf.ir_name!r} has members {', '.join(sf.members)}; "
                           f"the value has {', '.join(given)}")
        for k in sf.members:
            setattr(self, k, given[k])

    def __repr__(self):
        return f"{self._field.stype.name}({', '.join(f'{k}={v!r}' for k, v in self.items())})"

    def __str__(self):
        return str(_printable(self))


def _printable(v):
    """What `print` shows of a Python-scope struct, as in Taichi: a dict of its members,
    vectors and matrices as lists."""
    if isinstance(v, (Struct, StructElement)):
        return {k: _printable(e) for k, e in v.items()}
    return v.to_list() if hasattr(v, "to_list") else v


# ---- kernel scope: struct values as the frontend sees them ---------------------------------------
class StructValue:
    """A struct in a kernel, flattened: members by name (scalars, `MatVal`s, nested structs)."""

    stype: StructType | None = None

    def names(self) -> list:
        raise NotImplementedError

    def member(self, fe, name):
        raise NotImplementedError

    def load(self, fe) -> StructVal:
        """A snapshot of every member (what a copy `b = a` stores)."""
        return StructVal(self.stype, {k: _load(fe, self.member(fe, k)) for k in self.names()})

    def describe(self):
        name = self.stype.name if self.stype is not None else "Struct"
        return f"a {name} struct with members ({', '.join(self.names())})"

    def __repr__(self):
        return self.describe()


def _load(fe, v):
    return v.load(fe) if isinstance(v, StructValue) else v


class StructVal(StructValue):
    """A struct rvalue: a constructor's result or a snapshot of a local or field element."""

    def __init__(self, stype, members: dict):
        self.stype, self.members = stype, dict(members)

    def names(self):
        return list(self.members)

    def member(self, fe, name):
        return self.members[name]

    def load(self, fe):
        return self


class StructLocalRef(StructValue):
    """A struct local variable: one local (or, at kernel top level, hidden 0-D field) per
    member, each a frontend reference (`frontend_refs`) or a nested StructLocalRef."""

    def __init__(self, stype, bindings: dict):
        self.stype, self.bindings = stype, bindings

    def names(self):
        return list(self.bindings)

    def member(self, fe, name):
        b = self.bindings[name]
        return b if isinstance(b, StructLocalRef) else b.load(fe)  # a nested one: lazily

    def member_ref(self, fe, name):
        return self.bindings[name]

    def store(self, fe, value):
        _store_members(fe, self, value)


class StructFieldRef(StructValue):
    """`x[i]` of a struct field in a kernel: members load/store the member fields at `i`."""

    def __init__(self, sfield: StructField, indices):
        self.sfield, self.indices = sfield, list(indices)
        self.stype = sfield.stype

    def names(self):
        return list(self.sfield.members)

    def member(self, fe, name):
        m = self.sfield.members[name]
        if isinstance(m, StructField):
            return StructFieldRef(m, self.indices)
        return fe.load_field(m, list(self.indices))

    def member_ref(self, fe, name):
        from fieldsim.lang.frontend_refs import FieldRef
        m = self.sfield.members[name]
        if isinstance(m, StructField):
            return StructFieldRef(m, self.indices)
        return FieldRef(m, list(self.indices), None)

    def store(self, fe, value):
        _store_members(fe, self, value)

    def describe(self):
        return f"an element of struct field {self.sfield.ir_name!r}"


def is_struct(v) -> bool:
    return isinstance(v, (StructValue, Struct, StructElement))


def attribute(fe, base: StructValue, name):
    """`s.name` in a kernel: a member, or a method of the struct type bound to `s`."""
    if name in base.names():
        return base.member(fe, name)
    if name == "keys":  # `for k in fs.static(s.keys)` with `getattr(s, k)`, as in Taichi
        return base.names()
    method = base.stype.methods.get(name) if base.stype is not None else None
    if method is not None:
        from fieldsim.lang.kernel import BoundFunc, Func
        if isinstance(method, Func):
            return BoundFunc(method, base)
        raise FieldsimTypeError(f"method {name!r} of {base.stype.name} is a Python method; "
                                "decorate it with @fs.func to call it in a kernel")
    raise FieldsimTypeError(f"{base.describe()} has no member {name!r}")


def _store_members(fe, ref, value):
    val = to_struct_val(fe, value)
    names = ref.names()
    if sorted(val.names()) != sorted(names):
        raise FieldsimTypeError(f"cannot assign {val.describe()} to {ref.describe()}: "
                                "the members differ")
    for k in names:
        ref.member_ref(fe, k).store(fe, val.members[k])


def to_struct_val(fe, v) -> StructVal:
    """Any struct-like value (kernel struct, Python `fs.Struct`, dict) as a `StructVal`."""
    if isinstance(v, StructValue):
        return v.load(fe)
    if isinstance(v, (Struct, StructElement)):
        stype = getattr(type(v), "_fs_type", None) if isinstance(v, Struct) else v._field.stype
        return StructVal(stype, {k: _py_to_kernel(fe, x) for k, x in v.items()})
    if isinstance(v, dict):
        return StructVal(None, {k: _py_to_kernel(fe, x) for k, x in v.items()})
    from fieldsim.lang.expr import describe
    raise FieldsimTypeError(f"expected a struct value, got {describe(v)}")


def _py_to_kernel(fe, x):
    """A member value captured from Python scope (or written in a kernel) as a frontend value."""
    from fieldsim.lang.expr import MatVal
    if is_struct(x) or isinstance(x, dict):
        return to_struct_val(fe, x)
    if isinstance(x, Matrix):
        vals = [e.item() if hasattr(e, "item") else e for e in x.entries]
        return MatVal(vals, x.n, x.m, 1 if x.ndim == 1 or x._a.ndim == 1 else 2)
    if isinstance(x, (list, tuple)) and all(isinstance(e, numbers.Number) for e in x):
        return MatVal.vector(list(x))
    if isinstance(x, np.generic):
        return x.item()
    return x


def construct(fe, stype: StructType | None, args, kwargs) -> StructVal:
    """`mystruct(...)` / `fs.Struct(...)` in a kernel: a `StructVal` with members cast."""
    if stype is None:
        if len(args) > 1 or (args and not (isinstance(args[0], dict) or is_struct(args[0]))):
            raise FieldsimTypeError("fs.Struct takes a dict of members and/or keyword members")
        entries = dict(to_struct_val(fe, args[0]).members) if args else {}
        entries.update({k: _py_to_kernel(fe, v) for k, v in kwargs.items()})
        return StructVal(None, entries)
    values = _distribute(stype, args, kwargs)
    return StructVal(stype, {k: kernel_cast(fe, stype.members[k], v, f"{stype.name}.{k}")
                             for k, v in values.items()})


def kernel_cast(fe, t, v, what):
    from fieldsim.lang.expr import describe
    if isinstance(t, StructType):
        if is_struct(v) or isinstance(v, dict):
            return construct(fe, t, (), to_struct_val(fe, v).members)
        return construct(fe, t, tuple(v) if isinstance(v, (list, tuple)) else (v,), {})
    v = _py_to_kernel(fe, v)
    if isinstance(t, T.MatrixType):
        if is_struct(v):
            raise FieldsimTypeError(f"member {what} is a {t!r}, got {describe(v)}")
        return fe.matrix_type_ctor(t, [v])
    from fieldsim.ir.ir import Stmt
    if not isinstance(v, (Stmt, numbers.Number)):
        raise FieldsimTypeError(f"member {what} is a scalar, got {describe(v)}")
    return fe.e.cast(v, _resolve(t))


def declare(fe, name, value) -> StructLocalRef:
    """A new struct local `name` holding a copy of `value` (members declared as locals)."""
    return _declare(fe, name, to_struct_val(fe, value))


def _declare(fe, prefix, val: StructVal) -> StructLocalRef:
    from fieldsim.lang.expr import MatVal
    bindings = {}
    for k in val.names():
        v = val.members[k]
        internal = f"{prefix}.{k}"  # not an identifier: cannot clash with user names
        if isinstance(v, StructValue):
            bindings[k] = _declare(fe, internal, v.load(fe))
            continue
        if isinstance(v, (list, tuple)):
            v = MatVal.vector(list(v))
        fe.declare(internal, v)
        bindings[k] = fe.frame.scopes[-1].pop(internal)
    return StructLocalRef(val.stype, bindings)
