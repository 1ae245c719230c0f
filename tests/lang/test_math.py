"""Math functions in kernels, compared with numpy on arrays of values at f32 and f64 tolerances."""
import numpy as np
import pytest

import fieldsim as fs

PRECISIONS = [(fs.f32, np.float32, 2e-6), (fs.f64, np.float64, 1e-13)]
PREC_IDS = ["f32", "f64"]

UNARY = ["sin", "cos", "tan", "asin", "acos", "tanh", "exp", "log", "sqrt", "abs", "floor", "ceil"]


def _domain(name, rng, n):
    if name in ("asin", "acos"):
        return rng.uniform(-0.99, 0.99, n)
    if name in ("log", "sqrt"):
        return rng.uniform(1e-3, 50.0, n)
    if name == "exp":
        return rng.uniform(-10.0, 10.0, n)
    if name == "tan":
        return rng.uniform(-1.4, 1.4, n)
    return rng.uniform(-20.0, 20.0, n)


@pytest.mark.parametrize("dt,npdt,rtol", PRECISIONS, ids=PREC_IDS)
def test_unary_functions_match_numpy(dt, npdt, rtol):
    n = 64
    rng = np.random.default_rng(11)
    inputs = np.stack([_domain(name, rng, n) for name in UNARY]).astype(npdt)
    x = fs.field(dt, shape=(len(UNARY), n))
    y = fs.field(dt, shape=(len(UNARY), n))
    x.from_numpy(inputs)

    @fs.kernel
    def k():
        for j in range(n):
            y[0, j] = fs.sin(x[0, j])
            y[1, j] = fs.cos(x[1, j])
            y[2, j] = fs.tan(x[2, j])
            y[3, j] = fs.asin(x[3, j])
            y[4, j] = fs.acos(x[4, j])
            y[5, j] = fs.tanh(x[5, j])
            y[6, j] = fs.exp(x[6, j])
            y[7, j] = fs.log(x[7, j])
            y[8, j] = fs.sqrt(x[8, j])
            y[9, j] = fs.abs(x[9, j])
            y[10, j] = fs.floor(x[10, j])
            y[11, j] = fs.ceil(x[11, j])

    k()
    got = y.to_numpy()
    assert got.dtype == np.dtype(npdt)
    for r, name in enumerate(UNARY):
        ref = getattr(np, {"asin": "arcsin", "acos": "arccos"}.get(name, name))(inputs[r])
        np.testing.assert_allclose(got[r], ref, rtol=rtol * 4, atol=rtol * 4, err_msg=name)


@pytest.mark.parametrize("dt,npdt,rtol", PRECISIONS, ids=PREC_IDS)
def test_binary_functions_match_numpy(dt, npdt, rtol):
    n = 64
    rng = np.random.default_rng(12)
    a = rng.uniform(-5, 5, n).astype(npdt)
    b = rng.uniform(-5, 5, n).astype(npdt)
    pa = rng.uniform(0.1, 4.0, n).astype(npdt)
    xa = fs.field(dt, shape=n)
    xb = fs.field(dt, shape=n)
    xp = fs.field(dt, shape=n)
    out = fs.field(dt, shape=(6, n))
    xa.from_numpy(a)
    xb.from_numpy(b)
    xp.from_numpy(pa)

    @fs.kernel
    def k():
        for i in xa:
            out[0, i] = fs.atan2(xa[i], xb[i])
            out[1, i] = fs.pow(xp[i], xb[i])
            out[2, i] = xp[i] ** xb[i]
            out[3, i] = fs.min(xa[i], xb[i])
            out[4, i] = fs.max(xa[i], xb[i])
            out[5, i] = fs.max(xa[i], xb[i], 0.0)

    k()
    got = out.to_numpy()
    np.testing.assert_allclose(got[0], np.arctan2(a, b), rtol=rtol * 4, atol=rtol * 4)
    np.testing.assert_allclose(got[1], np.power(pa, b), rtol=rtol * 20)
    np.testing.assert_allclose(got[2], np.power(pa, b), rtol=rtol * 20)
    np.testing.assert_array_equal(got[3], np.minimum(a, b))
    np.testing.assert_array_equal(got[4], np.maximum(a, b))
    np.testing.assert_array_equal(got[5], np.maximum(np.maximum(a, b), 0))


def test_round_runtime_values():
    vals = np.array([0.2, 0.7, -0.2, -0.7, 1.49, -1.51, 123.6, 2.5, -2.5, 0.5, -0.5, 1.5], np.float32)
    x = fs.field(fs.f32, shape=len(vals))
    y = fs.field(fs.f32, shape=len(vals))
    x.from_numpy(vals)

    @fs.kernel
    def k():
        for i in x:
            y[i] = fs.round(x[i])

    k()
    got = y.to_numpy()
    # non-halfway values: nearest integer
    np.testing.assert_array_equal(got[:7], np.round(vals[:7]))
    # Taichi 1.7's runtime round is C's round(): halfway cases go away from zero
    np.testing.assert_array_equal(got[7:], [3.0, -3.0, 1.0, -1.0, 2.0])


