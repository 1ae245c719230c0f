"""lower_break: replace BREAK/CONTINUE by flag locals and guards, so loops run their bodies out.

Input: an offloaded kernel (top level = prologue statements and tasks: parallel FOR,
serialize=True FOR, SERIAL), any BREAK/CONTINUE placement the verifier accepts.

Output (a new `Kernel`; the input is untouched, every statement is a copy with its original loc):

* No BREAK or CONTINUE anywhere, except that a LOOP whose body exits ends with exactly one
  `IF(flag) {BREAK} else {}` as its body's last statement, and that is its only exit.
* Every iteration of a FOR (inner or a task) runs its body to the end: the statements that
  followed a `break`/`continue` sit under `IF(NOT stop) {...}` guards, where `stop` is an i32
  ALLOCA declared at the top of the iteration (set to 1 by both); a FOR that breaks also has a
  `brk` ALLOCA declared just before it, and its whole body is guarded by `IF(NOT brk)`.
* The program computes what it computed before, in the same order (RAND included).
* Idempotent: a LOOP already in the form above, and loops without exits, are copied as they are.

Raises `FieldsimCompilationError` for a `break` out of a task's own (parallel or serialized)
loop: differentiated kernels cannot stop a top-level loop early.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimCompilationError
from fieldsim.ir import dtypes as T
from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import Kernel, Op, Stmt

_EXITS = (Op.BREAK, Op.CONTINUE)


def lower_break(kernel: Kernel) -> Kernel:
    low = _Lowering()
    body = low.fresh_block(kernel.body, None, task_level=True)
    return Kernel(kernel.name, list(kernel.params), body, kernel.ret, kernel.loc, dict(kernel.meta),
                  kernel.funcs)


def exits(s: Stmt) -> bool:
    """Whether `s` is or contains a BREAK/CONTINUE of the loop enclosing it."""
    if s.op in _EXITS:
        return True
    return s.op == Op.IF and any(exits(x) for blk in s.blocks for x in blk)


def _kinds(block) -> set:
    out = set()
    for s in block:
        if s.op in _EXITS:
            out.add(s.op)
        elif s.op == Op.IF:
            out |= _kinds(s.blocks[0]) | _kinds(s.blocks[1])
    return out


def is_canonical_loop(s: Stmt) -> bool:
    """A LOOP whose only exit is a final `IF(c) {BREAK} else {}`."""
    body = s.body
    if not body or body[-1].op != Op.IF:
        return False
    last = body[-1]
    only_break = [x.op for x in last.blocks[0]] == [Op.BREAK] and not last.blocks[1]
    return only_break and not any(exits(x) for x in body[:-1])


class _Flags:
    """The flag locals of the loop whose exits are being lowered."""

    def __init__(self, stop: Stmt, brk: Stmt | None):
        self.stop, self.brk = stop, brk


class _Lowering:
    def __init__(self):
        self.b = IRBuilder()
        self.map: dict[int, Stmt] = {}

    def fresh_block(self, stmts, flags, task_level=False) -> list[Stmt]:
        out: list[Stmt] = []
        with self.b.into(out):
            self.seq(stmts, flags, task_level)
        return out

    def seq(self, stmts, flags: _Flags | None, task_level=False):
        """Copy `stmts`, lowering exits of the loop that `flags` belongs to (if any)."""
        for i, s in enumerate(stmts):
            if s.op in _EXITS and flags is not None:
                self.set_flags(s, flags)
                return
            self.stmt(s, flags, task_level)
            if flags is not None and exits(s) and stmts[i + 1:]:
                guard = self.guard(flags.stop, s.loc)
                with self.b.into(guard.blocks[0]):
                    self.seq(stmts[i + 1:], flags)
                return

    def stmt(self, s: Stmt, flags, task_level=False):
        if s.op == Op.FOR and task_level:
            self.task_for(s)
        elif s.op == Op.FOR:
            self.inner_for(s)
        elif s.op == Op.LOOP:
            self.loop(s)
        elif s.blocks:  # IF, SERIAL, CUSTOM_GRAD (whose blocks cannot leave an outer loop)
            new = self.copy(s)
            for blk, new_blk in zip(s.blocks, new.blocks):
                with self.b.into(new_blk):
                    self.seq(blk, flags if s.op == Op.IF else None)
        else:
            self.copy(s)

    def copy(self, s: Stmt) -> Stmt:
        return self.b.clone(s, self.map)

    # ---- loops ----------------------------------------------------------------------------------
    def task_for(self, s: Stmt):
        kinds = _kinds(s.body)
        if Op.BREAK in kinds:
            brk = next(x for x in _walk_exits(s.body) if x.op == Op.BREAK)
            raise FieldsimCompilationError(
                "`break` out of a kernel's outermost loop cannot be differentiated: every "
                "iteration of a top-level loop must run (use a flag, or an inner loop)", brk.loc)
        self.counted(s, kinds)

    def inner_for(self, s: Stmt):
        kinds = _kinds(s.body)
        brk = self.flag(s.loc) if Op.BREAK in kinds else None
        self.counted(s, kinds, brk)

    def counted(self, s: Stmt, kinds, brk=None):
        new = self.copy(s)
        with self.b.into(new.body):
            if not kinds:
                self.seq(s.body, None)
                return
            if brk is not None:
                new_body = self.guard(brk, s.loc).blocks[0]
                with self.b.into(new_body):
                    self.seq(s.body, _Flags(self.flag(s.loc), brk))
            else:
                self.seq(s.body, _Flags(self.flag(s.loc), None))

    def loop(self, s: Stmt):
        kinds = _kinds(s.body)
        new = self.copy(s)
        with self.b.into(new.body):
            if not kinds or is_canonical_loop(s):
                self.seq(s.body, None)
                return
            stop = self.flag(s.loc)
            brk = self.flag(s.loc) if Op.BREAK in kinds else None
            self.seq(s.body, _Flags(stop, brk))
            if brk is not None:
                with self.b.at(s.loc):
                    leave = self.b.if_(self.b.local_load(brk))
                    with self.b.into(leave.blocks[0]):
                        self.b.emit(Op.BREAK)

    # ---- flags ----------------------------------------------------------------------------------
    def flag(self, loc) -> Stmt:
        return self.b.emit(Op.ALLOCA, T.i32, loc=loc)

    def set_flags(self, s: Stmt, flags: _Flags):
        with self.b.at(s.loc):
            one = self.b.const(1, T.i32)
            self.b.local_store(flags.stop, one)
            if s.op == Op.BREAK:
                self.b.local_store(flags.brk, one)

    def guard(self, flag: Stmt, loc) -> Stmt:
        """Emit `IF(NOT flag)` and return it (its then-block is to be filled)."""
        with self.b.at(loc):
            return self.b.if_(self.b.unary(Op.NOT, self.b.local_load(flag)))


def _walk_exits(block):
    for s in block:
        if s.op in _EXITS:
            yield s
        elif s.op == Op.IF:
            for blk in s.blocks:
                yield from _walk_exits(blk)
