"""libm calls under fast-math name glibc's libmvec variants (`codegen.vector_math`), so a
vectorized loop calls one vector function per 8 or 16 lanes.

Checks: every vectorized function (exp, log, sin, cos, tan, asin, acos, atan, tanh, pow,
atan2) in f32 and f64, in a loop long enough to vectorize and in scalar remainders, is within
glibc's libmvec bounds (4 ulp) of float64/numpy's values, with IEEE's special values; the IR
names the variants only under fast-math and where libmvec loaded; exact mode keeps libm's
scalar results bit for bit, in calls LLVM does not widen; a gradient through exp/log/sin in a vectorized loop against the
analytic derivative.
"""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.codegen.vector_math import VectorMath

HAVE_LIBMVEC = VectorMath.for_host("x86_64", "+sse4.2,+avx2") is not None

UNARY = {
    "exp": (fs.exp, np.exp, (-80.0, 80.0)),
    "log": (fs.log, np.log, (1e-30, 1e30)),
    "sin": (fs.sin, np.sin, (-100.0, 100.0)),
    "cos": (fs.cos, np.cos, (-100.0, 100.0)),
    "tan": (fs.tan, np.tan, (-1.5, 1.5)),
    "asin": (fs.asin, np.arcsin, (-1.0, 1.0)),
    "acos": (fs.acos, np.arccos, (-1.0, 1.0)),
    "atan": (fs.atan, np.arctan, (-1e4, 1e4)),
    "tanh": (fs.tanh, np.tanh, (-20.0, 20.0)),
}


def _ulps(got, want, dtype):
    want = want.astype(dtype)
    scale = np.spacing(np.maximum(np.abs(want), np.finfo(dtype).tiny)).astype(np.float64)
    return np.abs(got.astype(np.float64) - want.astype(np.float64)) / scale


def _run_unary(fn, values, dtype, fast_math=True):
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=fast_math)
    x = fs.field(dtype, shape=len(values))
    y = fs.field(dtype, shape=len(values))

    @fs.kernel
    def apply():
        for i in x:
            y[i] = fn(x[i])

    x.from_numpy(values)
    apply()
    return y.to_numpy()


@pytest.mark.parametrize("dtype", [fs.f32, fs.f64])
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_functions_within_libmvec_bounds(name, dtype):
    fn, ref, (lo, hi) = UNARY[name]
    np_dt = np.float32 if dtype == fs.f32 else np.float64
    rng = np.random.default_rng(3)
    values = rng.uniform(lo, hi, 4099).astype(np_dt)  # vector body and a scalar remainder
    got = _run_unary(fn, values, dtype)
    want = ref(values.astype(np.float64))
    assert _ulps(got, want, np_dt).max() <= 4.0


@pytest.mark.parametrize("dtype", [fs.f32, fs.f64])
def test_binary_functions_within_libmvec_bounds(dtype):
    np_dt = np.float32 if dtype == fs.f32 else np.float64
    fs.init(arch=fs.cpu, offline_cache=False)
    n = 4099
    rng = np.random.default_rng(4)
    a = fs.field(dtype, shape=n)
    b = fs.field(dtype, shape=n)
    p = fs.field(dtype, shape=n)
    t = fs.field(dtype, shape=n)

    @fs.kernel
    def apply():
        for i in a:
            p[i] = fs.pow(a[i], b[i])
            t[i] = fs.atan2(b[i], a[i] - 2.0)

    av = rng.uniform(0.1, 4.0, n).astype(np_dt)
    bv = rng.uniform(-3.0, 3.0, n).astype(np_dt)
    a.from_numpy(av)
    b.from_numpy(bv)
    apply()
    a64, b64 = av.astype(np.float64), bv.astype(np.float64)
    assert _ulps(p.to_numpy(), a64 ** b64, np_dt).max() <= 4.0
    assert _ulps(t.to_numpy(), np.arctan2(b64, a64 - 2.0), np_dt).max() <= 4.0


def test_special_values_keep_ieee_meaning():
    values = np.resize(np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0], np.float32), 64)
    got = _run_unary(fs.exp, values, fs.f32)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, np.exp(values))
    got = _run_unary(fs.log, values, fs.f32)
    with np.errstate(all="ignore"):
        np.testing.assert_array_equal(got, np.log(values))


@pytest.mark.parametrize("fast_math", [True, False])
def test_ir_names_variants_only_under_fast_math(llvm_texts, fast_math):
    _run_unary(fs.exp, np.linspace(-1, 1, 256).astype(np.float32), fs.f32, fast_math)
    (text,) = [t for t in llvm_texts if "apply" in t]
    named = "vector-function-abi-variant" in text and "llvm.compiler.used" in text
    assert named == (fast_math and HAVE_LIBMVEC)


def test_exact_mode_calls_stay_scalar(llvm_texts):
    """With fast_math=False the call is libm's scalar function, without `nobuiltin` (LLVM
    folds it on a constant, as Taichi's) and in a loop marked scalar (a widened loop would
    call it once per lane)."""
    _run_unary(fs.tanh, np.linspace(-1, 1, 256).astype(np.float32), fs.f32, fast_math=False)
    (text,) = [t for t in llvm_texts if "apply" in t]
    calls = [line for line in text.splitlines() if "call" in line and "tanhf" in line]
    assert calls and not any("nobuiltin" in line for line in calls)
    assert "llvm.loop.vectorize.enable" in text
    assert "vector-function-abi-variant" not in text


def test_exact_mode_is_libms_scalar_result():
    import ctypes
    import ctypes.util
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.expf.restype, libm.expf.argtypes = ctypes.c_float, [ctypes.c_float]
    values = np.random.default_rng(6).uniform(-30, 30, 1000).astype(np.float32)
    exact = _run_unary(fs.exp, values, fs.f32, fast_math=False)
    np.testing.assert_array_equal(exact, np.array([libm.expf(float(v)) for v in values], np.float32))


def test_gradient_through_vectorized_calls():
    fs.init(arch=fs.cpu, offline_cache=False)
    n = 1024
    x = fs.field(fs.f64, shape=n, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def energy():
        for i in x:
            loss[None] += fs.exp(x[i]) * fs.sin(x[i]) + fs.log(x[i] + 2.0)

    xv = np.linspace(-1.0, 1.0, n)
    x.from_numpy(xv)
    with fs.ad.Tape(loss):
        energy()
    want = np.exp(xv) * (np.sin(xv) + np.cos(xv)) + 1.0 / (xv + 2.0)
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-13, atol=1e-13)
