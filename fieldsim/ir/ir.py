"""fieldsim's kernel IR: a small, structured, scalar-only, one-op-per-statement IR.

Every pass and the codegen read this and nothing else. The invariants are:

* A `Stmt` is one operation. Its value (if it has one) is the `Stmt` object itself: operands are
  other `Stmt`s, never names. `dtype` is the scalar type of the value, or None. What each op is
  (arity, result type, effects, ...) is written once, in `opdefs.OPDEFS`.
* Values are scalar. Vectors and matrices are scalarised by the frontend.
* Control flow is structured: `FOR`, `LOOP` and `IF` own nested blocks (lists of `Stmt`).
  A `FOR` statement is also its own loop-index value inside its body.
* Global memory is touched only by `LOAD`, `STORE` and `ATOMIC` (`attr` is the field, or
  `(field, kind)` for ATOMIC); their leading args are the element's indices (vector and matrix
  fields take the component as one more index).
* Mutable locals are explicit: `ALLOCA` / `LOCAL_LOAD` / `LOCAL_STORE`, and `ARRAY_LOAD` /
  `ARRAY_STORE` at a runtime entry number of a local vector's ALLOCAs (primal code only).
  Everything else is SSA.
* Every statement carries the `Loc` of the user source it came from.
* A kernel may hold `Function`s (`Kernel.funcs`: recursive real functions, compiled as real
  calls). A function's body is self-contained (it uses only its own statements; PARAM gives
  its scalar parameters), has no tasks (it runs inside the task that calls it), and ends with
  one RETURN of its results. CALL statements (in the kernel or in any function, itself
  included) name their `Function` as attr; a CALL's value is a function's one result, and
  CALL_RESULT reads each of several.

Statements are treated as immutable once a pass has produced them: passes build new IR.
The two exceptions own what they are given, which nothing else holds yet: offload reuses the
frontend's statements, and promote_locals rewrites offload's output in place.
"""
from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field
from itertools import chain
from typing import Any

from fieldsim.errors import Loc
from fieldsim.ir.dtypes import DataType
from fieldsim.ir.opdefs import (
    ATOMIC_KINDS,
    BINARY,
    COMPARE,
    CONTROL,
    FLOAT_ONLY,
    GLOBAL_ACCESS,
    GLOBAL_READ,
    GLOBAL_WRITE,
    INT_ONLY,
    NO_VALUE,
    NONDIFF,
    OPDEFS,
    PURE,
    UNARY,
    Op,
)

__all__ = [
    "ATOMIC_KINDS",
    "BINARY",
    "COMPARE",
    "CONTROL",
    "FLOAT_ONLY",
    "GLOBAL_ACCESS",
    "GLOBAL_READ",
    "GLOBAL_WRITE",
    "INT_ONLY",
    "NONDIFF",
    "NO_VALUE",
    "OPDEFS",
    "PURE",
    "UNARY",
    "CustomGradInfo",
    "ForInfo",
    "Function",
    "Kernel",
    "Op",
    "Param",
    "StackInfo",
    "Stmt",
    "array_parts",
    "fields_of",
    "has_user_adjoint",
    "replayed_block",
    "walk",
    "walk_all",
]


@dataclass(frozen=True)
class ForInfo:
    parallel: bool  # True only for a kernel's outermost loops that run across threads
    serialize: bool = False  # fs.loop_config(serialize=True): outermost but run in order
    block_dim: int | None = None
    reverse: bool = False  # a serialized loop run from end-1 down to begin (made by reverse AD)
    # a struct-for over a sparse field's blocks (lang.sparse_kernel.SparseBlocks): its inner
    # loops over a block's cells are what vectorizes, not it
    blocks: bool = False
    # a serial loop over a block's parts: each iteration's sums start afresh (Taichi's
    # thread-local reduction, per part); set with blocks
    parts: bool = False
    # a serial task listing the blocks a sparse struct-for (the next task) visits, into fields
    # of role "listing" (lang.sparse_kernel.list_active_blocks): the access rules skip them
    # and an adjoint runs it again before the loop's adjoint
    listing: bool = False


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


@dataclass(eq=False)
class Function:
    """A real function (a recursive `fs.real_func` for one set of compile-time arguments):
    scalar parameter dtypes, scalar result dtypes (none, one: the CALL's value, or several:
    CALL_RESULTs), and its body (see the invariants above). Compared by identity: CALLs name
    it."""

    name: str
    params: list[DataType]
    rets: list[DataType]
    body: list[Stmt] = dc_field(default_factory=list)
    loc: Loc | None = None

    @property
    def call_dtype(self) -> DataType | None:
        """A CALL's dtype: the one result's, else None."""
        return self.rets[0] if len(self.rets) == 1 else None


@dataclass
class Kernel:
    """A whole kernel: parameters, top-level statements, optional scalar return type, and the
    real functions its code calls."""

    name: str
    params: list[Param]
    body: list[Stmt]
    ret: DataType | None = None
    loc: Loc | None = None
    meta: dict = dc_field(default_factory=dict)
    funcs: list[Function] = dc_field(default_factory=list)


def array_parts(s: Stmt) -> tuple[tuple, Stmt]:
    """(the entries' ALLOCAs, the entry number) of an ARRAY_LOAD or ARRAY_STORE."""
    count = len(s.args) - (1 if s.op == Op.ARRAY_LOAD else 2)
    return s.args[:count], s.args[count]


def walk(block: list[Stmt]):
    """Yield every statement of a block, depth first, parents before children."""
    # An explicit stack of iterators: nested `yield from` costs a frame hop per level for every
    # statement, and every pass and the kernel compile walk the whole IR.
    stack = [iter(block)]
    while stack:
        for s in stack[-1]:
            yield s
            if s.blocks:
                stack.append(chain.from_iterable(s.blocks))
                break
        else:
            stack.pop()


def walk_all(kernel: Kernel):
    """`walk` of the kernel's body, then of each of its functions' bodies."""
    yield from walk(kernel.body)
    for f in kernel.funcs:
        yield from walk(f.body)


def fields_of(kernel: Kernel) -> list:
    """The fields a kernel touches (its functions included), in order of first appearance."""
    seen: dict[int, Any] = {}
    for s in walk_all(kernel):
        if s.op in GLOBAL_ACCESS:
            seen.setdefault(id(s.field), s.field)
    return list(seen.values())
