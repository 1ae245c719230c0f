"""The op table: what every IR op *is*, written once.

`Op` names the operations of fieldsim's IR; `OPDEFS[op]` is its `OpDef`: operand count, whether
it defines a value, how its result dtype follows from its operands, which operand dtypes it
accepts, its effect on memory and control, whether it carries a derivative, a Python evaluator
(for constant folding, launch-time sizes and test interpreters), how it is lowered, and its
printed name. Every other table in the package (the op groups below, the verifier's checks, the
printer, the frontend's real-only math, the integer evaluators of AD stack sizing and launch
size hints, the demotion pass) is a view of this one. To add an op: add it to `Op`, give it an
`OpDef` here, then a lowering (codegen/llvm.py `op_<name>` or an arith entry) and, when it is
differentiable, a rule in ad/rules.py; tests/ir/test_opdefs.py fails until all exist.
"""
from __future__ import annotations

import enum
import math
import operator
from collections.abc import Callable
from dataclasses import dataclass


class Op(enum.IntEnum):
    # leaves
    CONST = enum.auto()  # attr = python value
    ARG = enum.auto()  # attr = kernel argument position
    RAND = enum.auto()  # counter-based random number of `dtype`, per thread
    # unary arithmetic; float math unless noted
    NEG = enum.auto()
    ABS = enum.auto()
    SQRT = enum.auto()
    SIN = enum.auto()
    COS = enum.auto()
    TAN = enum.auto()
    ASIN = enum.auto()
    ACOS = enum.auto()
    ATAN = enum.auto()
    TANH = enum.auto()
    EXP = enum.auto()
    LOG = enum.auto()
    FLOOR = enum.auto()
    CEIL = enum.auto()
    ROUND = enum.auto()
    NOT = enum.auto()  # logical not: result 1 if operand == 0 (i32)
    BIT_NOT = enum.auto()
    CAST = enum.auto()  # value conversion to `dtype`
    # binary arithmetic: both operands have the same dtype (the frontend casts)
    ADD = enum.auto()
    SUB = enum.auto()
    MUL = enum.auto()
    DIV = enum.auto()  # true division for floats, C division (toward zero) for ints
    FLOORDIV = enum.auto()  # Python floor division
    MOD = enum.auto()  # Python modulo (sign of the divisor)
    POW = enum.auto()
    ATAN2 = enum.auto()
    MIN = enum.auto()
    MAX = enum.auto()
    BIT_AND = enum.auto()
    BIT_OR = enum.auto()
    BIT_XOR = enum.auto()
    SHL = enum.auto()
    SHR = enum.auto()
    # comparisons: operands share a dtype, the result is i32 0/1
    LT = enum.auto()
    LE = enum.auto()
    GT = enum.auto()
    GE = enum.auto()
    EQ = enum.auto()
    NE = enum.auto()
    SELECT = enum.auto()  # args (cond i32, a, b)
    # mutable locals
    ALLOCA = enum.auto()  # a local variable of `dtype`, zero-initialised
    LOCAL_LOAD = enum.auto()  # args (alloca,)
    LOCAL_STORE = enum.auto()  # args (alloca, value)
    # global memory
    LOAD = enum.auto()  # args indices; attr field
    STORE = enum.auto()  # args indices + (value,); attr field
    ATOMIC = enum.auto()  # args indices + (value,); attr (field, kind); returns the old value
    # structured control flow
    FOR = enum.auto()  # args (begin, end); attr ForInfo; blocks [body]; value = loop index
    LOOP = enum.auto()  # runs its body until BREAK; blocks [body]
    IF = enum.auto()  # args (cond,); blocks [then, else]
    BREAK = enum.auto()
    CONTINUE = enum.auto()
    RETURN = enum.auto()  # args: the kernel's (in a Function: the function's) returned scalars
    SERIAL = enum.auto()  # a top-level task run once, by one thread; blocks [body]
    ASSERT = enum.auto()  # args (cond, *format args); attr message, or (message %-format, value
    # kinds 'i'/'u'/'f') with format args; checked with debug=True
    # per-thread AD stacks (made by reverse AD only)
    STACK_ALLOCA = enum.auto()  # attr StackInfo
    STACK_PUSH = enum.auto()  # args (stack, value)
    STACK_POP = enum.auto()  # args (stack,)
    STACK_TOP = enum.auto()  # args (stack,)
    # a func with a user adjoint (fs.ad.func_grad) and/or a user replay (fs.ad.func_replay):
    # blocks [forward, adjoint] or [forward, adjoint, replay]. args are the func's scalar
    # inputs; attr CustomGradInfo. The forward (and replay) block stores the outputs into
    # `attr.outputs` (allocas declared before the region); the adjoint block reads the outputs'
    # adjoints as CUSTOM_ADJ_IN (attr k) and ends with CUSTOM_ADJ_OUT(one adjoint per input);
    # without a user adjoint it is empty and reverse AD differentiates the replayed code
    # (`replayed_block`). Kernels run the forward block only.
    CUSTOM_GRAD = enum.auto()
    CUSTOM_ADJ_IN = enum.auto()
    CUSTOM_ADJ_OUT = enum.auto()
    # fs.stop_grad(x): no operands, no value; attr the field. In its block (and the blocks
    # inside), LOADs of the field carry no derivative (`ir.activity.stopped_loads`). Codegen
    # emits nothing for it.
    STOP_GRAD = enum.auto()
    # `print(...)` in a kernel: args are i64/u64/f64 values, attr the printf format string
    # (fieldsim.lang.formatting); written to stdout when reached, like Taichi's print
    PRINT = enum.auto()
    # real calls (a recursive `fs.real_func`, compiled as an IR `Function`): PARAM is the
    # k-th scalar parameter of the function whose body holds it (attr k); CALL calls the
    # function `attr` with one scalar operand per parameter; its value is the function's result
    # where it has one scalar result (dtype None for none or several); CALL_RESULT (args
    # (call,), attr k) is the k-th of several. A function body ends by RETURN of its results.
    PARAM = enum.auto()
    CALL = enum.auto()
    CALL_RESULT = enum.auto()
    # integer bit counts, of the operand's type (`ti.math.popcnt`, `ti.math.clz`): set bits, and
    # leading zero bits (the width for 0)
    POPCNT = enum.auto()
    CLZ = enum.auto()
    # a local vector/matrix indexed at run time, as one array: its entries' ALLOCAs (one dtype)
    # lead the operands, then the row-major entry number (i32); ARRAY_STORE ends with the value.
    # Out-of-range entry numbers read the last entry and write nothing. Made by the frontend
    # for primal code only (passes/scalarize_arrays.py turns them into selects before AD).
    ARRAY_LOAD = enum.auto()  # args (*allocas, index)
    ARRAY_STORE = enum.auto()  # args (*allocas, index, value)


