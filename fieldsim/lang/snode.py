"""The layout tree (`fs.root.dense(fs.ij, (n, m)).place(x)`): Taichi's SNode API over fieldsim's
row-major field storage.

A node records, per axis (`fs.i` = 0, `fs.j` = 1, ...), how many cells it has along that axis
counting all its ancestors: `dense(fs.i, a).dense(fs.i, b)` is ONE axis of a*b cells. A field
placed under a node gets the node's shape: one dimension per axis used, in axis order (so
`dense(fs.l, n).dense(fs.i, m)` gives shape (m, n), as in Taichi). Storage is the logical
row-major array either way; the hierarchy only decides shapes (and, for sparse nodes, which
cells are active: see `fieldsim.lang.sparse`).
"""
from __future__ import annotations

import numbers

from fieldsim.errors import FieldsimError, FieldsimRuntimeError, FieldsimTypeError
from fieldsim.lang import runtime
from fieldsim.lang.enums import SNodeGradType
from fieldsim.lang.host_errors import located_subclasses
from fieldsim.lang.naming import user_loc

DENSE, POINTER, BITMASKED, DYNAMIC, PLACE, ROOT = ("dense", "pointer", "bitmasked", "dynamic",
                                                   "place", "root")
SPARSE_KINDS = (POINTER, BITMASKED, DYNAMIC)


class Axis:
    def __init__(self, *dims):
        self.dims = dims

    def __repr__(self):
        return f"fs.axes{self.dims}"


i, j, k, l = Axis(0), Axis(1), Axis(2), Axis(3)
ij, ik, jk, ijk, ijkl = Axis(0, 1), Axis(0, 2), Axis(1, 2), Axis(0, 1, 2), Axis(0, 1, 2, 3)
il, jl, kl, ijl, ikl, jkl = Axis(0, 3), Axis(1, 3), Axis(2, 3), Axis(0, 1, 3), Axis(0, 2, 3), Axis(1, 2, 3)


def axes(*dims):
    """Axes for a custom layout (`fs.root.dense(fs.axes(0, 1), ...)`); `fs.ij` is `fs.axes(0, 1)`.

    >>> x = fs.field(fs.f32)
    >>> _ = fs.root.dense(fs.axes(0), 4).place(x)
    >>> x.shape
    (4,)
    """
    return Axis(*dims)


