"""fs.svd / fs.polar_decompose follow Taichi 1.7.4's algorithms operation by operation (2x2:
polar factor then one Jacobi rotation; 3x3: McAdams et al. 2011), so results agree bit for bit.
Checked here against exactly known decompositions, against float64 reference implementations of
the same algorithms written below in plain Python (same operation order), by their properties,
and (reverse mode) against float64 central differences."""
import math

import numpy as np
import pytest

import fieldsim as fs


def _f32(x):
    return float(np.float32(x))


# ---- float64 reference implementations (plain Python floats: each operation rounds once) ----
def _ref_polar2(A):
    a, b, c, d = A[0][0], A[0][1], A[1][0], A[1][1]
    if a == 0 and b == 0 and c == 0 and d == 0:
        return [[1.0, 0.0], [0.0, 1.0]], [[a, b], [c, d]]
    det = a * d - c * b
    if det < 0:
        B = [[a - d, b + c], [c + b, d - a]]
    else:
        B = [[a + d, b - c], [c - b, d + a]]
    k = 1.0 / math.sqrt(abs(B[0][0] * B[1][1] - B[1][0] * B[0][1]))
    ad = abs(det)
    P = [[(a * a + c * c + ad) * k, ((a * b + c * d) + ad * 0.0) * k],
         [((b * a + d * c) + ad * 0.0) * k, (b * b + d * d + ad) * k]]
    return [[x * k for x in row] for row in B], P


def _ref_svd2(A):
    R, S = _ref_polar2(A)
    if abs(S[0][1]) < 1e-5:
        c, s, s1, s2 = 1.0, 0.0, S[0][0], S[1][1]
    else:
        tau = 0.5 * (S[0][0] - S[1][1])
        w = math.sqrt(tau * tau + S[0][1] * S[0][1])
        t = S[0][1] / (tau + w) if tau > 0 else S[0][1] / (tau - w)
        c = 1.0 / math.sqrt(t * t + 1.0)
        s = -t * c
        s1 = ((c * c) * S[0][0] - ((2.0 * c) * s) * S[0][1]) + (s * s) * S[1][1]
        s2 = ((s * s) * S[0][0] + ((2.0 * c) * s) * S[0][1]) + (c * c) * S[1][1]
    if s1 < s2:
        s1, s2 = s2, s1
        V = [[-s, c], [-c, -s]]
    else:
        V = [[c, s], [-s, c]]
    U = [[R[i][0] * V[0][j] + R[i][1] * V[1][j] for j in range(2)] for i in range(2)]
    return U, [s1, s2], V


def _refined_rsqrt(x):
    r = 1.0 / math.sqrt(x)
    h = r * 0.5
    return (r + h) - x * (r * (r * h))


def _ref_conjugate(S, quat, p, q, r):
    """One approximate Jacobi conjugation of the symmetric S (dict over i >= j) on the plane
    (p, q), r the third index; the quaternion quat = [w, x, y, z] turns about axis r."""
    def g(i, j):
        return S[(max(i, j), min(i, j))]
    pp, qq, rr, qp, rp, rq = g(p, p), g(q, q), g(r, r), g(q, p), g(r, p), g(r, q)
    sh, d = qp * 0.5, pp - qq
    ch = d
    if not sh * sh >= _f32(1e-20):
        sh, ch = 0.0, 1.0
    sh2, ch2 = sh * sh, ch * ch
    inv = 1.0 / math.sqrt(sh2 + ch2)
    sh, ch = inv * sh, inv * ch
    if ch2 <= _f32(5.82842712474619) * sh2:
        sh, ch = _f32(0.3826834323650897), _f32(0.9238795325112867)
    sh2, ch2 = sh * sh, ch * ch
    c, s = ch2 - sh2, (ch * sh) + (ch * sh)
    scale = sh2 + ch2
    rr, rp, rq = rr * scale * scale, rp * scale, rq * scale
    rp, rq = s * rq + c * rp, c * rq - s * rp
    s2, c2 = s * s, c * c
    pp, qq = pp * c2 + qq * s2, qq * c2 + pp * s2
    cs = c * s
    two = (qp + qp) * cs
    qp = qp * (c2 - s2) - d * cs
    for (i, j), v in (((p, p), pp + two), ((q, q), qq - two), ((r, r), rr), ((q, p), qp),
                      ((r, p), rp), ((r, q), rq)):
        S[(max(i, j), min(i, j))] = v
    ia, ib, ir = 1 + p, 1 + q, 1 + r
    ta, tb, tr, tw = sh * quat[ia], sh * quat[ib], sh * quat[ir], sh * quat[0]
    quat[0], quat[ia], quat[ib], quat[ir] = (ch * quat[0] - tr, ch * quat[ia] + tb,
                                             ch * quat[ib] - ta, ch * quat[ir] + tw)


