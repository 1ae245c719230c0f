"""Python builtins Taichi maps inside kernels: `pow`, `abs`, `bool`, `operator.matmul`
(values checked against numpy / Taichi 1.7.4's results)."""
import operator

import numpy as np
import pytest

import fieldsim as fs


def test_pow_abs_matmul_builtins():
    out = fs.field(fs.f32, shape=7)
    iout = fs.field(fs.i32, shape=2)

    @fs.kernel
    def k(a: fs.f32, n: fs.i32):
        out[0] = pow(a, 2)
        out[1] = pow(2, a)
        out[2] = pow(fs.Vector([a, 2.0]), 2).sum()
        out[3] = pow(3, 2)
        out[4] = abs(-a)
        out[5] = operator.matmul(fs.Matrix([[1.0, 2.0], [3.0, 4.0]]), fs.Vector([a, 1.0]))[1]
        out[6] = pow(a, 0.5)
        iout[0] = pow(n, 3)
        iout[1] = pow(n, 2) // 3

    k(1.5, 4)
    np.testing.assert_allclose(out.to_numpy(), [2.25, 2 ** 1.5, 6.25, 9.0, 1.5, 8.5, 1.5 ** 0.5], rtol=1e-6)
    np.testing.assert_array_equal(iout.to_numpy(), [64, 5])


def test_bool_and_u1_casts_are_nonzero_tests():
    out = fs.field(fs.i32, shape=6)

    @fs.kernel
    def k(n: fs.i32, a: fs.f32):
        out[0] = bool(n)
        out[1] = bool(n - 4)
        out[2] = fs.cast(n + 1, fs.u1)  # 5: truncating to one bit would give 1 too; 4 gives 0
        out[3] = fs.u1(n)
        out[4] = fs.cast(4, fs.u1)

    k(4, 0.25)
    np.testing.assert_array_equal(out.to_numpy(), [1, 0, 1, 1, 1, 0])


@pytest.mark.fieldsim_specific  # Taichi 1.7.4 aborts in LLVM on a float-to-u1 cast
def test_bool_of_a_float_is_a_nonzero_test():
    out = fs.field(fs.i32, shape=3)

    @fs.kernel
    def k(a: fs.f32):
        out[0] = bool(a)
        out[1] = bool(a * 0)
        out[2] = bool(a / 0 * 0)  # NaN counts as true, as in C

    k(0.25)
    np.testing.assert_array_equal(out.to_numpy(), [1, 0, 1])


def test_pow_with_a_modulus_and_kernel_values_is_refused():
    out = fs.field(fs.i32, shape=())

    @fs.kernel
    def k(n: fs.i32):
        out[None] = pow(n, 2, 5)

    with pytest.raises(fs.FieldsimTypeError, match="pow"):
        k(3)


@pytest.mark.fieldsim_specific  # Taichi refuses them too, with a TypeError about __round__
def test_round_and_divmod_on_kernel_values_are_refused_with_a_hint():
    out = fs.field(fs.f32, shape=2)

    @fs.kernel
    def k(a: fs.f32):
        out[0] = round(a)

    with pytest.raises(fs.FieldsimSyntaxError, match=r"Python's round\(\) runs in Python.*fs\.round"):
        k(2.5)

    @fs.kernel
    def k2(n: fs.i32):
        q, r = divmod(n, 3)
        out[1] = q + r

    with pytest.raises(fs.FieldsimSyntaxError, match=r"Python's divmod\(\)"):
        k2(7)