@located_subclasses
class SNode:
    """One node of the layout tree; `fs.root` is the tree's root (fresh after each fs.init)."""

    def __init__(self, kind=ROOT, parent=None, own=None, chunk_size=None):
        self.kind = kind
        self._parent = parent
        self._children: list = []
        self._generation = runtime.get().generation if parent is not None else None
        self.own = dict(own or {})  # axis -> cells at this level
        self.axis_sizes = dict(parent.axis_sizes) if parent is not None else {}
        for a, s in self.own.items():
            self.axis_sizes[a] = self.axis_sizes.get(a, 1) * s
        self.chunk_size = chunk_size
        self.field = None  # the field of a PLACE node
        self.ptr = _SNodePtr(self)
        self.sparse = None  # the activation state of a sparse node (fieldsim.lang.sparse)
        self.quant_bits = None  # a quant_array node: its word's bits (fieldsim.lang.quant)
        self.placed_structs: list = []  # struct fields placed here (`fs.append` of a struct)

    # ---- tree -------------------------------------------------------------------------------
    def _live_children(self) -> list:
        if self.kind == ROOT:  # fs.root outlives fs.init: drop the children of earlier inits
            gen = runtime.get().generation
            self._children = [c for c in self._children if c._generation == gen]
        return self._children

    def get_children(self) -> list:
        return list(self._live_children())

    @property
    def num_children(self) -> int:
        return len(self._live_children())

    def parent(self, n=1):
        node = self
        for _ in range(n):
            if node is None:
                return None
            node = node._parent
        return node

    @property
    def shape(self) -> tuple:
        return tuple(self.axis_sizes[a] for a in sorted(self.axis_sizes))

    @property
    def dim(self) -> int:
        return len(self.axis_sizes)

    @property
    def _name(self) -> str:
        return self.field.name if self.field is not None else ""

    @property
    def name(self) -> str:
        return self._name

    def is_place(self) -> bool:
        return self.kind == PLACE

    def sparse_path(self) -> list:
        """The sparse nodes from the root down to this one."""
        out, node = [], self
        while node is not None:
            if node.kind in SPARSE_KINDS:
                out.append(node)
            node = node._parent
        return out[::-1]

    def _child(self, kind, axis, dims, chunk_size=None) -> SNode:
        if self.kind == PLACE:
            raise FieldsimError(f"cannot add a {kind} node under the place node of field "
                                f"{self._name!r}", user_loc())
        dims_t = _sizes(kind, dims)
        if any(d <= 0 for d in dims_t):
            raise FieldsimRuntimeError(f"{kind}: every dimension of a field should be positive, "
                                       f"got {dims_t}", user_loc())
        axes_t = axis.dims if isinstance(axis, Axis) else (int(axis),)
        if len(dims_t) == 1 and len(axes_t) > 1:
            dims_t = dims_t * len(axes_t)
        if len(dims_t) != len(axes_t):
            raise FieldsimError(f"{kind}: {len(axes_t)} axes but {len(dims_t)} sizes {dims_t}", user_loc())
        child = SNode(kind, self, dict(zip(axes_t, dims_t)), chunk_size)
        self._live_children().append(child)
        if kind in SPARSE_KINDS:
            from fieldsim.lang import sparse
            sparse.declare(child)
        return child

    def dense(self, axis, dims) -> SNode:
        return self._child(DENSE, axis, dims)

    def pointer(self, axis, dims) -> SNode:
        return self._child(POINTER, axis, dims)

    def bitmasked(self, axis, dims) -> SNode:
        return self._child(BITMASKED, axis, dims)

    def dynamic(self, axis, dims, chunk_size=None) -> SNode:
        if isinstance(axis, Axis) and len(axis.dims) != 1:
            raise FieldsimError("dynamic: a dynamic node has exactly one axis", user_loc())
        return self._child(DYNAMIC, axis, dims, chunk_size)

    def quant_array(self, axes, dimensions, max_num_bits) -> SNode:
        """A node packing `dimensions` cells of one quantized int/fixed field into each
        `max_num_bits`-bit word (Taichi's `quant_array`).

        >>> x = fs.field(fs.types.quant.int(4, False))
        >>> _ = fs.root.dense(fs.i, 2).quant_array(fs.i, 8, max_num_bits=32).place(x)
        >>> x[9] = 21; x.shape, x[9]
        ((16,), 5)
        """
        node = self._child(DENSE, axes, dimensions)
        node.quant_bits = max_num_bits
        return node

    def place(self, *fields, offset=None) -> SNode:
        for f in fields:
            members = f if isinstance(f, (list, tuple)) else [f]
            self.placed_structs.extend(m for m in members if hasattr(m, "leaves"))
            # a struct field places its member fields, each in its own place node
            members = [leaf for m in members
                       for leaf in (m.leaves() if hasattr(m, "leaves") else [m])]
            for member in members:
                if member is None:
                    raise FieldsimError(
                        "place: got None; a field's .grad/.dual can be placed only together "
                        "with the field (place(x, x.grad)) or with needs_grad=True / lazy_grad()", user_loc())
                if not hasattr(member, "_place"):
                    raise FieldsimError(f"place: {member!r} is not a field", user_loc())
                node = SNode(PLACE, self)
                node.field = member
                member._place(self.shape, offset=offset, snode=node)
                if member._snode is node:  # not an already-placed twin placed again
                    self._live_children().append(node)
        return self

    def _float_fields(self) -> list:
        """The float primal fields `lazy_grad` covers: for `fs.root` every one (also those placed
        later), for another node the fields placed below it."""
        fields = list(runtime.get().fields) if self is root else self._placed_fields()
        return [f for f in fields if f.role == "primal" and f.dtype.is_float
                and getattr(f, "qtype", None) is None]  # quantized fields have no gradients

    def _placed_fields(self) -> list:
        fields, stack = [], [self]
        while stack:
            n = stack.pop()
            if n.field is not None:  # a component view stands for its owner
                fields.append(getattr(n.field, "owner", n.field))
            stack.extend(n._children)
        return fields

    def lazy_grad(self):
        for f in self._float_fields():
            f._enable_twin("grad")

    def lazy_dual(self):
        for f in self._float_fields():
            f._enable_twin("dual")

    def deactivate_all(self):
        # in a kernel it would deactivate once, while the kernel compiles (Taichi: a nested launch)
        runtime.python_scope_call(f"{self!r}.deactivate_all()")
        from fieldsim.lang import sparse_ops
        sparse_ops.deactivate_all(self)

    def __repr__(self):
        return f"<fs.SNode {self.kind} shape={self.shape}>"


