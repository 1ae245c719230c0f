"""`ti.cos(1)`, `ti.exp(0.3)` on a Python number in a kernel: as in Taichi 1.7.4 the math is
Python's, in double precision, and the result a constant of the kernel (an integer is welcome
there; a rigid-body program builds its rotation from `ti.cos(1)`). An integer kernel value still
has to be cast first."""
import math

import numpy as np
import pytest

import fieldsim as fs

ANGLE = 1


def test_python_numbers_fold_in_double_precision():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.f32, shape=6)

    @fs.kernel
    def k():
        out[0] = fs.cos(ANGLE)
        out[1] = fs.sqrt(4) + fs.sin(0)
        out[2] = fs.exp(0.3)
        out[3] = fs.log(3.3)
        m = fs.Matrix([[fs.cos(1), -fs.sin(1)], [fs.sin(1), fs.cos(1)]])
        out[4] = m.determinant()
        out[5] = fs.math.tanh(np.float64(0.9))

    k()
    want = np.float32([math.cos(1), 2.0, math.exp(0.3), math.log(3.3), 1.0, math.tanh(0.9)])
    np.testing.assert_array_equal(out.to_numpy()[:4], want[:4])  # f32 of the f64 value, exactly
    assert out[4] == pytest.approx(1.0, abs=1e-6)
    assert out[5] == want[5]


def test_integer_kernel_value_still_refused():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.f32, shape=2)

    @fs.kernel
    def k():
        for i in range(1, 2):
            out[i] = fs.cos(i)

    with pytest.raises(fs.FieldsimTypeError, match="real"):
        k()


def test_python_numbers_outside_the_domain_fold_to_inf_and_nan():
    # refused before ("math domain error"); Taichi 1.7.4 folds with numpy, which warns
    fs.init(arch=fs.cpu)
    out = fs.field(fs.f64, shape=4)

    @fs.kernel
    def k():
        out[0] = fs.log(-0.0)
        out[1] = fs.sqrt(-1.0)
        out[2] = fs.exp(1000.0)
        out[3] = fs.log(0)

    with pytest.warns(RuntimeWarning):
        k()
    r = out.to_numpy()
    assert r[0] == -math.inf and math.isnan(r[1]) and r[2] == math.inf and r[3] == -math.inf


def test_negative_python_number_to_a_fractional_power_is_nan():
    # ti.log(0.001) folds to a negative Python float; Python's ** would give a complex number,
    # NumPy's and Taichi's give NaN (the kernel compiled before only with a TypeError)
    fs.init(arch=fs.cpu)
    out = fs.field(fs.f32, shape=3)

    @fs.kernel
    def k():
        out[0] = fs.log(0.001) ** 0.5
        out[1] = fs.log(0.5) ** 1.5
        out[2] = fs.log(0.5) ** 2.0

    k()
    got = out.to_numpy()
    assert np.isnan(got[0]) and np.isnan(got[1])
    assert got[2] == np.float32(math.log(0.5) ** 2)
