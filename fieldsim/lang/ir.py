"""fieldsim's kernel IR: a small, structured, scalar-only, one-op-per-statement IR.

Every pass and the codegen read this and nothing else. The invariants are:

* A `Stmt` is one operation. Its value (if it has one) is the `Stmt` object itself: operands are
  other `Stmt`s, never names. `dtype` is the scalar type of the value, or None.
* Values are scalar. Vectors and matrices are scalarised by the frontend.
* Control flow is structured: `FOR`, `LOOP` and `IF` own nested blocks (lists of `Stmt`).
  A `FOR` statement is also its own loop-index value inside its body.
* Global memory is touched only by `LOAD`, `STORE` and `ATOMIC` (`attr` is the field, or
  `(field, kind)` for ATOMIC); their leading args are the element's indices (vector and matrix
  fields take the component as one more index).
* Mutable locals are explicit: `ALLOCA` / `LOCAL_LOAD` / `LOCAL_STORE`. Everything else is SSA.
* Every statement carries the `Loc` of the user source it came from.

Statements are treated as immutable once a pass has produced them: passes build new IR.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import Any

from fieldsim.errors import Loc
from fieldsim.lang.types import DataType


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
    RETURN = enum.auto()  # args (value,): the kernel's scalar return value
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
    # `print(...)` in a kernel: args are i64/u64/f64 values, attr the printf format string
    # (fieldsim.lang.formatting); written to stdout when reached, like Taichi's print
    PRINT = enum.auto()


UNARY = frozenset({Op.NEG, Op.ABS, Op.SQRT, Op.SIN, Op.COS, Op.TAN, Op.ASIN, Op.ACOS, Op.ATAN,
                   Op.TANH, Op.EXP, Op.LOG, Op.FLOOR, Op.CEIL, Op.ROUND, Op.NOT, Op.BIT_NOT,
                   Op.CAST})
BINARY = frozenset({Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.FLOORDIV, Op.MOD, Op.POW, Op.ATAN2,
                    Op.MIN, Op.MAX, Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR, Op.SHL, Op.SHR})
COMPARE = frozenset({Op.LT, Op.LE, Op.GT, Op.GE, Op.EQ, Op.NE})
FLOAT_ONLY = frozenset({Op.SQRT, Op.SIN, Op.COS, Op.TAN, Op.ASIN, Op.ACOS, Op.ATAN, Op.TANH,
                        Op.EXP, Op.LOG, Op.ATAN2})
INT_ONLY = frozenset({Op.BIT_NOT, Op.BIT_AND, Op.BIT_OR, Op.BIT_XOR, Op.SHL, Op.SHR})
# pure: may be recomputed or removed freely (a LOAD is pure under the access rules)
PURE = UNARY | BINARY | COMPARE | frozenset({Op.CONST, Op.ARG, Op.SELECT, Op.LOAD})
GLOBAL_READ = frozenset({Op.LOAD})
GLOBAL_WRITE = frozenset({Op.STORE, Op.ATOMIC})
CONTROL = frozenset({Op.FOR, Op.LOOP, Op.IF, Op.SERIAL, Op.CUSTOM_GRAD})
# ops whose result carries no derivative
NONDIFF = (COMPARE | INT_ONLY | frozenset({Op.FLOOR, Op.CEIL, Op.ROUND, Op.NOT, Op.CONST, Op.ARG,
                                           Op.RAND, Op.FLOORDIV, Op.PRINT}))
ATOMIC_KINDS = ("add", "sub", "min", "max", "and", "or", "xor", "mul",
                "xchg")  # xchg: made by reverse AD only (a winner takes a gradient)


@dataclass(frozen=True)
class ForInfo:
    parallel: bool  # True only for a kernel's outermost loops that run across threads
    serialize: bool = False  # fs.loop_config(serialize=True): outermost but run in order
    block_dim: int | None = None
    reverse: bool = False  # a serialized loop run from end-1 down to begin (made by reverse AD)


@dataclass(frozen=True)
class StackInfo:
    name: str  # what the stack holds, for error messages
    capacity_key: int  # index into the launch-time capacities array
    loc: Loc | None = None


@dataclass(frozen=True)
class CustomGradInfo:
    name: str  # the func's name
    outputs: tuple  # the output allocas, flattened


def replayed_block(region: Stmt) -> list[Stmt]:
    """What an adjoint recomputes for a CUSTOM_GRAD region: the user's replay code
    (fs.ad.func_replay) if it has one, else its forward code."""
    return region.blocks[2] if len(region.blocks) > 2 else region.blocks[0]


def has_user_adjoint(region: Stmt) -> bool:
    """Does a CUSTOM_GRAD region carry the user's adjoint (fs.ad.func_grad)?"""
    return bool(region.blocks[1])


class Stmt:
    """One IR statement. Identity is the value: two `Stmt`s are equal only if they are the same."""

    __slots__ = ("args", "attr", "blocks", "dtype", "loc", "op")

    def __init__(self, op: Op, dtype: DataType | None, args=(), attr: Any = None, blocks=None,
                 loc: Loc | None = None):
        self.op, self.dtype, self.args, self.attr = op, dtype, tuple(args), attr
        self.blocks: list[list[Stmt]] = blocks if blocks is not None else []
        self.loc = loc

    @property
    def body(self) -> list[Stmt]:
        return self.blocks[0]

    @property
    def field(self):
        """The field a LOAD/STORE/ATOMIC touches."""
        return self.attr[0] if self.op == Op.ATOMIC else self.attr

    @property
    def indices(self) -> tuple:
        return self.args if self.op == Op.LOAD else self.args[:-1]

    @property
    def value(self):
        """The value a STORE/ATOMIC/LOCAL_STORE writes."""
        return self.args[-1]

    def __repr__(self) -> str:
        return f"<Stmt {self.op.name.lower()} {self.dtype}>"


@dataclass
class Param:
    """A kernel parameter: a runtime scalar (`dtype`) or a compile-time template (`dtype` None)."""

    name: str
    dtype: DataType | None
    template: bool = False


@dataclass
class Kernel:
    """A whole kernel: parameters, top-level statements, optional scalar return type."""

    name: str
    params: list[Param]
    body: list[Stmt]
    ret: DataType | None = None
    loc: Loc | None = None
    meta: dict = dc_field(default_factory=dict)


def walk(block: list[Stmt]):
    """Yield every statement of a block, depth first, parents before children."""
    for s in block:
        yield s
        for b in s.blocks:
            yield from walk(b)


def fields_of(kernel: Kernel) -> list:
    """The fields a kernel touches, in order of first appearance."""
    seen: dict[int, Any] = {}
    for s in walk(kernel.body):
        if s.op in (Op.LOAD, Op.STORE, Op.ATOMIC):
            seen.setdefault(id(s.field), s.field)
    return list(seen.values())
