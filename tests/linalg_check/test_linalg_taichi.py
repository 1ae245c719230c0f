"""Validates fieldsim/linalg.py (fs.svd, fs.polar_decompose) by compiling it with Taichi.

The module is plain DSL code using names that Taichi also has (func, static, select, sqrt, abs,
max, cast, Matrix, Vector), so it is imported with `fieldsim` aliased to `taichi` and run in
Taichi kernels: accuracy on many kinds of matrices in f32 and f64, the conventions of Taichi's
own `ti.svd` / `ti.polar_decompose`, and reverse-mode gradients against finite differences.

Skipped where Taichi is not installed:
    /tmp/tivenv/bin/python -m pytest tests/linalg_check -q -p no:cacheprovider
"""
import importlib.util
import pathlib
import sys

import numpy as np
import pytest

ti = pytest.importorskip("taichi")

_PATH = pathlib.Path(__file__).resolve().parents[2] / "fieldsim" / "linalg.py"


def _load_linalg():
    saved = sys.modules.get("fieldsim")
    sys.modules["fieldsim"] = ti
    try:
        spec = importlib.util.spec_from_file_location("_linalg_under_taichi", _PATH)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        if saved is None:
            del sys.modules["fieldsim"]
        else:
            sys.modules["fieldsim"] = saved
    return mod


L = _load_linalg()

EPS = {ti.f32: np.finfo(np.float32).eps, ti.f64: np.finfo(np.float64).eps}
NP = {ti.f32: np.float32, ti.f64: np.float64}


# ------------------------------------------------------------------------------------------------
# test matrices
# ------------------------------------------------------------------------------------------------
def _rot(rng, n, N):
    Q = np.linalg.qr(rng.standard_normal((N, n, n)))[0]
    d = np.linalg.det(Q)
    Q[:, :, 0] *= d[:, None]  # det +1
    return Q


def _compose(U, s, V):
    return np.einsum("nij,nj,nkj->nik", U, s, V)


def matrix_groups(n, N=400, seed=0):
    rng = np.random.default_rng(seed + n)
    U, V = _rot(rng, n, N), _rot(rng, n, N)
    g = {}
    g["gaussian"] = rng.standard_normal((N, n, n))
    g["uniform_scaled"] = rng.uniform(-1, 1, (N, n, n)) * 10.0 ** rng.uniform(-3, 3, (N, 1, 1))
    s = np.sort(rng.uniform(0.5, 10, (N, n)), axis=1)[:, ::-1].copy()
    s[:, -1] *= 10.0 ** rng.uniform(-9, -3, N)
    g["near_singular"] = _compose(U, s, V)
    s = 10.0 ** rng.uniform(-3, 3, (N, n))
    g["ill_conditioned"] = _compose(U, s, V)
    B = rng.standard_normal((N, n, n))
    B[:, :, -1] = 2 * B[:, :, 0]
    g["rank_deficient"] = B
    s = rng.uniform(0.2, 3, (N, n))
    s[:, 0] *= -1
    g["negative_det"] = _compose(U, s, V)
    g["clustered"] = _compose(U, 1 + 1e-7 * rng.standard_normal((N, n)), V)
    g["near_identity"] = np.eye(n) + 1e-4 * rng.standard_normal((N, n, n))
    g["diagonal"] = np.stack([np.diag(v) for v in rng.standard_normal((N, n))])
    g["rotation"] = U
    g["reflection"] = U * np.array([1] * (n - 1) + [-1])
    g["special"] = np.stack([np.eye(n), np.zeros((n, n)), -np.eye(n), 2 * np.eye(n),
                             np.diag(np.arange(1.0, n + 1)), np.diag(np.arange(n, 0.0, -1)),
                             np.ones((n, n)), np.eye(n)[::-1]])
    return g


