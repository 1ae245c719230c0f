"""What a name or an assignment target refers to in a kernel: the frontend's references.

Every binding in a frontend block scope is one of these objects, and every assignable
expression (`x`, `x[i]`, `v.xy`, `s.a`) resolves to one, so the frontend never switches on a
binding's kind: it calls the reference. Each takes the `Frontend` it emits through (`fe`) and
frontend values (Python numbers, `Stmt`, `MatVal`, Python objects).

    StaticRef        a compile-time Python object (a template argument, a global, a number a
                     Python-scope name holds): loads as itself; `name = v` rebinds the name
                     (refused under a runtime if/loop: `Frontend.rebind_static`)
    ValueRef         a kernel value that is not a variable (a loop index, a func argument the
                     func does not reassign): loads as itself; cannot be assigned
    LocalRef         a local variable: one alloca, or the allocas of a local vector/matrix
    FieldRef         a field element; a kernel top-level variable is the element of a hidden
                     0-D field (Taichi's global temporaries)
    StructVar        a struct local (`struct.StructLocalRef`, whose members are references
                     of these kinds): loads as the struct local itself, members lazily
    SwizzleRef, DynamicLocalRef   assignment targets (`v.xy = ...`, `v[i] = ...` with a
                     runtime `i`); a DynamicLocalRef also loads `v[i]` of a local array

The protocol: `load(fe)` returns the value (emitting the loads it needs); `store(fe, value)`
writes through an assignment target; `assign(fe, name, value, node, annotation)` is the
statement `name = value` for a name already bound in a block scope; `target(name)` is what an
assignment through the name (`name += v`, `name[i] = v`, `fs.atomic_add(name, v)`) writes
through; `by_reference` says whether a func's `ti.template()`/`ti.ref` parameter may alias it
(variables only). A value a reference cannot hold raises FieldsimTypeError naming the variable
or field before anything is stored.
"""
from __future__ import annotations

import numbers

from fieldsim.errors import FieldsimSyntaxError, FieldsimTypeError
from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang import sparse_kernel, struct
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal, describe
from fieldsim.lang.field import ComponentField, Field


class Ref:
    """The defaults of the protocol in the module docstring."""

    __slots__ = ()
    by_reference = False

    def target(self, name):
        return self

    def assign(self, fe, name, value, node, annotation):
        if struct.is_struct(value):
            raise FieldsimTypeError(f"cannot assign {describe(value)} to {name!r}, which holds "
                                    "a non-struct value")
        self.store(fe, value)


class StaticRef(Ref):
    """A compile-time Python object."""

    __slots__ = ("obj",)

    def __init__(self, obj):
        self.obj = obj

    def load(self, fe):
        return self.obj

    def assign(self, fe, name, value, node, annotation):
        fe.rebind_static(name, value, node, annotation)


