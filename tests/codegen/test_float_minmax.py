"""Float `min`/`max` as Taichi 1.7.4 computes them (LLVM's minnum/maxnum on x86-64, measured on
every pair below, f32 and f64): a NaN operand is ignored, so the other one is returned
(`ti.max(1.0, nan)` is 1.0; fieldsim returned NaN when the NaN came second), and of two equal
operands (+0.0 and -0.0) the first is returned. The reference is that rule written in Python; the
IR's own Python evaluator (constant folding, the IR interpreter) follows it too."""
import math

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.ir.ir import Op
from fieldsim.ir.opdefs import OPDEFS

VALS = [float("nan"), 1.0, -0.0, 0.0, -1.0, float("inf"), -float("inf")]


def _ref(op, a, b):
    if math.isnan(a):
        return b
    if math.isnan(b):
        return a
    return b if (b > a if op == "max" else b < a) else a


def _bits(x):
    return "nan" if math.isnan(x) else ("-" if math.copysign(1.0, x) < 0 else "+") + repr(abs(x))


@pytest.mark.parametrize("dt", ["f32", "f64"])
def test_min_max_of_runtime_values_ignore_nan_and_keep_the_first_of_equals(dt):
    fs.init(arch=fs.cpu)
    dtype = getattr(fs, dt)
    n = len(VALS)
    a = fs.field(dtype, shape=n)
    mx = fs.field(dtype, shape=(n, n))
    mn = fs.field(dtype, shape=(n, n))

    @fs.kernel
    def k():
        for i, j in mx:
            mx[i, j] = fs.max(a[i], a[j])
            mn[i, j] = min(a[i], a[j])

    a.from_numpy(np.array(VALS, dtype=np.float32 if dt == "f32" else np.float64))
    k()
    for name, got in (("max", mx.to_numpy()), ("min", mn.to_numpy())):
        for i, x in enumerate(VALS):
            for j, y in enumerate(VALS):
                assert _bits(float(got[i, j])) == _bits(_ref(name, x, y)), (name, x, y)


def test_clamp_of_nan_is_the_lower_bound_not_nan():
    # Taichi's clamp is min(hi, max(lo, x)): NaN is ignored by both
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=3)
    out = fs.field(fs.f32, shape=3)

    @fs.kernel
    def k():
        for i in x:
            out[i] = fs.math.clamp(x[i], 0.0, 1.0)

    x.from_numpy(np.array([float("nan"), 2.0, 0.25], np.float32))
    k()
    np.testing.assert_array_equal(out.to_numpy(), [0.0, 1.0, 0.25])


@pytest.mark.parametrize("op", ["min", "max"])
def test_the_ir_evaluator_follows_the_lowering(op):
    ev = OPDEFS[Op.MIN if op == "min" else Op.MAX].evaluate
    for x in VALS:
        for y in VALS:
            assert _bits(ev(x, y)) == _bits(_ref(op, x, y)), (x, y)
    assert ev(3, 5) == (3 if op == "min" else 5)
