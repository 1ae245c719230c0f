"""Dead code removal: `prune(body)`, in place.

Takes a statement list whose global effects are STORE/ATOMIC/RAND/RETURN/ASSERT. Keeps those and
everything they depend on (operands, enclosing control flow, the writes of every ALLOCA or AD
stack that a kept LOCAL_LOAD/STACK_TOP reads, the BREAK/CONTINUE of kept loops), and removes the
rest: unused pure values, locals and stacks never read, empty control flow, empty tasks. RAND
counts as an effect because removing one would shift the random stream of the ones after it.
Used by reverse AD on the IR it generates.
"""
from __future__ import annotations

from fieldsim.ir.ir import Op, Stmt, walk

_ROOTS = frozenset({Op.STORE, Op.ATOMIC, Op.RAND, Op.RETURN, Op.ASSERT, Op.PRINT})


def prune(body: list[Stmt]):
    """Remove, in place, what does not lead to a global write or a RAND: unused pure values,
    locals and stacks never read, empty control flow, empty tasks. Only for IR this pass made."""
    parent: dict[int, Stmt | None] = {}
    deps: dict[int, list[Stmt]] = {}
    _index(body, None, None, parent, deps)
    live: set[int] = set()
    work = [s for s in walk(body) if s.op in _ROOTS]
    while work:
        s = work.pop()
        if id(s) in live:
            continue
        live.add(id(s))
        work.extend(s.args)
        if parent[id(s)] is not None:
            work.append(parent[id(s)])
        if s.op in (Op.LOCAL_LOAD, Op.STACK_TOP):
            work.extend(deps.get(id(s.args[0]), ()))
        elif s.op in (Op.FOR, Op.LOOP):
            work.extend(deps.get(id(s), ()))
    _sweep(body, live)


def _index(block, parent, loop, parents, deps):
    """parents: stmt -> enclosing control stmt; deps: ALLOCA/stack -> writes, loop -> exits."""
    for s in block:
        parents[id(s)] = parent
        if s.op in (Op.LOCAL_STORE, Op.STACK_PUSH, Op.STACK_POP):
            deps.setdefault(id(s.args[0]), []).append(s)
        elif s.op in (Op.BREAK, Op.CONTINUE):
            deps.setdefault(id(loop), []).append(s)
        inner = s if s.op in (Op.FOR, Op.LOOP) else loop
        for blk in s.blocks:
            _index(blk, s, inner, parents, deps)


def _sweep(block: list[Stmt], live: set[int]):
    block[:] = [s for s in block if id(s) in live]
    for s in block:
        for blk in s.blocks:
            _sweep(blk, live)
