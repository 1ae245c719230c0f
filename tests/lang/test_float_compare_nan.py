"""Float comparisons with a NaN operand in kernels: every one is false, `!=` included, as Taichi
1.7.4's CPU backend compiles them (ordered compares; measured: `nan != 0.0` is 0 there, so a path
tracer's `if normal.norm_sqr() != 0` stops a ray whose normal went NaN). `ti.math.isnan` still finds
NaNs, and a NaN used as a truth value (fieldsim accepts `if x:` on a float) is true, as in Python."""
import math

import numpy as np
import pytest

import fieldsim as fs


@pytest.mark.parametrize("dtype", [fs.f32, fs.f64])
def test_comparisons_with_nan_are_false(dtype):
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=(4, 8))

    @fs.kernel
    def compare(x: dtype, y: dtype):
        out[0, 0] = x != y
        out[0, 1] = x == y
        out[0, 2] = x < y
        out[0, 3] = x >= y
        out[0, 4] = fs.math.isnan(x)
        out[0, 5] = fs.math.isnan(y)
        if x != y:
            out[0, 6] = 1
        v = fs.Vector([x, y]) != fs.Vector([y, y])
        out[0, 7] = v[0] + 10 * v[1]

    rows = [(math.nan, 0.0), (0.0, math.nan), (1.5, 0.0), (0.0, 0.0)]
    got = []
    for x, y in rows:
        out.fill(0)
        compare(x, y)
        got.append(out.to_numpy()[0].tolist())
    for (x, y), r in zip(rows, got):
        ne = int(not (math.isnan(x) or math.isnan(y)) and x != y)
        eq = int(x == y)
        assert r == [ne, eq, int(x < y), int(x >= y), int(math.isnan(x)), int(math.isnan(y)),
                     ne, ne + 10 * int(False)], (x, y, r)


@pytest.mark.fieldsim_specific  # Taichi refuses a float `if` condition
def test_nan_is_true_as_a_condition_and_folds_like_the_runtime():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=4)
    nan = float("nan")

    @fs.kernel
    def run(x: fs.f32):
        if x:
            out[0] = 1
        c = fs.f32(nan)  # a constant: folded, with the runtime's ordered `!=`
        out[1] = c != 0.0
        out[2] = x != 0.0
        out[3] = fs.math.isnan(c)

    run(nan)
    np.testing.assert_array_equal(out.to_numpy(), [1, 0, 0, 1])
