"""The verifier refuses IR that breaks what opdefs says of an op, and shows where."""
import pytest
from support.ir_interp import FakeField
from support.ir_kit import KB

from fieldsim.ir.ir import Kernel, Op, Stmt
from fieldsim.ir.verify import IRVerifyError, verify
from fieldsim.lang import types as T


def _kernel(build):
    b = KB()
    with b.serial():
        build(b)
    return Kernel("k", [], b.body)


def _refused(build, match):
    with pytest.raises(IRVerifyError, match=match):
        verify(_kernel(build))


def test_good_kernel_passes():
    x = FakeField("x", T.f32, (4,))
    verify(_kernel(lambda b: b.store(x, [b.i(1)], b.const(2.0, T.f32))))


def test_f64_store_into_an_f32_field_is_refused():
    x = FakeField("x", T.f32, (4,))
    _refused(lambda b: b.store(x, [b.i(1)], b.c(2.0)), "store of f64 on a f32 field")


def test_two_operand_sin_is_refused():
    _refused(lambda b: b.emit(Op.SIN, T.f64, (b.c(1.0), b.c(2.0))), "SIN takes 1 operands, has 2")


def test_unknown_atomic_kind_is_refused():
    x = FakeField("x", T.f64, (4,))
    _refused(lambda b: b.emit(Op.ATOMIC, T.f64, (b.i(0), b.c(1.0)), attr=(x, "bogus")),
             "unknown atomic kind 'bogus'")


def test_mixed_dtype_binary_is_refused():
    _refused(lambda b: b.emit(Op.ADD, T.f64, (b.c(1.0), b.const(1.0, T.f32))), "share one dtype")


def test_float_operand_of_an_integer_only_op_is_refused():
    _refused(lambda b: b.emit(Op.BIT_AND, T.f64, (b.c(1.0), b.c(2.0))), "does not take f64")


def test_result_dtype_follows_opdefs():
    _refused(lambda b: b.emit(Op.LT, T.f64, (b.c(1.0), b.c(2.0))), "LT gives i32")
    _refused(lambda b: b.emit(Op.ADD, T.f32, (b.c(1.0), b.c(2.0))), "ADD of f64 operands has dtype f32")


def test_float_index_is_refused():
    x = FakeField("x", T.f64, (4,))
    _refused(lambda b: b.load(x, [b.c(1.0)]), "indices must be integers")


def test_use_before_definition_is_refused():
    def build(b):
        later = Stmt(Op.CONST, T.f64, attr=1.0)
        b.emit(Op.NEG, T.f64, (later,))
    _refused(build, "used before its definition")


def test_the_error_shows_the_statements_around_not_the_whole_kernel():
    x = FakeField("x", T.f32, (4,))

    def build(b):
        for k in range(30):
            b.store(x, [b.i(k % 4)], b.const(float(k), T.f32))
        b.store(x, [b.i(1)], b.c(2.0))
    with pytest.raises(IRVerifyError) as err:
        verify(_kernel(build))
    text = str(err.value)
    assert "kern.py" in text and "store.f32" not in text.split("statement")[0]
    assert len(text.splitlines()) < 15
