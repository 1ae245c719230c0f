"""MeshTaichi's Python side: `ti.Mesh`, mesh instances, their element sets and attributes.

Takes metadata from meshtaichi_patcher (`ti.Mesh.generate_meta(dict)`, `ti.Mesh.load_meta(json
file)`; lang/mesh_meta.py reads it into global indices). Guarantees:
- `ti.Mesh._create_instance(meta)` (what `Patcher.load_mesh` returns) and the older builders
  `ti.TriMesh()`/`ti.TetMesh()` + `.verts.place(...)` + `.build(meta)` give a `MeshInstance`
  with `verts`, `edges`, `faces`, `cells` (those the metadata has);
- `elements.place({name: dtype}, reorder=, needs_grad=, layout=)` makes one ordinary field of
  shape (len(elements),) per attribute, in the patcher's global element order (the order of the
  mesh file). `reorder` and `layout` only choose Taichi's memory layout, so they change nothing
  here: `mesh.verts.x` is that field (indexing, `from_numpy`, `to_numpy`, `fill`, `.grad`);
- each relation of the metadata becomes hidden i32 index fields (lang/mesh_kernel.py reads them).
"""
from __future__ import annotations

import json

import numpy as np

from fieldsim.errors import FieldsimSyntaxError, FieldsimTypeError
from fieldsim.lang import types as T
from fieldsim.lang.field import field
from fieldsim.lang.frontend_refs import StaticRef
from fieldsim.lang.kernel_objects import KernelObject
from fieldsim.lang.mesh_kernel import MESH_FOR_ELEMENT, KernelRelation, MeshElementRef
from fieldsim.lang.mesh_meta import ELEMENT_NAMES, LETTERS, MeshMetadata
from fieldsim.lang.naming import user_loc

_RESERVED = frozenset(ELEMENT_NAMES)


class MeshAttribute:
    """What `place` was told about one attribute (Taichi's `MeshAttrType`)."""

    def __init__(self, name, dtype, reorder, needs_grad):
        self.name, self.dtype, self.reorder, self.needs_grad = name, dtype, reorder, needs_grad


class MeshElementSet(KernelObject):
    """One kind of element of a mesh instance (`mesh.verts`, ...): its attribute fields.

    >>> from fieldsim.lang.mesh_meta import one_patch_metadata
    >>> mesh = fs.Mesh._create_instance(fs.Mesh.generate_meta(
    ...     one_patch_metadata(np.eye(3), {"FV": [[0, 1, 2]]})))
    >>> mesh.verts.place({"m": fs.f32})
    >>> len(mesh.verts), mesh.verts.m.shape
    (3, (3,))
    """

    def __init__(self, mesh, order: int, num: int):
        self.mesh, self.order, self.num = mesh, order, num
        self.kind = ELEMENT_NAMES[order]
        self.attrs = {}
        self.attr_dict = {}  # Taichi's name: {name: MeshAttribute}
        self._patch_field = None
        self._order_field = None

    kernel_name = property(lambda self: f"mesh.{self.kind}")

    def place(self, members: dict, reorder=False, needs_grad=False, layout=None):
        for name, dtype in members.items():
            if name in _RESERVED:
                raise FieldsimSyntaxError(f"{name!r} cannot be a mesh attribute name: MeshTaichi "
                                          "reserves it for relations", user_loc())
            if name in self.attrs:
                raise FieldsimSyntaxError(f"mesh attribute {name!r} of {self.kind} is placed "
                                          "already", user_loc())
            self.attrs[name] = _attribute_field(dtype, self.num, needs_grad,
                                                f"mesh.{self.kind}.{name}")
            self.attr_dict[name] = MeshAttribute(name, dtype, reorder, needs_grad)

    def __getattr__(self, name):
        attrs = self.__dict__.get("attrs", {})
        if name in attrs:
            return attrs[name]
        raise AttributeError(f"mesh.{self.__dict__.get('kind', '?')} has no attribute {name!r} "
                             f"(placed: {sorted(attrs) or 'none'})")

    def get_member_field(self, key):
        return self.attrs[key]

    @property
    def keys(self):
        return list(self.attrs)

    def __len__(self):
        return self.num

    def patch_field(self):
        """The owning patch of each element (for ti.mesh_patch_idx), made on first use."""
        if self._patch_field is None:
            self._patch_field = _index_field(self.mesh.meta.patch_of[self.order],
                                             f"mesh.{self.kind}.patch")
        return self._patch_field

    def kernel_attribute(self, fe, name):
        return StaticRef(getattr(self, name))

    def kernel_loop_dims(self, fe):
        return [(0, self.num)]

    def kernel_loop_bind(self, fe, index):
        order = self.mesh.meta.patch_order[self.order]
        if (order != np.arange(len(order))).any():
            if self._order_field is None:
                self._order_field = _index_field(order, f"mesh.{self.kind}.order")
            index = fe.b.load(self._order_field, [index])
        element = MeshElementRef(self, index)
        if fe.depth == 1:  # the outermost loop's element (ti.mesh_patch_idx), in its scope only
            fe.frame.bind(MESH_FOR_ELEMENT, StaticRef(element))
        return element


MeshElementField = MeshElementSet  # Taichi's name (`from taichi.lang.mesh import MeshElementField`)


