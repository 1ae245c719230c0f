"""The checker's soundness claim, as a property over random small Tape programs.

Hypothesis draws programs (tape_program_gen.py: 1-3 kernels over 2-4 f64 fields, index
patterns i, i+-1, constants, N-1-i, i+a and idx[i] under their `if` guards plus conditions on
i, accesses load / = / += / -= / *= / atomic_max, Python-scope writes, ending in
`loss[None] += ...`), renders them to a real .py file and runs them under `fs.ad.Tape(loss)`:

* accepted => the program keeps the rules element by element (tape_program_oracle.py runs it
  abstractly with the actual indices), and the Tape gradient of every field equals float64
  central finite differences of its initial values (rtol 1e-6, atol 1e-8 times the loss scale);
* refused inside one kernel as a certain violation (not 'undecided') => that kernel does break
  a rule for these indices (no false alarm; guards with holes excepted, see `_has_holes`);
* a healthy share of the programs is accepted, else the property says nothing.

Every failing program Hypothesis found is kept: as an `@example` once it passes, and in FOUND
(with its source in a comment) as a regression test, strict-xfail while its bug is open;
programs using an access kind such a bug breaks (OPEN_AD_BUGS) skip only the gradient check.
"""
import re

import pytest
from hypothesis import HealthCheck, example, given, settings
from tape_program_gen import Program, judge, mismatches, plan, programs
from tape_program_oracle import violations

MAX_EXAMPLES = 400
# Access kinds whose adjoint has an open reverse-AD bug, each with a strict-xfail reproducer in
# FOUND: programs using them are still judged against the oracle, but their gradients are not
# compared. Empty this once the reproducer passes.
OPEN_AD_BUGS: set[str] = set()

# fs.atomic_max(f1[i], 0.8 * f0[i]); loss[None] += 0.3 * f1[i]   (one kernel, parallel loop)
# Where the new value wins, f1's old value no longer reaches the loss, so f1.grad[i] must be 0;
# the adjoint of atomic_max left it at 0.3 (f0.grad was right): a reverse-AD bug, now fixed.
ATOMIC_MAX_OLD_VALUE = Program(
    n_fields=2, layered=True,
    kernels=((False, (("max", 0, "i", 0, ((0, "i", 0, "lin"), (0, "i", 0, "lin"))),)),),
    launches=((0, 0),), py_writes=(), loss_loads=((1, "i", 0, "lin"),), own_kernel=False, seed=0)

FOUND = [
    pytest.param(ATOMIC_MAX_OLD_VALUE, id="atomic_max_old_value_keeps_its_gradient"),
]


def _uses(program: Program, kinds) -> bool:
    return any(s.kind in kinds for _, _, stmts in plan(program).kernels for s in stmts)


def _check(program: Program, outcomes=None, compare_gradients=None):
    if compare_gradients is None:
        compare_gradients = not _uses(program, OPEN_AD_BUGS)
    verdict = judge(program, with_fd=compare_gradients)
    broken = violations(plan(program), verdict.idx)
    if outcomes is not None:
        outcomes.append(verdict.accepted)
    if verdict.accepted:
        assert not broken, "accepted, but it breaks the rules:\n" + verdict.source + f"\n{broken}"
        if compare_gradients:
            bad = mismatches(verdict)
            assert not bad, "accepted, but the Tape gradient is wrong:\n" + verdict.source + "\n" + "\n".join(bad)
        return verdict
    text = str(verdict.error)
    kernel = re.search(r"^Kernel '(\w+)' breaks it", text, re.MULTILINE)
    if kernel and "cannot prove" not in text and not _has_holes(program, kernel.group(1)):
        assert any(where == kernel.group(1) for _, where, _ in broken), (
            "refused, but the kernel keeps the rules:\n" + verdict.source + "\n" + text)
    return verdict


def _has_holes(program: Program, kernel: str) -> bool:
    """Does the kernel guard a statement by `i != c` or `i < c or i > d`? The checker narrows
    index intervals by guards but cannot represent the hole such a guard makes."""
    return any(name == kernel and any(s.cond[0] in ("ne", "or") for s in stmts)
               for name, _, stmts in plan(program).kernels)


@pytest.mark.parametrize("program", FOUND)
def test_programs_hypothesis_found(program):
    assert _check(program, compare_gradients=True).accepted


def test_random_programs_are_judged_soundly():
    outcomes: list[bool] = []

    @settings(max_examples=MAX_EXAMPLES, deadline=None, derandomize=True, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(programs())
    @example(Program(  # a data-dependent scatter add, read back by the loss kernel: accepted
        n_fields=2, layered=True,
        kernels=((False, (("add", 0, "idx", 0, ((0, "i", 0, "sin"),)),)),),
        launches=((0, 0),), py_writes=(), loss_loads=((1, "i", 0, "sq"),), own_kernel=True,
        seed=1))
    @example(Program(  # serialized, argument offset 0: f2[i] written before f2[0] is read
        n_fields=3, layered=True,
        kernels=((True, (("mul", 3, "i+a", 1, ((3, "c", 0, "sin"),)),)),),
        launches=((0, 0),), py_writes=((3, 0, 3),),
        loss_loads=((2, "c", 0, "sq"), (3, "i+a", 5, "sq"), (0, "i", 1, "lin")),
        own_kernel=False, seed=552))
    def judged_soundly(program):
        _check(program, outcomes)

    judged_soundly()
    share = sum(outcomes) / len(outcomes)
    assert share >= 1 / 3, f"only {sum(outcomes)} of {len(outcomes)} generated programs accepted"
