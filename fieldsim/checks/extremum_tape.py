"""Across the launches of one Tape: no update of a field after an atomic min/max into it.

Contract: analysis only; used by `tape_rules.TapeState.launch`. The adjoint of
`atomic_max(x[i], v)` finds its winner by comparing `v` with the element's value when the
adjoint runs, that is its end-of-forward value. A later launch's `+=`, in-place update or other
atomic of the element changes that value, and the gradient goes to the wrong operand (within
one kernel Rule 2 refuses the same pairs). A plain store, which takes the element's whole
gradient, and the same min/max, which keeps the final value its winner, may follow. Judged per
field, not per element: a field one launch applied min/max to refuses any later update in
another launch (conservative).
"""
from __future__ import annotations

from fieldsim.checks.access_rules import AccessKind, Finding, Verdict, access_lines, to_error
from fieldsim.ir.printer import field_name

_EXTREMA = ("min", "max")


def profile(check) -> tuple[dict, dict]:
    """(id(field) -> its first atomic min/max Access, id(field) -> its first other updating
    write Access: an atomic add/sub, an in-place update, another atomic) of a kernel whose
    `KernelCheck` is `check`, for fields with a gradient; kept on the check."""
    made = getattr(check, "extremum_profile", None)
    if made is None:
        extrema: dict = {}
        updates: dict = {}
        for a in check.accesses:
            if not a.is_write or a.kind is AccessKind.STORE or getattr(a.field, "adjoint", None) is None:
                continue
            if a.kind is AccessKind.ATOMIC_OTHER and a.op in _EXTREMA:
                extrema.setdefault(id(a.field), a)
            updates.setdefault((id(a.field), a.op if a.kind is AccessKind.ATOMIC_OTHER else a.kind), a)
        made = check.extremum_profile = (extrema, updates)
    return made


def check_launch(seen: dict, check, name: str, launch: int, in_unit: bool) -> None:
    """Raise `AccessRuleError` when this launch updates a field an earlier launch applied an
    atomic min/max to (`seen`: id(field) -> (op, Access, kernel name, launch number)); then
    record this launch's min/max."""
    extrema, updates = profile(check)
    if seen and not in_unit:
        for (fid, what), second in updates.items():
            first = seen.get(fid)
            if first is not None and what != first[0]:
                raise to_error(_finding(first, second, name, launch))
    for fid, a in extrema.items():
        seen.setdefault(fid, (a.op, a, name, launch))


def _finding(first: tuple, second, name: str, launch: int) -> Finding:
    op, a, first_name, first_launch = first
    head = ("Rule 2 (accumulate only), across the launches on a Tape: after an atomic_min/max "
            "into an element, only a plain store or the same atomic may write it again.")
    where = (f"On this Tape, kernel '{name}' (launch {launch}) updates field "
             f"'{field_name(a.field)}', which kernel '{first_name}' (launch {first_launch}) "
             f"applied atomic_{op} to:")
    why = (f"The adjoint of atomic_{op} compares its operand with the element's final value to "
           "find the winner; an update afterwards changes that value and sends the gradient to "
           "the wrong operand. To fix: apply the atomic last, or into a field that nothing "
           "updates afterwards, or store the updated value into another field.")
    message = "\n".join([head, where, access_lines(a, second), why])
    return Finding(2, Verdict.VIOLATION, a.field, a, second, message, "task")
