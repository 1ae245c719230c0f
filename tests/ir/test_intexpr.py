"""Launch-time integer expressions: one evaluator for AD stack sizing and launch size hints."""
from support.ir_kit import KB

from fieldsim.ad.stack import TripCount
from fieldsim.codegen.launch import size_hint
from fieldsim.ir.intexpr import evaluate, launch_expr, trip_count
from fieldsim.ir.ir import ForInfo, Op
from fieldsim.lang import types as T


def _loop(build_end):
    b = KB()
    n = b.arg(T.i32, "n")
    with b.into(b.body):
        end = build_end(b, n)
        loop = b.for_(b.i(0), end, ForInfo(parallel=True))
    return loop


def test_max_bound_gives_the_same_count_to_the_stack_and_the_scheduler():
    loop = _loop(lambda b, n: b.binary(Op.MAX, n, b.i(1)))
    for n, want in [(0, 1), (5, 5)]:
        assert trip_count(loop, [n]) == want
        assert size_hint(loop, [n]) == want
        assert TripCount.of_loop(loop).evaluate([n], default=999) == want


def test_c_division_and_zero_divisor_as_compiled():
    b = KB()
    n = b.arg(T.i32, "n")
    with b.into(b.body):
        q = b.binary(Op.DIV, n, b.i(0))
        r = b.binary(Op.DIV, n, b.i(-2))
    assert evaluate(launch_expr(q), [7]) == 0
    assert evaluate(launch_expr(r), [7]) == -3


def test_bounds_from_a_field_are_not_known_at_launch():
    from support.ir_interp import FakeField
    x = FakeField("x", T.i32, (2,))
    loop = _loop(lambda b, n: b.load(x, [b.i(0)]))
    assert trip_count(loop, [3]) is None and size_hint(loop, [3]) is None
    assert TripCount.of_loop(loop).evaluate([3], default=17) == 17


def test_task_size_hint_keeps_a_constant_count_and_evaluates_the_rest_per_launch():
    from support.ir_interp import FakeField

    from fieldsim.codegen.launch import task_size_hint
    from fieldsim.codegen.llvm import TaskInfo

    def task(loop):
        return TaskInfo(symbol="t", parallel=True, stmt=loop)

    constant = task(_loop(lambda b, n: b.binary(Op.MUL, b.i(6), b.i(7))))
    assert task_size_hint(constant, []) == 42 and constant.bounds == (42,)
    assert task_size_hint(constant, [5]) == 42  # arguments do not matter to it
    by_arg = task(_loop(lambda b, n: b.binary(Op.ADD, n, b.i(2))))
    assert [task_size_hint(by_arg, [n]) for n in (1, 10, -5)] == [3, 12, 0]
    x = FakeField("x", T.i32, (2,))
    unknown = task(_loop(lambda b, n: b.load(x, [b.i(0)])))
    assert task_size_hint(unknown, [3]) is None and task_size_hint(unknown, [3]) is None
