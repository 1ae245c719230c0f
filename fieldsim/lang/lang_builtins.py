"""Taichi's smaller language builtins: `fs.randn`, `fs.static_assert`, `fs.block_local`,
`fs.stop_grad`, `fs.static_print` (printed while compiling), and the kernel-scope check of
`fs.static`.

Each name works in Python scope (plain numpy/Python behaviour) and is registered in
`ops.KERNEL_BUILTINS` for kernel scope. Guarantees: `randn` draws standard normal values from the
same counter-based stream as `fs.random` (so a replayed launch draws the same numbers);
`static_assert` is decided at compile time and raises a located `FieldsimCompilationError`;
`block_local` is an accepted hint with no effect on the CPU; after `stop_grad(x)` the accesses
to `x` in the rest of its top-level loop add nothing to `x.grad` (values are unchanged); `fs.static(x)` of a runtime value
raises a located `FieldsimSyntaxError`.
"""
from __future__ import annotations

import math

import numpy as np

from fieldsim.errors import FieldsimCompilationError, FieldsimSyntaxError, FieldsimTypeError
from fieldsim.lang import ops
from fieldsim.lang.expr import MatVal, describe
from fieldsim.lang.ir import Op, Stmt


def randn(dtype=None):
    """A standard normal draw (Box-Muller, as Taichi)."""
    return float(np.random.standard_normal())


def _randn_kernel(fe, node, args, kw):
    dt = ops._dt(fe, args[0] if args else kw.get("dtype", float))
    if not dt.is_float:
        raise FieldsimTypeError(f"fs.randn draws floats; got dtype {dt}")
    e = fe.e
    u1 = e.binop("-", e.value(1.0, dt), fe.b.emit(Op.RAND, dt))  # in (0, 1]: log is finite
    u2 = fe.b.emit(Op.RAND, dt)
    r = e.unop(Op.SQRT, e.binop("*", e.value(-2.0, dt), e.unop(Op.LOG, u1)))
    return e.binop("*", r, e.unop(Op.COS, e.binop("*", e.value(2 * math.pi, dt), u2)))


def static_assert(cond, msg=None):
    if not cond:
        raise FieldsimCompilationError(f"static assertion failed: {msg}" if msg else
                                       "static assertion failed")


def _static_assert_kernel(fe, node, args, kw):
    cond = args[0]
    msg = args[1] if len(args) > 1 else kw.get("msg")
    if isinstance(cond, (Stmt, MatVal)):
        raise FieldsimTypeError("Static assert with non-static condition: fs.static_assert needs "
                                "a condition known at compile time (a Python value, fs.static(...))")
    static_assert(cond, msg)


def block_local(*fields):
    """Taichi's hint to cache fields in GPU shared memory: nothing to do on the CPU."""


ops.KERNEL_BUILTINS[randn] = _randn_kernel
ops.KERNEL_BUILTINS[static_assert] = _static_assert_kernel
ops.KERNEL_BUILTINS[block_local] = lambda fe, node, args, kw: None


def _static_kernel(fe, node, args, kw):
    if any(isinstance(a, (Stmt, MatVal)) for a in list(args) + list(kw.values())):
        raise FieldsimSyntaxError("fs.static(...) arguments must be compile-time constants (Python "
                                  "values, template arguments, fields); this one depends on a "
                                  "runtime value")
    return ops.static(*args, **kw)


ops.KERNEL_BUILTINS[ops.static] = _static_kernel


def stop_grad(*fields):
    """`ti.stop_grad(x)`: in the rest of the enclosing top-level loop (or kernel body), reading
    or writing `x` passes no gradient to `x.grad`. A no-op in Python scope."""


def _stop_grad_kernel(fe, node, args, kw):
    import copy

    from fieldsim.lang.field import Field
    for f in args:
        if not isinstance(f, Field):
            raise FieldsimTypeError(f"fs.stop_grad takes fields, got {describe(f)}")
        # the same storage seen through a field without a gradient: reverse AD adds nothing to
        # x.grad for accesses through it
        alias = copy.copy(f)
        alias.grad, alias.needs_grad = None, False
        fe.no_grad[id(f)] = alias


ops.KERNEL_BUILTINS[stop_grad] = _stop_grad_kernel


def _static_print_kernel(fe, node, args, kw):
    # Taichi's ti.static_print: print while compiling (once per compilation), not at run time
    print(*[a if not isinstance(a, (Stmt, MatVal)) else f"<{describe(a)}>" for a in args], **kw)


ops.KERNEL_BUILTINS[ops.static_print] = _static_print_kernel
