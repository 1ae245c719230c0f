"""`pow(x, 0.5)` with a known exponent 0.5 is a square root, as in Taichi 1.7.4 and numpy's
`np.power(x, 0.5)`: NaN at -inf and -0.0 at -0.0 (C's pow gives inf and +0.0)."""
import math

import numpy as np

import fieldsim as ti


def _signed(v):
    return "nan" if math.isnan(v) else (v, math.copysign(1.0, v))


def test_constant_half_exponent_is_a_square_root():
    xs = np.array([-np.inf, -4.0, 2.0, -0.0, np.inf], dtype=np.float64)
    e = ti.field(ti.f64, shape=5)
    e.from_numpy(xs)
    out = ti.field(ti.f64, shape=(4, 5))
    y = ti.field(ti.f64, shape=())
    y[None] = 0.5

    @ti.kernel
    def k():
        for i in range(5):
            x = e[i]
            h = 0.5
            out[0, i] = ti.pow(x, 0.5)
            out[1, i] = x ** h
            out[2, i] = ti.pow(x, y[None])  # a runtime exponent stays C's pow
            out[3, i] = ti.pow(x, 0.25)

    k()
    o = out.to_numpy()
    with np.errstate(invalid="ignore"):
        root = np.sqrt(xs)
    for row in (0, 1):
        assert [_signed(v) for v in o[row]] == [_signed(v) for v in root]
    c_pow = [math.inf, "nan", math.sqrt(2.0), 0.0, math.inf]
    assert [_signed(v) for v in o[2]] == [_signed(v) if v != "nan" else v for v in c_pow]
    assert o[3, 0] == math.inf and o[3, 3] == 0.0 and math.copysign(1.0, o[3, 3]) == 1.0


def test_half_exponent_f32():
    e = ti.field(ti.f32, shape=3)
    e.from_numpy(np.array([-np.inf, -0.0, 9.0], dtype=np.float32))
    out = ti.field(ti.f32, shape=3)

    @ti.kernel
    def k():
        for i in range(3):
            out[i] = e[i] ** 0.5

    k()
    o = out.to_numpy()
    assert math.isnan(o[0]) and o[1] == 0.0 and math.copysign(1.0, o[1]) == -1.0 and o[2] == 3.0