# ------------------------------------------------------------------------------------------------
# running the decompositions in Taichi
# ------------------------------------------------------------------------------------------------
def run_decompositions(A, dt, with_dt_arg=True):
    """Returns mine (U, sig, V, R, S) and Taichi's (U, sig, V, R, S) for a batch of matrices."""
    N, n, _ = A.shape
    fields = [ti.Matrix.field(n, n, dt, shape=N) for _ in range(11)]
    Af, U, Sg, V, R, S, tU, tSg, tV, tR, tS = fields
    Af.from_numpy(A.astype(NP[dt]))

    if with_dt_arg:
        @ti.kernel
        def k():
            for i in Af:
                U[i], Sg[i], V[i] = L.svd(Af[i], dt)
                R[i], S[i] = L.polar_decompose(Af[i], dt)
                tU[i], tSg[i], tV[i] = ti.svd(Af[i], dt)
                tR[i], tS[i] = ti.polar_decompose(Af[i], dt)
    else:
        @ti.kernel
        def k():
            for i in Af:
                U[i], Sg[i], V[i] = L.svd(Af[i])
                R[i], S[i] = L.polar_decompose(Af[i])
                tU[i], tSg[i], tV[i] = ti.svd(Af[i])
                tR[i], tS[i] = ti.polar_decompose(Af[i])
    k()
    out = [f.to_numpy().astype(np.float64) for f in fields[1:]]
    return out[:5], out[5:]


def T(X):
    return np.swapaxes(X, -1, -2)