class Effect(enum.Enum):
    """What running an op does besides computing its value."""

    PURE = "pure"  # nothing: may be recomputed or removed freely
    RANDOM = "random"  # draws from the thread's random stream
    LOCAL = "local"  # reads or writes a local variable
    GLOBAL_READ = "global_read"  # reads a field element (pure under the access rules)
    GLOBAL_WRITE = "global_write"  # writes a field element
    CONTROL = "control"  # owns blocks or transfers control
    STACK = "stack"  # touches a per-thread AD stack
    CHECK = "check"  # may raise at run time (assert)
    MARKER = "marker"  # marks its block for a pass; nothing at run time
    OUTPUT = "output"  # writes to the process's standard output (print)


class Result(enum.Enum):
    """How an op's result dtype follows from its operands."""

    NONE = "none"  # defines no value
    GIVEN = "given"  # the dtype the builder gives it (CONST, ARG, CAST, loads, ...)
    OPERAND = "operand"  # the dtype of its (first) value operand
    I32 = "i32"  # a 0/1 truth value


class Operands(enum.Enum):
    """Which dtypes an op's value operands may have (checked by the verifier)."""

    ANY = "any"
    SAME = "same"  # every operand has one dtype
    FLOAT = "float"  # one float dtype
    INT = "int"  # one integer dtype


class Lowering(enum.Enum):
    """How the LLVM codegen lowers an op."""

    ARITH = "arith"  # an entry of codegen/llvm_arith.py's float and/or int tables
    STATEMENT = "statement"  # a method `op_<name>` of codegen/llvm.py's task lowering
    REGION = "region"  # lowered as part of the region that owns it (CUSTOM_GRAD's markers)


