"""fs.polar_decompose and fs.svd on random well-conditioned 2x2 and 3x3 matrices."""
import numpy as np
import pytest

import fieldsim as fs

N = 64
PRECISIONS = [(fs.f32, np.float32, 2e-4), (fs.f64, np.float64, 1e-9)]
PREC_IDS = ["f32", "f64"]


def _well_conditioned(n, npdt, seed):
    rng = np.random.default_rng(seed)
    # random rotation-ish perturbations of scaled identities, some with negative determinant
    A = rng.standard_normal((N, n, n)) * 0.3 + np.eye(n) * rng.uniform(0.8, 2.0, (N, 1, 1))
    A[::4, 0, :] *= -1.0  # reflections: det < 0
    return A.astype(npdt)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("dt,npdt,tol", PRECISIONS, ids=PREC_IDS)
def test_polar_decompose_and_svd(n, dt, npdt, tol):
    A = _well_conditioned(n, npdt, 100 + n)
    a = fs.Matrix.field(n, n, dt, shape=N)
    r = fs.Matrix.field(n, n, dt, shape=N)
    s = fs.Matrix.field(n, n, dt, shape=N)
    u = fs.Matrix.field(n, n, dt, shape=N)
    sig = fs.Matrix.field(n, n, dt, shape=N)
    v = fs.Matrix.field(n, n, dt, shape=N)
    a.from_numpy(A)

    @fs.kernel
    def k():
        for i in a:
            R, S = fs.polar_decompose(a[i], dt)
            r[i] = R
            s[i] = S
            U, Sig, V = fs.svd(a[i], dt)
            u[i] = U
            sig[i] = Sig
            v[i] = V

    k()
    A64 = A.astype(np.float64)
    eye = np.broadcast_to(np.eye(n), (N, n, n))

    # ---- polar: A = R S, R orthogonal, S symmetric
    R, S = r.to_numpy().astype(np.float64), s.to_numpy().astype(np.float64)
    np.testing.assert_allclose(R @ S, A64, atol=tol * 10)
    np.testing.assert_allclose(np.swapaxes(R, 1, 2) @ R, eye, atol=tol * 10)  # orthogonal
    np.testing.assert_allclose(S, np.swapaxes(S, 1, 2), atol=tol * 10)  # symmetric
    detA = np.linalg.det(A64)
    pos = detA > 0
    assert pos.any() and (~pos).any()
    # det(A) > 0: R is a rotation (det +1) in both sizes
    np.testing.assert_allclose(np.linalg.det(R[pos]), 1.0, atol=tol * 10)
    if n == 2:
        # Taichi 1.7's 2x2 polar is the true polar decomposition: S is positive semi-definite,
        # so for det(A) < 0 the orthogonal factor is a reflection (det -1)
        np.testing.assert_allclose(np.linalg.det(R[~pos]), -1.0, atol=tol * 10)
        assert np.linalg.eigvalsh(S).min() > -tol * 10
    else:
        # Taichi 1.7's 3x3 polar (via the SVD) always returns a rotation; S absorbs the sign
        np.testing.assert_allclose(np.linalg.det(R), 1.0, atol=tol * 10)

    # ---- svd: A = U Sig V^T, U and V orthogonal, Sig diagonal
    U = u.to_numpy().astype(np.float64)
    Sg = sig.to_numpy().astype(np.float64)
    V = v.to_numpy().astype(np.float64)
    np.testing.assert_allclose(Sg * (1 - np.eye(n)), 0, atol=tol * 10)  # a diagonal matrix
    np.testing.assert_allclose(U @ Sg @ np.swapaxes(V, 1, 2), A64, atol=tol * 10)
    np.testing.assert_allclose(np.swapaxes(U, 1, 2) @ U, eye, atol=tol * 10)
    np.testing.assert_allclose(np.swapaxes(V, 1, 2) @ V, eye, atol=tol * 10)
    # same singular values as numpy up to sign/order (a negative one may be kept so that
    # U and V stay rotations)
    got = np.sort(np.abs(np.diagonal(Sg, axis1=1, axis2=2)), axis=1)
    ref = np.sort(np.linalg.svd(A64, compute_uv=False), axis=1)
    np.testing.assert_allclose(got, ref, atol=tol * 10)


def test_polar_decompose_of_rotation_times_stretch():
    # A = R0 @ S0 with known factors: the decomposition must recover them
    th = 0.7
    R0 = np.array([[np.cos(th), -np.sin(th)], [np.sin(th), np.cos(th)]])
    S0 = np.array([[2.0, 0.3], [0.3, 1.5]])
    a = fs.Matrix.field(2, 2, fs.f64, shape=())
    r = fs.Matrix.field(2, 2, fs.f64, shape=())
    s = fs.Matrix.field(2, 2, fs.f64, shape=())
    a.from_numpy(R0 @ S0)

    @fs.kernel
    def k():
        R, S = fs.polar_decompose(a[None], fs.f64)
        r[None] = R
        s[None] = S

    k()
    np.testing.assert_allclose(r.to_numpy(), R0, atol=1e-10)
    np.testing.assert_allclose(s.to_numpy(), S0, atol=1e-10)