def check_batch(A, dt, name, mine, theirs, report=None):
    N, n, _ = A.shape
    A = A.astype(NP[dt])
    A64 = A.astype(np.float64)
    (U, Sg, V, R, S), (tU, tSg, tV, tR, tS) = mine, theirs
    eps = EPS[dt]
    scale = np.abs(A64).max(axis=(1, 2))
    scale1 = np.maximum(scale, np.finfo(NP[dt]).tiny)[:, None, None]
    I = np.eye(n)
    sig = np.diagonal(Sg, axis1=1, axis2=2)
    det = np.linalg.det(A64)

    def err(X):  # per-matrix max abs error relative to max |A|
        return (np.abs(X) / scale1).max(axis=(1, 2))

    def orth(Q):
        return np.abs(T(Q) @ Q - I).max(axis=(1, 2))

    assert np.all(np.isfinite(U)) and np.all(np.isfinite(R)) and np.all(np.isfinite(S)), name
    rec = err(U @ Sg @ T(V) - A64)
    prec = err(R @ S - A64)
    tol = 20 * eps
    assert rec.max() < tol, (name, "svd reconstruction", rec.max(), A[rec.argmax()])
    assert prec.max() < tol, (name, "polar reconstruction", prec.max(), A[prec.argmax()])
    for Q, what in ((U, "U"), (V, "V"), (R, "R")):
        o = orth(Q)
        assert o.max() < 20 * eps, (name, what, "orthogonality", o.max(), A[o.argmax()])
    # sig is diagonal (exactly: it is built from three scalars)
    assert np.all(Sg[:, ~np.eye(n, dtype=bool)] == 0), name
    # S symmetric, exactly
    assert np.all(S == T(S)), name
    # singular values: sorted by magnitude, all but the last >= 0, match numpy
    sv = np.linalg.svd(A64, compute_uv=False)
    sverr = (np.abs(np.abs(sig) - sv) / scale[:, None].clip(1e-300)).max()
    assert sverr < 20 * eps, (name, "singular values", sverr)
    assert np.all(np.abs(sig[:, :-1]) >= np.abs(sig[:, 1:]) - 4 * eps * scale[:, None]), name
    assert np.all(sig[:, :-1] >= 0), name
    detU, detV, detR = np.linalg.det(U), np.linalg.det(V), np.linalg.det(R)
    assert np.allclose(detV, 1, atol=1e-5), name
    clear = np.abs(det) > 1e-3 * scale ** n  # sign of det(A) unambiguous in this precision
    if n == 3:
        # Taichi 3x3: U, V rotations, the sign of det(A) folded into the last singular value
        assert np.allclose(detU, 1, atol=1e-5), name
        assert np.allclose(detR, 1, atol=1e-5), name
        assert np.all(np.sign(sig[clear, -1]) == np.sign(det[clear])), name
    else:
        # Taichi 2x2: sig >= 0; U and R are reflections when det(A) < 0
        assert np.all(sig >= 0), name
        assert np.allclose(detU[clear], np.sign(det[clear]), atol=1e-5), name
        assert np.allclose(detR[clear], np.sign(det[clear]), atol=1e-5), name
    # S positive semi-definite when det(A) >= 0 (2x2: always, as in Taichi)
    ev = np.linalg.eigvalsh(S)
    psd_rows = (det > 0) if n == 3 else np.ones(N, bool)
    assert np.all(ev[psd_rows] >= -20 * eps * scale[psd_rows, None]), (name, ev.min())

    # ---- against Taichi's own outputs
    # singular values, signed and ordered as Taichi's (which are less accurate: its 3x3 SVD stops
    # after a few iterations and its 2x2 one treats |S01| < 1e-5 as 0), so the difference is
    # bounded by Taichi's own error
    tsig = np.diagonal(tSg, axis1=1, axis2=2)
    terr = np.abs(np.abs(tsig) - sv)
    assert np.all(np.abs(sig - tsig) <= 1.01 * terr + 20 * eps * scale[:, None]), \
        (name, "sig vs taichi", np.abs(sig - tsig).max())
    # polar factors: unique where the relevant singular value sums are well away from zero
    svs = np.sort(np.abs(sig), axis=1)
    # (3x3 with det < 0: R is the nearest rotation, unique while |s1| != |s2|)
    gap = np.where((det < 0) & (n == 3), svs[:, 1] - svs[:, 0], svs[:, 0] + svs[:, 1])
    good = (gap > 1e-2 * scale) & (np.abs(det) > 1e-2 * scale ** n)
    if np.any(good):
        # reference polar factors from numpy's SVD (same sign conventions)
        nU, _, nVt = np.linalg.svd(A64)
        if n == 3:
            nU[:, :, -1] *= np.where(det < 0, -1.0, 1.0)[:, None]
        nR = nU @ nVt
        nS = T(nR) @ A64
        nS = 0.5 * (nS + T(nS))
        bound = 200 * eps * scale / gap.clip(1e-300)  # conditioning of the polar factor
        rerr = np.abs(R - nR).max(axis=(1, 2))
        terr_r = np.abs(tR - nR).max(axis=(1, 2))
        assert np.all((rerr <= bound)[good]), (name, "R vs numpy", (rerr / bound)[good].max())
        assert np.all((rerr <= terr_r + bound)[good]), (name, "R vs taichi")
        serr = np.abs(S - nS).max(axis=(1, 2)) / scale.clip(1e-300)
        terr_s = np.abs(tS - nS).max(axis=(1, 2)) / scale.clip(1e-300)
        assert np.all((serr <= bound)[good]), (name, "S vs numpy", (serr / bound)[good].max())
        assert np.all((serr <= terr_s + bound)[good]), (name, "S vs taichi")
    # singular vectors: equal to Taichi's up to the sign of each (u_i, v_i) pair where the
    # singular values are well separated; for 2x2 the signs are Taichi's too
    srt = np.abs(sig)
    sep = np.min(np.abs(np.diff(srt, axis=1)), axis=1) > 1e-2 * scale
    sep &= clear
    if np.any(sep):
        cos_v = np.abs(np.einsum("nij,nij->nj", V, tV))[sep]
        vtol = 1e-3 if dt == ti.f32 else 1e-6
        assert np.all(cos_v > 1 - vtol), (name, "V vs taichi", cos_v.min())
        if n == 2:
            match = np.abs(V - tV).max(axis=(1, 2))[sep]
            assert match.max() < 1e-2, (name, "2x2 V sign convention", match.max())
            matchu = np.abs(U - tU).max(axis=(1, 2))[sep]
            assert matchu.max() < 1e-2, (name, "2x2 U sign convention", matchu.max())
    if report is not None:
        report.append((name, n, str(dt), rec.max(), prec.max(),
                       max(orth(U).max(), orth(V).max(), orth(R).max()), sverr))


# ------------------------------------------------------------------------------------------------
# tests
# ------------------------------------------------------------------------------------------------
@pytest.fixture
def taichi_cpu():
    def init(dt):
        ti.init(arch=ti.cpu, default_fp=dt, fast_math=False, offline_cache=False,
                log_level=ti.WARN)
    yield init
    ti.reset()


