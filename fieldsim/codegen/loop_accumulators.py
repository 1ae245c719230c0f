"""Loop accumulators: the owned field elements a serial loop only adds to, summed in a local.

Takes a `FOR` statement inside a task, the ids of the task's demoted atomics
(`codegen.demote.owned_atomics`: no other thread touches their elements) and the ids of
atomics something else already lowers (a task-wide reduction, a nest accumulator, an
enclosing loop's accumulator). Returns groups of atomics, one per element: every atomic of a
group is an `add`/`sub` of one element whose indices are computed before the loop (or are
constants), its old value unused, and the loop touches that field in no other way.

The code generator then loads each element into a local before the loop, adds there, and
stores it back after the loop (Taichi's cache_loop_invariant_global_vars): the same
additions in the same order, so the same bits, but LLVM keeps the sum in a register. It would
not do that itself for `for j: if i != j: force[i] += f`: a store that runs only under a
branch may not be made unconditional when another thread might race with it, and LLVM cannot
know the element is this thread's own.

Guarantees: analysis only (reads IR, never changes it). Elements of one field in different
groups differ in a constant index at a position where every group has a constant, so two
groups never name one element (for in-range components). When unsure, no group.
"""
from __future__ import annotations

from fieldsim.ir.ir import GLOBAL_ACCESS, Op, Stmt, walk
from fieldsim.lang.quant import is_quant


def loop_accumulators(loop: Stmt, demoted: set, taken: set) -> list[list[Stmt]]:
    """Groups of atomics of `loop`'s body, one group per element (see the module doc)."""
    inside, used, by_field = {id(loop)}, set(), {}  # the loop's own index varies too
    for st in walk(loop.body):
        inside.add(id(st))
        used.update(id(a) for a in st.args)
        if st.op == Op.RETURN:
            return []  # a return would skip the store after the loop
        if st.op in GLOBAL_ACCESS:
            by_field.setdefault(id(st.field), []).append(st)
    groups = []
    for accesses in by_field.values():
        if all(_summable(st, demoted, taken, used, inside) for st in accesses) \
                and _distinct_elements(accesses):
            per_element: dict = {}
            for st in accesses:
                per_element.setdefault(_element_key(st), []).append(st)
            groups.extend(per_element.values())
    return groups


def _summable(st: Stmt, demoted: set, taken: set, used: set, inside: set) -> bool:
    return (st.op == Op.ATOMIC and id(st) in demoted and id(st) not in taken
            and st.attr[1] in ("add", "sub") and id(st) not in used and not is_quant(st.field)
            and all(ix.op == Op.CONST or id(ix) not in inside for ix in st.indices))


def _element_key(st: Stmt) -> tuple:
    return tuple(("c", ix.attr) if ix.op == Op.CONST else ("s", id(ix)) for ix in st.indices)


def _distinct_elements(accesses: list[Stmt]) -> bool:
    """Do the accesses' index keys agree at every non-constant position?"""
    keys = {_element_key(st) for st in accesses}
    return all(len({k[pos] for k in keys}) == 1 for pos in range(len(next(iter(keys))))
               if any(k[pos][0] == "s" for k in keys))
