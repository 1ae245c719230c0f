"""Offload pass: split a kernel's top level into tasks that run, and reverse, in order.

Takes the frontend's kernel, whose top level mixes outermost FOR loops with other statements
(kernel-level variables already live in hidden 0-D fields, so no local crosses a task).
Returns a new `Kernel` whose top level holds only:

* pure prologue statements (CONST, ARG, arithmetic, comparisons, SELECT, CAST, and the LOADs
  that outermost loop bounds depend on) whose operands are themselves prologue statements. A task that uses one
  evaluates it at its own start (codegen clones them), so they can be shared by many tasks;
* tasks: an outermost `FOR` (parallel, or serialize=True), or a `SERIAL` block holding a
  maximal run of the other statements, which runs once on one thread.

Statement objects are reused, not copied: the frontend's output is owned by this pass.
"""
from __future__ import annotations

from fieldsim.ir.ir import PURE, Kernel, Op, Stmt

_PROLOGUE_OPS = PURE


def _bound_chains(kernel: Kernel) -> set[int]:
    """Top-level pure statements that outermost loop bounds depend on (LOADs included).

    Only loops that become tasks count: a LOAD in the prologue is evaluated at the start of the
    task that uses it, so one bounding a loop that runs inside a SERIAL block (a func's loop
    inlined at the top level) stays there, after the block's earlier stores.
    """
    out: set[int] = set()
    stack = [a for s in kernel.body if is_task(s) for a in s.args]
    while stack:
        v = stack.pop()
        if id(v) not in out and v.op in _PROLOGUE_OPS:
            out.add(id(v))
            stack.extend(v.args)
    return out


def offload(kernel: Kernel) -> Kernel:
    bounds = _bound_chains(kernel)
    prologue_ids: set[int] = set()
    body: list[Stmt] = []
    serial: list[Stmt] = []

    def flush():
        if serial:
            body.append(Stmt(Op.SERIAL, None, blocks=[list(serial)], loc=serial[0].loc))
            serial.clear()

    for s in kernel.body:
        if s.op == Op.FOR and (s.attr.parallel or s.attr.serialize):
            flush()
            body.append(s)
        elif s.op in _PROLOGUE_OPS and all(id(a) in prologue_ids for a in s.args) \
                and (s.op != Op.LOAD or id(s) in bounds):
            prologue_ids.add(id(s))
            body.append(s)
        else:
            serial.append(s)
    flush()
    return Kernel(kernel.name, kernel.params, body, kernel.ret, kernel.loc, dict(kernel.meta),
                  kernel.funcs)


def is_task(s: Stmt) -> bool:
    return s.op == Op.SERIAL or (s.op == Op.FOR and (s.attr.parallel or s.attr.serialize))


def tasks(kernel: Kernel) -> list[Stmt]:
    return [s for s in kernel.body if is_task(s)]
