"""Under fast-math a division by a float constant multiplies by the constant's reciprocal
rounded to its type, as Taichi 1.7's CPU backend does (LLVM folds `x / C` into `x * fl(1/C)`
when that reciprocal is finite and normal): `i / 800.0 * 20` then truncates to Taichi's cell.
Exact mode divides."""
import numpy as np
import pytest

import fieldsim as fs


def _quotients(fast_math, c, dtype=fs.f32):
    fs.init(arch=fs.cpu, fast_math=fast_math)
    n = 2000
    x = fs.field(dtype, shape=n)
    y = fs.field(dtype, shape=n)

    @fs.kernel
    def k():
        for i in x:
            y[i] = x[i] / c

    xs = np.linspace(-50, 1000, n).astype(dtype.np)
    x.from_numpy(xs)
    k()
    out = y.to_numpy()
    fs.init(arch=fs.cpu)
    return xs, out


@pytest.mark.parametrize("c", [800.0, 3.0, 0.1, -7.5])
def test_fast_math_multiplies_by_the_rounded_reciprocal(c):
    xs, out = _quotients(True, c)
    recip = np.float32(1) / np.float32(c)
    np.testing.assert_array_equal(out, xs * recip)
    if c != -7.5:  # (some x / C differ from x * fl(1/C): the test would prove nothing otherwise)
        assert np.any(out != xs / np.float32(c))


def test_f64_constant():
    xs, out = _quotients(True, 3.0, fs.f64)
    np.testing.assert_array_equal(out, xs * (1.0 / 3.0))


def test_exact_mode_divides():
    xs, out = _quotients(False, 800.0)
    np.testing.assert_array_equal(out, xs / np.float32(800))


@pytest.mark.parametrize("c", [3e38, 0.0])
def test_no_fold_when_the_reciprocal_is_subnormal_or_infinite(c):
    xs, out = _quotients(True, c)
    with np.errstate(all="ignore"):
        ref = xs / np.float32(c)
    # the CPU flushes subnormal results to zero, as Taichi's x64 backend (codegen/denormals.py)
    ref[np.abs(ref) < np.finfo(np.float32).tiny] = 0.0
    np.testing.assert_array_equal(out, ref)