def _ref_svd3(A, sweeps=8):
    col = [[A[i][j] for i in range(3)] for j in range(3)]
    S = {(i, j): (col[i][0] * col[j][0] + col[i][1] * col[j][1]) + col[i][2] * col[j][2]
         for i in range(3) for j in range(i + 1)}
    q = [1.0, 0.0, 0.0, 0.0]
    for _ in range(sweeps):
        for p, qq, r in ((0, 1, 2), (1, 2, 0), (2, 0, 1)):
            _ref_conjugate(S, q, p, qq, r)
    n = q[3] * q[3] + (q[2] * q[2] + (q[1] * q[1] + q[0] * q[0]))
    r = _refined_rsqrt(n)
    w, x, y, z = (v * r for v in q)
    xx, yy, zz, ss = x * x, y * y, z * z, w * w
    x2, y2, z2 = x + x, y + y, z + z
    sx, sy, sz, xy, yz, zx = w * x2, w * y2, w * z2, y * x2, z * y2, x * z2
    V = [[((ss + xx) - yy) - zz, xy - sz, zx + sy], [xy + sz, ((ss - xx) + yy) - zz, yz - sx],
         [zx - sy, yz + sx, ((ss - xx) - yy) + zz]]
    B = [[(V[0][j] * A[i][0] + V[1][j] * A[i][1]) + V[2][j] * A[i][2] for j in range(3)]
         for i in range(3)]
    rho = [(B[0][j] * B[0][j] + B[1][j] * B[1][j]) + B[2][j] * B[2][j] for j in range(3)]
    for i, j, k in ((0, 1, 1), (0, 2, 0), (1, 2, 2)):
        if rho[i] < rho[j]:
            rho[i], rho[j] = rho[j], rho[i]
            for M in (B, V):
                for row in M:
                    row[i], row[j] = row[j], row[i]
                    row[k] = -row[k]
    U = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    for p, qq in ((0, 1), (0, 2), (1, 2)):
        app, aqp = B[p][p], B[qq][p]
        sh = aqp if aqp * aqp >= _f32(1e-12) else 0.0
        ch = max(max(0.0 - app, app), _f32(1e-12))
        n = ch * ch + sh * sh
        ch = ch + _refined_rsqrt(n) * n
        if not app >= 0.0:
            ch, sh = sh, ch
        r = _refined_rsqrt(ch * ch + sh * sh)
        ch, sh = ch * r, sh * r
        c, s = ch * ch - sh * sh, (sh * ch) + (sh * ch)
        for j in range(3):
            B[p][j], B[qq][j] = c * B[p][j] + s * B[qq][j], c * B[qq][j] - s * B[p][j]
            U[j][p], U[j][qq] = c * U[j][p] + s * U[j][qq], c * U[j][qq] - s * U[j][p]
    return U, [B[0][0], B[1][1], B[2][2]], V


