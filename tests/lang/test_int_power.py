"""`x ** n` for a float x and an integer n is binary exponentiation, as Taichi 1.7.4 computes it
(measured: its results equal repeated squaring bit for bit, libm's pow only ~70 % of the time
for n = 3): constant, negative and runtime exponents; gradients still follow n x^(n-1)."""
import numpy as np
import pytest

import fieldsim as fs
from support.backends import divides_exactly


def _squaring(x, n):
    r, b, k = np.ones_like(x), x.copy(), abs(n)
    while k:
        if k & 1:
            r = (r * b).astype(x.dtype)
        b = (b * b).astype(x.dtype)
        k >>= 1
    return (x.dtype.type(1) / r).astype(x.dtype) if n < 0 else r


def _assert_squaring(got, x, k, what):
    """Bit for bit, but for a negative power where the backend's division is CUDA's f32
    fast-math `div.approx` (2 ulp from the correctly rounded 1/r)."""
    if k < 0 and not divides_exactly(fs.f32 if x.dtype == np.float32 else fs.f64):
        np.testing.assert_allclose(got, _squaring(x, k), rtol=2.5e-7, err_msg=what)
    else:
        np.testing.assert_array_equal(got, _squaring(x, k), err_msg=what)


@pytest.mark.parametrize("dtype", [fs.f32, fs.f64])
def test_integer_powers_are_repeated_squaring(dtype):
    fs.init(arch=fs.cpu)
    n = 20000
    rng = np.random.default_rng(1)
    x = (rng.random(n) * 3 + 0.1).astype(dtype.np)
    a = fs.field(dtype, shape=n)
    out = fs.field(dtype, shape=(5, n))
    a.from_numpy(x)

    @fs.kernel
    def powers(e: fs.i32):
        for i in a:
            out[0, i] = a[i] ** 3
            out[1, i] = a[i] ** 5
            out[2, i] = a[i] ** -2
            out[3, i] = a[i] ** e
            out[4, i] = a[i] ** -e

    powers(7)
    got = out.to_numpy()
    for row, k in enumerate([3, 5, -2, 7, -7]):
        _assert_squaring(got[row], x, k, f"x ** {k}")


