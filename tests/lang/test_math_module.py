"""`fs.math` (Taichi's `ti.math`): vector/matrix types and GLSL-style functions in kernels and
Python scope, compared with numpy; gradients of a few against analytic derivatives."""
import cmath
import math

import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu, default_fp=fs.f64)


def test_types_in_both_scopes():
    v = fs.math.vec3(1, 2, 3)
    assert isinstance(v, fs.Vector) and v.to_list() == [1, 2, 3]
    assert fs.math.ivec2(7).to_list() == [7, 7]
    assert fs.math.mat2([[1, 2], [3, 4]]).to_list() == [[1, 2], [3, 4]]
    out = fs.Matrix.field(2, 2, fs.f64, shape=())
    iv = fs.Vector.field(3, fs.i32, shape=())

    @fs.kernel
    def k():
        a = fs.math.vec2(1.5, 2.5)
        out[None] = fs.math.mat2(a, a * 2)
        iv[None] = fs.math.ivec3(1, 2, 3) * 2

    k()
    np.testing.assert_allclose(out.to_numpy(), [[1.5, 2.5], [3.0, 5.0]])
    assert iv.to_numpy().tolist() == [2, 4, 6]


def test_elementwise_functions_match_numpy():
    x = np.array([-1.25, 0.0, 0.4, 2.75])
    out = fs.Vector.field(4, fs.f64, shape=9)

    @fs.kernel
    def k():
        v = fs.Vector([-1.25, 0.0, 0.4, 2.75])
        out[0] = fs.math.clamp(v, -1.0, 1.0)
        out[1] = fs.math.mix(v, v * 3.0, 0.25)
        out[2] = fs.math.step(0.3, v)
        out[3] = fs.math.smoothstep(-1.0, 2.0, v)
        out[4] = fs.math.fract(v)
        out[5] = fs.math.sign(v)
        out[6] = fs.math.degrees(v)
        out[7] = fs.math.radians(v)
        out[8] = fs.math.exp2(v) + fs.math.log2(fs.math.exp2(v))

    k()
    t = np.clip((x + 1) / 3, 0, 1)
    ref = [np.clip(x, -1, 1), x * 0.75 + 3 * x * 0.25, np.where(x < 0.3, 0, 1), t * t * (3 - 2 * t),
           x - np.floor(x), np.sign(x), np.degrees(x), np.radians(x), np.exp2(x) + x]
    np.testing.assert_allclose(out.to_numpy(), np.array(ref), rtol=1e-12, atol=1e-12)
    py = fs.math.clamp(fs.Vector(list(x)), -1.0, 1.0)
    np.testing.assert_allclose(py.to_numpy(), ref[0])
    assert fs.math.sign(0.0) == 0 and fs.math.sign(-2) == -1