REPORT = []
pytestmark = pytest.mark.filterwarnings("ignore:.*Calling non-taichi function")


@pytest.mark.parametrize("dt", [ti.f32, ti.f64], ids=["f32", "f64"])
@pytest.mark.parametrize("n", [2, 3])
def test_accuracy_and_conventions(taichi_cpu, n, dt):
    taichi_cpu(dt)
    groups = matrix_groups(n)
    allA = np.concatenate(list(groups.values()))
    mine, theirs = run_decompositions(allA, dt)  # one compilation for all groups
    start = 0
    for name, A in groups.items():
        sl = slice(start, start + len(A))
        start += len(A)
        check_batch(A, dt, name, [x[sl] for x in mine], [x[sl] for x in theirs], REPORT)


@pytest.mark.parametrize("dt", [ti.f32, ti.f64], ids=["f32", "f64"])
@pytest.mark.parametrize("n", [2, 3])
def test_dt_omitted_uses_default_fp(taichi_cpu, n, dt):
    taichi_cpu(dt)
    A = matrix_groups(n, N=50)["gaussian"].astype(NP[dt])
    (U, Sg, V, R, S), _ = run_decompositions(A, dt, with_dt_arg=False)
    assert np.abs(U @ Sg @ T(V) - A).max() < 50 * EPS[dt] * np.abs(A).max()
    assert np.abs(R @ S - A).max() < 50 * EPS[dt] * np.abs(A).max()


@pytest.mark.parametrize("dt", [ti.f32, ti.f64], ids=["f32", "f64"])
@pytest.mark.parametrize("n", [2, 3])
def test_taichi_test_suite_cases(taichi_cpu, n, dt):
    """The matrices and tolerances of Taichi's own tests (test_svd.py, test_polar_decomp)."""
    taichi_cpu(dt)
    # test_svd.py
    A = np.array([[1, 1, 3], [9, -3, 2], [-3, 4, 2]], float) if n == 3 else np.array([[1, 1], [2, 3]], float)
    (U, Sg, V, _, _), _ = run_decompositions(A[None], dt)
    tol = 1e-5 if dt == ti.f32 else 1e-12
    assert np.abs(T(U[0]) @ U[0] - np.eye(n)).max() < tol
    assert np.abs(T(V[0]) @ V[0] - np.eye(n)).max() < tol
    assert np.abs(U[0] @ Sg[0] @ T(V[0]) - A).max() < tol
    # test_polar_decomp: V(i, j) = 2 i + 7 j + 3 [i == j]; products computed in-kernel
    M = np.array([[2 * i + 7 * j + 3 * (i == j) for j in range(n)] for i in range(n)], float)
    m = ti.Matrix.field(n, n, dt, shape=())
    Id = ti.Matrix.field(n, n, dt, shape=())
    D = ti.Matrix.field(n, n, dt, shape=())

    @ti.kernel
    def polar():
        R, S = L.polar_decompose(m[None], dt)
        m[None] = R @ S
        Id[None] = R @ R.transpose()
        D[None] = S - S.transpose()

    m.from_numpy(M.astype(NP[dt]))
    polar()
    tol = 5e-5 if dt == ti.f32 else 1e-12
    assert np.abs(m.to_numpy() - M).max() < tol
    assert np.abs(Id.to_numpy() - np.eye(n)).max() < tol
    assert np.abs(D.to_numpy()).max() < tol


