"""IR verifier: run after every pass in tests and with `debug=True`.

Checks, for a `Kernel`: every operand is defined before use in an enclosing scope; binary ops
and comparisons have operands of one dtype; loads/stores index a field with as many indices as
its storage has dimensions; BREAK/CONTINUE sit inside a loop; STORE values match the field's
dtype. Raises `IRVerifyError` showing the printed IR around the bad statement. Analysis only.
"""
from __future__ import annotations

from fieldsim.lang.ir import BINARY, COMPARE, Kernel, Op, Stmt
from fieldsim.lang.printer import print_kernel

_ARITY = {Op.CONST: 0, Op.ARG: 0, Op.RAND: 0, Op.SELECT: 3, Op.ALLOCA: 0, Op.LOCAL_LOAD: 1,
          Op.LOCAL_STORE: 2, Op.FOR: 2, Op.LOOP: 0, Op.IF: 1, Op.BREAK: 0, Op.CONTINUE: 0,
          Op.SERIAL: 0, Op.STACK_PUSH: 2, Op.STACK_POP: 1, Op.STACK_TOP: 1}


class IRVerifyError(AssertionError):
    pass


def verify(kernel: Kernel) -> Kernel:
    _Verifier(kernel).block(kernel.body, set(), loop_depth=0)
    return kernel


class _Verifier:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel

    def fail(self, s: Stmt, why: str):
        raise IRVerifyError(f"{why} at {s!r} ({s.loc})\n{print_kernel(self.kernel)}")

    def block(self, block, defined: set, loop_depth: int):
        defined = set(defined)
        for s in block:
            self.stmt(s, defined, loop_depth)
            defined.add(id(s))

    def stmt(self, s: Stmt, defined: set, loop_depth: int):
        for a in s.args:
            if not isinstance(a, Stmt):
                self.fail(s, f"operand {a!r} is not a statement")
            if id(a) not in defined:
                self.fail(s, f"operand {a!r} used before its definition")
        want = _ARITY.get(s.op)
        if want is not None and len(s.args) != want:
            self.fail(s, f"{s.op.name} takes {want} operands, has {len(s.args)}")
        if (s.op in BINARY or s.op in COMPARE) and (
                len(s.args) != 2 or s.args[0].dtype is not s.args[1].dtype):
            self.fail(s, "binary operands must share a dtype")
        if s.op in (Op.LOAD, Op.STORE, Op.ATOMIC):
            ndim = len(getattr(s.field, "storage_shape", s.field.shape))
            if len(s.indices) != ndim:
                self.fail(s, f"field access with {len(s.indices)} indices, field has {ndim}")
        if s.op in (Op.BREAK, Op.CONTINUE) and loop_depth == 0:
            self.fail(s, "break/continue outside a loop")
        inner = loop_depth + (1 if s.op in (Op.FOR, Op.LOOP) else 0)
        for b in s.blocks:
            self.block(b, defined | {id(s)}, inner)