def test_geometry_functions():
    out = fs.Vector.field(3, fs.f64, shape=4)
    s = fs.field(fs.f64, shape=3)
    r = fs.Matrix.field(2, 2, fs.f64, shape=())

    @fs.kernel
    def k():
        a = fs.Vector([1.0, 2.0, 2.0])
        b = fs.Vector([0.0, 1.0, 0.0])
        out[0] = fs.math.normalize(a)
        out[1] = fs.math.cross(a, b)
        out[2] = fs.math.reflect(a, b)
        out[3] = fs.math.refract(fs.Vector([0.6, -0.8, 0.0]), b, 0.5)
        s[0] = fs.math.length(a)
        s[1] = fs.math.distance(a, b)
        s[2] = fs.math.dot(a, b)
        r[None] = fs.math.rotation2d(fs.math.pi / 3)

    k()
    a, b = np.array([1.0, 2, 2]), np.array([0.0, 1, 0])
    i = np.array([0.6, -0.8, 0.0])
    d = b @ i
    kk = 1 - 0.25 * (1 - d * d)
    refr = 0.5 * i - (0.5 * d + math.sqrt(kk)) * b
    np.testing.assert_allclose(out.to_numpy(), [a / 3, np.cross(a, b), a - 2 * (b @ a) * b, refr],
                               rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(s.to_numpy(), [3.0, np.linalg.norm(a - b), 2.0])
    c, sn = 0.5, math.sqrt(3) / 2
    np.testing.assert_allclose(r.to_numpy(), [[c, -sn], [sn, c]], rtol=1e-12)


def test_isnan_isinf_and_constants():
    f = fs.field(fs.f64, shape=3)
    flags = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k():
        for i in range(3):
            flags[i] = fs.math.isnan(f[i]) + 2 * fs.math.isinf(f[i])
        flags[3] = fs.math.isinf(fs.math.inf)

    f.from_numpy(np.array([np.nan, np.inf, 1.0]))
    k()
    assert flags.to_numpy().tolist() == [1, 2, 0, 1]
    assert fs.math.pi == math.pi and fs.math.e == math.e and math.isnan(fs.math.nan)


def test_gradients_of_mix_and_length():
    x = fs.Vector.field(3, fs.f64, shape=(), needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def f():
        v = x[None]
        loss[None] = fs.math.length(v) + fs.math.mix(v, v * v, 0.25).sum()

    x0 = np.array([0.5, -1.5, 2.0])
    x.from_numpy(x0)
    with fs.Tape(loss):
        f()
    # d/dx (|x| + sum(0.75 x + 0.25 x^2)) = x / |x| + 0.75 + 0.5 x
    np.testing.assert_allclose(x.grad.to_numpy(), x0 / np.linalg.norm(x0) + 0.75 + 0.5 * x0,
                               rtol=1e-12)


def test_bad_arguments_are_clear_errors():
    @fs.kernel
    def k():
        print(fs.math.dot(fs.Vector([1.0, 2.0]), fs.Vector([1.0, 2.0, 3.0])))

    with pytest.raises(fs.FieldsimTypeError, match="dot") as e:
        k()
    assert "test_math_module.py" in str(e.value)


def test_complex_functions_match_python_complex():
    import cmath
    out = fs.Vector.field(2, fs.f64, shape=7)
    a, b = complex(1.5, -2.0), complex(-0.5, 0.75)

    @fs.kernel
    def k():
        za = fs.math.vec2(1.5, -2.0)
        zb = fs.math.vec2(-0.5, 0.75)
        out[0] = fs.math.cmul(za, zb)
        out[1] = fs.math.cconj(za)
        out[2] = fs.math.cdiv(za, zb)
        out[3] = fs.math.cinv(za)
        out[4] = fs.math.cexp(za)
        out[5] = fs.math.clog(za)
        out[6] = fs.math.csqrt(za)

    k()
    ref = [a * b, a.conjugate(), a / b, 1 / a, cmath.exp(a), cmath.log(a), cmath.sqrt(a)]
    np.testing.assert_allclose(out.to_numpy(), [[z.real, z.imag] for z in ref], rtol=1e-12)
    py = fs.math.cmul(fs.math.vec2(1.5, -2.0), fs.math.vec2(-0.5, 0.75))
    np.testing.assert_allclose(py.to_numpy(), [(a * b).real, (a * b).imag])


def test_cpow_mod_translate_scale():
    out = fs.Vector.field(2, fs.f64, shape=2)
    m = fs.field(fs.f64, shape=2)
    t = fs.Matrix.field(4, 4, fs.f64, shape=2)

    @fs.kernel
    def k():
        out[0] = fs.math.cpow(fs.math.vec2(1.5, -2.0), 3.0)
        out[1] = fs.math.cpow(fs.math.vec2(0.0, 0.0), 2.0)
        m[0] = fs.math.mod(-7.5, 2.0)
        m[1] = fs.math.mod(7.5, -2.0)
        t[0] = fs.math.translate(1.0, 2.0, 3.0)
        t[1] = fs.math.scale(2.0, 3.0, 4.0)

    k()
    z = complex(1.5, -2.0) ** 3
    np.testing.assert_allclose(out.to_numpy(), [[z.real, z.imag], [0, 0]], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(m.to_numpy(), [-7.5 - 2.0 * math.floor(-7.5 / 2.0),
                                              7.5 + 2.0 * math.floor(7.5 / -2.0)])
    tr = np.eye(4)
    tr[:3, 3] = [1, 2, 3]
    np.testing.assert_allclose(t.to_numpy(), [tr, np.diag([2.0, 3.0, 4.0, 1.0])])
    np.testing.assert_allclose(fs.math.translate(1.0, 2.0, 3.0).to_numpy(), tr)


def test_cpow_and_cdiv_round_as_taichis_formulas():
    # Taichi: cpow(z, n) = |z|^2 ** (n / 2) * (cos n t, sin n t); cdiv = (x1 x2 + y1 y2,
    # x2 y1 - x1 y2) / |z2|^2. For a real z, cpow(z, 2) is then x * x exactly (exp(2 log x),
    # used before, is not), and an escape-time Mandelbrot count depends on that rounding.
    fs.init(arch=fs.cpu, fast_math=False)  # no FMA contraction: numpy's roundings, one by one
    rng = np.random.default_rng(7)
    xs = (rng.random(64) * 3 + 0.1).astype(np.float32)
    zs = rng.standard_normal((64, 4)).astype(np.float32)
    a = fs.field(fs.f32, shape=64)
    z = fs.Vector.field(4, fs.f32, shape=64)
    out = fs.Vector.field(4, fs.f32, shape=64)
    a.from_numpy(xs)
    z.from_numpy(zs)

    @fs.kernel
    def k():
        for i in a:
            p = fs.math.cpow(fs.math.vec2(a[i], 0.0), 2)
            q = fs.math.cdiv(fs.math.vec2(z[i][0], z[i][1]), fs.math.vec2(z[i][2], z[i][3]))
            out[i] = fs.Vector([p[0], p[1], q[0], q[1]])

    k()
    o = out.to_numpy()
    np.testing.assert_array_equal(o[:, 0], xs * xs)
    np.testing.assert_array_equal(o[:, 1], 0.0)
    x1, y1, x2, y2 = (zs[:, j] for j in range(4))
    d = x2 * x2 + y2 * y2
    np.testing.assert_array_equal(o[:, 2], (x1 * x2 + y1 * y2) / d)
    np.testing.assert_array_equal(o[:, 3], (-x1 * y2 + x2 * y1) / d)


def _taichi_det3(m):  # Taichi 1.7.4's expansion, written out in numpy float32
    return (m[:, 0, 0] * (m[:, 1, 1] * m[:, 2, 2] - m[:, 2, 1] * m[:, 1, 2])
            - m[:, 1, 0] * (m[:, 0, 1] * m[:, 2, 2] - m[:, 2, 1] * m[:, 0, 2])
            + m[:, 2, 0] * (m[:, 0, 1] * m[:, 1, 2] - m[:, 1, 1] * m[:, 0, 2]))


def _taichi_minor4(m, i, j):
    def E(r, c):
        return m[:, (i + r) % 4, (j + c) % 4]
    return (E(1, 1) * (E(2, 2) * E(3, 3) - E(3, 2) * E(2, 3))
            - E(2, 1) * (E(1, 2) * E(3, 3) - E(3, 2) * E(1, 3))
            + E(3, 1) * (E(1, 2) * E(2, 3) - E(2, 2) * E(1, 3)))


def test_determinant_inverse_and_refract_round_as_taichis_formulas():
    # same products in the same order as Taichi 1.7.4 (3x3 down the first column, 4x4 by its
    # cyclic minors; refract's eta typed as a func argument), so results agree to the bit
    fs.init(arch=fs.cpu, fast_math=False)
    rng = np.random.default_rng(11)
    n = 256
    m3 = rng.standard_normal((n, 3, 3)).astype(np.float32)
    m4 = rng.standard_normal((n, 4, 4)).astype(np.float32)
    v = rng.standard_normal((n, 6)).astype(np.float32)
    a3, a4 = fs.Matrix.field(3, 3, fs.f32, n), fs.Matrix.field(4, 4, fs.f32, n)
    vv = fs.Vector.field(6, fs.f32, n)
    d = fs.field(fs.f32, (2, n))
    i3, i4 = fs.Matrix.field(3, 3, fs.f32, n), fs.Matrix.field(4, 4, fs.f32, n)
    rf = fs.Vector.field(3, fs.f32, n)
    a3.from_numpy(m3)
    a4.from_numpy(m4)
    vv.from_numpy(v)

    @fs.kernel
    def k():
        for i in a3:
            d[0, i], d[1, i] = a3[i].determinant(), a4[i].determinant()
            i3[i], i4[i] = a3[i].inverse(), fs.math.inverse(a4[i])
            x = fs.math.vec3(vv[i][0], vv[i][1], vv[i][2])
            nn = fs.math.vec3(vv[i][3], vv[i][4], vv[i][5])
            rf[i] = fs.math.refract(x, nn, 0.7)

    k()
    det4 = sum((1 if i % 2 == 0 else -1) * (m4[:, i, 0] * _taichi_minor4(m4, i, 0)) for i in range(4))
    np.testing.assert_array_equal(d.to_numpy()[0], _taichi_det3(m3))
    np.testing.assert_array_equal(d.to_numpy()[1], det4)
    inv_d3 = np.float32(1.0) / _taichi_det3(m3)
    cof3 = np.stack([np.stack([m3[:, (c + 1) % 3, (r + 1) % 3] * m3[:, (c + 2) % 3, (r + 2) % 3]
                               - m3[:, (c + 2) % 3, (r + 1) % 3] * m3[:, (c + 1) % 3, (r + 2) % 3]
                               for c in range(3)], -1) for r in range(3)], -2)
    np.testing.assert_array_equal(i3.to_numpy(), inv_d3[:, None, None] * cof3)
    cof4 = np.stack([np.stack([(1 if (r + c) % 2 == 0 else -1) * _taichi_minor4(m4, c, r)
                               for c in range(4)], -1) for r in range(4)], -2)
    np.testing.assert_array_equal(i4.to_numpy(), (np.float32(1.0) / det4)[:, None, None] * cof4)
    x, nn, eta = v[:, :3], v[:, 3:], np.float32(0.7)
    dxn = (x[:, 0] * nn[:, 0] + x[:, 1] * nn[:, 1]) + x[:, 2] * nn[:, 2]
    kk = np.float32(1.0) - eta * eta * (np.float32(1.0) - dxn * dxn)
    want = eta * x - (eta * dxn + np.sqrt(np.maximum(kk, 0)))[:, None] * nn
    want[kk < 0] = 0
    np.testing.assert_array_equal(rf.to_numpy(), want)


def test_sign_is_default_fp_whatever_the_argument_type():
    # Taichi casts both comparisons to `float`: an int's sign is -1.0/0.0/1.0, so a local made
    # from it keeps fractions, and an f64's sign is default_fp
    fs.init(arch=fs.cpu, default_fp=fs.f32)
    out = fs.field(fs.f64, shape=6)

    @fs.kernel
    def k(n: fs.i32, d: fs.f64):
        s = fs.math.sign(n)
        s *= 0.5
        out[0] = s
        v = fs.math.sign(fs.Vector([n, 0, -n])) / 4
        out[1], out[2], out[3] = v[0], v[1], v[2]
        out[4] = fs.math.sign(d) + 1e-10  # f32 + a Python float: f32
        out[5] = fs.math.sign(7) / 2

    k(-3, 2.5)
    np.testing.assert_array_equal(out.to_numpy(), [-0.5, -0.25, 0.0, 0.25, 1.0, 0.5])


def test_cpow_of_zero_is_zero_for_any_exponent():
    # Taichi defines cpow(0, n) as 0 for every n; a negative exponent made |z|^n infinite and
    # the zero branch 0 * inf = NaN (a split-step wave function's empty cells turned NaN).
    out = fs.Vector.field(2, fs.f64, shape=5)
    n = fs.field(fs.i32, shape=())
    n[None] = -2

    @fs.kernel
    def k():
        zero = fs.math.vec2(0.0, 0.0)
        out[0] = fs.math.cpow(zero, n[None])
        out[1] = fs.math.cpow(zero, -1.5)
        out[2] = fs.math.cpow(fs.math.vec2(-0.0, 0.0), -3)
        out[3] = fs.math.cpow(zero, 0)
        out[4] = fs.math.cpow(fs.math.vec2(0.0, 2.0), n[None])  # (2i)^-2 = -1/4

    k()
    o = out.to_numpy()
    np.testing.assert_array_equal(o[:4], 0.0)
    assert not np.signbit(o[:4]).any()
    np.testing.assert_allclose(o[4], [-0.25, 0.0], atol=1e-15)
    assert fs.math.cpow(fs.math.vec2(0.0, 0.0), -2).to_list() == [0.0, 0.0]


def test_cpow_csqrt_gradients_at_zero_are_finite():
    # Taichi's cpow and csqrt skip their formula where z == 0 (the result is 0 there, and the
    # branch contributes no gradient); fieldsim's formula ran at 0 under a select, and its adjoint
    # (atan2's 0/0, 1/sqrt(0)) turned the whole gradient of z NaN. Elsewhere the gradient is
    # the analytic one: d Re(z^3)/dx = Re(3 z^2), d Re(z^3)/dy = Re(3i z^2), likewise for sqrt.
    z = fs.Vector.field(2, fs.f64, shape=3, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    pts = [0j, complex(1.0, 2.0), complex(-0.5, 0.25)]
    z.from_numpy(np.array([[p.real, p.imag] for p in pts]))

    @fs.kernel
    def f():
        for i in z:
            p = fs.math.cpow(z[i], 3.0)
            q = fs.math.csqrt(z[i])
            loss[None] += p[0] + 2.0 * p[1] + q[0] - q[1] + 0.5 * z[i][0]

    with fs.Tape(loss=loss):
        f()
    g = z.grad.to_numpy()
    np.testing.assert_array_equal(g[0], [0.5, 0.0])
    for k, p in enumerate(pts[1:], start=1):
        d3, ds = 3 * p * p, 0.5 / cmath.sqrt(p)  # holomorphic: d/dx = f', d/dy = i f'
        want = [(d3 * w).real + 2 * (d3 * w).imag + (ds * w).real - (ds * w).imag + (0.5 if w == 1 else 0)
                for w in (1, 1j)]
        np.testing.assert_allclose(g[k], want, rtol=1e-12)


def test_csqrt_of_signed_zero_is_plus_zero():
    out = fs.Vector.field(2, fs.f64, shape=2)

    @fs.kernel
    def k():
        out[0] = fs.math.csqrt(fs.math.vec2(0.0, -0.0))
        out[1] = fs.math.csqrt(fs.math.vec2(-0.0, -0.0))

    k()
    o = out.to_numpy()
    np.testing.assert_array_equal(o, 0.0)
    assert not np.signbit(o).any()


def test_refract_total_internal_reflection_is_positive_zero():
    # Taichi returns zero(x) there; 0 * x gave -0.0 in components where x < 0
    out = fs.Vector.field(3, fs.f32, shape=())
    x = np.array([1.0, -0.1, -0.5], dtype=np.float32)
    x /= np.linalg.norm(x)

    @fs.kernel
    def k():
        out[None] = fs.math.refract(fs.Vector([x[0], x[1], x[2]]), fs.math.vec3(0, 1, 0), 1.5)

    k()
    assert not np.signbit(out.to_numpy()).any() and (out.to_numpy() == 0).all()
    py = fs.math.refract(fs.Vector(x.tolist()), fs.Vector([0.0, 1.0, 0.0]), 1.5)
    assert not np.signbit(np.asarray(py.to_numpy())).any()