class ValueRef(Ref):
    """A kernel value bound to a name that is not a variable."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def load(self, fe):
        return self.value

    def target(self, name):
        if isinstance(self.value, struct.StructValue):
            raise FieldsimSyntaxError(
                f"cannot assign to a member of {name!r}, a struct argument of this func: "
                f"func arguments are values; copy it first ({name}2 = {name}), modify "
                "the copy and return it")
        raise _not_a_variable(name)

    def assign(self, fe, name, value, node, annotation):
        if struct.is_struct(value):
            super().assign(fe, name, value, node, annotation)
        raise _not_a_variable(name)


class ConstantRef(ValueRef):
    """A local holding a typed constant (`a = 0.3`) that is stored again only by plain
    assignments in its own block (`frontend._constant_locals`): Taichi forwards such a store to
    the loads after it, so its value stays a constant its folder sees (`a = 0.7; ti.tanh(a)`)."""

    __slots__ = ()

    @property
    def constant_dtype(self):
        return self.value.dtype

    def assign(self, fe, name, value, node, annotation):
        if annotation is None and isinstance(value, numbers.Number) and not isinstance(value, bool):
            fe.frame.bind(name, ConstantRef(fe.e.value(value, self.value.dtype)))  # as a store casts
            return
        fe.declare(name, self.value)  # the variable it stands for, then the store into it
        fe.frame.local(name).assign(fe, name, value, node, annotation)


def _not_a_variable(name):
    return FieldsimSyntaxError(f"cannot assign to {name!r}: it is a loop index or constant")


class StructVar(Ref):
    """A name bound to a struct local (a `ti.template()` parameter passed it aliases it, as in
    Taichi: `ret.x += 1` in the func changes the caller's struct)."""

    __slots__ = ("local",)
    by_reference = True

    def __init__(self, local: struct.StructLocalRef):
        self.local = local

    def load(self, fe):
        return self.local

    def target(self, name):
        return self.local

    def assign(self, fe, name, value, node, annotation):
        self.local.store(fe, value)  # member-wise


def binding_for(value) -> Ref:
    """A name bound to `value` without a variable: a kernel value or a Python object."""
    return ValueRef(value) if isinstance(value, (Stmt, MatVal)) else StaticRef(value)


class ListRef(Ref):
    """`v = [a, b]` of vectors/matrices in a kernel, then assigned item by item (`v[j] = p[i]`):
    as in Taichi, a Python list whose items are variables, each assigned whole at a constant
    index. (Made one matrix, `v[j] = p[i]` was refused: "Expected 2 indices, got 1".)"""

    __slots__ = ("items", "name")

    def __init__(self, items: list, name: str):
        self.items, self.name = items, name

    def load(self, fe):
        return [r.load(fe) for r in self.items]

    def store(self, fe, value):
        if not isinstance(value, (list, tuple)) or len(value) != len(self.items):
            raise FieldsimTypeError(f"cannot assign {describe(value)} to {self.name!r}, a list of "
                                    f"{len(self.items)} variables")
        for r, v in zip(self.items, value):
            r.store(fe, v)

    def component(self, fe, idx):
        if len(idx) != 1 or not isinstance(idx[0], numbers.Integral) or \
                not -len(self.items) <= idx[0] < len(self.items):
            raise FieldsimSyntaxError(f"{self.name!r} is a list of {len(self.items)} variables: "
                                      f"index it with one constant in range, got {list(idx)!r}")
        return self.items[idx[0]]


class LocalRef(Ref):
    """An assignable local: one scalar alloca, or the allocas of a local vector/matrix.
    `name` (the variable's, when it is one) makes the errors name it."""

    __slots__ = ("allocas", "mat", "name")
    by_reference = True

    def __init__(self, allocas, mat: MatVal | None, name: str | None = None):
        self.allocas, self.mat, self.name = allocas, mat, name

    def load(self, fe):
        if self.mat is None:
            return fe.b.local_load(self.allocas[0])
        return self.mat.map(fe.b.local_load)

    def store(self, fe, value):
        if self.mat is None:
            if isinstance(value, MatVal) or not isinstance(value, (Stmt, numbers.Number)):
                what = f"the scalar variable {self.name!r}" if self.name else "a scalar variable"
                raise FieldsimTypeError(f"cannot assign {describe(value)} to {what}")
            fe.b.local_store(self.allocas[0], fe.e.value(value, self.allocas[0].dtype))
            return
        value = to_matval(value)
        if isinstance(value, (Stmt, numbers.Number)):  # as Taichi: a scalar fills every entry
            value = MatVal([value] * len(self.allocas), self.mat.n, self.mat.m, self.mat.ndim)
        if not isinstance(value, MatVal) or value.shape != self.mat.shape:
            raise _shape_mismatch(value, self.name, self.mat.ndim, self.mat.shape)
        for slot, v in zip(self.allocas, value.entries):
            fe.b.local_store(slot, fe.e.value(v, slot.dtype))

    def component(self, fe, idx):
        if self.mat is None:
            raise FieldsimTypeError("cannot index a scalar variable")
        check_index_count(self.mat, idx)
        r = idx[0]
        c = idx[1] if len(idx) > 1 else 0
        if isinstance(r, Stmt) or isinstance(c, Stmt):
            fe.check_dynamic_index(self.mat, r, c)
            return DynamicLocalRef(self.mat, r, c)
        if not (0 <= r < self.mat.n and 0 <= c < self.mat.m):
            raise FieldsimSyntaxError(f"index ({r}, {c}) out of range for shape {self.mat.shape}")
        return LocalRef([self.mat.at(r, c)], None)


def _scalar_mismatch(value, name):
    return FieldsimTypeError(f"cannot assign {describe(value)} to the scalar variable {name!r}")


def _shape_mismatch(value, name, ndim, shape):
    kind = "vector" if ndim == 1 else "matrix"
    what = f"{name!r}, a {kind}" if name else f"a {kind}"
    return FieldsimTypeError(f"cannot assign {describe(value)} to {what} of shape {shape}")


class SwizzleRef(Ref):
    """`v.xy = ...`: several components of a local vector or vector field element."""

    __slots__ = ("refs",)

    def __init__(self, refs):
        self.refs = refs

    def load(self, fe):
        return MatVal.vector([r.load(fe) for r in self.refs])

    def _values(self, value) -> list:
        value = to_matval(value)
        if not isinstance(value, MatVal):
            return [value] * len(self.refs)
        if len(value.entries) != len(self.refs):
            raise FieldsimTypeError(f"cannot assign {describe(value)} to {len(self.refs)} "
                                    "components (a swizzle or slice)")
        return value.entries

    def store(self, fe, value):
        for r, v in zip(self.refs, self._values(value)):
            r.store(fe, v)

    def on_fields(self) -> bool:
        """Whether every component is a field element's (`+=` is then atomic, as in Taichi)."""
        return all(isinstance(r, FieldRef) for r in self.refs)

    def atomic(self, fe, kind, value):
        olds = [r.atomic(fe, kind, v) for r, v in zip(self.refs, self._values(value))]
        return MatVal.vector(olds)


def slice_ref(fe, inner, idx) -> SwizzleRef:
    """`v[a:b] = ...`, `m[:3, 3] = ...`, `m[i, :] = ...` (compile-time bounds, a runtime row
    or column index beside them, as in Taichi), `x[i][:, :] = ...`: the
    components the slice selects of a local or field element vector/matrix, as one assignable
    (row-major, as `matval_slice` reads them)."""
    mat = getattr(inner, "mat", None)
    if isinstance(inner, FieldRef) and inner.comp is None and inner.field.ndim_el:
        f = inner.field
        n, m, ndim = f.n, (f.m or 1), f.ndim_el
    elif isinstance(inner, LocalRef) and mat is not None:
        n, m, ndim = mat.n, mat.m, mat.ndim
    else:
        raise FieldsimSyntaxError("only a vector or matrix (a variable or a field element) can "
                                  "be assigned through a slice")
    if len(idx) != ndim:
        raise FieldsimSyntaxError(f"Expected {ndim} indices, got {len(idx)}: a "
                                  f"{'vector' if ndim == 1 else 'matrix'} slice")
    rows = range(n)[idx[0]] if isinstance(idx[0], slice) else [idx[0]]  # (`m[i, :]`: runtime i)
    cols = (range(m)[idx[1]] if isinstance(idx[1], slice) else [idx[1]]) if ndim == 2 else [None]
    return SwizzleRef([inner.component(fe, [r] if c is None else [r, c])
                       for r in rows for c in cols])


def array_slots(mat: MatVal) -> tuple | None:
    """The ALLOCAs of a local vector/matrix (`mat`) that a runtime index reaches as one array
    (ARRAY_LOAD/ARRAY_STORE; scalarize_arrays chooses which stay stack arrays): entries of one
    dtype. None for mixed ones, which keep the select chain."""
    slots = mat.entries
    if any(a.dtype is not slots[0].dtype for a in slots):
        return None
    return tuple(slots)


class DynamicLocalRef(Ref):
    """`v[i]` with a runtime index: one ARRAY_LOAD/ARRAY_STORE of the local's entries as an
    array (`array_slots`), or for a local of mixed dtypes a select over every entry (a store
    rewrites every entry through one)."""

    __slots__ = ("c", "mat", "r")

    def __init__(self, mat: MatVal, r, c):
        self.mat, self.r, self.c = mat, r, c

    def _flat(self, fe):
        return fe.e.binop("+", fe.e.binop("*", self.r, self.mat.m), self.c)

    def load(self, fe):
        slots = array_slots(self.mat)
        if slots is not None:
            fe.local_arrays = True
            return fe.b.emit(Op.ARRAY_LOAD, slots[0].dtype, (*slots, fe.e.value(self._flat(fe), T.i32)))
        idx = [self.r] if self.mat.ndim == 1 else [self.r, self.c]
        return fe.matval_get(self.mat.map(fe.b.local_load), idx)

    def store(self, fe, value):
        slots = array_slots(self.mat)
        if slots is not None:
            fe.local_arrays = True
            args = (*slots, fe.e.value(self._flat(fe), T.i32), fe.e.value(value, slots[0].dtype))
            fe.b.emit(Op.ARRAY_STORE, None, args)
            return
        flat = self._flat(fe)
        for k, slot in enumerate(self.mat.entries):
            hit = fe.e.compare("==", flat, k)
            new = fe.e.select(hit, fe.e.value(value, slot.dtype), fe.b.local_load(slot))
            fe.b.local_store(slot, fe.e.value(new, slot.dtype))


def _kernel_variable(field) -> str | None:
    """The user's name of a kernel top-level variable (a hidden 0-D field named
    `kernel.name`, `Frontend.declare_kernel_variable`), so that a bad store names the variable
    as a local's does, not a field the user never made; None for any other field."""
    if field.role != "hidden" or field.shape != ():
        return None
    name = field.ir_name.rsplit(".", 1)[-1]
    return name if name.split("[")[0].isidentifier() else None


class FieldRef(Ref):
    """An element of a field (all components for a vector/matrix field, or one component)."""

    __slots__ = ("comp", "field", "indices")
    by_reference = True  # (as a binding: a kernel top-level variable)

    def __init__(self, field: Field, indices, comp):
        if isinstance(field, ComponentField):  # a component view: its owner's component
            field, comp = field.owner, field.comp
        self.field, self.indices, self.comp = field, indices, comp

    def _targets(self, fe):
        f = self.field
        if f.ndim_el == 0:
            return [self.indices]
        if isinstance(self.comp, tuple):  # a runtime (row, col) of a matrix element
            return [self.indices + [fe.e.value(self.comp[0], T.i32), fe.e.value(self.comp[1], T.i32)]]
        comps = [self.comp] if self.comp is not None else range(f.n * (f.m or 1))
        return [self.indices + component_indices(fe, f, c) for c in comps]

    def load(self, fe):
        if self.comp is not None or self.field.ndim_el == 0:
            return fe.b.load(self.field, self._targets(fe)[0])
        return fe.load_field(self.field, self.indices)

    def _values(self, fe, value):
        value = to_matval(value)
        targets = self._targets(fe)
        if len(targets) == 1 and (self.comp is not None or self.field.ndim_el == 0):
            if isinstance(value, MatVal) or not isinstance(value, (Stmt, numbers.Number)):
                var = _kernel_variable(self.field)
                if var is not None and self.field.ndim_el == 0:
                    raise _scalar_mismatch(value, var)
                raise FieldsimTypeError(f"cannot store {describe(value)} into scalar field "
                                        f"{self.field.ir_name!r}" if self.field.ndim_el == 0 else
                                        f"cannot store {describe(value)} into a component of {self.field.ir_name!r}")
            return targets, [value]
        shape = self.field.element_shape
        if not isinstance(value, MatVal):
            if isinstance(value, (Stmt, numbers.Number)):
                value = MatVal([value] * len(targets), self.field.n, self.field.m or 1, self.field.ndim_el)
            else:
                raise FieldsimTypeError(f"cannot store {describe(value)} into field {self.field.ir_name!r}")
        if tuple(value.shape) != tuple(shape) and len(value.entries) != len(targets):
            var = _kernel_variable(self.field)
            if var is not None:
                raise _shape_mismatch(value, var, self.field.ndim_el, shape)
            raise FieldsimTypeError(f"cannot store {describe(value)} into field {self.field.ir_name!r} "
                                    f"whose elements have shape {shape}")
        return targets, value.entries

    def assign(self, fe, name, value, node, annotation):
        if self.field.role == "hidden" and self.comp is None and not struct.is_struct(value):
            _check_kernel_variable(self.field, name, to_matval(value))
        super().assign(fe, name, value, node, annotation)

    def store(self, fe, value):
        targets, values = self._values(fe, value)
        for idx, v in zip(targets, values):
            fe.b.store(self.field, idx, fe.e.value(v, self.field.dtype))
        sparse_kernel.activate_kernel(fe, self.field, self.indices)

    def atomic(self, fe, kind, value):
        targets, values = self._values(fe, value)
        if kind in ("and", "or", "xor"):
            _integer_operands(kind, self.field, values)
        if self.field.dtype is T.u1 and kind in ("add", "sub"):
            kind = "xor"  # one bit, as Taichi's: a true `u1` plus 1 wraps to 0 (the store is 8 bits)
        olds = [fe.b.atomic(kind, self.field, idx, fe.e.value(v, self.field.dtype))
                for idx, v in zip(targets, values)]
        sparse_kernel.activate_kernel(fe, self.field, self.indices)
        if len(olds) == 1 and (self.comp is not None or self.field.ndim_el == 0):
            return olds[0]
        return MatVal(olds, self.field.n, self.field.m or 1, self.field.ndim_el)

    def component(self, fe, idx):
        if self.field.ndim_el == 0 or self.comp is not None:
            raise FieldsimTypeError(f"field {self.field.ir_name!r} elements are scalars")
        if len(idx) != self.field.ndim_el:
            raise FieldsimSyntaxError(f"Expected {self.field.ndim_el} indices, got {len(idx)}: the "
                                      f"elements of field {self.field.ir_name!r} are "
                                      f"{'vectors' if self.field.ndim_el == 1 else 'matrices'}")
        if any(isinstance(i, Stmt) for i in idx):
            r = idx[0]
            c = idx[1] if len(idx) > 1 else 0
            m = self.field.m or 1
            fe.check_dynamic_index(MatVal([0] * (self.field.n * m), self.field.n, m,
                                          self.field.ndim_el), r, c)
            if self.field.role == "hidden":  # a kernel variable: a local's out-of-range rule
                return KernelVariableEntryRef.at(fe, self, r, c)
            if self.field.ndim_el == 2:  # keep (row, col) apart: the access checker reads them as given
                return FieldRef(self.field, self.indices, (r, c))
            return FieldRef(self.field, self.indices, r)
        r = idx[0]
        c = idx[1] if len(idx) > 1 else 0
        m = self.field.m or 1
        if not (isinstance(r, numbers.Integral) and isinstance(c, numbers.Integral)) or \
                not (0 <= r < self.field.n and 0 <= c < m):
            raise FieldsimSyntaxError(f"index {tuple(idx) if len(idx) > 1 else idx[0]!r} is out of "
                                      f"range for the elements of field {self.field.ir_name!r} "
                                      f"(shape {self.field.element_shape})")
        return FieldRef(self.field, self.indices, r * m + c)


def _check_kernel_variable(f: Field, name, value):
    """`name = value` on a kernel top-level variable (a hidden field) follows a local's rules,
    and its errors name the variable, not the hidden field."""
    if f.ndim_el == 0:
        if isinstance(value, MatVal) or not isinstance(value, (Stmt, numbers.Number)):
            raise _scalar_mismatch(value, name)
    elif isinstance(value, MatVal) and tuple(value.shape) != tuple(f.element_shape):
        raise _shape_mismatch(value, name, f.ndim_el, tuple(f.element_shape))


class KernelVariableEntryRef(FieldRef):
    """An entry, at a runtime index, of a vector/matrix kernel variable (a top-level local kept
    in a hidden field, `declare_kernel_variable`). As for any local (frontend_expr.matval_get,
    codegen/llvm_arrays.py) an index out of range, possible only without `debug=True`, reads the
    last entry and writes nothing: the index is clamped, and a store is made only in range.
    (Unclamped, `v[i] = x` with a wild `i` wrote outside the hidden field's storage.)"""

    __slots__ = ("inside",)

    @classmethod
    def at(cls, fe, ref: FieldRef, r, c):
        f = ref.field
        m, count = f.m or 1, f.n * (f.m or 1)
        # the row-major entry number, as a local's (frontend_expr.matval_get): a column past
        # the row's end is the next row's entry there
        flat = fe.e.value(fe.e.binop("+", fe.e.binop("*", r, m), c), T.i32)
        inside = fe.e.binop("&", fe.e.compare(">=", flat, 0), fe.e.compare("<", flat, count))
        flat = fe.e.select(inside, flat, count - 1)  # else the last entry
        comp = (fe.e.binop("//", flat, m), fe.e.binop("%", flat, m)) if f.ndim_el == 2 else flat
        entry = cls(f, ref.indices, comp)
        entry.inside = inside
        return entry

    def store(self, fe, value):
        value = fe.e.value(value, self.field.dtype)  # evaluated whether or not it is stored
        guard = fe.b.if_(self.inside)  # a branch, not a select of the old value: no read of
        with fe.b.into(guard.blocks[0]):  # the element, which the access rules would refuse
            super().store(fe, value)

    def atomic(self, fe, kind, value):
        if kind not in ("add", "sub"):
            return super().atomic(fe, kind, value)
        zero = fe.e.value(0, self.field.dtype)  # out of range: adds nothing
        return super().atomic(fe, kind, fe.e.select(self.inside, fe.e.value(value, self.field.dtype),
                                                    zero))


def component_indices(fe, field, flat) -> list:
    """IR indices of component `flat` (row-major) of a vector (one index) or matrix (two)."""
    if field.ndim_el == 1:
        return [fe.e.value(flat, T.i32)]
    m = field.m
    if isinstance(flat, Stmt):
        return [fe.e.value(fe.e.binop("//", flat, m), T.i32), fe.e.value(fe.e.binop("%", flat, m), T.i32)]
    return [fe.b.const(flat // m, T.i32), fe.b.const(flat % m, T.i32)]


def check_index_count(m: MatVal, idx: list):
    """As Taichi: a vector takes exactly one index and a matrix exactly two."""
    if len(idx) != m.ndim:
        raise FieldsimSyntaxError(f"Expected {m.ndim} indices, got {len(idx)}: {describe(m)} "
                                  f"is indexed as {'v[i]' if m.ndim == 1 else 'm[i, j]'}")


def to_matval(v):
    """A list/tuple of kernel scalars (or of rows) as a vector (or matrix), as Taichi reads
    `x[i] = [0, 0]` and `v + (1, 2)`; anything else unchanged."""
    if not isinstance(v, (list, tuple)) or not v:
        return v
    if all(isinstance(e, (Stmt, numbers.Number)) for e in v):
        return MatVal.vector(list(v))
    if all(isinstance(r, (list, tuple, MatVal)) for r in v):
        rows = [list(r.entries) if isinstance(r, MatVal) else list(r) for r in v]
        if all(len(r) == len(rows[0]) for r in rows) and rows[0] and \
                all(isinstance(e, (Stmt, numbers.Number)) for r in rows for e in r):
            return MatVal.rows(rows)
    return v


def _integer_operands(kind, field, values):
    """A bitwise atomic (`x[i] |= v`, `ti.atomic_or`) takes integers only, as `|` does."""
    if field.dtype.is_float:
        raise FieldsimTypeError(f"bitwise atomic {kind} needs integer operands: field "
                                f"{field.ir_name!r} is {field.dtype}")
    if any(isinstance(v, float) or (isinstance(v, Stmt) and v.dtype.is_float) for v in values):
        raise FieldsimTypeError(f"bitwise atomic {kind} on field {field.ir_name!r} needs integer "
                                "operands, got a float value")


def atomic_operand(fe, current, value):
    """`value` as Taichi's atomic operation on a variable holding `current` takes it: cast to
    the variable's type (element by element) before the operation, as Taichi's `x += v` and
    `ti.atomic_add(x, v)` on a local do (an f32 `t += f64_value` adds in f32; the value was
    promoted before). Anything that is not a typed scalar or vector pair is left unchanged."""
    value = to_matval(value)
    if isinstance(current, MatVal):
        if isinstance(value, MatVal):
            if value.shape != current.shape:
                return value
            return MatVal([_cast_to(fe, v, c) for v, c in zip(value.entries, current.entries)],
                          value.n, value.m, value.ndim)
        return MatVal([_cast_to(fe, value, c) for c in current.entries],
                      current.n, current.m, current.ndim)
    if isinstance(value, MatVal):
        return value
    return _cast_to(fe, value, current)


def _cast_to(fe, value, current):
    if not isinstance(current, Stmt) or not isinstance(value, (Stmt, numbers.Number)):
        return value
    if type(value) is float:  # a literal is a default_fp constant first: `w += 1e-3` on an f64 w
        return fe.e.value(value, current.dtype)
    return fe.e.cast(value, current.dtype)
