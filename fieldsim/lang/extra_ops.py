"""`fs.static_assert`: checks a compile-time condition in a kernel and refuses a runtime one
with a `FieldsimTypeError`; a plain check in Python scope. `fs.zero(x)`/`fs.one(x)`: a value of
x's type and shape filled with 0/1 (Taichi's `x * 0` and `x * 0 + 1`), in both scopes.
`fs.global_thread_idx()`: inside a kernel's for loop, the index of the thread running it.
(`raw_div`, `raw_mod` and the bit shifts live in `ops_int`.)"""
from __future__ import annotations

import dataclasses

from fieldsim.errors import FieldsimSyntaxError, FieldsimTypeError
from fieldsim.ir.ir import Stmt
from fieldsim.lang import ops
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal
from fieldsim.lang.naming import user_loc

_UNSIGNED = {8: T.u8, 16: T.u16, 32: T.u32, 64: T.u64}


def static_assert(cond, msg=None):
    """Python scope: a plain check (kernels check at compile time)."""
    if not cond:
        raise AssertionError(msg or "static_assert failed")


def _static_assert(fe, node, args, kw):
    cond = args[0] if args else kw.get("cond")
    msg = args[1] if len(args) > 1 else kw.get("msg")
    if isinstance(cond, (Stmt, MatVal)):
        raise FieldsimTypeError("Static assert with non-static condition: fs.static_assert needs a "
                                "value known at compile time (a constant, a field's shape or dtype, "
                                "a template argument)")
    if not cond:
        raise FieldsimSyntaxError(f"static assertion failed: {msg}" if msg else "static assertion failed")


ops.KERNEL_BUILTINS[static_assert] = _static_assert


def global_thread_idx():
    """The running thread's index: kernel scope only (Taichi's Python scope has none either).
    0, its enclosing parallel loop run on one thread: a valid per-thread scratch slot.

    >>> scratch = fs.field(fs.f32, shape=4)
    >>> @fs.kernel
    ... def total(n: fs.i32) -> fs.f32:
    ...     for i in range(n):
    ...         scratch[fs.global_thread_idx()] += i
    ...     return scratch[0]
    >>> total(5)
    10.0
    """
    raise FieldsimSyntaxError("fs.global_thread_idx() is only valid inside a kernel's for loop",
                              user_loc())


def _global_thread_idx(fe, node, args, kw):
    # Taichi's CPU backend returns the worker thread's index (0 with one thread), whose range a
    # program may rely on (per-thread scratch rows). fieldsim's CPU chunks are not threads, so
    # the enclosing parallel loop runs on one thread and the index is 0, in [0, threads) on any
    # backend, never shared by two iterations running at once.
    if not fe.open_fors:
        raise FieldsimSyntaxError("fs.global_thread_idx() is only valid within loops (a for loop "
                                  "of the kernel; as in Taichi, not a while loop)")
    outer = fe.open_fors[0]
    if outer.attr.parallel:
        outer.attr = dataclasses.replace(outer.attr, parallel=False, serialize=True)
    return fe.e.value(0, T.i32)


ops.KERNEL_BUILTINS[global_thread_idx] = _global_thread_idx
