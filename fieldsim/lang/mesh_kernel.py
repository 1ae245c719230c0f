"""MeshTaichi in kernels: mesh elements and their relations, lowered to plain field accesses.

Takes an element set (`lang/mesh.py`'s `MeshElementSet`: `order`, `attrs` {name: Field},
`mesh.relation(from_order, to_order, name)`) and kernel index values. Guarantees, with `v` an
element of a mesh-for loop or reached through a relation:

    for v in mesh.verts      a range loop (parallel when outermost) over the vertices in the
                             patcher's patch order, as Taichi visits them (so atomic sums add in
                             its order); Taichi's patch-local caches change no result
    v.x                      the attribute field's element x[v] (a load, a store target, an
                             atomic target, a `.grad` in the backward pass: an ordinary field)
    v.id                     the element's global index (as Taichi's l2g index)
    v.verts.size, v.verts[k] a relation: a row of a hidden index field (the patcher's arrays in
    for u in v.verts         global indices, lang/mesh_meta.py), loaded like any other field
    ti.mesh_local(...), ti.mesh_patch_idx()   a cache hint (checked, ignored) and the element's
                             patch in the patcher's partition

So the access checker, AD and codegen meet loads, stores and range loops only. A relation the
mesh was not loaded with raises FieldsimSyntaxError naming it and the user's line.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimSyntaxError, FieldsimTypeError
from fieldsim.lang import types as T
from fieldsim.lang.field import Field
from fieldsim.lang.frontend_refs import FieldRef, StaticRef, ValueRef
from fieldsim.lang.kernel_objects import KernelObject
from fieldsim.lang.mesh_meta import ELEMENT_NAMES
from fieldsim.lang.ops import KERNEL_BUILTINS


class MeshElementRef(KernelObject):
    """One mesh element in a kernel: its element set and its global index (an i32 value)."""

    def __init__(self, elements, index):
        self.elements, self.index = elements, index

    @property
    def kernel_name(self):
        return f"a mesh element of {self.elements.kind}"

    def kernel_attribute(self, fe, name):
        if name == "id":
            return ValueRef(self.index)
        if name in ELEMENT_NAMES:
            return StaticRef(MeshRelationAccess(self, ELEMENT_NAMES.index(name)))
        field = self.elements.attrs.get(name)
        if field is None:
            raise FieldsimTypeError(f"{self.kernel_name} has no attribute {name!r} (placed: "
                                    f"{sorted(self.elements.attrs) or 'none'})")
        return FieldRef(field, [self.index], None)


class MeshRelationAccess(KernelObject):
    """`v.verts` (or edges/faces/cells) of an element: `.size`, `[k]`, and a loop over it."""

    def __init__(self, source: MeshElementRef, to_order: int):
        self.source, self.to_order = source, to_order
        elements = source.elements
        self.target = elements.mesh.element_set(to_order)
        self.relation = elements.mesh.relation(elements.order, to_order)

    @property
    def kernel_name(self):
        return f"{self.source.elements.kind[0].upper()}{ELEMENT_NAMES[self.to_order][0].upper()} relation"

    def _row(self, fe):
        """(begin, end) of the source element's row in the CSR values."""
        if self.relation.fixed is not None:
            raise AssertionError("fixed relations have no CSR row")
        offsets = self.relation.offsets
        i = self.source.index
        return (fe.b.load(offsets, [i]),
                fe.b.load(offsets, [fe.e.binop("+", i, 1)]))

    def kernel_attribute(self, fe, name):
        if name != "size":
            raise FieldsimTypeError(f"a mesh relation has no attribute {name!r} (it has .size, "
                                    "[k] and iteration)")
        if self.relation.fixed is not None:
            return StaticRef(self.relation.fixed.shape[1])
        begin, end = self._row(fe)
        return ValueRef(fe.e.binop("-", end, begin))

    def kernel_item(self, fe, indices):
        if len(indices) != 1:
            raise FieldsimTypeError(f"a {self.kernel_name} takes one index, got {len(indices)}")
        k = fe.e.value(indices[0], T.i32)
        if self.relation.fixed is not None:
            index = fe.b.load(self.relation.fixed, [self.source.index, k])
        else:
            begin, _ = self._row(fe)
            index = fe.b.load(self.relation.values, [fe.e.binop("+", begin, k)])
        return StaticRef(MeshElementRef(self.target, index))

    def kernel_loop_dims(self, fe):
        if self.relation.fixed is not None:
            return [(0, self.relation.fixed.shape[1])]
        return [self._row(fe)]

    def kernel_loop_bind(self, fe, index):
        if self.relation.fixed is not None:
            return MeshElementRef(self.target, fe.b.load(self.relation.fixed, [self.source.index, index]))
        return MeshElementRef(self.target, fe.b.load(self.relation.values, [index]))


class KernelRelation:
    """A relation's hidden index fields: `fixed` (num_from, k) or CSR `offsets` and `values`."""

    def __init__(self, fixed: Field | None = None, offsets: Field | None = None,
                 values: Field | None = None):
        self.fixed, self.offsets, self.values = fixed, offsets, values


def mesh_local(*fields):
    """MeshTaichi's hint to cache attributes in patch-local memory: checked (attribute fields),
    no effect here (a cache layout that changes no result).

    >>> x = fs.field(fs.f32, shape=3)
    >>> @fs.kernel
    ... def k():
    ...     fs.mesh_local(x)
    >>> k()
    """
    for f in fields:
        if not isinstance(f, Field):
            raise FieldsimTypeError(f"ti.mesh_local takes mesh attribute fields, got {type(f).__name__}")


def mesh_patch_idx():
    """The patch (of meshtaichi_patcher's partition) that owns the element of the enclosing
    mesh-for loop; only inside one.

    >>> fs.mesh_patch_idx()
    Traceback (most recent call last):
    ...
    fieldsim.errors.FieldsimSyntaxError: ti.mesh_patch_idx() is only valid inside a mesh-for loop of a kernel
    """
    raise FieldsimSyntaxError("ti.mesh_patch_idx() is only valid inside a mesh-for loop of a kernel")


# the hidden name an outermost mesh-for binds its element to, in the loop body's scope
MESH_FOR_ELEMENT = "<mesh-for element>"


def _patch_idx_in_kernel(fe, node, args, kw):
    ref = fe.frame.lookup(MESH_FOR_ELEMENT)
    if ref is None:
        raise FieldsimSyntaxError("ti.mesh_patch_idx() is only valid inside a mesh-for loop "
                                  "(for v in mesh.verts: ...)")
    element = ref.load(fe)
    return fe.b.load(element.elements.patch_field(), [element.index])


KERNEL_BUILTINS[mesh_local] = lambda fe, node, args, kw: mesh_local(*args)
KERNEL_BUILTINS[mesh_patch_idx] = _patch_idx_in_kernel
