"""Scalar types in kernels: promotion, integer/float division, wrapping, casts, bit operations."""
import numpy as np
import pytest

import fieldsim as fs


def test_promotion_i32_plus_f32_is_f32():
    r = fs.field(fs.f64, shape=4)

    @fs.kernel
    def k(a: fs.i32, f: fs.f32, d: fs.f64):
        r[0] = a + f  # f32 arithmetic, then widened on store
        r[1] = a + d  # f64 arithmetic
        r[2] = f + d  # f64
        r[3] = a * f

    k(1, 0.1, 0.1)
    out = r.to_numpy()
    assert out[0] == np.float64(np.float32(1) + np.float32(0.1))
    assert out[0] != 1.1
    assert out[1] == 1.1
    assert out[2] == np.float64(np.float32(0.1)) + 0.1
    assert out[3] == np.float64(np.float32(0.1))


def test_promotion_wider_int_wins():
    r = fs.field(fs.i64, shape=3)

    @fs.kernel
    def k(big: fs.i64, a: fs.i32, u: fs.u32):
        r[0] = big + a  # i64
        r[1] = u + a  # u32 wins over i32 at equal width: 0 + (-1) -> 2**32 - 1
        r[2] = big * a

    k(2**40, -1, 0)
    out = r.to_numpy()
    assert out[0] == 2**40 - 1
    assert out[1] == 2**32 - 1
    assert out[2] == -(2**40)


def test_int_div_is_true_division():
    r = fs.field(fs.f64, shape=3)

    @fs.kernel
    def k(a: fs.i32, b: fs.i32):
        r[0] = a / b
        r[1] = 7 / 2
        r[2] = -a / b

    k(1, 3)
    out = r.to_numpy()
    # i32 / i32 gives default_fp (f32 here)
    assert out[0] == np.float64(np.float32(1) / np.float32(3))
    assert out[1] == 3.5
    assert out[2] == np.float64(-np.float32(1) / np.float32(3))


def _int_pairs():
    a = np.array([7, -7, 7, -7, 0, 13, -13, 1, -1, 100, -100, 6, -6], np.int32)
    b = np.array([2, 2, -2, -2, 3, 5, 5, -3, 3, 7, -7, 3, 3], np.int32)
    return a, b


def test_int_floordiv_and_mod_are_python_style():
    a, b = _int_pairs()
    n = len(a)
    xa = fs.field(fs.i32, shape=n)
    xb = fs.field(fs.i32, shape=n)
    q = fs.field(fs.i32, shape=n)
    m = fs.field(fs.i32, shape=n)
    xa.from_numpy(a)
    xb.from_numpy(b)

    @fs.kernel
    def k():
        for i in xa:
            q[i] = xa[i] // xb[i]
            m[i] = xa[i] % xb[i]

    k()
    np.testing.assert_array_equal(q.to_numpy(), np.floor_divide(a, b))
    np.testing.assert_array_equal(m.to_numpy(), np.mod(a, b))
    # spot checks against Python itself
    assert q[1] == -7 // 2 == -4
    assert m[1] == -7 % 2 == 1
    assert m[2] == 7 % -2 == -1


@pytest.mark.parametrize("dt,npdt", [(fs.f32, np.float32), (fs.f64, np.float64)], ids=["f32", "f64"])
def test_float_floordiv_and_mod_are_python_style(dt, npdt):
    a = np.array([7.5, -7.5, 7.5, -7.5, 0.25, 5.0, -2.5], npdt)
    b = np.array([2.0, 2.0, -2.0, -2.0, 0.5, 2.5, 2.0], npdt)
    n = len(a)
    xa = fs.field(dt, shape=n)
    xb = fs.field(dt, shape=n)
    q = fs.field(dt, shape=n)
    m = fs.field(dt, shape=n)
    xa.from_numpy(a)
    xb.from_numpy(b)

    @fs.kernel
    def k():
        for i in xa:
            q[i] = xa[i] // xb[i]
            m[i] = xa[i] % xb[i]

    k()
    np.testing.assert_allclose(q.to_numpy(), np.floor_divide(a, b))
    np.testing.assert_allclose(m.to_numpy(), np.mod(a, b), atol=1e-6)
    assert m[1] == 0.5  # -7.5 % 2.0
    assert m[2] == -0.5  # 7.5 % -2.0


def test_i32_overflow_wraps():
    r = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k(a: fs.i32, b: fs.i32):
        r[0] = a + 1
        r[1] = b * b
        r[2] = -a - 2
        r[3] = a * 2

    k(2147483647, 65536)
    out = r.to_numpy()
    assert out[0] == -2147483648
    assert out[1] == 0
    assert out[2] == 2147483647
    assert out[3] == -2