class _SNodePtr:
    """What Taichi programs reach through `snode.ptr` (the C++ node): its gradient type."""

    def __init__(self, node: SNode):
        self.node = node

    def get_snode_grad_type(self):
        f = self.node.field
        role = f.role if f is not None else "primal"
        return {"grad": SNodeGradType.ADJOINT, "dual": SNodeGradType.DUAL}.get(
            role, SNodeGradType.PRIMAL)

    def has_adjoint(self):
        """Whether the node's field has a gradient field (`needs_grad=True` or `field.grad` placed):
        libraries read this to tell which fields take gradients."""
        f = self.node.field
        return bool(f is not None and f.role == "primal" and f.adjoint is not None)

    def has_dual(self):
        f = self.node.field
        return bool(f is not None and f.role == "primal" and f.tangent is not None)

    def is_primal(self):
        f = self.node.field
        return f is None or f.role == "primal"

    def has_adjoint_checkbit(self):
        """Taichi allocates a check bit for each field with a gradient once a Tape validates;
        fieldsim's validation covers the same fields."""
        f = self.node.field
        return bool(f is not None and f.role == "primal" and f.adjoint is not None
                    and getattr(runtime.get(), "adjoint_checkbits", False))


root = SNode()


class FieldsBuilder(SNode):
    """`fs.FieldsBuilder()`: a layout tree of its own, declared like `fs.root`; `finalize()`
    returns the `SNodeTree` whose `destroy()` frees its fields (using them afterwards raises).

    >>> fb = fs.FieldsBuilder()
    >>> x = fs.field(fs.f32)
    >>> _ = fb.dense(fs.i, 3).place(x)
    >>> tree = fb.finalize()
    >>> x.shape
    (3,)
    >>> tree.destroy()
    """

    def __init__(self):
        super().__init__(ROOT)
        self._tree = None

    @property
    def finalized(self) -> bool:
        return self._tree is not None

    @property
    def empty(self) -> bool:
        return not self._children

    def _child(self, kind, axis, dims, chunk_size=None) -> SNode:
        if self.finalized:
            raise FieldsimError(f"FieldsBuilder: cannot add a {kind} node after finalize()", user_loc())
        return super()._child(kind, axis, dims, chunk_size)

    def finalize(self, raise_warning=True) -> SNodeTree:
        if self.finalized:
            raise FieldsimError("FieldsBuilder: finalize() was already called", user_loc())
        self._tree = SNodeTree(self)
        return self._tree


class SNodeTree:
    """What `FieldsBuilder.finalize()` returns."""

    def __init__(self, builder: FieldsBuilder):
        self.builder = builder
        self.destroyed = False
        self.id = _claim_tree_id()

    def destroy(self):
        if self.destroyed:
            raise FieldsimRuntimeError("SNodeTree: destroy() was already called", user_loc())
        self.destroyed = True
        runtime.get().snode_tree_ids.discard(self.id)  # Taichi gives a freed id to the next tree
        for f in self.builder._placed_fields():
            f._destroy()
        # kernels compiled before may name these fields: recompile them all, as Taichi does
        runtime.get().kernel_epoch += 1


def _claim_tree_id() -> int:
    """Taichi's `SNodeTree.id`: the smallest id no live tree holds; `fs.root`'s tree, when it has
    fields, was made first and holds 0 (Taichi materialises it before a builder's tree)."""
    ids = runtime.get().snode_tree_ids
    if not ids and root.num_children:
        ids.add(0)
    tree_id = next(i for i in range(len(ids) + 1) if i not in ids)
    ids.add(tree_id)
    return tree_id


def _sizes(kind: str, dims) -> tuple:
    """A node's sizes as ints: one int, or a sequence of them."""
    try:
        return (int(dims),) if isinstance(dims, numbers.Integral) else tuple(int(d) for d in dims)
    except (TypeError, ValueError):
        raise FieldsimTypeError(f"{kind}: the sizes must be an int or a tuple of ints, got "
                                f"{dims!r}", user_loc()) from None
