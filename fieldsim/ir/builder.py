"""IRBuilder: appends statements to the current block; used by the frontend and by every pass
that makes new IR (reverse and forward AD, offloading).

It folds nothing and checks nothing beyond operand dtypes agreeing for binary ops; it is the
one place statements are created, so every statement gets the builder's current `loc`.
"""
from __future__ import annotations

import contextlib
from dataclasses import replace

from fieldsim.ir import dtypes as T
from fieldsim.ir.ir import BINARY, COMPARE, CustomGradInfo, ForInfo, Op, Stmt


class IRBuilder:
    def __init__(self, block: list[Stmt] | None = None, loc=None):
        self.blocks: list[list[Stmt]] = [block if block is not None else []]
        self.loc = loc

    @property
    def block(self) -> list[Stmt]:
        return self.blocks[-1]

    def emit(self, op: Op, dtype=None, args=(), attr=None, blocks=None, loc=None) -> Stmt:
        s = Stmt(op, dtype, args, attr, blocks, loc or self.loc)
        self.block.append(s)
        return s

    def clone(self, s: Stmt, remap: dict, operand=None) -> Stmt:
        """Emit a copy of `s` (empty blocks, same op, dtype, attr and loc) whose operands are
        mapped through `remap` (id of an old statement -> its new one; `operand(a)` for one
        not in it, default: itself), and record it in `remap`. The one statement cloner: a
        CUSTOM_GRAD region's output allocas are remapped like operands."""
        def new(a):
            got = remap.get(id(a))
            if got is not None:
                return got
            return operand(a) if operand is not None else a
        attr = s.attr
        if isinstance(attr, CustomGradInfo):
            attr = replace(attr, outputs=tuple(new(o) for o in attr.outputs))
        c = self.emit(s.op, s.dtype, tuple(new(a) for a in s.args), attr,
                      [[] for _ in s.blocks], loc=s.loc)
        remap[id(s)] = c
        return c

    @contextlib.contextmanager
    def into(self, block: list[Stmt]):
        self.blocks.append(block)
        try:
            yield block
        finally:
            self.blocks.pop()

    @contextlib.contextmanager
    def at(self, loc):
        old, self.loc = self.loc, loc or self.loc
        try:
            yield
        finally:
            self.loc = old

    # leaves
    def const(self, value, dtype) -> Stmt:
        if dtype.is_float:
            value = float(value)
        elif dtype is T.u1:
            value = int(bool(value))
        else:
            value = int(value)
        return self.emit(Op.CONST, dtype, attr=value)

    # arithmetic
    def unary(self, op: Op, x: Stmt, dtype=None) -> Stmt:
        return self.emit(op, dtype or x.dtype, (x,))

    def binary(self, op: Op, a: Stmt, b: Stmt) -> Stmt:
        assert a.dtype is b.dtype, (op, a.dtype, b.dtype)
        dtype = T.i32 if op in COMPARE else a.dtype
        assert op in BINARY or op in COMPARE
        return self.emit(op, dtype, (a, b))

    def cast(self, x: Stmt, dtype) -> Stmt:
        if x.dtype is dtype:
            return x
        return self.emit(Op.CAST, dtype, (x,))

    def add(self, a, b):
        return self.binary(Op.ADD, a, b)

    def sub(self, a, b):
        return self.binary(Op.SUB, a, b)

    def mul(self, a, b):
        return self.binary(Op.MUL, a, b)

    def div(self, a, b):
        return self.binary(Op.DIV, a, b)

    def neg(self, a):
        return self.unary(Op.NEG, a)

    def select(self, c, a, b) -> Stmt:
        assert a.dtype is b.dtype
        return self.emit(Op.SELECT, a.dtype, (c, a, b))

    # locals
    def alloca(self, dtype) -> Stmt:
        return self.emit(Op.ALLOCA, dtype)

    def local_load(self, var: Stmt) -> Stmt:
        return self.emit(Op.LOCAL_LOAD, var.dtype, (var,))

    def local_store(self, var: Stmt, value: Stmt) -> Stmt:
        assert value.dtype is var.dtype, (var.dtype, value.dtype)
        return self.emit(Op.LOCAL_STORE, None, (var, value))

    # global memory
    def load(self, field, indices) -> Stmt:
        return self.emit(Op.LOAD, field.dtype, tuple(indices), attr=field)

    def store(self, field, indices, value) -> Stmt:
        return self.emit(Op.STORE, None, (*indices, value), attr=field)

    def atomic(self, kind: str, field, indices, value) -> Stmt:
        return self.emit(Op.ATOMIC, field.dtype, (*indices, value), attr=(field, kind))

    # control flow: the caller fills the returned statement's blocks with `into`
    def for_(self, begin, end, info: ForInfo | None = None) -> Stmt:
        # The loop value is i64 when its bounds are (a range that may pass 2^31), else i32.
        dtype = T.i64 if end.dtype is T.i64 else T.i32
        return self.emit(Op.FOR, dtype, (begin, end), attr=info or ForInfo(False), blocks=[[]])

    def loop(self) -> Stmt:
        return self.emit(Op.LOOP, None, blocks=[[]])

    def if_(self, cond) -> Stmt:
        return self.emit(Op.IF, None, (cond,), blocks=[[], []])
