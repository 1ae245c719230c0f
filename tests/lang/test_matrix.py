"""Small vectors and matrices inside kernels, compared with numpy."""
import numpy as np
import pytest

import fieldsim as fs


def test_vector_construct_elementwise_and_broadcast():
    out = fs.Vector.field(3, fs.f32, shape=8)

    @fs.kernel
    def k():
        a = fs.Vector([1.0, 2.0, 3.0])
        b = fs.Vector([4.0, -5.0, 0.5])
        out[0] = a + b
        out[1] = a - b
        out[2] = a * b
        out[3] = a / b
        out[4] = a * 2.0
        out[5] = 1.0 - a
        out[6] = -a
        out[7] = a**2

    k()
    a = np.array([1.0, 2.0, 3.0])
    b = np.array([4.0, -5.0, 0.5])
    ref = np.stack([a + b, a - b, a * b, a / b, a * 2, 1 - a, -a, a**2])
    np.testing.assert_allclose(out.to_numpy(), ref, rtol=1e-6)


def test_vector_zero_matrix_zero_identity():
    v = fs.Vector.field(4, fs.f32, shape=())
    m = fs.Matrix.field(3, 2, fs.i32, shape=())
    e = fs.Matrix.field(3, 3, fs.f64, shape=())

    @fs.kernel
    def k():
        v[None] = fs.Vector.zero(fs.f32, 4) + 1.5
        m[None] = fs.Matrix.zero(fs.i32, 3, 2)
        e[None] = fs.Matrix.identity(fs.f64, 3) * 2.0

    m.fill(9)
    k()
    np.testing.assert_array_equal(v.to_numpy(), np.full(4, 1.5))
    np.testing.assert_array_equal(m.to_numpy(), np.zeros((3, 2)))
    np.testing.assert_array_equal(e.to_numpy(), 2 * np.eye(3))


