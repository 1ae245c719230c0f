"""IR verifier: run after every pass (`run_pass`) in tests, with `debug=True`, or with
`FIELDSIM_VERIFY=1`.

Takes a `Kernel`; returns it unchanged or raises `IRVerifyError`. It checks what `opdefs.OPDEFS`
says of every op: operand count, operand dtypes (one shared dtype, float only, integer only),
the result dtype rule, and that an op without a value has no dtype. Beyond the table: every
operand is a statement defined before use in an enclosing scope; field accesses have one integer
index per storage dimension and load/store the field's dtype; atomics name a known kind; locals
and stacks are reached through their ALLOCA (an ALLOCA is an entry of one ARRAY_LOAD/STORE array
at most); BREAK/CONTINUE sit inside a loop; each function
of the kernel uses only its own statements, takes PARAMs of its parameter dtypes, and ends with a
RETURN of its result; a CALL names a function of the kernel and passes (and gets) its dtypes.
The error shows the statements around the bad one, not the whole kernel. Analysis only.
"""
from __future__ import annotations

from fieldsim.ir import dtypes as T
from fieldsim.ir.ir import ATOMIC_KINDS, GLOBAL_ACCESS, OPDEFS, Kernel, Op, Stmt, array_parts
from fieldsim.ir.opdefs import Operands, Result
from fieldsim.ir.printer import print_block

_CONTEXT = 3  # statements shown on each side of a bad one


class IRVerifyError(AssertionError):
    pass


def verify(kernel: Kernel) -> Kernel:
    v = _Verifier(kernel)
    v.block(kernel.body, set(), loop_depth=0)
    for f in kernel.funcs:
        v.function = f
        v.current_block = f.body
        if not f.body or f.body[-1].op != Op.RETURN:
            raise IRVerifyError(f"kernel {kernel.name!r}: function {f.name!r} does not end "
                                "with a RETURN")
        v.block(f.body, set(), loop_depth=0)
    return kernel


def _is_int(dt) -> bool:
    return dt is not None and dt.is_int