def test_u8_and_u32_wrap_in_kernel():
    u = fs.field(fs.u8, shape=3)
    w = fs.field(fs.u32, shape=2)
    u.from_numpy(np.array([250, 0, 128], np.uint8))

    @fs.kernel
    def k():
        u[0] = u[0] + 10
        u[1] = u[1] - 1
        u[2] = u[2] * 2
        w[0] = fs.u32(0) - fs.u32(1)
        w[1] = fs.cast(-1, fs.u32) + fs.u32(2)

    k()
    np.testing.assert_array_equal(u.to_numpy(), [4, 255, 0])
    np.testing.assert_array_equal(w.to_numpy(), [4294967295, 1])


def test_cast_and_int_float_conversions():
    ri = fs.field(fs.i64, shape=8)
    rf = fs.field(fs.f64, shape=4)

    @fs.kernel
    def k(f: fs.f32, g: fs.f32, n: fs.i32, d: fs.f64):
        ri[0] = int(f)  # truncation toward zero
        ri[1] = int(g)
        ri[2] = fs.cast(f, fs.i32)
        ri[3] = fs.cast(g, fs.i32)
        ri[4] = fs.cast(n, fs.u8)  # keeps the low 8 bits
        ri[5] = fs.cast(-1, fs.u8)
        ri[6] = fs.cast(fs.cast(-1, fs.u32), fs.i64)
        ri[7] = fs.cast(fs.cast(n, fs.f32) * 0.5, fs.i32)
        rf[0] = float(n) / 8
        rf[1] = fs.cast(d, fs.f32)
        rf[2] = fs.cast(d, fs.f64)
        rf[3] = fs.cast(n, fs.f64) / 3.0

    k(2.7, -2.7, 300, 0.1)
    np.testing.assert_array_equal(ri.to_numpy(), [2, -2, 2, -2, 44, 255, 4294967295, 150])
    out = rf.to_numpy()
    assert out[0] == 37.5
    assert out[1] == np.float64(np.float32(0.1))
    assert out[2] == 0.1
    assert abs(out[3] - 100.0) < 1e-5


def test_implicit_cast_on_store_and_local_type():
    ri = fs.field(fs.i32, shape=3)

    @fs.kernel
    def k(f: fs.f32):
        ri[0] = f  # float stored into an int field truncates
        a = 1  # an i32 local keeps its type: the float result is cast on assignment
        a = f * 2
        ri[1] = a
        b = 0.0
        b = 3  # a float local stays float
        ri[2] = b / 2 * 2

    k(-3.9)
    np.testing.assert_array_equal(ri.to_numpy(), [-3, -7, 3])


def test_comparisons_give_one_or_zero():
    a = np.array([1, 2, 3, -1, 5], np.int32)
    b = np.array([2, 2, 1, -1, -5], np.int32)
    n = len(a)
    xa = fs.field(fs.i32, shape=n)
    xb = fs.field(fs.i32, shape=n)
    out = fs.field(fs.i32, shape=(6, n))
    xa.from_numpy(a)
    xb.from_numpy(b)

    @fs.kernel
    def k():
        for i in xa:
            out[0, i] = xa[i] < xb[i]
            out[1, i] = xa[i] <= xb[i]
            out[2, i] = xa[i] > xb[i]
            out[3, i] = xa[i] >= xb[i]
            out[4, i] = xa[i] == xb[i]
            out[5, i] = xa[i] != xb[i]

    k()
    got = out.to_numpy()
    expect = np.stack([a < b, a <= b, a > b, a >= b, a == b, a != b]).astype(np.int32)
    np.testing.assert_array_equal(got, expect)


def test_float_comparisons_and_chained_logic():
    out = fs.field(fs.i32, shape=6)

    @fs.kernel
    def k(x: fs.f32, y: fs.f32):
        out[0] = x < y
        out[1] = 0.0 < x < y  # chained comparison
        out[2] = 0.0 < y < x
        out[3] = (x < y) and (y > 0.0)
        out[4] = (x > y) or (y < 0.0)
        out[5] = not (x < y)

    k(0.5, 1.5)
    np.testing.assert_array_equal(out.to_numpy(), [1, 1, 0, 1, 0, 0])