def test_zero_exponent_and_gradient():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    x = fs.field(fs.f64, shape=3, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    x.from_numpy(np.array([0.5, 1.5, -2.0]))

    @fs.kernel
    def f(e: fs.i32):
        for i in x:
            loss[None] += x[i] ** 3 + x[i] ** e + x[i] ** 0

    with fs.ad.Tape(loss):
        f(-2)
    xs = np.array([0.5, 1.5, -2.0])
    assert loss[None] == pytest.approx((xs ** 3 + xs ** -2.0 + 1).sum(), rel=1e-12)
    np.testing.assert_allclose(x.grad.to_numpy(), 3 * xs ** 2 - 2 * xs ** -3.0, rtol=1e-12)
    fs.init(arch=fs.cpu)


def test_power_of_a_constant_folds_as_double_pow_rounded_once():
    # Taichi folds `h ** n` when h is a constant (a func's float argument): C's pow in double,
    # rounded to f32 once, which for these differs from squaring in f32 (0.05 ** 6, 1.0123 ** 7)
    fs.init(arch=fs.cpu)
    out = fs.field(fs.f32, shape=4)

    @fs.func
    def power(h, n: fs.template()):
        return h ** n

    @fs.kernel
    def k():
        out[0] = power(0.05, 6)
        out[1] = power(1.0123, 7)
        out[2] = power(1.0123, -3)
        out[3] = power(3.0e20, 3)  # overflows f32: inf, as the rounded double is

    k()
    want = [np.float32(float(np.float32(x)) ** n) for x, n in ((0.05, 6), (1.0123, 7), (1.0123, -3))]
    np.testing.assert_array_equal(out.to_numpy(), np.array(want + [np.inf], np.float32))
    assert want[0] != _squaring(np.array([0.05], np.float32), 6)[0]


def test_whole_float_exponents_up_to_32_are_repeated_squaring():
    # Taichi 1.7.4 also squares for a constant float exponent of whole value, |e| <= 32
    # (measured: `x ** 3.0`, `ti.math.pow(x, -32.0)` bit for bit; `x ** 33.0` and `x ** 2.5`
    # are libm's pow); libm's pow differed in the last bit for a quarter of the values
    fs.init(arch=fs.cpu)
    n = 20000
    x = (np.random.default_rng(5).random(n) * 0.6 + 0.7).astype(np.float32)
    a = fs.field(fs.f32, shape=n)
    out = fs.field(fs.f32, shape=(6, n))
    a.from_numpy(x)

    @fs.kernel
    def powers():
        for i in a:
            out[0, i] = a[i] ** 3.0
            out[1, i] = fs.math.pow(a[i], -2.0)
            out[2, i] = fs.pow(a[i], 32.0)
            out[3, i] = a[i] ** 0.0
            out[4, i] = a[i] ** 33.0
            out[5, i] = a[i] ** 2.5

    powers()
    got = out.to_numpy()
    for row, k in enumerate([3, -2, 32, 0]):
        _assert_squaring(got[row], x, k, f"x ** {k}.0")
    for row, e in ((4, 33.0), (5, 2.5)):  # libm: within an ulp of the correctly rounded power
        np.testing.assert_allclose(got[row], (x.astype(np.float64) ** e).astype(np.float32),
                                   rtol=3e-7)


def test_integer_base_powers_wrap_in_the_base_type_like_repeated_products():
    # Taichi 1.7.4: integer ** integer multiplies in the base's type (wrapping), exponent by
    # magnitude; through f64 an i64 power lost its low digits and an i32 one saturated
    @fs.kernel
    def p32(b: fs.i32, e: fs.i32) -> fs.i32:
        return b ** e

    @fs.kernel
    def p64(b: fs.i64, e: fs.i64) -> fs.i64:
        return b ** e

    @fs.kernel
    def mixed(b: fs.i8, e: fs.i32) -> fs.types.vector(3, fs.i64):
        return fs.Vector([b ** e, b ** 5, fs.u8(b) ** e])

    def wrap(v, bits):
        v &= (1 << bits) - 1
        return v - (1 << bits) if v >> (bits - 1) else v

    for b, e in [(2, 31), (3, 25), (-3, 21), (2, 32), (7, 0), (-1, 5), (5, 13), (3, -2), (2, -1)]:
        assert p32(b, e) == wrap(b ** abs(e), 32)
        assert p64(b, 2 * e) == wrap(b ** abs(2 * e), 64)
    assert p64(5, 26) == 1490116119384765625  # exact (f64 gave ...5696)
    assert mixed(3, 5).to_list() == [wrap(243, 8), wrap(243, 8), 243]


def test_constant_negative_exponent_of_an_integer_is_refused_at_its_line():
    # gh #331-style probe: `a ** -1` for an i32 `a` gave a (2 for a = 2), silently; Taichi 1.7.4
    # refuses it at compile time, and 1/a is not an integer anyway
    @fs.kernel
    def inv(a: fs.i32) -> fs.f32:
        return a ** -1

    with pytest.raises(fs.FieldsimTypeError, match=r"(?s)a \*\* -1.*Negative exponent in pow\(int, int\)"):
        inv(2)

    @fs.kernel
    def inv_float(a: fs.i32) -> fs.f32:
        return float(a) ** -1

    assert inv_float(4) == 0.25


def test_runtime_negative_exponent_of_an_integer_fails_an_assertion_under_debug():
    fs.init(arch=fs.cpu, debug=True, offline_cache=False)

    @fs.kernel
    def p(b: fs.i32, e: fs.i32) -> fs.i32:
        return b ** e

    @fs.kernel
    def unsigned_exp(x: fs.i64, y: fs.u32) -> fs.i64:
        return x ** y

    @fs.kernel
    def constant_exp(x: fs.i32) -> fs.i32:
        return x ** -3

    assert p(3, 4) == 81 and p(-3, 3) == -27
    assert unsigned_exp(5, 4) == 625  # an unsigned exponent is never checked
    with pytest.raises(fs.FieldsimAssertionError, match=r"Negative exponent in pow\(int, int\)"):
        p(2, -1)
    # a failed debug check is also Taichi's RuntimeError; a constant one is refused at compile time
    with pytest.raises(RuntimeError):
        p(2, -1)
    with pytest.raises(RuntimeError):
        constant_exp(2)
    fs.init(arch=fs.cpu)

    @fs.kernel
    def unchecked(b: fs.i32, e: fs.i32) -> fs.i32:
        return b ** e

    assert unchecked(3, -2) == 9  # without debug: its magnitude, as Taichi 1.7.4 computes it
