"""A kernel's arguments are immutable in its body, as in Taichi 1.7.4 (`re = re` or `n += 1`
is a syntax error naming the argument and the line); a `@fs.func`'s parameters stay ordinary
variables the func may reassign."""
import numpy as np
import pytest

import fieldsim as fs


def test_assigning_a_scalar_argument_is_refused():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.f32, shape=4)

    @fs.kernel
    def paint(re: fs.f32):
        re = re
        for i in out:
            out[i] = re

    with pytest.raises(fs.FieldsimSyntaxError,
                       match=r'(?s)re = re.*Kernel argument "re" is immutable in the kernel'):
        paint(1.0)


def test_augmented_assignment_to_an_argument_is_refused():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=())

    @fs.kernel
    def count(n: fs.i32):
        n += 1
        out[None] = n

    with pytest.raises(fs.FieldsimSyntaxError, match='Kernel argument "n" is immutable'):
        count(3)


def test_func_parameters_and_new_locals_may_be_reassigned():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.f32, shape=5)

    @fs.func
    def twice_plus(x, k):
        x = x * 2.0
        k += 1
        return x + k

    @fs.kernel
    def run(scale: fs.f32, k: fs.i32):
        s = scale
        s += 0.5
        for i in out:
            out[i] = twice_plus(s * i, k)

    run(1.5, 3)
    i = np.arange(5, dtype=np.float32)
    np.testing.assert_allclose(out.to_numpy(), 2.0 * (2.0 * i) + 4.0, rtol=1e-6)