def test_bit_operations_match_numpy_i32():
    a = np.array([0, 1, -1, 12345, -8, 2147483647, -2147483648, 0x0F0F], np.int32)
    b = np.array([3, 5, 7, 255, 1, 4, 1, 0x00FF], np.int32)
    n = len(a)
    xa = fs.field(fs.i32, shape=n)
    xb = fs.field(fs.i32, shape=n)
    out = fs.field(fs.i32, shape=(6, n))
    xa.from_numpy(a)
    xb.from_numpy(b)

    @fs.kernel
    def k():
        for i in xa:
            out[0, i] = xa[i] & xb[i]
            out[1, i] = xa[i] | xb[i]
            out[2, i] = xa[i] ^ xb[i]
            out[3, i] = ~xa[i]
            out[4, i] = xa[i] >> (xb[i] & 7)  # arithmetic shift for signed ints
            out[5, i] = xa[i] << (xb[i] & 7)

    k()
    s = b & 7
    expect = np.stack([a & b, a | b, a ^ b, ~a, a >> s, (a.astype(np.int64) << s).astype(np.int32)])
    np.testing.assert_array_equal(out.to_numpy(), expect)


def test_shift_right_unsigned_is_logical():
    a = np.array([0x80000000, 0xFFFFFFFF, 12, 1], np.uint32)
    xa = fs.field(fs.u32, shape=4)
    out = fs.field(fs.u32, shape=(2, 4))
    xa.from_numpy(a)

    @fs.kernel
    def k():
        for i in xa:
            out[0, i] = xa[i] >> 1
            out[1, i] = xa[i] << 1

    k()
    np.testing.assert_array_equal(out.to_numpy()[0], a >> 1)
    np.testing.assert_array_equal(out.to_numpy()[1], (a.astype(np.uint64) << 1).astype(np.uint32))


def test_i64_arithmetic_exact():
    r = fs.field(fs.i64, shape=3)

    @fs.kernel
    def k(a: fs.i64, b: fs.i64):
        r[0] = a * b
        r[1] = a // 7
        r[2] = -a % 1000003

    k(3_000_000_007, 1_000_000)
    a = 3_000_000_007
    np.testing.assert_array_equal(r.to_numpy(), [a * 1_000_000, a // 7, -a % 1000003])


def test_f64_arithmetic_and_float_literal_type():
    r = fs.field(fs.f64, shape=3)

    @fs.kernel
    def k(x: fs.f64, y: fs.f64):
        r[0] = x + y  # f64 arithmetic keeps 1e-12
        r[1] = x * 0.1  # a float literal is default_fp (f32) even next to an f64 operand
        r[2] = x * fs.f64(0.1)

    k(1.0, 1e-12)
    out = r.to_numpy()
    assert out[0] == 1.0 + 1e-12
    assert out[1] == np.float64(np.float32(0.1))
    assert out[2] == 0.1


def test_float_literal_is_f64_when_default_fp_f64():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    r = fs.field(fs.f64, shape=2)

    @fs.kernel
    def k(x: fs.f64):
        r[0] = x * 0.1
        r[1] = x / 3

    k(1.0)
    assert r[0] == 0.1
    assert r[1] == 1.0 / 3.0


def test_python_scope_dtype_call_gives_typed_scalar():
    r = fs.field(fs.f64, shape=1)

    @fs.kernel
    def k():
        r[0] = fs.f32(0.1) + fs.f64(0.1)

    k()
    assert r[0] == np.float64(np.float32(0.1)) + 0.1


def test_f32_arithmetic_is_single_precision():
    a = fs.field(fs.f32, shape=2)
    r = fs.field(fs.f64, shape=2)
    a.from_numpy(np.array([0.1, 0.2], np.float32))

    @fs.kernel
    def k():
        r[0] = a[0] + a[1]
        r[1] = a[0] * a[1] / 3.0

    k()
    x, y = np.float32(0.1), np.float32(0.2)
    assert r[0] == np.float64(x + y)
    assert r[1] == np.float64(x * y / np.float32(3.0))


def test_python_scope_large_unsigned_and_i64_values():
    u = fs.field(fs.u32, shape=2)
    w = fs.field(fs.i64, shape=2)
    u[0] = 4_000_000_000
    w[0] = -(2**62)
    w[1] = 2**62 + 7

    @fs.kernel
    def k():
        u[1] = u[0] // 3
        w[1] = w[1] - w[0]

    k()
    assert u[0] == 4_000_000_000
    assert u[1] == 4_000_000_000 // 3
    assert w[0] == -(2**62)
    assert w[1] == 2**62 + 7 + 2**62 - 2**64  # i64 wraps