def _inputs(n, count=60, seed=1):
    rng = np.random.default_rng(seed)
    A = rng.standard_normal((count, n, n))
    A[count // 3: count // 2, :, -1] *= 1e-6  # nearly singular
    A[count // 2: 2 * count // 3] = np.eye(n) + 1e-4 * A[count // 2: 2 * count // 3]
    A[2 * count // 3:, 0] *= -1  # the other determinant sign as well
    return A


def _run(n, A, fp=fs.f64, fast_math=False):
    fs.init(arch=fs.cpu, default_fp=fp, fast_math=fast_math)
    N = len(A)
    a = fs.Matrix.field(n, n, fp, shape=N)
    U, S, V, R, P = (fs.Matrix.field(n, n, fp, shape=N) for _ in range(5))
    a.from_numpy(A)

    @fs.kernel
    def k():
        for i in a:
            U[i], S[i], V[i] = fs.svd(a[i], fp)
            R[i], P[i] = fs.polar_decompose(a[i], fp)

    k()
    return [f.to_numpy() for f in (U, S, V, R, P)]


@pytest.mark.parametrize("n", [2, 3])
def test_f64_bits_equal_the_reference_algorithm(n):
    A = _inputs(n)
    U, S, V, R, P = _run(n, A)
    for i in range(len(A)):
        rows = A[i].tolist()
        if n == 2:
            u, s, v = _ref_svd2(rows)
            r, p = _ref_polar2(rows)
            np.testing.assert_array_equal(R[i], r)
            np.testing.assert_array_equal(P[i], p)
        else:
            u, s, v = _ref_svd3(rows)
            r = [[(u[i][0] * v[j][0] + u[i][1] * v[j][1]) + u[i][2] * v[j][2] for j in range(3)]
                 for i in range(3)]
            np.testing.assert_array_equal(R[i], r)
        np.testing.assert_array_equal(U[i], u)
        np.testing.assert_array_equal(np.diag(S[i]), s)
        np.testing.assert_array_equal(V[i], v)


@pytest.mark.parametrize("fp", [fs.f32, fs.f64])
def test_exact_decompositions_of_diagonal_and_permutation_matrices(fp):
    npdt = np.float32 if fp == fs.f32 else np.float64
    P3 = np.array([[0.0, 0, 1], [1, 0, 0], [0, 1, 0]])
    cases = [np.diag([1.0, 2.0, 3.0]), np.diag([1.0, 2.0, -3.0]), np.eye(3), P3, -np.eye(3)]
    U, S, V, R, P = _run(3, np.array(cases, npdt), fp)
    expect_s = [[3, 2, 1], [3, 2, -1], [1, 1, 1], [1, 1, 1], [1, 1, -1]]
    ulp = float(np.finfo(npdt).eps)
    # in f64 the listing's f32 thresholds (1e-12 in the QR) leave ~1e-12 off a permutation
    near = 4 * ulp if fp == fs.f32 else 1e-11
    for i, A in enumerate(cases):
        # the QR's refined 1/sqrt (Newton step of McAdams' listing) may leave a few ulps
        np.testing.assert_allclose(np.diag(S[i]), expect_s[i], rtol=4 * ulp, atol=0)
        for M in (U[i], V[i]):  # signed permutations, to a few ulps
            Mr = np.round(M)
            assert set(np.abs(Mr).ravel()) == {0.0, 1.0}
            np.testing.assert_allclose(M, Mr, atol=near)
            assert round(np.linalg.det(Mr)) == 1
        np.testing.assert_allclose(U[i] @ S[i] @ V[i].T, A, atol=2 * near)
    np.testing.assert_allclose(R[3], P3, atol=near)  # a rotation is its own polar factor
    U, S, V, R, P = _run(2, np.array([np.diag([3.0, 2.0]), np.diag([2.0, 3.0])], npdt), fp)
    np.testing.assert_array_equal(np.diag(S[0]), [3, 2])
    np.testing.assert_array_equal(V[0], np.eye(2))
    np.testing.assert_array_equal(np.diag(S[1]), [3, 2])  # sorted by a quarter turn
    np.testing.assert_array_equal(V[1], [[0, 1], [-1, 0]])
    np.testing.assert_array_equal(U[1] @ S[1] @ V[1].T, np.diag([2.0, 3.0]))


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("fp,tol", [(fs.f32, 2e-5), (fs.f64, 1e-10)])
def test_properties(n, fp, tol):
    A = _inputs(n, seed=2)
    U, S, V, R, P = _run(n, A.astype(np.float32 if fp == fs.f32 else np.float64), fp)
    I = np.eye(n)
    for i in range(len(A)):
        u, s, v = (M.astype(np.float64) for M in (U[i], S[i], V[i]))
        # (2x2: Taichi's rule takes an off-diagonal of S under 1e-5 as zero)
        np.testing.assert_allclose(u @ s @ v.T, A[i], atol=tol * 10 if n == 3 else 2e-5)
        np.testing.assert_allclose(u.T @ u, I, atol=tol)
        np.testing.assert_allclose(v.T @ v, I, atol=tol)
        d = np.diag(s)
        assert d[0] >= d[1] - tol and d[1] >= abs(d[-1]) - tol
        assert np.linalg.det(v) > 0  # V a rotation; U carries the sign of det A (2x2)
        sign = np.sign(np.linalg.det(A[i]))
        if n == 3:
            assert np.linalg.det(u) > 0 and np.sign(d[2]) == sign  # the sign in sig[2]
        else:
            assert np.sign(np.linalg.det(u)) == sign and d[1] >= 0
        r, p = R[i].astype(np.float64), P[i].astype(np.float64)
        np.testing.assert_allclose(r @ p, A[i], atol=tol * 10 if n == 3 else 2e-5)
        np.testing.assert_allclose(p, p.T, atol=tol * 10)


@pytest.mark.parametrize("n,which", [(2, "svd"), (3, "svd"), (3, "polar"), (2, "polar")])
def test_gradients_match_central_differences(n, which):
    fs.init(arch=fs.cpu, default_fp=fs.f64, fast_math=False)
    rng = np.random.default_rng(5)
    A0 = rng.standard_normal((n, n)) + 2 * np.eye(n)
    W = rng.standard_normal((3, n, n))
    a = fs.Matrix.field(n, n, fs.f64, shape=(), needs_grad=True)
    w = fs.Matrix.field(n, n, fs.f64, shape=3)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    w.from_numpy(W)

    @fs.kernel
    def k():
        if fs.static(which == "svd"):
            X, Y, Z = fs.svd(a[None])
            loss[None] += (w[0] * X).sum() + (w[1] * Y).sum() + (w[2] * Z).sum()
        else:
            X, Y = fs.polar_decompose(a[None])
            loss[None] += (w[0] * X).sum() + (w[1] * Y).sum()

    def f(M):
        a.from_numpy(M)
        loss[None] = 0.0
        k()
        return loss[None]

    a.from_numpy(A0)
    with fs.ad.Tape(loss=loss):
        k()
    g = a.grad.to_numpy()
    h = 1e-6
    fd = np.zeros((n, n))
    for i in range(n):
        for j in range(n):
            E = np.zeros((n, n))
            E[i, j] = h
            fd[i, j] = (f(A0 + E) - f(A0 - E)) / (2 * h)
    np.testing.assert_allclose(g, fd, atol=1e-6, rtol=1e-6)