def test_svd_default_dtype_f32():
    rng = np.random.default_rng(7)
    A = (rng.standard_normal((3, 3)) * 0.3 + np.eye(3)).astype(np.float32)
    a = fs.Matrix.field(3, 3, fs.f32, shape=())
    rec = fs.Matrix.field(3, 3, fs.f32, shape=())
    a.from_numpy(A)

    @fs.kernel
    def k():
        U, S, V = fs.svd(a[None])
        rec[None] = U @ S @ V.transpose()

    k()
    np.testing.assert_allclose(rec.to_numpy(), A, atol=2e-5)


@pytest.mark.parametrize("scale,dt,tol", [(1e-12, fs.f32, 1e-11), (1e-9, None, 8 * 2.0 ** -23)],
                         ids=["f64-fields-f32-compute", "default"])
def test_polar_decompose_next_to_the_identity_is_the_identity(scale, dt, tol):
    # an MPM particle's F = I + dt C with C at rounding level: the polar factor must stay I to
    # within the perturbation (a Jacobi rotation of 45 degrees between equal columns put it an
    # ulp off, 2e-8: a spurious stress 2 mu (F - R) F^T at rest). In f32 the polar factor is now
    # Taichi's own U V^T (McAdams' SVD, bit for bit): I to a few f32 ulps, as Taichi's.
    fp = fs.f32 if dt is None else fs.f64
    npdt = np.float32 if dt is None else np.float64
    K = np.sin(np.arange(27.0)).reshape(3, 3, 3)
    A = (np.eye(3) + scale * K).astype(npdt)
    a = fs.Matrix.field(3, 3, fp, shape=3)
    r = fs.Matrix.field(3, 3, fp, shape=3)
    a.from_numpy(A)

    @fs.kernel
    def k():
        for i in a:
            R, S = fs.polar_decompose(a[i], dt)
            r[i] = R

    k()
    err = np.abs(r.to_numpy().astype(np.float64) - np.eye(3)).max()
    assert err <= tol, err


def test_polar2d_s_is_the_normal_matrix_form_rounded_as_taichi():
    # Taichi 1.7.4 computes S as (A.T @ A + |det A| I) / |(x, y)| in the compute type; R.T @ A
    # (the same matrix in exact arithmetic) differed from it in the last f32 bit for 9 in 10
    fs.init(arch=fs.cpu, fast_math=False, offline_cache=False)  # no FMA contraction
    n = 400
    rng = np.random.default_rng(3)
    a = rng.standard_normal((n, 2, 2)).astype(np.float32)
    a[0] = 0.0  # the zero matrix: S = A
    A = fs.Matrix.field(2, 2, fs.f32, shape=n)
    S = fs.Matrix.field(2, 2, fs.f32, shape=n)
    A.from_numpy(a)

    @fs.kernel
    def k():
        for i in A:
            _, S[i] = fs.polar_decompose(A[i])

    k()
    f = np.float32
    p, q, r, s = (a[:, 0, 0], a[:, 0, 1], a[:, 1, 0], a[:, 1, 1])
    neg = p * s - q * r < 0
    x = np.where(neg, p - s, p + s)
    y = np.where(neg, q + r, r - q)
    zero = (x == 0) & (y == 0)
    inv = f(1) / np.sqrt(np.where(zero, f(1), x * x + y * y))
    adet = np.abs(p * s - r * q)
    want = np.empty_like(a)
    want[:, 0, 0] = (p * p + r * r + adet) * inv
    want[:, 1, 1] = (q * q + s * s + adet) * inv
    want[:, 0, 1] = want[:, 1, 0] = (p * q + r * s) * inv
    np.testing.assert_array_equal(S.to_numpy(), want)


def test_polar2d_s_gradient_matches_central_differences():
    fs.init(arch=fs.cpu, default_fp=fs.f64, offline_cache=False)
    A = fs.Matrix.field(2, 2, fs.f64, shape=(), needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    w = np.array([[0.7, -1.3], [0.4, 2.1]])

    @fs.kernel
    def f():
        R, S = fs.polar_decompose(A[None])
        for i, j in fs.static(fs.ndrange(2, 2)):
            loss[None] += w[i, j] * S[i, j] + (i + 1) * R[i, j]

    def value(m):
        A[None] = m
        loss[None] = 0.0
        f()
        return loss[None]

    for m0 in (np.array([[1.2, 0.3], [-0.4, 0.9]]), np.array([[0.5, 1.1], [0.8, -0.6]])):
        A[None] = m0
        with fs.ad.Tape(loss=loss):
            f()
        g = A.grad.to_numpy()
        fd = np.zeros((2, 2))
        for i in range(2):
            for j in range(2):
                e = np.zeros((2, 2))
                e[i, j] = 1e-6
                fd[i, j] = (value(m0 + e) - value(m0 - e)) / 2e-6
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-8)
