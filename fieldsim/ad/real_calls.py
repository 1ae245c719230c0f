"""Reverse and forward AD refuse a kernel that makes a real call (`ir.Function`).

Takes a kernel's IR; raises `FieldsimCompilationError` at its first CALL, naming the real
function, the kernel and the call's line. A real function is made only for a real func that
recurses on runtime values (`lang.real_calls`); fieldsim does not differentiate through it,
as Taichi does not differentiate real functions.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimCompilationError
from fieldsim.ir.ir import Kernel, Op, walk


def refuse_real_calls(kernel: Kernel, mode: str):
    """Raise at the kernel's first real call (`mode`: "reverse" or "forward", for the text)."""
    if not kernel.funcs:
        return
    call = next((s for s in walk(kernel.body) if s.op == Op.CALL), None)
    if call is None:
        return
    name = call.attr.name.split(".")[0]
    raise FieldsimCompilationError(
        f"kernel {kernel.name!r} calls real function {name!r}, which recurses on runtime "
        f"values and so is compiled as a real call: {mode}-mode AD cannot differentiate "
        "through a real call (Taichi does not differentiate real functions either); run this "
        "kernel outside the Tape/FwdMode, or make the recursion end through fs.static "
        "conditions so that it is inlined", call.loc)
