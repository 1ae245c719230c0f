"""fs.sym_eig and fs.eig (fieldsim/eigen.py): decompositions checked against numpy, with
Taichi's ordering and sign conventions, on random, repeated and diagonal matrices."""
import numpy as np
import pytest

import fieldsim as fs


def _run_sym(mats, dtype):
    n, d = len(mats), mats.shape[1]
    a = fs.Matrix.field(d, d, dtype, shape=n)
    w = fs.Vector.field(d, dtype, shape=n)
    q = fs.Matrix.field(d, d, dtype, shape=n)

    @fs.kernel
    def k():
        for i in a:
            w[i], q[i] = fs.sym_eig(a[i])

    a.from_numpy(mats)
    k()
    return w.to_numpy().astype(np.float64), q.to_numpy().astype(np.float64)


def _check_decomposition(mats, w, q, tol):
    assert not np.isnan(w).any() and not np.isnan(q).any()
    scale = np.abs(mats).max(axis=(1, 2), keepdims=True) + 1e-30
    resid = mats @ q - q * w[:, None, :]
    assert (np.abs(resid) / scale).max() < tol
    eye = np.eye(mats.shape[1])
    assert np.abs(q.transpose(0, 2, 1) @ q - eye).max() < tol


@pytest.mark.parametrize("dtype,tol", [(fs.f32, 5e-4), (fs.f64, 1e-11)])
@pytest.mark.parametrize("d", [2, 3])
def test_sym_eig_random_matrices(d, dtype, tol):
    fs.init(arch=fs.cpu, default_fp=dtype)
    rng = np.random.default_rng(d)
    m = rng.standard_normal((500, d, d))
    m = m + m.transpose(0, 2, 1)
    mats = m.astype(np.float32).astype(np.float64) if dtype == fs.f32 else m
    w, q = _run_sym(mats, dtype)
    ref = np.linalg.eigvalsh(mats)  # increasing
    # Taichi's order: decreasing for 2x2, increasing for 3x3 (the analytic 3x3 vectors lose
    # accuracy as eigenvalues approach each other, hence the looser f32 tolerance)
    np.testing.assert_allclose(w, ref[:, ::-1] if d == 2 else ref, atol=tol * 10)
    _check_decomposition(mats, w, q, tol * 10)


def test_sym_eig_2x2_vector_signs_follow_taichi():
    # the first eigenvector is the first column of A - l2 I, normalised: same sign
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    rng = np.random.default_rng(0)
    m = rng.standard_normal((50, 2, 2))
    m = m + m.transpose(0, 2, 1)
    w, q = _run_sym(m, fs.f64)
    col = m[:, :, 0] - np.stack([w[:, 1], np.zeros(50)], 1)
    assert np.all(np.sign(q[:, :, 0]) == np.sign(col))


def test_sym_eig_repeated_and_diagonal_matrices():
    # Taichi 1.7.4 returns NaN vectors (2x2 diagonal) or non-eigenvectors (3x3 repeated) here
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    rng = np.random.default_rng(1)
    r, _ = np.linalg.qr(rng.standard_normal((3, 3)))
    m3 = np.array([r @ np.diag([1.0, 1.0, 2.0]) @ r.T, np.diag([3.0, 1.0, 2.0]), 2 * np.eye(3),
                   np.zeros((3, 3)), np.diag([1.0, 1.0, 2.0]), [[2, 1, 0], [1, 2, 0], [0, 0, 3.0]],
                   r @ np.diag([1e-5, 1e-5 + 1e-12, 4e-4]) @ r.T])
    w, q = _run_sym(m3, fs.f64)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(m3), atol=1e-12)
    _check_decomposition(m3, w, q, 1e-9)
    m2 = np.array([np.diag([1.0, 2.0]), np.diag([2.0, 1.0]), np.eye(2), np.zeros((2, 2)),
                   [[3.0, 0.0], [0.0, -1.0]]])
    w, q = _run_sym(m2, fs.f64)
    np.testing.assert_allclose(w, np.linalg.eigvalsh(m2)[:, ::-1], atol=1e-15)
    _check_decomposition(m2, w, q, 1e-14)


