"""Real calls in the IR: the printed form of a kernel with a recursive real func (golden), the
verifier's checks of functions, PARAM and CALL, and `fields_of` seeing into functions. A call at
the kernel's top level returns its result in the same serial task, with no hidden field (one
that bounds a later loop crosses through one: tests/lang/test_task_bounds.py)."""
import numpy as np
import pytest
from support.ir_kit import compiled_ir

import fieldsim as fs
from fieldsim.ir import dtypes as T
from fieldsim.ir.ir import Function, Kernel, Op, Stmt, fields_of, walk
from fieldsim.ir.printer import print_kernel
from fieldsim.ir.verify import IRVerifyError, verify


def make_kernel():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=8, name="x")

    @fs.real_func
    def down(n: fs.i32) -> fs.f32:
        if n < 0:
            return 0.0
        return x[n] + down(n - 1)

    @fs.kernel
    def k(n: fs.i32) -> fs.f32:
        return down(n)

    return k, x


EXPECTED = """\
kernel k(n: i32) -> f32:
  %0 = arg.i32 arg0
  serial {
    %1 = call.f32 @down %0
    return %1
  }
func @down(i32) -> f32:
  %0 = param.i32 param0
  %1 = alloca.f32
  %2 = const.i32 0
  %3 = lt.i32 %0, %2
  if %3 {
    %4 = const.f32 0.0
    local_store %1, %4
  } else {
    %5 = load.f32 x[%0]
    %6 = const.i32 1
    %7 = sub.i32 %0, %6
    %8 = call.f32 @down %7
    %9 = add.f32 %5, %8
    local_store %1, %9
  }
  %10 = local_load.f32 %1
  return %10"""


def test_golden_real_call_ir():
    k, x = make_kernel()
    ir = compiled_ir(k, 7)
    assert print_kernel(ir) == EXPECTED
    verify(ir)
    assert any(f is x for f in fields_of(ir))  # only the function touches x
    assert not any(s.op == Op.LOAD and s.field is x for s in walk(ir.body))
    x.from_numpy(np.arange(8, dtype=np.float32))
    assert k(7) == 28.0


def _function(body_ops, rets=(T.i32,)):
    f = Function("g", [T.i32], list(rets))
    p = Stmt(Op.PARAM, T.i32, attr=0)
    f.body = [p, *body_ops(f, p)]
    return f


def test_verifier_checks_calls_and_functions():
    good = _function(lambda f, p: [Stmt(Op.RETURN, None, (p,))])
    arg = Stmt(Op.CONST, T.i32, attr=3)
    call = Stmt(Op.CALL, T.i32, (arg,), attr=good)
    verify(Kernel("k", [], [arg, call], funcs=[good]))

    wrong = Stmt(Op.CONST, T.f32, attr=3.0)
    with pytest.raises(IRVerifyError, match="CALL of f32"):
        verify(Kernel("k", [], [wrong, Stmt(Op.CALL, T.i32, (wrong,), attr=good)], funcs=[good]))
    with pytest.raises(IRVerifyError, match="does not hold"):
        verify(Kernel("k", [], [arg, Stmt(Op.CALL, T.i32, (arg,), attr=good)]))
    with pytest.raises(IRVerifyError, match="PARAM outside a function"):
        verify(Kernel("k", [], [Stmt(Op.PARAM, T.i32, attr=0)]))
    no_return = _function(lambda f, p: [])
    with pytest.raises(IRVerifyError, match="does not end with a RETURN"):
        verify(Kernel("k", [], [], funcs=[no_return]))
    outer = Stmt(Op.CONST, T.i32, attr=1)  # a kernel value used inside a function
    leaky = _function(lambda f, p: [Stmt(Op.RETURN, None, (outer,))])
    with pytest.raises(IRVerifyError, match="used before its definition"):
        verify(Kernel("k", [], [outer], funcs=[leaky]))


def test_verifier_checks_several_results():
    two = _function(lambda f, p: [Stmt(Op.RETURN, None, (p, p))], rets=(T.i32, T.i32))
    arg = Stmt(Op.CONST, T.i32, attr=3)
    call = Stmt(Op.CALL, None, (arg,), attr=two)
    first = Stmt(Op.CALL_RESULT, T.i32, (call,), attr=1)
    k = Kernel("k", [], [arg, call, first], funcs=[two])
    verify(k)
    assert "%1 = call @g %0\n  %2 = call_result.i32 out1 %1" in print_kernel(k)
    assert "func @g(i32) -> (i32, i32):" in print_kernel(k)
    beyond = Stmt(Op.CALL_RESULT, T.i32, (call,), attr=2)
    with pytest.raises(IRVerifyError, match="CALL_RESULT is not one"):
        verify(Kernel("k", [], [arg, call, beyond], funcs=[two]))
    with pytest.raises(IRVerifyError, match="CALL gives i32"):
        verify(Kernel("k", [], [arg, Stmt(Op.CALL, T.i32, (arg,), attr=two)], funcs=[two]))
