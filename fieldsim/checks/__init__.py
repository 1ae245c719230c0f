"""Static checks that run before differentiation: the global data access rules.

* `access_rules`: one kernel's effect table (`summarize`) and rules 1 and 2 over it
  (`KernelCheck`, `check_kernel`), run at a Tape launch and at each `kernel.grad()`;
* `index_expr`: symbolic index forms and the "same element?" reasoning they rely on;
  `index_forms` reads those forms, and the `if` guards that narrow them, from the IR;
* `tape_rules`: rule 1 across the launches and Python-scope writes recorded on one Tape;
* `boxes`: the element sets of accesses (boxes) that `tape_rules` compares;
* `validation`: `Tape(validation=True)`'s per-element run-time check of what the analysis
  could not decide (it runs an instrumented copy of the kernel).

All but `validation` are analysis only: they read IR and never change it.
"""
from fieldsim.checks.access_rules import Access, Finding, KernelCheck, check_kernel, summarize
from fieldsim.checks.index_expr import Answer, same_element_possible
from fieldsim.checks.tape_rules import TapeState

__all__ = ["Access", "Answer", "Finding", "KernelCheck", "TapeState", "check_kernel",
           "same_element_possible", "summarize"]