# ---- gradients ----------------------------------------------------------------------------------
def _grad_vs_fd(A, what, h=1e-6):
    """Reverse-mode gradient (Taichi AD through linalg.py) vs central differences, in f64.

    what: "polar" (loss = <W1, R> + <W2, S>), "svd_sig" (loss = <w, sig>),
    "svd_rec" (loss = <W1, U sig V.T>, whose exact gradient is W1).
    """
    N, n, _ = A.shape
    rng = np.random.default_rng(7)
    W1 = rng.standard_normal((N, n, n))
    W2 = rng.standard_normal((N, n, n))
    Af = ti.Matrix.field(n, n, ti.f64, shape=N, needs_grad=True)
    W1f = ti.Matrix.field(n, n, ti.f64, shape=N)
    W2f = ti.Matrix.field(n, n, ti.f64, shape=N)
    per = ti.field(ti.f64, shape=N, needs_grad=True)
    loss = ti.field(ti.f64, shape=(), needs_grad=True)
    W1f.from_numpy(W1)
    W2f.from_numpy(W2)

    @ti.kernel
    def forward():
        for i in Af:
            val = 0.0
            if ti.static(what == "polar"):
                R, S = L.polar_decompose(Af[i])
                for a, b in ti.static(ti.ndrange(n, n)):
                    val += W1f[i][a, b] * R[a, b] + W2f[i][a, b] * S[a, b]
            elif ti.static(what == "svd_sig"):
                U, sig, V = L.svd(Af[i])
                for a in ti.static(range(n)):
                    val += W1f[i][a, a] * sig[a, a]
            else:
                U, sig, V = L.svd(Af[i])
                B = U @ sig @ V.transpose()
                for a, b in ti.static(ti.ndrange(n, n)):
                    val += W1f[i][a, b] * B[a, b]
            per[i] = val

    @ti.kernel
    def reduce():
        for i in per:
            loss[None] += per[i]

    Af.from_numpy(A)
    with ti.ad.Tape(loss=loss):
        forward()
        reduce()
    g = Af.grad.to_numpy()

    fd = np.zeros_like(A)
    for a in range(n):
        for b in range(n):
            vals = []
            for sgn in (1, -1):
                Ap = A.copy()
                Ap[:, a, b] += sgn * h
                Af.from_numpy(Ap)
                forward()
                vals.append(per.to_numpy())
            fd[:, a, b] = (vals[0] - vals[1]) / (2 * h)
    return g, fd, W1


def _grad_cases(n, N=60):
    rng = np.random.default_rng(11 + n)
    U, V = _rot(rng, n, N), _rot(rng, n, N)
    s = rng.uniform(0.3, 3, (N, n))
    cases = {
        "gaussian": rng.standard_normal((N, n, n)),
        "well_conditioned": _compose(U, s, V),
        "negative_det": _compose(U, s * np.array([-1] + [1] * (n - 1)), V),
        "near_identity": np.eye(n) + 1e-3 * rng.standard_normal((N, n, n)),
        # degenerate singular values: the polar factor is smooth there but singular vectors
        # are not; these exercise the derivative-fixing correction step
        "degenerate": np.stack([np.eye(n), 2 * np.eye(n), np.diag([2.0] + [1.0] * (n - 1)),
                                np.diag([1.0] * (n - 1) + [2.0])] + list(U[:4]) + list(2.5 * V[:4])),
    }
    return cases


@pytest.mark.parametrize("n", [2, 3])
def test_polar_gradient(taichi_cpu, n):
    taichi_cpu(ti.f64)
    for name, A in _grad_cases(n).items():
        g, fd, _ = _grad_vs_fd(A, "polar")
        scale = np.abs(fd).max(axis=(1, 2))[:, None, None] + 1
        rel = (np.abs(g - fd) / scale).max(axis=(1, 2))
        assert rel.max() < 1e-6, (n, name, rel.max(), A[rel.argmax()], g[rel.argmax()], fd[rel.argmax()])


@pytest.mark.parametrize("n", [2, 3])
def test_svd_gradient(taichi_cpu, n):
    taichi_cpu(ti.f64)
    for name, A in _grad_cases(n).items():
        if name == "degenerate":  # singular vectors are not differentiable there
            continue
        g, fd, _ = _grad_vs_fd(A, "svd_sig")
        rel = (np.abs(g - fd) / (np.abs(fd).max(axis=(1, 2))[:, None, None] + 1)).max(axis=(1, 2))
        assert rel.max() < 1e-6, (n, name, "sig", rel.max())
        g, fd, W = _grad_vs_fd(A, "svd_rec")
        assert np.abs(g - W).max() < 1e-7, (n, name, "U sig V^T", np.abs(g - W).max())


def test_report():
    """Prints the worst errors seen (run with -s)."""
    for row in REPORT:
        print("%-16s n=%d %-4s  svd rec %.2e  polar rec %.2e  orth %.2e  sig %.2e" % row)
