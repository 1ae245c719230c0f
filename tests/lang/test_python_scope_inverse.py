"""Python-scope `inverse()`/`determinant()` by cofactors, as Taichi 1.7.4 computes them."""
import math

import numpy as np

import fieldsim as fs


def test_inverse_2x2_keeps_the_signed_zero_of_the_adjugate():
    # det = -6.25; inverse = adj / det = [[0, 2.5], [2.5, 4]] / -6.25
    r = fs.Matrix([[4, -2.5], [-2.5, 0]]).inverse().to_numpy()
    assert r.tolist() == [[0.0, -0.4], [-0.4, -0.64]]
    assert math.copysign(1.0, r[0, 0]) == -1.0  # np.linalg.inv gave -1.4e-17
    assert str(fs.Matrix([[4, -2.5], [-2.5, 0]]).inverse()).startswith("[[-0.   -0.4 ]")


def test_determinant_3x3_is_the_exact_cofactor_sum():
    # 2 (12 - 1) - 1 (4 - 0) + 0 = 18, exact in f64 (LU gave 17.999999999999996)
    assert fs.Matrix([[2.0, 1, 0], [1, 3, 1], [0, 1, 4]]).determinant() == 18.0


def test_inverse_3x3_and_4x4_invert_and_keep_f32():
    a = np.array([[2.0, 1, 0, 1], [1, 3, 1, 0.5], [0, 1, 4, 2], [1, 0.25, 3, 7]])
    inv = fs.Matrix(a.tolist()).inverse().to_numpy()
    assert np.allclose(inv @ a, np.eye(4), atol=1e-12)
    m3 = fs.Matrix([[2.0, 1, 0], [1, 3, 1], [0, 1, 4]], dt=fs.f32).inverse().to_numpy()
    assert m3.dtype == np.float32
    # adjugate [[11, -4, 1], [-4, 8, -2], [1, -2, 5]] / 18
    assert np.allclose(m3, np.array([[11, -4, 1], [-4, 8, -2], [1, -2, 5]]) / 18.0, rtol=1e-6)
    assert fs.Matrix([[4.0]]).inverse().to_numpy().tolist() == [[0.25]]
