"""`fs.real_func` corners: methods of data-oriented classes (an unannotated `self`), and
recursion whose depth depends on runtime values (a real call; a plain func refuses it)."""
import numpy as np
import pytest
from support.programs import static_factorial

import fieldsim as fs


def test_real_func_methods_of_a_data_oriented_class():
    @fs.data_oriented
    class Grid:
        def __init__(self, n):
            self.val = fs.field(fs.f32, shape=(n, n))

        @fs.real_func
        def inc(self, i: fs.i32, j: fs.i32):
            self.val[i, j] += i * j

        @fs.real_func
        def mul(self, i: fs.i32, j: fs.i32) -> fs.i32:
            return i * j

        @fs.kernel
        def fill(self):
            for i, j in self.val:
                self.inc(i, j)
                self.val[i, j] += self.mul(i, j) + 1

    g = Grid(5)
    g.fill()
    i, j = np.meshgrid(np.arange(5), np.arange(5), indexing="ij")
    assert np.array_equal(g.val.to_numpy(), 2 * i * j + 1)


def test_real_func_outside_a_class_still_needs_every_annotation():
    with pytest.raises(fs.FieldsimSyntaxError, match="'self'.*must be type annotated"):
        @fs.real_func
        def f(self, i: fs.i32) -> fs.i32:
            return i


def test_runtime_recursion_of_a_plain_func_is_a_clear_error():
    @fs.func
    def sum_to(n: fs.i32) -> fs.i32:
        if n == 0:
            return 0
        return sum_to(n - 1) + n

    @fs.kernel
    def total(n: fs.i32) -> fs.i32:
        return sum_to(n)

    with pytest.raises(fs.FieldsimSyntaxError, match=r"func 'sum_to' recurses too deeply"
                                                    r".*runtime value.*real_func") as err:
        total(10)
    assert "test_compat_real_funcs.py" in str(err.value)


def test_static_recursion_of_a_real_func_still_works():
    fact = static_factorial()

    @fs.kernel
    def k() -> fs.i32:
        return fact(5)

    assert k() == 120
