"""An `and`/`or` whose leading operands are compile-time constants that decide the result
(a captured `False and ...`, `True or ...`) never runs the loads of the operand after them: with
`debug=True` there is no out-of-range report for a load the result does not need, with or
without Taichi's `short_circuit_operators` option (Taichi 1.7.4 skips it only with the option:
without it, it evaluates every operand, so those cases are fieldsim's own)."""
import pytest

import fieldsim as fs

CHECK_LEFT = False
SKIP_LEFT = True


@pytest.mark.parametrize("short_circuit", [
    pytest.param(False, marks=pytest.mark.fieldsim_specific), True])
def test_decided_operand_is_not_loaded(short_circuit):
    fs.init(arch=fs.cpu, debug=True, short_circuit_operators=short_circuit)
    x = fs.field(fs.f32, shape=4)
    x.fill(2.0)

    @fs.func
    def left_positive(i: fs.i32) -> fs.i32:
        return fs.i32(x[i - 1] > 0)

    @fs.kernel
    def with_and(i: fs.i32) -> fs.i32:
        return CHECK_LEFT and left_positive(i)

    @fs.kernel
    def with_or(i: fs.i32) -> fs.i32:
        return SKIP_LEFT or x[i - 1] > 0

    assert with_and(0) == 0
    assert with_or(0) == 1


@pytest.mark.fieldsim_specific
def test_decided_and_keeps_python_value():
    fs.init(arch=fs.cpu, debug=True)
    x = fs.field(fs.f32, shape=2)

    @fs.kernel
    def zero_float(i: fs.i32) -> fs.f32:
        return 0.0 and x[i - 5]

    @fs.kernel
    def first_truthy(i: fs.i32) -> fs.i32:
        return 3 or x[i - 5] > 0

    assert zero_float(0) == 0.0
    assert first_truthy(0) == 3


@pytest.mark.parametrize("short_circuit", [False, True])
def test_func_effects_still_run(short_circuit):
    fs.init(arch=fs.cpu, short_circuit_operators=short_circuit)
    calls = fs.field(fs.i32, shape=())

    @fs.func
    def bump(v: fs.i32) -> fs.i32:
        calls[None] += 1
        return v

    @fs.kernel
    def both(a: fs.i32, b: fs.i32) -> fs.i32:
        return bump(a) and bump(b)

    assert both(0, 7) == 0
    assert calls[None] == 2