class MeshInstance:
    """A mesh: its element sets (`verts`, `edges`, `faces`, `cells`) and relations.

    >>> from fieldsim.lang.mesh_meta import one_patch_metadata
    >>> mesh = fs.Mesh._create_instance(fs.Mesh.generate_meta(
    ...     one_patch_metadata(np.eye(3), {"FV": [[0, 1, 2]]})))
    >>> mesh.faces.place({"area": fs.f32})
    >>> @fs.kernel
    ... def area():
    ...     for f in mesh.faces:
    ...         a, b, c = f.verts[0].id, f.verts[1].id, f.verts[2].id
    ...         f.area = a + b + c
    >>> area(); mesh.faces.area.to_numpy()
    array([3.], dtype=float32)
    """

    def __init__(self, meta: MeshMetadata):
        self.meta = meta
        self.patcher = meta.patcher
        self._relations = {}
        self.fields = {}
        for order, num in sorted(meta.num_elements.items()):
            elements = MeshElementSet(self, order, num)
            setattr(self, ELEMENT_NAMES[order], elements)
            self.fields[order] = elements

    def element_set(self, order: int) -> MeshElementSet:
        if order not in self.fields:
            raise FieldsimSyntaxError(f"this mesh has no {ELEMENT_NAMES[order]}")
        return self.fields[order]

    def relation(self, from_order: int, to_order: int) -> KernelRelation:
        """The index fields of a relation, made on first use."""
        key = (from_order, to_order)
        if key not in self._relations:
            data = self.meta.relations.get(key)
            name = LETTERS[from_order] + LETTERS[to_order]
            if data is None:
                raise FieldsimSyntaxError(
                    f"the mesh was loaded without the {name} relation ({ELEMENT_NAMES[from_order]}"
                    f" -> {ELEMENT_NAMES[to_order]}): add {name!r} to relations=[...] of "
                    "Patcher.load_mesh")
            if data.fixed is not None:
                rel = KernelRelation(fixed=_index_field(data.fixed, f"mesh.{name}"))
            else:
                rel = KernelRelation(offsets=_index_field(data.offsets, f"mesh.{name}.offsets"),
                                     values=_index_field(data.values, f"mesh.{name}.values"))
            self._relations[key] = rel
        return self._relations[key]

    def get_position_as_numpy(self):
        return self.meta.position


class Mesh:
    """MeshTaichi's entry points, as meshtaichi_patcher calls them.

    >>> from fieldsim.lang.mesh_meta import one_patch_metadata
    >>> meta = fs.Mesh.generate_meta(one_patch_metadata(np.eye(3), {"FV": [[0, 1, 2]]}))
    >>> mesh = fs.Mesh._create_instance(meta)
    >>> mesh.get_position_as_numpy().shape
    (3, 3)
    """

    @staticmethod
    def generate_meta(data: dict) -> MeshMetadata:
        return MeshMetadata(data)

    @staticmethod
    def load_meta(filename) -> MeshMetadata:
        with open(filename) as f:
            return MeshMetadata(json.load(f))

    @staticmethod
    def _create_instance(metadata: MeshMetadata) -> MeshInstance:
        return MeshInstance(metadata)


class MeshBuilder:
    """`ti.TriMesh()`/`ti.TetMesh()`: attributes declared first, then `build(meta)`.

    >>> from fieldsim.lang.mesh_meta import one_patch_metadata
    >>> builder = fs.TriMesh()
    >>> builder.verts.place({"x": fs.math.vec3})
    >>> mesh = builder.build(fs.Mesh.generate_meta(one_patch_metadata(np.eye(3), {"FV": [[0, 1, 2]]})))
    >>> mesh.verts.x.shape
    (3,)
    """

    def __init__(self):
        for name in ELEMENT_NAMES:
            setattr(self, name, _PendingAttributes())

    def build(self, metadata: MeshMetadata) -> MeshInstance:
        mesh = MeshInstance(metadata)
        for order, elements in mesh.fields.items():
            for members, kw in getattr(self, ELEMENT_NAMES[order]).placed:
                elements.place(members, **kw)
        return mesh


class _PendingAttributes:
    """A builder's element kind: the `place` calls, replayed by `build`."""

    def __init__(self):
        self.placed = []

    def place(self, members, reorder=False, needs_grad=False):
        self.placed.append((dict(members), {"reorder": reorder, "needs_grad": needs_grad}))


def TriMesh():
    """A triangle-mesh builder (Taichi's deprecated path): see MeshBuilder.

    >>> fs.TriMesh().verts.place({"m": fs.f32})
    """
    return MeshBuilder()


def TetMesh():
    """A tetrahedral-mesh builder (Taichi's deprecated path): see MeshBuilder.

    >>> fs.TetMesh().cells.place({"vol": fs.f32})
    """
    return MeshBuilder()


def _attribute_field(dtype, num, needs_grad, name):
    if isinstance(dtype, (T.MatrixType, T.DataType)) or dtype in (int, float):
        return field(dtype, shape=num, needs_grad=needs_grad, name=name)
    raise FieldsimTypeError(f"mesh attribute {name!r}: the type {dtype!r} is not a scalar, "
                            "vector or matrix type (MeshTaichi has no struct attributes)", user_loc())


def _index_field(array, name):
    f = field(T.i32, shape=array.shape, name=name)
    if array.size:
        f.from_numpy(array)
    return f