class _Verifier:
    def __init__(self, kernel: Kernel):
        self.kernel = kernel
        self.current_block: list[Stmt] = kernel.body
        self.function = None  # the Function whose body is being checked
        self.arrays: dict[int, tuple] = {}  # id(ALLOCA) -> the array (ALLOCAs) it is an entry of

    def fail(self, s: Stmt, why: str):
        block = self.current_block
        at = next((i for i, t in enumerate(block) if t is s), 0)
        lo, hi = max(0, at - _CONTEXT), at + _CONTEXT + 1
        lines = print_block(block[lo:hi], indent=1).splitlines()
        where = f"{s.loc}" if s.loc is not None else "no source location"
        raise IRVerifyError(f"kernel {self.kernel.name!r}: {why} ({where}); statement "
                            f"{at - lo + 1} of these:\n" + "\n".join(lines[:40]))

    def block(self, block, defined: set, loop_depth: int):
        outer, self.current_block = self.current_block, block
        defined = set(defined)
        for s in block:
            self.stmt(s, defined, loop_depth)
            defined.add(id(s))
        self.current_block = outer

    def stmt(self, s: Stmt, defined: set, loop_depth: int):
        for a in s.args:
            if not isinstance(a, Stmt):
                self.fail(s, f"operand {a!r} is not a statement")
            if id(a) not in defined:
                self.fail(s, f"operand {a!r} used before its definition")
        d = OPDEFS.get(s.op)
        if d is None:
            self.fail(s, f"{s.op!r} has no definition in opdefs")
        if d.arity is not None and len(s.args) != d.arity:
            self.fail(s, f"{s.op.name} takes {d.arity} operands, has {len(s.args)}")
        self.operand_dtypes(s, d)
        self.result_dtype(s, d)
        if s.op in GLOBAL_ACCESS:
            self.field_access(s)
        self.special(s)
        if s.op in (Op.BREAK, Op.CONTINUE) and loop_depth == 0:
            self.fail(s, "break/continue outside a loop")
        inner = loop_depth + (1 if s.op in (Op.FOR, Op.LOOP) else 0)
        for b in s.blocks:
            self.block(b, defined | {id(s)}, inner)

    def operand_dtypes(self, s: Stmt, d):
        values = s.args[1:] if s.op == Op.SELECT else s.args
        if d.operands is Operands.ANY or not values:
            return
        dtypes = {a.dtype for a in values}
        if len(dtypes) != 1 or None in dtypes:
            self.fail(s, f"{s.op.name} operands must share one dtype, have "
                         f"{', '.join(str(a.dtype) for a in values)}")
        dt = next(iter(dtypes))
        if not (d.int_ok if dt.is_int else d.float_ok):
            self.fail(s, f"{s.op.name} does not take {dt} operands")

    def result_dtype(self, s: Stmt, d):
        if d.result is Result.NONE and s.dtype is not None:
            self.fail(s, f"{s.op.name} defines no value but has dtype {s.dtype}")
        elif d.result is Result.I32 and s.dtype is not T.i32:
            self.fail(s, f"{s.op.name} gives i32, has dtype {s.dtype}")
        elif d.result is Result.GIVEN and s.dtype is None and s.op not in (Op.FOR, Op.CALL):
            self.fail(s, f"{s.op.name} needs a dtype")
        elif d.result is Result.OPERAND and s.args:
            src = s.args[1] if s.op == Op.SELECT else s.args[0]
            if s.dtype is not src.dtype:
                self.fail(s, f"{s.op.name} of {src.dtype} operands has dtype {s.dtype}")

    def field_access(self, s: Stmt):
        f = s.field
        ndim = len(getattr(f, "storage_shape", f.shape))
        if len(s.indices) != ndim:
            self.fail(s, f"field access with {len(s.indices)} indices, field has {ndim}")
        if not all(_is_int(i.dtype) for i in s.indices):
            self.fail(s, "field indices must be integers")
        fdt = getattr(f, "dtype", None)
        if isinstance(fdt, T.DataType):
            got = s.dtype if s.op == Op.LOAD else s.value.dtype
            if got is not fdt:
                self.fail(s, f"{s.op.name.lower()} of {got} on a {fdt} field")
        if s.op == Op.ATOMIC and s.attr[1] not in ATOMIC_KINDS:
            self.fail(s, f"unknown atomic kind {s.attr[1]!r}")

    def special(self, s: Stmt):
        if s.op in (Op.LOCAL_LOAD, Op.LOCAL_STORE, Op.ARRAY_LOAD, Op.ARRAY_STORE):
            self.local_access(s)
        elif s.op in (Op.STACK_PUSH, Op.STACK_POP, Op.STACK_TOP) and s.args[0].op != Op.STACK_ALLOCA:
            self.fail(s, f"{s.op.name} of a {s.args[0].op.name}, not a STACK_ALLOCA")
        elif s.op in (Op.IF, Op.SELECT) and not _is_int(s.args[0].dtype):
            self.fail(s, f"{s.op.name} condition must be an integer, is {s.args[0].dtype}")
        elif s.op == Op.FOR and not all(_is_int(a.dtype) for a in s.args):
            self.fail(s, "FOR bounds must be integers")
        elif s.op in (Op.PARAM, Op.CALL, Op.RETURN) and (self.function is not None or s.op != Op.RETURN):
            self.real_call(s)
        elif s.op == Op.CALL_RESULT:
            self.call_result(s)

    def local_access(self, s: Stmt):
        """LOCAL_LOAD/STORE of an ALLOCA, ARRAY_LOAD/STORE of ALLOCAs of one dtype at an
        integer entry number; the value read or written has the locals' dtype."""
        if s.op in (Op.LOCAL_LOAD, Op.LOCAL_STORE):
            slots = s.args[:1]
        else:
            slots, index = array_parts(s)
            if not slots or not _is_int(index.dtype):
                self.fail(s, f"{s.op.name} needs ALLOCAs and an integer entry number")
            for slot in slots:  # a local is an entry of one array at most: one stack array
                if self.arrays.setdefault(id(slot), slots) != slots:
                    self.fail(s, f"{s.op.name}: an ALLOCA is an entry of two different arrays")
        for slot in slots:
            if slot.op != Op.ALLOCA:
                self.fail(s, f"{s.op.name} of a {slot.op.name}, not an ALLOCA")
            got = s.dtype if s.op in (Op.LOCAL_LOAD, Op.ARRAY_LOAD) else s.value.dtype
            if got is not slot.dtype:
                self.fail(s, f"{s.op.name.lower()} of {got} on a {slot.dtype} local")

    def real_call(self, s: Stmt):
        """PARAM, CALL, and RETURN inside a function, against the functions' signatures."""
        f = self.function
        if s.op == Op.PARAM:
            if f is None or not 0 <= s.attr < len(f.params) or f.params[s.attr] is not s.dtype:
                self.fail(s, "PARAM outside a function, or not one of its parameters")
            return
        callee = f if s.op == Op.RETURN else s.attr
        if s.op == Op.CALL and not any(callee is g for g in self.kernel.funcs):
            self.fail(s, "CALL of a function the kernel does not hold")
        want = callee.params if s.op == Op.CALL else callee.rets
        if [a.dtype for a in s.args] != list(want):
            self.fail(s, f"{s.op.name} of {', '.join(str(a.dtype) for a in s.args)}, function "
                         f"{callee.name!r} takes {', '.join(str(d) for d in want)}")
        if s.op == Op.CALL and s.dtype is not callee.call_dtype:
            self.fail(s, f"CALL gives {s.dtype}, function {callee.name!r} returns {callee.rets}")

    def call_result(self, s: Stmt):
        call = s.args[0]
        rets = call.attr.rets if call.op == Op.CALL else []
        if len(rets) < 2 or not 0 <= s.attr < len(rets) or rets[s.attr] is not s.dtype:
            self.fail(s, "CALL_RESULT is not one of the several results of its CALL")
