"""`fs.stop_grad(x)` (Taichi's `ti.stop_grad`): inside a kernel, reads of field `x` carry no
gradient in the block where it is called (reads before the call included, as in Taichi) and
the blocks inside it.

Takes a field (scalar, vector or matrix) in kernel scope and emits one `Op.STOP_GRAD` marker
statement (no operands, no value; codegen emits nothing). `fieldsim.ir.activity.stopped_loads(body)` is what
the AD passes ask: the LOADs under a marker of their field. Reverse AD leaves them inactive (no
adjoint, nothing accumulated into `x.grad`), forward mode gives them a zero tangent. A marker at
the kernel's top level covers the whole kernel, as Taichi differentiates before offloading.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimError, FieldsimTypeError
from fieldsim.ir.ir import Op
from fieldsim.lang.field import Field
from fieldsim.lang.ops import KERNEL_BUILTINS


def stop_grad(x):
    """Python scope: refused (it marks reads inside a kernel)."""
    raise FieldsimError("fs.stop_grad(x) is only meaningful inside a kernel: it stops the "
                        "gradient of the reads of field x in the block where it is called")


def _stop_grad_kernel(fe, node, args, kwargs):
    if len(args) != 1 or kwargs or not isinstance(args[0], Field):
        raise FieldsimTypeError("fs.stop_grad takes one field, e.g. fs.stop_grad(x)")
    field = args[0]
    if field.role != "primal":
        raise FieldsimTypeError(f"fs.stop_grad: {field.ir_name!r} is a gradient or dual field; "
                                "pass the primal field")
    fe.b.emit(Op.STOP_GRAD, None, (), field)


KERNEL_BUILTINS[stop_grad] = _stop_grad_kernel