@dataclass(frozen=True)
class OpDef:
    op: Op
    arity: int | None  # operand count; None for variable (memory ops, ASSERT)
    result: Result
    operands: Operands
    effect: Effect
    differentiable: bool  # does the result carry a derivative (needs an AD rule)?
    lowering: Lowering
    evaluate: Callable | None = None  # Python semantics on Python numbers, where defined
    int_ok: bool = True  # accepts integer operands
    float_ok: bool = True  # accepts float operands
    real_only: bool = False  # Taichi refuses integer operands (sin, floor, ...)
    attr_text: Callable | None = None  # how the printer shows the op's attr


    @property
    def has_value(self) -> bool:
        return self.result is not Result.NONE

    @property
    def text(self) -> str:
        return self.op.name.lower()


def _spec(**kwargs) -> dict:
    return kwargs


def _c_div(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    if b == 0:
        return 0  # as lowered: no trap
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def _floordiv(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return math.floor(a / b)
    return a // b if b else 0


def _mod(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return math.fmod(a, b)
    return a % b if b else 0


def _shl(a, b):
    return a << b if b >= 0 else 0  # a negative amount is a huge unsigned one, as lowered


def _shr(a, b):
    return a >> b if b >= 0 else (-1 if a < 0 else 0)


def _unary_math(fn, diff=True, real_only=False, int_ok=False):
    return _spec(arity=1, result=Result.OPERAND, operands=Operands.FLOAT if not int_ok else Operands.ANY,
                effect=Effect.PURE, differentiable=diff, lowering=Lowering.ARITH, evaluate=fn,
                int_ok=int_ok, real_only=real_only)


def _isnan(a):
    return isinstance(a, float) and math.isnan(a)


def _min(a, b):
    # as the lowering (codegen/llvm_arith.py): a NaN operand ignored, a tie gives the first
    return b if (b < a or _isnan(a)) else a


def _max(a, b):
    return b if (b > a or _isnan(a)) else a


def _binary(fn, diff=True, int_ok=True, float_ok=True):
    kind = Operands.SAME if int_ok and float_ok else (Operands.INT if int_ok else Operands.FLOAT)
    return _spec(arity=2, result=Result.OPERAND, operands=kind, effect=Effect.PURE,
                differentiable=diff, lowering=Lowering.ARITH, evaluate=fn, int_ok=int_ok,
                float_ok=float_ok)


def _compare(fn):
    return _spec(arity=2, result=Result.I32, operands=Operands.SAME, effect=Effect.PURE,
                differentiable=False, lowering=Lowering.ARITH, evaluate=lambda a, b: int(fn(a, b)))


def _statement(arity, result, effect, operands=Operands.ANY, diff=False, evaluate=None):
    return _spec(arity=arity, result=result, operands=operands, effect=effect, differentiable=diff,
                lowering=Lowering.STATEMENT, evaluate=evaluate)


_SPECS = {
    Op.CONST: _statement(0, Result.GIVEN, Effect.PURE),
    Op.ARG: _statement(0, Result.GIVEN, Effect.PURE),
    Op.RAND: _statement(0, Result.GIVEN, Effect.RANDOM),
    Op.NEG: _unary_math(operator.neg, int_ok=True),
    Op.ABS: _unary_math(abs, int_ok=True),
    Op.SQRT: _unary_math(math.sqrt),
    Op.SIN: _unary_math(math.sin, real_only=True),
    Op.COS: _unary_math(math.cos, real_only=True),
    Op.TAN: _unary_math(math.tan, real_only=True),
    Op.ASIN: _unary_math(math.asin, real_only=True),
    Op.ACOS: _unary_math(math.acos, real_only=True),
    Op.ATAN: _unary_math(math.atan),
    Op.TANH: _unary_math(math.tanh, real_only=True),
    Op.EXP: _unary_math(math.exp),
    Op.LOG: _unary_math(math.log),
    Op.FLOOR: _unary_math(math.floor, diff=False, real_only=True),
    Op.CEIL: _unary_math(math.ceil, diff=False, real_only=True),
    Op.ROUND: _unary_math(round, diff=False, real_only=True),
    Op.NOT: _spec(arity=1, result=Result.I32, operands=Operands.ANY, effect=Effect.PURE,
                 differentiable=False, lowering=Lowering.ARITH, evaluate=lambda a: int(not a)),
    Op.BIT_NOT: _spec(arity=1, result=Result.OPERAND, operands=Operands.INT, effect=Effect.PURE,
                     differentiable=False, lowering=Lowering.ARITH, evaluate=operator.invert,
                     float_ok=False),
    Op.CAST: _statement(1, Result.GIVEN, Effect.PURE, diff=True, evaluate=None),
    # (no Python evaluation: the count depends on the operand's width)
    Op.POPCNT: _spec(arity=1, result=Result.OPERAND, operands=Operands.INT, effect=Effect.PURE,
                    differentiable=False, lowering=Lowering.ARITH, float_ok=False),
    Op.CLZ: _spec(arity=1, result=Result.OPERAND, operands=Operands.INT, effect=Effect.PURE,
                 differentiable=False, lowering=Lowering.ARITH, float_ok=False),
    Op.ADD: _binary(operator.add),
    Op.SUB: _binary(operator.sub),
    Op.MUL: _binary(operator.mul),
    Op.DIV: _binary(_c_div),
    Op.FLOORDIV: _binary(_floordiv, diff=False, float_ok=False),  # floats: floor(a / b)
    Op.MOD: _binary(_mod),
    Op.POW: _binary(operator.pow, int_ok=False),  # integers: through f64, then rounded
    Op.ATAN2: _binary(math.atan2, int_ok=False),
    Op.MIN: _binary(_min),
    Op.MAX: _binary(_max),
    Op.BIT_AND: _binary(operator.and_, diff=False, float_ok=False),
    Op.BIT_OR: _binary(operator.or_, diff=False, float_ok=False),
    Op.BIT_XOR: _binary(operator.xor, diff=False, float_ok=False),
    Op.SHL: _binary(_shl, diff=False, float_ok=False),
    Op.SHR: _binary(_shr, diff=False, float_ok=False),
    Op.LT: _compare(operator.lt),
    Op.LE: _compare(operator.le),
    Op.GT: _compare(operator.gt),
    Op.GE: _compare(operator.ge),
    Op.EQ: _compare(operator.eq),
    Op.NE: _compare(lambda a, b: a < b or a > b),  # ordered (false for a NaN), as the codegen
    Op.SELECT: _statement(3, Result.OPERAND, Effect.PURE, diff=True,
                          evaluate=lambda c, a, b: a if c else b),
    Op.ALLOCA: _statement(0, Result.GIVEN, Effect.LOCAL),
    Op.LOCAL_LOAD: _statement(1, Result.GIVEN, Effect.LOCAL),
    Op.LOCAL_STORE: _statement(2, Result.NONE, Effect.LOCAL),
    Op.LOAD: _statement(None, Result.GIVEN, Effect.GLOBAL_READ),
    Op.STORE: _statement(None, Result.NONE, Effect.GLOBAL_WRITE),
    Op.ATOMIC: _statement(None, Result.GIVEN, Effect.GLOBAL_WRITE),
    Op.FOR: _statement(2, Result.GIVEN, Effect.CONTROL),
    Op.LOOP: _statement(0, Result.NONE, Effect.CONTROL),
    Op.IF: _statement(1, Result.NONE, Effect.CONTROL),
    Op.BREAK: _statement(0, Result.NONE, Effect.CONTROL),
    Op.CONTINUE: _statement(0, Result.NONE, Effect.CONTROL),
    Op.RETURN: _statement(None, Result.NONE, Effect.CONTROL),
    Op.SERIAL: _statement(0, Result.NONE, Effect.CONTROL),
    Op.ASSERT: _statement(None, Result.NONE, Effect.CHECK),
    Op.STACK_ALLOCA: _statement(0, Result.GIVEN, Effect.STACK),
    Op.STACK_PUSH: _statement(2, Result.NONE, Effect.STACK),
    Op.STACK_POP: _statement(1, Result.NONE, Effect.STACK),
    Op.STACK_TOP: _statement(1, Result.GIVEN, Effect.STACK),
    Op.CUSTOM_GRAD: _statement(None, Result.NONE, Effect.CONTROL),
    Op.CUSTOM_ADJ_IN: _spec(arity=0, result=Result.GIVEN, operands=Operands.ANY, effect=Effect.PURE,
                           differentiable=False, lowering=Lowering.REGION),
    Op.STOP_GRAD: _statement(0, Result.NONE, Effect.MARKER),
    Op.PRINT: _statement(None, Result.NONE, Effect.OUTPUT),
    Op.PARAM: _statement(0, Result.GIVEN, Effect.PURE),
    Op.CALL: _statement(None, Result.GIVEN, Effect.CONTROL),
    Op.CALL_RESULT: _statement(1, Result.GIVEN, Effect.PURE),
    Op.ARRAY_LOAD: _statement(None, Result.GIVEN, Effect.LOCAL),
    Op.ARRAY_STORE: _statement(None, Result.NONE, Effect.LOCAL),
    Op.CUSTOM_ADJ_OUT: _spec(arity=None, result=Result.NONE, operands=Operands.ANY,
                            effect=Effect.CONTROL, differentiable=False, lowering=Lowering.REGION),
}



def _for_text(info) -> str:
    flags = [name for name in ("parallel", "serialize", "reverse", "blocks")
             if info is not None and getattr(info, name)]
    return (" " + " ".join(flags)) if flags else ""


_ATTR_TEXT = {
    Op.CONST: lambda a: f" {a!r}",
    Op.ARG: lambda a: f" arg{a}",
    Op.PARAM: lambda a: f" param{a}",
    Op.CALL: lambda a: f" @{a.name}",
    Op.CALL_RESULT: lambda a: f" out{a}",
    Op.FOR: _for_text,
    Op.ASSERT: lambda a: f" {a!r}",
    Op.PRINT: lambda a: f" {a!r}",
    Op.CUSTOM_GRAD: lambda a: f" {a.name}",
    Op.CUSTOM_ADJ_IN: lambda a: f" out{a}",
    Op.STACK_ALLOCA: lambda a: f" {a.name}#{a.capacity_key}",
    Op.STOP_GRAD: lambda a: f" {getattr(a, 'ir_name', None) or getattr(a, 'name', '?')}",
}
OPDEFS: dict[Op, OpDef] = {op: OpDef(op, **spec, attr_text=_ATTR_TEXT.get(op))
                           for op, spec in _SPECS.items()}


def _ops(pred) -> frozenset:
    return frozenset(op for op, d in OPDEFS.items() if pred(d))


UNARY = _ops(lambda d: d.arity == 1 and d.lowering is Lowering.ARITH
             and d.result is not Result.I32) | {Op.NOT, Op.CAST}
BINARY = _ops(lambda d: d.arity == 2 and d.lowering is Lowering.ARITH and d.result is Result.OPERAND)
COMPARE = _ops(lambda d: d.arity == 2 and d.result is Result.I32)
FLOAT_ONLY = _ops(lambda d: d.lowering is Lowering.ARITH and not d.int_ok)
INT_ONLY = _ops(lambda d: d.lowering is Lowering.ARITH and not d.float_ok)
REAL_ONLY = _ops(lambda d: d.real_only)  # the frontend casts integer operands to float first
PURE = _ops(lambda d: d.effect in (Effect.PURE, Effect.GLOBAL_READ)) - {Op.CUSTOM_ADJ_IN}
GLOBAL_READ = _ops(lambda d: d.effect is Effect.GLOBAL_READ)
GLOBAL_WRITE = _ops(lambda d: d.effect is Effect.GLOBAL_WRITE)
GLOBAL_ACCESS = GLOBAL_READ | GLOBAL_WRITE
CONTROL = frozenset({Op.FOR, Op.LOOP, Op.IF, Op.SERIAL, Op.CUSTOM_GRAD})  # ops that own blocks
NO_VALUE = _ops(lambda d: not d.has_value)
# ops whose result carries no derivative
NONDIFF = _ops(lambda d: not d.differentiable
               and d.effect in (Effect.PURE, Effect.RANDOM, Effect.MARKER, Effect.OUTPUT)
               and d.lowering is not Lowering.REGION)
ATOMIC_KINDS = ("add", "sub", "min", "max", "and", "or", "xor", "mul",
                "xchg")  # xchg: made by reverse AD only (a winner takes a gradient)


def evaluate(op: Op, *operands):
    """`op` applied to Python numbers, as the compiled code computes it (integer division and
    modulo by zero give 0). Raises KeyError for an op without Python semantics."""
    fn = OPDEFS[op].evaluate
    if fn is None:
        raise KeyError(op)
    return fn(*operands)
