"""`fs.func(is_real_function=True)`, Taichi's older spelling of `fs.real_func`, gets real_func's
rules (annotated parameters, an annotated return value), not a plain func's."""
import pytest

import fieldsim as fs


def test_flagged_func_needs_parameter_annotations():
    with pytest.raises(fs.FieldsimSyntaxError, match="must be type annotated"):
        @fs.func(is_real_function=True)
        def add(a, b: fs.i32) -> fs.i32:
            return a + b


def test_flagged_func_needs_a_return_annotation():
    def add(a: fs.i32, b: fs.i32):
        return a + b
    add = fs.func(add, is_real_function=True)

    @fs.kernel
    def k():
        add(1, 2)

    with pytest.raises(fs.FieldsimCompilationError, match="return value must be annotated"):
        k()


def test_flagged_func_runs():
    @fs.func(is_real_function=True)
    def mul_add(a: fs.i32, b: fs.i32, c: fs.i32) -> fs.i32:
        return a * b + c

    @fs.kernel
    def k(x: fs.i32) -> fs.i32:
        return mul_add(x, 3, 4)

    assert k(5) == 19


def test_unflagged_func_keeps_plain_rules():
    @fs.func
    def twice(a):  # a plain func needs no annotations
        return 2 * a

    @fs.kernel
    def k(x: fs.i32) -> fs.i32:
        return twice(x)

    assert k(21) == 42