def test_eig_2x2_real_and_complex():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    rng = np.random.default_rng(2)
    mats = np.concatenate([rng.standard_normal((300, 2, 2)), [np.eye(2), np.diag([1.0, 2.0]),
                                                               [[0.0, -1.0], [1.0, 0.0]]]])
    n = len(mats)
    a = fs.Matrix.field(2, 2, fs.f64, shape=n)
    w = fs.Matrix.field(2, 2, fs.f64, shape=n)
    v = fs.Matrix.field(4, 2, fs.f64, shape=n)

    @fs.kernel
    def k():
        for i in a:
            w[i], v[i] = fs.eig(a[i])

    a.from_numpy(mats)
    k()
    lam = w.to_numpy()[:, :, 0] + 1j * w.to_numpy()[:, :, 1]
    vec = v.to_numpy()[:, 0::2, :] + 1j * v.to_numpy()[:, 1::2, :]  # (n, component, which)
    ref = np.linalg.eigvals(mats)
    np.testing.assert_allclose(np.sort_complex(lam), np.sort_complex(ref), atol=1e-12)
    assert np.all(lam[:, 0].real >= lam[:, 1].real - 1e-15)  # + sqrt first, as Taichi
    resid = mats @ vec - vec * lam[:, None, :]
    assert np.abs(resid).max() < 1e-12
    np.testing.assert_allclose(np.linalg.norm(vec, axis=1), 1.0, atol=1e-14)


def test_sym_eig_in_python_scope_and_its_limits():
    fs.init(arch=fs.cpu)
    w, q = fs.sym_eig(fs.Matrix([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 5.0]]))
    np.testing.assert_allclose(w.to_numpy(), [1.0, 3.0, 5.0], atol=1e-6)
    m = fs.Matrix.field(4, 4, fs.f32, shape=())

    @fs.kernel
    def k():
        print(fs.sym_eig(m[None]))

    with pytest.raises(Exception, match="2x2 and 3x3"):
        k()


@pytest.mark.parametrize("d", [2, 3])
def test_sym_eig_gradient_is_the_eigenvector_outer_product(d):
    # d(lambda_k)/dA = v_k v_k^T; the 3x3 method reads the upper triangle (the 2x2 one reads
    # both off-diagonal entries), so the symmetric gradient is split over what was read
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    a = fs.Matrix.field(d, d, fs.f64, shape=(), needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        w, _q = fs.sym_eig(a[None])
        loss[None] += w[d - 1] + 0.5 * w[0]

    rng = np.random.default_rng(7 + d)
    m = rng.standard_normal((d, d))
    m = m + m.T
    a.from_numpy(m)
    with fs.ad.Tape(loss):
        k()
    g = a.grad.to_numpy()
    _w, v = np.linalg.eigh(m)  # increasing; fs.sym_eig's 2x2 order is decreasing
    last, first = (v[:, 0], v[:, -1]) if d == 2 else (v[:, -1], v[:, 0])
    ref = np.outer(last, last) + 0.5 * np.outer(first, first)
    np.testing.assert_allclose(g + g.T - np.diag(np.diag(g)), ref + ref.T - np.diag(np.diag(ref)),
                               atol=1e-9)


def test_eig_2x2_imaginary_zeros_are_signed_as_taichi_forms_them():
    # real eigenvalues (gap > 0): both imaginary parts are the literal 0.0 halved: +0; a zero gap
    # takes the complex branch: (tr, +-sqrt(0)) / 2, so the second one is -0
    fs.init(arch=fs.cpu, default_fp=fs.f64, fast_math=False)
    A = np.array([[[2.0, 1.0], [1.0, -1.0]], [[1.0, 1.0], [0.0, 1.0]]])
    a = fs.Matrix.field(2, 2, fs.f64, shape=2)
    w = fs.Matrix.field(2, 2, fs.f64, shape=2)
    a.from_numpy(A)

    @fs.kernel
    def k():
        for i in a:
            w[i], _V = fs.eig(a[i])

    k()
    W = w.to_numpy()
    assert W[0, 0, 1] == 0 and W[0, 1, 1] == 0
    assert not np.signbit(W[0, 0, 1]) and not np.signbit(W[0, 1, 1])
    np.testing.assert_array_equal(W[1, :, 0], [1.0, 1.0])
    assert not np.signbit(W[1, 0, 1]) and np.signbit(W[1, 1, 1])
