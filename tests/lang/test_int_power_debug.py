"""With debug=True, an integer power with a negative exponent (`x ** -2` of an int, or a
runtime exponent that turns out negative) fails when reached, as Taichi's debug check does;
a non-negative or unsigned exponent runs as before."""
import pytest

import fieldsim as fs


def _kernels():
    @fs.kernel
    def runtime_exp(x: fs.i32, y: fs.i32) -> fs.i32:
        return x ** y

    @fs.kernel
    def unsigned_exp(x: fs.i64, y: fs.u32) -> fs.i64:
        return x ** y

    @fs.kernel
    def constant_exp(x: fs.i32) -> fs.i32:
        return x ** -3

    return runtime_exp, unsigned_exp, constant_exp


def test_negative_integer_exponent_fails_under_debug():
    fs.init(arch=fs.cpu, debug=True)
    runtime_exp, unsigned_exp, constant_exp = _kernels()
    assert runtime_exp(-3, 3) == -27
    assert unsigned_exp(5, 4) == 625
    with pytest.raises(RuntimeError):
        runtime_exp(2, -1)
    with pytest.raises(RuntimeError):
        constant_exp(2)


def test_without_debug_the_runtime_exponent_is_not_checked():
    fs.init(arch=fs.cpu)
    runtime_exp, _, _ = _kernels()
    assert runtime_exp(3, -2) == 9  # its magnitude, as Taichi 1.7.4 computes it
