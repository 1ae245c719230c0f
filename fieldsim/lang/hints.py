"""Taichi's cache and scheduling hints, accepted and ignored: `ti.block_local(*fields)` and
`ti.cache_read_only(*fields)` ask a GPU backend to stage fields in shared memory or the
read-only cache. They change no result, so on fieldsim's CPU backend they do nothing.
`ti.no_activate(*fields_or_snodes)` promises that the kernel's accesses to sparse fields need
no activation (the cells are active already); it saves Taichi the activation work and changes no
result of a program that keeps the promise, so it is accepted the same way. Like Taichi's, it
takes SNodes too (taichi_elements passes its particle node: `ti.no_activate(self.particle)`).
`ti.assume_in_range(val, base, low, high)` promises `base + low <= val < base + high` (for
Taichi's shared-memory staging) and returns `val` untouched, here as there.

Takes fields (and, for `no_activate`, SNodes) in kernel scope or Python scope; guarantees
nothing is emitted.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimTypeError
from fieldsim.lang.field import Field
from fieldsim.lang.ops import KERNEL_BUILTINS
from fieldsim.lang.snode import SNode


def block_local(*fields):
    """Taichi's shared-memory caching hint: checked (arguments must be fields), no effect here.

    >>> y = fs.field(fs.f32, shape=4)
    >>> @fs.kernel
    ... def k():
    ...     fs.block_local(y)
    ...     for i in y:
    ...         y[i] = 1
    >>> k()
    """
    _check(fields, "block_local")


def cache_read_only(*fields):
    """Taichi's read-only caching hint: checked (arguments must be fields), no effect here.

    >>> y = fs.field(fs.f32, shape=4)
    >>> @fs.kernel
    ... def k():
    ...     fs.cache_read_only(y)
    >>> k()
    """
    _check(fields, "cache_read_only")


def no_activate(*fields):
    """Taichi's "these accesses need no activation" hint: checked (arguments must be fields or
    SNodes), no effect here.

    >>> y = fs.field(fs.f32)
    >>> block = fs.root.pointer(fs.i, 2)
    >>> _ = block.dense(fs.i, 2).place(y)
    >>> @fs.kernel
    ... def k():
    ...     fs.no_activate(y, block)
    >>> k()
    """
    _check(fields, "no_activate", (Field, SNode), "fields or SNodes")


def _check(fields, name, kinds=Field, what="fields"):
    for f in fields:
        if not isinstance(f, kinds):
            raise FieldsimTypeError(f"fs.{name} takes {what}, got {type(f).__name__}")


def assume_in_range(val, base, low, high):
    """Taichi's range hint for `val` (in `[base + low, base + high)`): returns `val` untouched.

    >>> @fs.kernel
    ... def k(x: int) -> int:
    ...     return fs.assume_in_range(x, 10, -2, 2) * 2
    >>> k(11)
    22
    """
    if not isinstance(low, int) or not isinstance(high, int):  # Taichi takes them as C++ ints
        raise FieldsimTypeError(f"ti.assume_in_range: low and high are Python ints (offsets from "
                                f"base {base!r}), got {low!r} and {high!r}")
    return val


KERNEL_BUILTINS[assume_in_range] = lambda fe, node, args, kw: assume_in_range(*args, **kw)
KERNEL_BUILTINS[block_local] = lambda fe, node, args, kw: block_local(*args)
KERNEL_BUILTINS[cache_read_only] = lambda fe, node, args, kw: cache_read_only(*args)
KERNEL_BUILTINS[no_activate] = lambda fe, node, args, kw: no_activate(*args)
