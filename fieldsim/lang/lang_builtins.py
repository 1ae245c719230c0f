"""Taichi's smaller language builtins: `fs.randn`, `fs.static_print` (printed while compiling),
and the kernel-scope check of `fs.static`.

Each name works in Python scope (plain numpy/Python behaviour) and is registered in
`ops.KERNEL_BUILTINS` for kernel scope. Guarantees: `randn` draws standard normal values from the
same counter-based stream as `fs.random` (so a replayed launch draws the same numbers);
`fs.static(x)` of a runtime value raises a located `FieldsimSyntaxError`. (`fs.static_assert`,
`fs.block_local` and `fs.stop_grad` live with their owners: lang/extra_ops.py, lang/hints.py,
lang/stop_grad.py.)
"""
from __future__ import annotations

import math

import numpy as np

from fieldsim.errors import FieldsimSyntaxError, FieldsimTypeError
from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang import ops
from fieldsim.lang.expr import MatVal
from fieldsim.lang.field import Field
from fieldsim.lang.ndarray import ExternalArray, Ndarray, NdarraySlot
from fieldsim.lang.struct import StructField


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


ops.KERNEL_BUILTINS[randn] = _randn_kernel


def _static_kernel(fe, node, args, kw):
    if any(isinstance(a, (Stmt, MatVal)) for a in list(args) + list(kw.values())):
        raise FieldsimSyntaxError("fs.static(...) arguments must be compile-time constants (Python "
                                  "values, template arguments, fields); this one depends on a "
                                  "runtime value")
    return ops.static(*args, **kw)


ops.KERNEL_BUILTINS[ops.static] = _static_kernel


def _static_text(a):
    """What Taichi 1.7.4's `ti.static_print` shows for a kernel value or a field: in a kernel a
    field prints its kind, not its values (an ndarray parameter has none to print yet).

    >>> _static_text(3), _static_text([1])
    (3, [1])
    """
    if isinstance(a, (Stmt, MatVal)):
        return "<ti.Expr>"
    if isinstance(a, (Ndarray, NdarraySlot, ExternalArray)):
        return "<ti.ndarray>"
    if isinstance(a, StructField):
        return "<ti.StructField>"
    if isinstance(a, Field):
        return ("<ti.field>" if a.ndim_el == 0
                else f"<{a.n}x{a.m or 1} ti.Matrix.field>")
    return a


def _static_print_kernel(fe, node, args, kw):
    # Taichi's ti.static_print: print while compiling (once per compilation), not at run time
    print(*[_static_text(a) for a in args], **kw)


ops.KERNEL_BUILTINS[ops.static_print] = _static_print_kernel
