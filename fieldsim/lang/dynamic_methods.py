"""The methods Taichi's frontend gives a field placed directly under a `dynamic` node, in
kernels: `x.append(v)`, `x.deactivate()`, `x.length()` and, for a field with more dimensions,
`x[I].append(v)` with one index fewer than the field has (the cell of the dynamic node's parent).

Takes an `ast.Attribute` whose name is one of METHODS; gives a callable that emits what
`fs.append(x.parent(), I, v)` / `fs.deactivate(...)` / `fs.length(...)` emit, or None when the
receiver is not such a field or has the wrong number of indices (the attribute is then an
ordinary one, as in Taichi). A struct field (all its members under the one dynamic node)
appends one struct: each member into its own field.
"""
from __future__ import annotations

import ast

from fieldsim.errors import FieldsimTypeError
from fieldsim.lang import sparse_ops
from fieldsim.lang.field import Field
from fieldsim.lang.snode import DYNAMIC
from fieldsim.lang.struct import StructField

METHODS = ("append", "deactivate", "length")


def dynamic_parent(field):
    """The dynamic node every leaf of `field` (a Field or StructField) is placed directly
    under, or None."""
    if isinstance(field, StructField):
        leaves = field.leaves()
    elif isinstance(field, Field):
        leaves = [field]
    else:
        return None
    parents = {id(f.parent()): f.parent() for f in leaves if f.parent() is not None}
    if len(parents) != 1 or len(leaves) != sum(1 for f in leaves if f.parent() is not None):
        return None
    (node,) = parents.values()
    return node if node.kind == DYNAMIC else None


class DynamicMethod:
    """`x.append` / `x[I].deactivate` / ... bound to its field and parent cell."""

    def __init__(self, fe, field, node, indices, name):
        self.fe, self.field, self.node, self.indices, self.name = fe, field, node, indices, name

    def __call__(self, *args, **kwargs):
        if kwargs or len(args) != (self.name == "append"):
            want = "one value" if self.name == "append" else "no arguments"
            raise FieldsimTypeError(f"{self.name}() of a dynamic field takes {want}")
        call = [self.node, self.indices, *args]
        if self.name == "append":
            return sparse_ops.kernel_append(self.fe, None, call, {}, target=self.field)
        handler = sparse_ops.kernel_deactivate if self.name == "deactivate" else sparse_ops.kernel_length
        return handler(self.fe, None, call, {})


def bind(fe, node: ast.Attribute):
    """The method `node` names, bound; None if `node` is not a dynamic field's method."""
    target = node.value.value if isinstance(node.value, ast.Subscript) else node.value
    if not isinstance(target, (ast.Name, ast.Attribute)):  # evaluated twice: must be pure
        return None
    field = fe.expr(target)
    dyn = dynamic_parent(field)
    if dyn is None:
        return None
    indices = fe.subscript_indices(node.value.slice) if target is not node.value else []
    if len(indices) + 1 != len(field.shape):
        return None
    return DynamicMethod(fe, field, dyn, indices, node.attr)
