"""Divisions by a square root under fast-math (`TaskLowering.op_div`, `llvm_arith.fast_rsqrt`):
f32 `x / sqrt(q)` multiplies by the hardware's 1/sqrt estimate refined by one third-order
Newton step, instead of a square root and a division on x86's divider. Exact mode, f64 and
divisions by anything else are untouched.

Checks: values within an ulp of float64's 1/sqrt over the whole f32 range, in scalar code and
in vectorized loops; exact where the result is a float (powers of 4), so the polar
decomposition of the identity stays the identity; IEEE's values at 0, -0, inf, negatives and
NaN; subnormals as documented; the LLVM IR asks for the estimate only under fast-math and only
for f32; one estimate for divisions sharing a square root; a float32 gradient through the
estimate against the analytic derivative and float64 central differences.
"""
import re

import numpy as np
import pytest

import fieldsim as fs

SPECIAL = np.array([0.0, -0.0, np.inf, -1.0, np.nan, -np.inf], np.float32)
SPECIAL_WANT = np.array([np.inf, -np.inf, 0.0, np.nan, np.nan, np.nan], np.float32)


def _inverse_roots(values, fast_math=True, dtype=fs.f32, numerator=1.0):
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=fast_math)
    q = fs.field(dtype, shape=len(values))
    out = fs.field(dtype, shape=len(values))

    @fs.kernel
    def inverse_root():
        for i in q:
            out[i] = numerator / fs.sqrt(q[i])

    q.from_numpy(values)
    inverse_root()
    return out.to_numpy()


def _ulps(got, values, numerator=1.0):
    exact = numerator / np.sqrt(values.astype(np.float64))
    return np.abs(got - exact) / np.spacing(exact.astype(np.float32))


@pytest.mark.parametrize("n", [7, 1 << 16])  # one thread's scalar code; vectorized chunks
def test_within_an_ulp_over_the_float_range(n):
    rng = np.random.default_rng(5)
    values = np.exp(rng.uniform(np.log(1.2e-38), np.log(3e38), n)).astype(np.float32)
    values[:3] = [1.0, 2.0, 3e38]
    got = _inverse_roots(values)
    assert _ulps(got, values).max() <= 1.0
    assert _ulps(_inverse_roots(values, numerator=-3.0), values, -3.0).max() <= 2.0


@pytest.mark.parametrize("n", [40, 4096])
def test_exact_for_powers_of_four(n):
    values = np.resize(4.0 ** np.arange(-62, 64, dtype=np.float64), n).astype(np.float32)
    got = _inverse_roots(values)
    np.testing.assert_array_equal(got, (1.0 / np.sqrt(values.astype(np.float64))).astype(np.float32))


@pytest.mark.parametrize("fast_math", [True, False])
def test_special_values_are_ieee(fast_math):
    values = np.resize(SPECIAL, 4096)  # vectorized chunks and a scalar tail
    with np.errstate(invalid="ignore"):
        want = np.resize(SPECIAL_WANT, 4096)
    np.testing.assert_array_equal(_inverse_roots(values, fast_math), want)


def test_subnormals_refined_or_treated_as_zero():
    """docs/API.md: a subnormal q gives the refined 1/sqrt(q) where the hardware estimate takes
    subnormals (AVX-512's vrsqrt14ps) and +inf where it flushes them (rsqrtps), never a value
    in between."""
    values = np.resize(np.array([1e-40, 3e-39, 1.4e-45, 1e-38], np.float32), 4096)
    got = _inverse_roots(values)
    close = _ulps(got, values) <= 1.0
    assert np.all(close | (got == np.inf))


def test_exact_mode_and_f64_are_correctly_rounded():
    rng = np.random.default_rng(6)
    values = rng.uniform(1e-3, 1e3, 4096)
    exact32 = _inverse_roots(values.astype(np.float32), fast_math=False)
    v32 = values.astype(np.float32)
    np.testing.assert_array_equal(exact32, np.float32(1.0) / np.sqrt(v32))
    got64 = _inverse_roots(values, fast_math=True, dtype=fs.f64)
    np.testing.assert_array_equal(got64, 1.0 / np.sqrt(values))


def _estimates(text):
    body = text[text.index("define"):]
    return len(re.findall(r"fdiv arcp afn", body))


@pytest.mark.parametrize("fast_math, dtype, want", [(True, fs.f32, 1), (False, fs.f32, 0),
                                                     (True, fs.f64, 0)])
def test_ir_asks_for_one_estimate_per_shared_root(llvm_texts, fast_math, dtype, want):
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=fast_math)
    q = fs.field(dtype, shape=64)
    out = fs.Vector.field(3, dtype=dtype, shape=64)

    @fs.kernel
    def unit_and_scaled():
        for i in q:
            r = fs.sqrt(q[i] * q[i] + 1.0)
            out[i][0] = q[i] / r
            out[i][1] = 1.0 / r
            out[i][2] = r  # the root itself is still wanted: its square root stays

    q.from_numpy(np.linspace(-2, 2, 64))
    unit_and_scaled()
    (text,) = [t for t in llvm_texts if "unit_and_scaled" in t]
    assert _estimates(text) == want
    assert ('"reciprocal-estimates"' in text) == (want == 1)
    qv = np.linspace(-2, 2, 64)
    r = np.sqrt(qv * qv + 1.0)
    np.testing.assert_allclose(out.to_numpy(), np.stack([qv / r, 1.0 / r, r], 1), rtol=3e-7)


def test_polar_decomposition_near_the_identity_matches_float64():
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=True)
    n = 256
    F = fs.Matrix.field(2, 2, dtype=fs.f32, shape=n)
    R = fs.Matrix.field(2, 2, dtype=fs.f32, shape=n)

    @fs.kernel
    def rotations():
        for i in F:
            R[i], _ = fs.polar_decompose(F[i])

    rng = np.random.default_rng(9)
    Fv = (np.eye(2) + rng.normal(scale=1e-3, size=(n, 2, 2))).astype(np.float32)
    Fv[:8] = np.eye(2)
    F.from_numpy(Fv)
    rotations()
    got = R.to_numpy()
    np.testing.assert_array_equal(got[:8], np.broadcast_to(np.eye(2, dtype=np.float32), (8, 2, 2)))
    u, _, vt = np.linalg.svd(Fv.astype(np.float64))
    want = u @ vt
    np.testing.assert_allclose(got, want, atol=1e-6)


def test_float32_gradient_through_the_estimate():
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=True)
    n = 1024
    x = fs.field(fs.f32, shape=n, needs_grad=True)
    energy = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def potential():
        for i in x:
            energy[None] += -0.5 / fs.sqrt(x[i] * x[i] + 0.25)

    def f(v):
        return float(np.sum(-0.5 / np.sqrt(v * v + 0.25)))

    xv = np.random.default_rng(4).normal(size=n)
    x.from_numpy(xv.astype(np.float32))
    with fs.ad.Tape(loss=energy):
        potential()
    xf = xv.astype(np.float32).astype(np.float64)
    analytic = 0.5 * xf / (xf * xf + 0.25) ** 1.5
    np.testing.assert_allclose(x.grad.to_numpy(), analytic, rtol=2e-6, atol=1e-7)
    h = 1e-6
    k = np.arange(0, n, 97)
    fd = np.array([(f(xf + h * e) - f(xf - h * e)) / (2 * h) for e in np.eye(n)[k]])
    np.testing.assert_allclose(x.grad.to_numpy()[k], fd, rtol=2e-6, atol=1e-7)
