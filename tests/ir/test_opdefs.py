"""The op table is complete and every op-keyed table in the package agrees with it.

Walks `Op`: every op has an `OpDef`; every op marked ARITH has an LLVM lowering for each dtype
kind it accepts; every STATEMENT op has a codegen method; every differentiable op has an AD
rule; the Python evaluators agree with the lowered semantics on the integer edge cases.
"""
import pytest

from fieldsim.ad.rules import RULES
from fieldsim.codegen.llvm import TaskLowering
from fieldsim.codegen.llvm_arith import LOWER_FLOAT, LOWER_INT
from fieldsim.ir.opdefs import COMPARE, NO_VALUE, OPDEFS, Lowering, Op, Result, evaluate


def test_every_op_has_a_definition():
    assert [op.name for op in Op if op not in OPDEFS] == []


@pytest.mark.parametrize("op", list(Op), ids=lambda o: o.name)
def test_every_op_is_lowered(op):
    d = OPDEFS[op]
    if d.lowering is Lowering.STATEMENT:
        assert hasattr(TaskLowering, "op_" + op.name.lower()), f"codegen has no op_{op.name.lower()}"
    elif d.lowering is Lowering.ARITH and op not in COMPARE and op != Op.NOT:
        if d.float_ok:
            assert op in LOWER_FLOAT, f"{op.name} takes floats but has no float lowering"
        if d.int_ok:
            assert op in LOWER_INT, f"{op.name} takes integers but has no integer lowering"
    else:
        assert d.lowering in (Lowering.ARITH, Lowering.REGION)


@pytest.mark.parametrize("op", list(Op), ids=lambda o: o.name)
def test_every_differentiable_op_has_an_ad_rule(op):
    if OPDEFS[op].differentiable:
        assert op in RULES, f"{op.name} is differentiable but has no rule in ad/rules.py"
    else:
        assert op not in RULES, f"{op.name} has a rule but is marked non-differentiable"


def test_lowering_tables_hold_only_defined_arith_ops():
    for table in (LOWER_FLOAT, LOWER_INT):
        for op in table:
            assert OPDEFS[op].lowering is Lowering.ARITH


def test_no_value_ops_have_no_result_rule():
    assert all(OPDEFS[op].result is Result.NONE for op in NO_VALUE)


@pytest.mark.parametrize("op,a,b,want", [
    (Op.DIV, 7, -2, -3), (Op.DIV, -7, 2, -3), (Op.DIV, 5, 0, 0),  # C division, no trap
    (Op.FLOORDIV, -7, 2, -4), (Op.FLOORDIV, 7, 0, 0),
    (Op.MOD, -7, 3, 2), (Op.MOD, 7, -3, -2), (Op.MOD, 7, 0, 0),
    (Op.MIN, 3, -1, -1), (Op.MAX, 3, -1, 3), (Op.LT, 1, 2, 1), (Op.NE, 2, 2, 0),
])
def test_python_semantics_match_the_lowered_integer_semantics(op, a, b, want):
    assert evaluate(op, a, b) == want