def test_int_abs_min_max_and_floor_results():
    a = np.array([-7, 3, 0, -1, 12], np.int32)
    b = np.array([2, -3, 0, 5, 12], np.int32)
    xa = fs.field(fs.i32, shape=5)
    xb = fs.field(fs.i32, shape=5)
    out = fs.field(fs.i32, shape=(3, 5))
    xa.from_numpy(a)
    xb.from_numpy(b)

    @fs.kernel
    def k():
        for i in xa:
            out[0, i] = fs.abs(xa[i])
            out[1, i] = fs.min(xa[i], xb[i])
            out[2, i] = fs.max(xa[i], xb[i])

    k()
    np.testing.assert_array_equal(out.to_numpy(), np.stack([np.abs(a), np.minimum(a, b), np.maximum(a, b)]))


def test_floor_ceil_cast_to_int_field():
    vals = np.array([1.5, -1.5, 2.0, -0.1, 0.1], np.float32)
    x = fs.field(fs.f32, shape=5)
    fl = fs.field(fs.i32, shape=5)
    ce = fs.field(fs.i32, shape=5)
    x.from_numpy(vals)

    @fs.kernel
    def k():
        for i in x:
            fl[i] = fs.floor(x[i])
            ce[i] = fs.ceil(x[i])

    k()
    np.testing.assert_array_equal(fl.to_numpy(), np.floor(vals).astype(np.int32))
    np.testing.assert_array_equal(ce.to_numpy(), np.ceil(vals).astype(np.int32))


def test_pow_operator_int_and_float_exponents():
    r = fs.field(fs.f64, shape=8)
    ri = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k(x: fs.f32, n: fs.i32, d: fs.f64):
        r[0] = x**2
        r[1] = x**3
        r[2] = x**0.5
        r[3] = x**-1
        r[4] = d**2.5
        r[5] = d ** fs.f64(-0.5)
        r[6] = x**0
        r[7] = 2.0**n
        ri[0] = n**2
        ri[1] = n**3
        ri[2] = 3**n
        ri[3] = n**0

    k(1.5, 5, 3.0)
    got = r.to_numpy()
    f = np.float32(1.5)
    np.testing.assert_allclose(got[:4], [f**2, f**3, np.sqrt(f), 1 / f], rtol=1e-6)
    np.testing.assert_allclose(got[4:6], [3.0**2.5, 3.0**-0.5], rtol=1e-12)
    np.testing.assert_allclose(got[6:], [1.0, 32.0])
    np.testing.assert_array_equal(ri.to_numpy(), [25, 125, 243, 1])


def test_int_pow_result_is_int():
    r = fs.field(fs.f64, shape=2)

    @fs.kernel
    def k(n: fs.i32):
        r[0] = n**2 / 4  # (int ** int) is an int, then true division
        r[1] = (n**2) // 4

    k(3)
    np.testing.assert_array_equal(r.to_numpy(), [2.25, 2.0])


def test_select():
    vals = np.array([-2.0, -0.5, 0.0, 0.5, 2.0], np.float32)
    x = fs.field(fs.f32, shape=5)
    y = fs.field(fs.f32, shape=5)
    z = fs.field(fs.i32, shape=5)
    x.from_numpy(vals)

    @fs.kernel
    def k():
        for i in x:
            y[i] = fs.select(x[i] > 0, x[i] * 10.0, -1.0)
            z[i] = fs.select(x[i] >= 0.5, 1, 0)

    k()
    np.testing.assert_array_equal(y.to_numpy(), np.where(vals > 0, vals * 10, -1))
    np.testing.assert_array_equal(z.to_numpy(), (vals >= 0.5).astype(np.int32))


def test_select_on_vectors():
    out = fs.Vector.field(3, fs.f32, shape=2)

    @fs.kernel
    def k():
        a = fs.Vector([1.0, 2.0, 3.0])
        b = fs.Vector([-1.0, -2.0, -3.0])
        c = fs.Vector([1, 0, 1])
        out[0] = fs.select(c, a, b)
        out[1] = fs.select(a > 1.5, a, b)

    k()
    np.testing.assert_array_equal(out.to_numpy(), [[1, -2, 3], [-1, 2, 3]])


def test_sqrt_exp_log_on_int_promote_to_float():
    r = fs.field(fs.f64, shape=3)

    @fs.kernel
    def k(n: fs.i32):
        r[0] = fs.sqrt(n)
        r[1] = fs.exp(n - n + 1)
        r[2] = fs.log(n)

    k(16)
    got = r.to_numpy()
    assert got[0] == 4.0
    assert got[1] == pytest.approx(np.e, rel=1e-6)
    assert got[2] == pytest.approx(np.log(16), rel=1e-6)


def test_trig_on_int_is_a_type_error():
    # Taichi 1.7 refuses sin/cos/tanh/floor of an integer ("takes real inputs only")
    r = fs.field(fs.f32, shape=1)

    @fs.kernel
    def k(n: fs.i32):
        r[0] = fs.sin(n)

    with pytest.raises(fs.FieldsimTypeError):
        k(1)


def test_math_in_python_scope_on_numbers():
    # Taichi's math functions also accept plain Python numbers outside kernels
    assert fs.sqrt(16.0) == pytest.approx(4.0)
    assert fs.max(1, 5, 3) == 5
    assert fs.min(2.5, -1.0) == -1.0