def test_matmul_dot_cross():
    rng = np.random.default_rng(21)
    A = rng.standard_normal((3, 3)).astype(np.float32)
    B = rng.standard_normal((3, 3)).astype(np.float32)
    u = rng.standard_normal(3).astype(np.float32)
    w = rng.standard_normal(3).astype(np.float32)
    mA = fs.Matrix.field(3, 3, fs.f32, shape=())
    mB = fs.Matrix.field(3, 3, fs.f32, shape=())
    vu = fs.Vector.field(3, fs.f32, shape=())
    vw = fs.Vector.field(3, fs.f32, shape=())
    mA.from_numpy(A)
    mB.from_numpy(B)
    vu.from_numpy(u)
    vw.from_numpy(w)
    AB = fs.Matrix.field(3, 3, fs.f32, shape=())
    Au = fs.Vector.field(3, fs.f32, shape=())
    cr = fs.Vector.field(3, fs.f32, shape=())
    sc = fs.field(fs.f32, shape=3)

    @fs.kernel
    def k():
        AB[None] = mA[None] @ mB[None]
        Au[None] = mA[None] @ vu[None]
        cr[None] = vu[None].cross(vw[None])
        sc[0] = vu[None].dot(vw[None])
        a2 = fs.Vector([vu[None][0], vu[None][1]])
        b2 = fs.Vector([vw[None][0], vw[None][1]])
        sc[1] = a2.cross(b2)  # 2-D cross product is a scalar
        sc[2] = (vu[None] * 2.0).dot(vw[None])

    k()
    np.testing.assert_allclose(AB.to_numpy(), A @ B, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(Au.to_numpy(), A @ u, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(cr.to_numpy(), np.cross(u, w), rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(sc.to_numpy()[0], u @ w, rtol=1e-5)
    np.testing.assert_allclose(sc.to_numpy()[1], u[0] * w[1] - u[1] * w[0], rtol=1e-5)
    np.testing.assert_allclose(sc.to_numpy()[2], 2 * (u @ w), rtol=1e-5)


def test_norms_and_normalized():
    r = fs.field(fs.f64, shape=4)
    nv = fs.Vector.field(3, fs.f64, shape=())

    @fs.kernel
    def k():
        v = fs.Vector([3.0, 4.0, 12.0], dt=fs.f64)
        r[0] = v.norm()
        r[1] = v.norm_sqr()
        r[2] = v.norm(1e-2)  # sqrt(norm_sqr + eps)
        z = fs.Vector([0.0, 0.0], dt=fs.f64)
        r[3] = z.norm(4.0)
        nv[None] = v.normalized()

    k()
    np.testing.assert_allclose(r.to_numpy(), [13.0, 169.0, np.sqrt(169.01), 2.0], rtol=1e-12)
    np.testing.assert_allclose(nv.to_numpy(), np.array([3, 4, 12]) / 13.0, rtol=1e-12)


def test_transpose_trace_determinant_inverse():
    rng = np.random.default_rng(22)
    A2 = rng.standard_normal((2, 2)) + 3 * np.eye(2)
    A3 = rng.standard_normal((3, 3)) + 3 * np.eye(3)
    m2 = fs.Matrix.field(2, 2, fs.f64, shape=())
    m3 = fs.Matrix.field(3, 3, fs.f64, shape=())
    m2.from_numpy(A2)
    m3.from_numpy(A3)
    i2 = fs.Matrix.field(2, 2, fs.f64, shape=())
    i3 = fs.Matrix.field(3, 3, fs.f64, shape=())
    t3 = fs.Matrix.field(3, 3, fs.f64, shape=())
    r = fs.field(fs.f64, shape=4)

    @fs.kernel
    def k():
        i2[None] = m2[None].inverse()
        i3[None] = m3[None].inverse()
        t3[None] = m3[None].transpose()
        r[0] = m2[None].determinant()
        r[1] = m3[None].determinant()
        r[2] = m3[None].trace()
        r[3] = m2[None].trace()

    k()
    np.testing.assert_allclose(i2.to_numpy(), np.linalg.inv(A2), rtol=1e-10)
    np.testing.assert_allclose(i3.to_numpy(), np.linalg.inv(A3), rtol=1e-10)
    np.testing.assert_array_equal(t3.to_numpy(), A3.T)
    np.testing.assert_allclose(
        r.to_numpy(), [np.linalg.det(A2), np.linalg.det(A3), np.trace(A3), np.trace(A2)], rtol=1e-10
    )


def test_non_square_transpose_and_matmul():
    out = fs.Matrix.field(2, 2, fs.f32, shape=())
    t = fs.Matrix.field(3, 2, fs.f32, shape=())

    @fs.kernel
    def k():
        a = fs.Matrix([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
        t[None] = a.transpose()
        out[None] = a @ a.transpose()

    k()
    a = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    np.testing.assert_array_equal(t.to_numpy(), a.T)
    np.testing.assert_array_equal(out.to_numpy(), a @ a.T)


def test_outer_product_sum_max_min():
    op = fs.Matrix.field(3, 2, fs.f32, shape=())
    r = fs.field(fs.f32, shape=6)

    @fs.kernel
    def k():
        a = fs.Vector([1.0, -2.0, 3.0])
        b = fs.Vector([0.5, 4.0])
        op[None] = a.outer_product(b)
        r[0] = a.sum()
        r[1] = a.max()
        r[2] = a.min()
        m = fs.Matrix([[1.0, 7.0], [-3.0, 2.0]])
        r[3] = m.sum()
        r[4] = m.max()
        r[5] = m.min()

    k()
    np.testing.assert_array_equal(op.to_numpy(), np.outer([1, -2, 3], [0.5, 4]))
    np.testing.assert_array_equal(r.to_numpy(), [2.0, 3.0, -2.0, 7.0, 7.0, -3.0])


def test_static_indexing_and_dynamic_field_index():
    m = fs.Matrix.field(3, 3, fs.i32, shape=4)
    diag = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k():
        for p in m:
            for i in fs.static(range(3)):
                for j in fs.static(range(3)):
                    m[p][i, j] = p * 100 + i * 10 + j
            diag[p] = m[p][0, 0] + m[p][1, 1] + m[p][2, 2]

    k()
    a = m.to_numpy()
    p = np.arange(4)[:, None, None]
    ij = np.arange(3)[:, None] * 10 + np.arange(3)[None, :]
    np.testing.assert_array_equal(a, p * 100 + ij)
    np.testing.assert_array_equal(diag.to_numpy(), 3 * np.arange(4) * 100 + 33)


def test_local_vector_component_assignment_and_loop():
    out = fs.Vector.field(3, fs.f32, shape=())

    @fs.kernel
    def k():
        v = fs.Vector([0.0, 0.0, 0.0])
        for c in fs.static(range(3)):
            v[c] = c * 2.0 + 1.0
        v[1] += 10.0
        v.x -= 0.5
        out[None] = v

    k()
    np.testing.assert_array_equal(out.to_numpy(), [0.5, 13.0, 5.0])


def test_vector_fields_read_written_in_kernel():
    n = 50
    rng = np.random.default_rng(23)
    P = rng.standard_normal((n, 3)).astype(np.float32)
    V = rng.standard_normal((n, 3)).astype(np.float32)
    pos = fs.Vector.field(3, fs.f32, shape=n)
    vel = fs.Vector.field(3, fs.f32, shape=n)
    pos.from_numpy(P)
    vel.from_numpy(V)

    @fs.kernel
    def step(dt: fs.f32):
        for i in pos:
            vel[i] = vel[i] * 0.5 + fs.Vector([0.0, -9.8, 0.0]) * dt
            pos[i] += vel[i] * dt

    step(0.1)
    V2 = V * 0.5 + np.array([0, -9.8, 0], np.float32) * 0.1
    np.testing.assert_allclose(vel.to_numpy(), V2, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(pos.to_numpy(), P + V2 * 0.1, rtol=1e-5, atol=1e-6)


def test_matrix_field_times_vector_field():
    n = 20
    rng = np.random.default_rng(24)
    M = rng.standard_normal((n, 2, 2)).astype(np.float32)
    X = rng.standard_normal((n, 2)).astype(np.float32)
    mf = fs.Matrix.field(2, 2, fs.f32, shape=n)
    xf = fs.Vector.field(2, fs.f32, shape=n)
    yf = fs.Vector.field(2, fs.f32, shape=n)
    mf.from_numpy(M)
    xf.from_numpy(X)

    @fs.kernel
    def k():
        for i in mf:
            yf[i] = mf[i] @ xf[i] + mf[i].transpose() @ xf[i]

    k()
    np.testing.assert_allclose(
        yf.to_numpy(), np.einsum("nij,nj->ni", M, X) + np.einsum("nji,nj->ni", M, X), rtol=1e-5, atol=1e-5
    )


def test_types_vector_matrix_as_constructors():
    vec3 = fs.types.vector(3, fs.f32)
    mat2 = fs.types.matrix(2, 2, fs.f32)
    out_v = fs.Vector.field(3, fs.f32, shape=())
    out_m = fs.Matrix.field(2, 2, fs.f32, shape=())

    @fs.kernel
    def k():
        v = vec3(1.0, 2.0, 3.0)
        m = mat2([[1.0, 2.0], [3.0, 4.0]])
        out_v[None] = v * 2.0
        out_m[None] = m @ m

    k()
    np.testing.assert_array_equal(out_v.to_numpy(), [2, 4, 6])
    np.testing.assert_array_equal(out_m.to_numpy(), np.array([[1, 2], [3, 4]]) @ np.array([[1, 2], [3, 4]]))


def test_types_vector_func_annotation_and_return():
    vec2 = fs.types.vector(2, fs.f32)

    @fs.func
    def swap(v: vec2) -> vec2:
        return vec2(v[1], v[0])

    out = fs.Vector.field(2, fs.f32, shape=())

    @fs.kernel
    def k():
        out[None] = swap(fs.Vector([1.5, -2.0]))

    k()
    np.testing.assert_array_equal(out.to_numpy(), [-2.0, 1.5])


def test_vector_comparison_and_integer_vectors():
    out = fs.Vector.field(3, fs.i32, shape=3)

    @fs.kernel
    def k():
        a = fs.Vector([1, 5, 3])
        b = fs.Vector([2, 5, 1])
        out[0] = a < b
        out[1] = a == b
        out[2] = a // 2 + b % 2

    k()
    np.testing.assert_array_equal(out.to_numpy(), [[1, 0, 0], [0, 1, 0], [0, 3, 2]])


def test_matrix_elementwise_math_functions():
    out = fs.Matrix.field(2, 2, fs.f32, shape=())

    @fs.kernel
    def k():
        m = fs.Matrix([[0.0, 1.0], [4.0, 9.0]])
        out[None] = fs.sqrt(m) + fs.max(m, 2.0)

    k()
    m = np.array([[0, 1], [4, 9]], np.float32)
    np.testing.assert_allclose(out.to_numpy(), np.sqrt(m) + np.maximum(m, 2.0), rtol=1e-6)


@pytest.mark.parametrize("n", [2, 3])
def test_matrix_inverse_times_matrix_is_identity(n):
    rng = np.random.default_rng(25 + n)
    A = (rng.standard_normal((10, n, n)) + 3 * np.eye(n)).astype(np.float32)
    mf = fs.Matrix.field(n, n, fs.f32, shape=10)
    out = fs.Matrix.field(n, n, fs.f32, shape=10)
    mf.from_numpy(A)

    @fs.kernel
    def k():
        for i in mf:
            out[i] = mf[i].inverse() @ mf[i]

    k()
    np.testing.assert_allclose(out.to_numpy(), np.broadcast_to(np.eye(n), (10, n, n)), atol=1e-5)


def test_cast_to_python_int_and_float_in_kernel():
    """`v.cast(int)` / `v.cast(float)` mean default_ip / default_fp (Taichi's real_func
    poisson_disk_sampling example writes `(p * tm.vec2(grid_n)).cast(int)`)."""
    @fs.kernel
    def k(x: fs.f32, y: fs.f32) -> fs.math.ivec2:
        v = fs.math.vec2(x, y) * 20
        w = v.cast(int).cast(float) + 0.5
        return w.cast(int)

    assert list(k(0.26, -0.33)) == [5, -5]


def _taichi_det3(m):
    """Taichi 1.7.4's 3x3 determinant, term by term in the array's precision."""
    return (m[..., 0, 0] * (m[..., 1, 1] * m[..., 2, 2] - m[..., 2, 1] * m[..., 1, 2])
            - m[..., 1, 0] * (m[..., 0, 1] * m[..., 2, 2] - m[..., 2, 1] * m[..., 0, 2])
            + m[..., 2, 0] * (m[..., 0, 1] * m[..., 1, 2] - m[..., 1, 1] * m[..., 0, 2]))


def _taichi_det4(m):
    e = lambda i, j: m[..., i % 4, j % 4]  # noqa: E731
    det = None
    for i in range(4):
        t = m[..., i, 0] * ((e(i + 1, 1) * (e(i + 2, 2) * e(i + 3, 3) - e(i + 3, 2) * e(i + 2, 3))
                             - e(i + 2, 1) * (e(i + 1, 2) * e(i + 3, 3) - e(i + 3, 2) * e(i + 1, 3)))
                            + e(i + 3, 1) * (e(i + 1, 2) * e(i + 2, 3) - e(i + 2, 2) * e(i + 1, 3)))
        t = -t if i % 2 else t
        det = t if det is None else det + t
    return det


@pytest.mark.parametrize("n", [3, 4])
def test_determinant_and_inverse_round_as_taichi_does(n):
    # without fast math each float op is IEEE: the expansion order decides the last bits
    # (3x3: along the first column, as Taichi; fieldsim expanded along the first row before,
    # so a neo-Hookean tet drifted from Taichi's after a ground contact)
    fs.init(arch=fs.cpu, fast_math=False)
    k = 2000
    a = fs.Matrix.field(n, n, fs.f32, shape=k)
    det = fs.field(fs.f32, shape=k)
    inv = fs.Matrix.field(n, n, fs.f32, shape=k)

    @fs.kernel
    def run():
        for i in a:
            det[i] = a[i].determinant()
            inv[i] = a[i].inverse()

    m = (np.eye(n) + 0.3 * np.random.default_rng(n).standard_normal((k, n, n))).astype(np.float32)
    a.from_numpy(m)
    run()
    want = _taichi_det3(m) if n == 3 else _taichi_det4(m)
    np.testing.assert_array_equal(det.to_numpy(), want)
    assert np.any(want != np.linalg.det(m).astype(np.float32))  # the order matters here
    np.testing.assert_allclose(inv.to_numpy() @ m, np.broadcast_to(np.eye(n), (k, n, n)), atol=2e-3)
