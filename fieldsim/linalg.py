"""Small-matrix decompositions for kernel scope: `fs.polar_decompose`, `fs.svd` and the linear
solve `fs.solve` (2x2, 3x3);
and `fs.linalg`, Taichi's `ti.linalg`: the sparse matrices and solvers of
`fieldsim.sparse_matrix` and `fieldsim.sparse_solver` are re-exported here.

Everything here is ordinary fieldsim DSL code (`@fs.pyfunc`: also callable from Python scope),
inlined into the calling kernel and differentiated by the compiler's reverse mode like any other
code.  Only straight-line scalar arithmetic is used: `fs.sqrt`, `fs.abs`, `fs.max`, `fs.select`,
`fs.cast`, comparisons, `fs.static` conditions and `fs.Matrix` built from scalars.  There is no
data-dependent control flow at all (every guard is an `fs.select`), no loop, and no global
memory, so the adjoint is plain straight-line code.

Guards use the "double select" pattern: where a formula would divide by zero, its *inputs* are
replaced by harmless values (`fs.select(ok, x, 1.0)`) before the division, so that neither the
value nor the gradient of the untaken side can become NaN/inf.

Conventions (matched to Taichi 1.7.4, checked against `ti.svd` / `ti.polar_decompose`):

* 2x2 `polar_decompose(A) -> (R, S)`, A = R @ S, S symmetric positive semi-definite.  As in
  Taichi, R is a rotation when det(A) >= 0 and a reflection (det -1) when det(A) < 0; for the
  zero matrix (I, A) is returned.
* 2x2 `svd(A) -> (U, sig, V)`, A = U @ sig @ V.T, sig = diag(s0, s1) with s0 >= s1 >= 0;
  V is a rotation whose angle lies in [-135, 45] degrees (Taichi's choice of eigenvector
  signs), U = R @ V, so det(U) = sign(det A) as in Taichi.  As Taichi, an off-diagonal
  |S01| < 1e-5 of the polar factor S counts as zero: V = I (or a quarter turn when
  S11 > S00) and sig = the sorted diagonal of S.
* 3x3 `svd(A)`: U and V are rotations (det +1); sig = diag(s0, s1, s2) with
  s0 >= s1 >= |s2|, s0, s1 >= 0 and sign(s2) = sign(det A) (the reflection is folded into the
  last singular value).
* 3x3 `polar_decompose(A)`: R = U @ V.T is always a rotation, S = sym(R.T @ A) (positive
  semi-definite when det(A) >= 0, indefinite when det(A) < 0), as in Taichi.

Algorithms (written for this project):

* 2x2 polar: closed form.  With x = a00 + a11, y = a10 - a01 (det >= 0; for det < 0 the
  reflection uses x = a00 - a11, y = a01 + a10), R = [[x, -y], [y, x]] / r with r = |(x, y)|,
  S = R.T A computed as Taichi does, (A.T A + |det A| I) / r.
* 2x2 SVD: polar, then the closed-form eigen-decomposition of the symmetric 2x2 S using
  half-angle formulas (no trigonometry): for t = 2 * theta with cos t = (s00 - s11) / r,
  sin t = 2 s01 / r, the half angle is taken by sqrt((r + |d|) / 2r) on the well-conditioned
  side.  The smaller singular value is |det A| / s0 (no cancellation).
* 3x3 SVD: a fixed number of cyclic Jacobi sweeps on the symmetric A.T A (each rotation from
  cancellation-free half-angle formulas), sorting of the eigenpairs by compare-and-swap
  (selects), then a Givens QR of B = A V: U is the product of the three Givens rotations and the
  singular values are the diagonal of the triangular factor.  U is therefore orthogonal to
  rounding even for rank-deficient A (no division by a singular value), and the sign of det(A)
  ends up in the last diagonal entry automatically.
* 3x3 polar: R0 = U V.T from the SVD, then one Newton-type correction step (solve the Sylvester
  equation S X + X S = R0.T A - A.T R0 in the eigenbasis of S and rotate R0 by X).  Its value
  is negligible (R0 already is the polar factor to rounding), but it makes the *derivative*
  exact where the eigenvectors are not defined: at A = I, at rotations, at uniform scalings
  (e.g. the deformation gradient F = I of a fresh MPM particle), where an eigen solver's own
  derivative is arbitrary.
"""
import fieldsim as fs
from fieldsim.matrixfree import LinearOperator, MatrixFreeBICGSTAB, MatrixFreeCG
from fieldsim.sparse_matrix import SparseMatrix, SparseMatrixBuilder
from fieldsim.sparse_solver import SparseCG, SparseSolver

# Number of cyclic Jacobi sweeps (3 rotations each) for the 3x3 SVD.  Cyclic Jacobi converges
# quadratically; 6 sweeps take random, nearly singular and clustered matrices to the rounding
# level in f64 (and the unrolled derivative converges with the values).
_JACOBI_SWEEPS = 5

# Correction step of the 3x3 polar decomposition: skipped for a pair of singular values whose
# (signed) sum is below this fraction of the largest one (there the polar factor is itself
# ill-conditioned, and the correction would only amplify rounding).
_POLAR_PAIR_TOL = 1e-3


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
def _fp(dt):
    """Plain Python, evaluated at compile time: the computation type; `float` (the default
    float type of `fs.init`) when dt is None.  (Under Taichi, which this file is also validated
    with, a None argument of a func arrives wrapped as an `Expr`: treated as None too.)"""
    if dt is None or type(dt).__name__ == "Expr":
        return float
    return dt


@fs.pyfunc  # every helper here: callable from Python scope too, beyond Taichi
def _cast(x, dt):
    """`x` as type `dt` (the default float type when dt is None)."""
    return fs.cast(x, _fp(dt))


@fs.pyfunc
def _entries2x2(A, dt):
    """A 2x2 matrix's entries (a00, a01, a10, a11) as type `dt`."""
    return _cast(A[0, 0], dt), _cast(A[0, 1], dt), _cast(A[1, 0], dt), _cast(A[1, 1], dt)


@fs.pyfunc
def _sgn(x):
    """+1 for x >= 0, -1 otherwise (constant: no gradient)."""
    return fs.select(x >= 0.0, 1.0, -1.0)


def _unit_roundoff(dt):
    """Plain Python, evaluated at compile time: the machine epsilon of the computation type."""
    t = _fp(dt)
    if t is float:
        t = fs.cfg.default_fp
    return 2.0 ** -52 if t == fs.f64 else 2.0 ** -23


@fs.pyfunc
def _jacobi_pair(app, aqq, apq, eps=None):
    """Jacobi rotation for the symmetric 2x2 block [[app, apq], [apq, aqq]].

    Returns (c, s, h): with J = [[c, -s], [s, c]] on the (p, q) plane, J.T A J has a zero (p, q)
    entry, |rotation angle| <= 45 degrees, and the new diagonal is (app + h, aqq - h).
    Computed from the ratio d : 2 apq (normalised by the larger, so that nothing under- or
    overflows); identity where apq = 0 and app = aqq, and where apq is below rounding relative
    to the columns (with `eps`: |apq| <= eps sqrt(app aqq), the one-sided Jacobi test): there
    the columns are orthogonal to working precision, and a rotation (45 degrees when app = aqq,
    e.g. for A = I + 1e-12 K) would only add rounding, turning the polar factor of a
    deformation next to the identity into a rotation an ulp off it (Taichi's gives I).
    """
    d = app - aqq
    m = fs.max(fs.abs(d), 2.0 * fs.abs(apq))
    ok = m > 0.0
    if fs.static(eps is not None):  # Gram matrices only (app, aqq >= 0): fs.sym_eig passes none
        ok = ok & (fs.abs(apq) > eps * (fs.sqrt(app) * fs.sqrt(aqq)))
    ms = fs.select(ok, m, 1.0)
    dn = fs.select(ok, d / ms, 1.0)
    on = fs.select(ok, apq / ms, 0.0)
    ad = fs.abs(dn)
    r = fs.sqrt(dn * dn + 4.0 * on * on)  # in [1, sqrt 2]
    sg = _sgn(dn)
    c = fs.sqrt((r + ad) / (2.0 * r))  # cos of the rotation angle, >= 1/sqrt 2
    s = sg * on / (r * c)
    h = sg * 2.0 * fs.select(ok, apq, 0.0) * on / (r + ad)  # = sg 2 apq^2 / (|2 apq, d| + |d|)
    return c, s, h


@fs.pyfunc
def _givens(a, b):
    """(c, s) with c*a + s*b = |(a, b)| and -s*a + c*b = 0; (1, 0) when a = b = 0."""
    m = fs.max(fs.abs(a), fs.abs(b))
    ok = m > 0.0
    ms = fs.select(ok, m, 1.0)
    an = fs.select(ok, a / ms, 1.0)
    bn = fs.select(ok, b / ms, 0.0)
    rinv = 1.0 / fs.sqrt(an * an + bn * bn)
    return an * rinv, bn * rinv


# ---------------------------------------------------------------------------------------------
# 2x2
# ---------------------------------------------------------------------------------------------
@fs.pyfunc
def polar_decompose2d(A, dt):
    """(R, S) with A = R @ S, S symmetric PSD; R a rotation, or a reflection if det(A) < 0."""
    a, b, c, d = _entries2x2(A, dt)
    neg = a * d - b * c < 0.0
    # det >= 0: R = [[x, -y], [y, x]] / r ; det < 0: R = [[x, y], [y, -x]] / r
    x = fs.select(neg, a - d, a + d)
    y = fs.select(neg, b + c, c - b)
    ok = x * x + y * y > 0.0  # false only for the zero matrix
    xs = fs.select(ok, x, 1.0)
    ys = fs.select(ok, y, 0.0)
    inv = 1.0 / fs.sqrt(xs * xs + ys * ys)
    co = xs * inv
    si = ys * inv
    sg = fs.select(neg, -1.0, 1.0)
    r01 = -sg * si
    r11 = sg * co
    # S = R.T @ A written as Taichi 1.7.4 computes it, (A.T @ A + |det A| I) / r: symmetric by
    # construction and equal to Taichi's bit for bit (R.T @ A differed in the last bit for 9 in 10)
    adet = fs.abs(a * d - c * b)
    s00 = (a * a + c * c + adet) * inv
    s11 = (b * b + d * d + adet) * inv
    s01 = (a * b + c * d) * inv
    R = fs.Matrix([[co, r01], [si, r11]])
    S = fs.Matrix([[s00, s01], [s01, s11]])
    return R, S


@fs.pyfunc
def svd2d(A, dt):
    """(U, sig, V) with A = U @ sig @ V.T, sig = diag(s0 >= s1 >= 0), V a rotation."""
    R, S = polar_decompose2d(A, dt)
    p = S[0, 0]
    q = S[1, 1]
    o = S[0, 1]
    # eigenvector angle theta of the larger eigenvalue: cos 2theta = x / r, sin 2theta = y / r
    x = p - q
    y = 2.0 * o
    ok = x * x + y * y > 0.0  # false when S is a multiple of the identity
    xs = fs.select(ok, x, 1.0)
    ys = fs.select(ok, y, 0.0)
    r = fs.sqrt(xs * xs + ys * ys)
    big = fs.sqrt((r + fs.abs(xs)) / (2.0 * r))  # in [1/sqrt 2, 1]
    small = ys / (2.0 * r * big)
    pos = xs >= 0.0
    # theta in [-45, 45] for x >= 0, in [-135, -45] otherwise (Taichi's sign choice)
    ch = fs.select(pos, big, -small)
    sh = fs.select(pos, small, -big)
    s0 = 0.5 * (p + q + fs.select(ok, r, 0.0))
    det = fs.abs(A[0, 0] * A[1, 1] - A[0, 1] * A[1, 0])
    nz = s0 > 0.0
    s1 = fs.select(nz, _cast(det, dt), 0.0) / fs.select(nz, s0, 1.0)
    # as Taichi: an off-diagonal under 1e-5 is taken as zero (V = I, or the quarter turn that
    # sorts the diagonal); an eigenvector angle from it would be rounding noise (near-identity
    # deformation gradients of MPM particles)
    diagonal = fs.abs(o) < 1e-5
    keep = p >= q
    ch = fs.select(diagonal, fs.select(keep, 1.0, 0.0), ch)
    sh = fs.select(diagonal, fs.select(keep, 0.0, -1.0), sh)
    s0 = fs.select(diagonal, fs.max(p, q), s0)
    s1 = fs.select(diagonal, fs.min(p, q), s1)
    zero = _cast(0.0, dt)
    V = fs.Matrix([[ch, -sh], [sh, ch]])
    U = fs.Matrix([[R[0, 0] * ch + R[0, 1] * sh, R[0, 1] * ch - R[0, 0] * sh],
                   [R[1, 0] * ch + R[1, 1] * sh, R[1, 1] * ch - R[1, 0] * sh]])
    sig = fs.Matrix([[s0, zero], [zero, s1]])
    return U, sig, V


# ---------------------------------------------------------------------------------------------
# 3x3
# ---------------------------------------------------------------------------------------------
@fs.pyfunc
def _rot(c, s, x, y):
    """The plane rotation (x, y) -> (c x + s y, c y - s x), for scalars or vectors."""
    return c * x + s * y, c * y - s * x


@fs.pyfunc
def _vsel(cond, x, y):
    """Per-entry fs.select of two 3-vectors."""
    return fs.Vector([fs.select(cond, x[0], y[0]), fs.select(cond, x[1], y[1]),
                      fs.select(cond, x[2], y[2])])


@fs.pyfunc
def _sort_pair(lp, lq, bp, bq, vp, vq):
    """Order one pair of columns by decreasing squared norm; a swap (p, q) -> (q, -p) keeps
    the determinants of B and V."""
    sw = lp < lq
    return (fs.select(sw, lq, lp), fs.select(sw, lp, lq),
            _vsel(sw, bq, bp), _vsel(sw, -bp, bq), _vsel(sw, vq, vp), _vsel(sw, -vp, vq))


@fs.pyfunc
def svd3d(A, dt):
    """(U, sig, V) with A = U @ sig @ V.T, U, V rotations, sig = diag(s0 >= s1 >= |s2|)."""
    # columns of B = A V (one-sided Jacobi works on them directly) and of V
    b0 = fs.Vector([_cast(A[0, 0], dt), _cast(A[1, 0], dt), _cast(A[2, 0], dt)])
    b1 = fs.Vector([_cast(A[0, 1], dt), _cast(A[1, 1], dt), _cast(A[2, 1], dt)])
    b2 = fs.Vector([_cast(A[0, 2], dt), _cast(A[1, 2], dt), _cast(A[2, 2], dt)])
    one = _cast(1.0, dt)
    zero = _cast(0.0, dt)
    v0 = fs.Vector([one, zero, zero])
    v1 = fs.Vector([zero, one, zero])
    v2 = fs.Vector([zero, zero, one])

    # ---- one-sided (Hestenes) Jacobi: rotate pairs of columns until they are orthogonal.  Each
    # rotation is the Jacobi rotation of the 2x2 block of B.T B = V.T A.T A V, but B.T B is never
    # formed, so small singular values keep their accuracy.
    eps = fs.static(_unit_roundoff(dt))
    for _sweep in fs.static(range(_JACOBI_SWEEPS)):
        c, s, _h = _jacobi_pair(b0.dot(b0), b1.dot(b1), b0.dot(b1), eps)
        b0, b1 = _rot(c, s, b0, b1)
        v0, v1 = _rot(c, s, v0, v1)
        c, s, _h = _jacobi_pair(b0.dot(b0), b2.dot(b2), b0.dot(b2), eps)
        b0, b2 = _rot(c, s, b0, b2)
        v0, v2 = _rot(c, s, v0, v2)
        c, s, _h = _jacobi_pair(b1.dot(b1), b2.dot(b2), b1.dot(b2), eps)
        b1, b2 = _rot(c, s, b1, b2)
        v1, v2 = _rot(c, s, v1, v2)

    # ---- sort the columns by decreasing norm (three compare-and-swaps)
    l0 = b0.dot(b0)
    l1 = b1.dot(b1)
    l2 = b2.dot(b2)
    l0, l1, b0, b1, v0, v1 = _sort_pair(l0, l1, b0, b1, v0, v1)
    l1, l2, b1, b2, v1, v2 = _sort_pair(l1, l2, b1, b2, v1, v2)
    l0, l1, b0, b1, v0, v1 = _sort_pair(l0, l1, b0, b1, v0, v1)

    # ---- Givens QR of B = [b0 b1 b2]: G3 G2 G1 B = upper triangular T, U = G1.T G2.T G3.T.
    # The diagonal of T is the singular values: T00, T11 >= 0 and T22 carries sign(det A).
    # G1 on rows (0, 1) zeroes B[1, 0]
    c1, s1 = _givens(b0[0], b0[1])
    t00, _z = _rot(c1, s1, b0[0], b0[1])
    t01, m11 = _rot(c1, s1, b1[0], b1[1])
    t02, m12 = _rot(c1, s1, b2[0], b2[1])
    # G2 on rows (0, 2) zeroes B[2, 0]
    c2, s2 = _givens(t00, b0[2])
    t00, _z = _rot(c2, s2, t00, b0[2])
    t01, m21 = _rot(c2, s2, t01, b1[2])
    t02, m22 = _rot(c2, s2, t02, b2[2])
    # G3 on rows (1, 2) zeroes B[2, 1]
    c3, s3 = _givens(m11, m21)
    t11, _z = _rot(c3, s3, m11, m21)
    _t12, t22 = _rot(c3, s3, m12, m22)

    # U = G1.T @ G2.T @ G3.T, where G.T = [[c, -s], [s, c]] on its plane
    u01, u02 = _rot(c3, s3, -s1, -c1 * s2)
    u11, u12 = _rot(c3, s3, c1, -s1 * s2)
    u21, u22 = _rot(c3, s3, zero, c2)
    U = fs.Matrix([[c1 * c2, u01, u02], [s1 * c2, u11, u12], [s2, u21, u22]])
    V = fs.Matrix([[v0[0], v1[0], v2[0]], [v0[1], v1[1], v2[1]], [v0[2], v1[2], v2[2]]])
    sig = fs.Matrix([[t00, zero, zero], [zero, t11, zero], [zero, zero, t22]])
    return U, sig, V


@fs.pyfunc
def _pair_coef(m, si, sj, tol):
    """m / (si + sj), or 0 where |si + sj| <= tol."""
    den = si + sj
    ok = fs.abs(den) > tol
    return fs.select(ok, m, 0.0) / fs.select(ok, den, 1.0)


@fs.pyfunc
def polar_decompose3d(A, dt):
    """(R, S) with A = R @ S, R a rotation, S symmetric (PSD when det(A) >= 0)."""
    U, sig, V = svd3d(A, dt)
    a00 = _cast(A[0, 0], dt)
    a01 = _cast(A[0, 1], dt)
    a02 = _cast(A[0, 2], dt)
    a10 = _cast(A[1, 0], dt)
    a11 = _cast(A[1, 1], dt)
    a12 = _cast(A[1, 2], dt)
    a20 = _cast(A[2, 0], dt)
    a21 = _cast(A[2, 1], dt)
    a22 = _cast(A[2, 2], dt)
    Ac = fs.Matrix([[a00, a01, a02], [a10, a11, a12], [a20, a21, a22]])
    R0 = U @ V.transpose()
    # Newton-type correction: R = R0 (I + X + X^2 / 2) with S X + X S = R0.T A - A.T R0
    # (X is skew, and zero up to rounding in value)
    P = R0.transpose() @ Ac
    M = V.transpose() @ (P - P.transpose()) @ V  # in the eigenbasis of S: S = diag(sig)
    g0 = sig[0, 0]
    g1 = sig[1, 1]
    g2 = sig[2, 2]
    tol = _POLAR_PAIR_TOL * fs.abs(g0)
    x01 = _pair_coef(M[0, 1], g0, g1, tol)
    x02 = _pair_coef(M[0, 2], g0, g2, tol)
    x12 = _pair_coef(M[1, 2], g1, g2, tol)
    zero = _cast(0.0, dt)
    Xe = fs.Matrix([[zero, x01, x02], [-x01, zero, x12], [-x02, -x12, zero]])
    X = V @ Xe @ V.transpose()
    R = R0 + R0 @ (X + 0.5 * (X @ X))
    Q = R.transpose() @ Ac
    S = 0.5 * (Q + Q.transpose())
    return R, S


# ---------------------------------------------------------------------------------------------
# public entry points (fs.polar_decompose, fs.svd)
# ---------------------------------------------------------------------------------------------
@fs.pyfunc
def polar_decompose(A, dt=None):
    """Polar decomposition A = R @ S of a 2x2 or 3x3 matrix (see the module docstring).

    `dt` is the computation/result type (the default float type when omitted).
    """
    if fs.static(A.n == 2):
        return polar_decompose2d(A, dt)
    else:
        assert fs.static(A.n == 3), "polar_decompose supports 2x2 and 3x3 matrices only"
        return polar_decompose3d(A, dt)


@fs.pyfunc
def svd(A, dt=None):
    """Singular value decomposition A = U @ sig @ V.T of a 2x2 or 3x3 matrix (see the module
    docstring).  `dt` is the computation/result type (the default float type when omitted).
    """
    if fs.static(A.n == 2):
        return svd2d(A, dt)
    else:
        assert fs.static(A.n == 3), "svd supports 2x2 and 3x3 matrices only"
        return svd3d(A, dt)


@fs.pyfunc
def solve(A, b, dt=None):
    """The solution x of A @ x = b for a 2x2 or 3x3 matrix A (Taichi's `ti.solve`): Gaussian
    elimination with partial pivoting (in each column the first row of largest magnitude is
    swapped up, as Taichi picks it), then back substitution. A singular A gives inf or NaN
    entries (with `fs.init(debug=True)`, a failed assertion). `dt` is the computation and
    result type (the default float type when omitted)."""
    assert fs.static(A.n == A.m and 2 <= A.n <= 3), "ti.solve supports 2x2 and 3x3 matrices"
    assert fs.static(b.n == A.n), "ti.solve: b needs one entry per row of A"
    M = _cast(A, dt)
    y = _cast(b, dt)
    for i in fs.static(range(A.n - 1)):
        pivot = i
        largest = fs.abs(M[i, i])
        for j in fs.static(range(i + 1, A.n)):
            bigger = fs.abs(M[j, i]) > largest
            pivot = fs.select(bigger, j, pivot)
            largest = fs.select(bigger, fs.abs(M[j, i]), largest)
        for j in fs.static(range(i + 1, A.n)):  # rows i and pivot trade places
            swap = pivot == j
            for k in fs.static(range(A.n)):
                top = M[i, k]
                M[i, k] = fs.select(swap, M[j, k], top)
                M[j, k] = fs.select(swap, top, M[j, k])
            top_y = y[i]
            y[i] = fs.select(swap, y[j], top_y)
            y[j] = fs.select(swap, top_y, y[j])
        assert M[i, i] != 0.0, "Matrix is singular in linear solve."
        for j in fs.static(range(i + 1, A.n)):
            scale = M[j, i] / M[i, i]
            for k in fs.static(range(i + 1, A.n)):
                M[j, k] -= M[i, k] * scale
            y[j] -= y[i] * scale
    x = y
    for r in fs.static(range(A.n)):
        i = fs.static(A.n - 1 - r)
        total = y[i]
        for k in fs.static(range(i + 1, A.n)):
            total -= M[i, k] * x[k]
        x[i] = total / M[i, i]
    return x


def __getattr__(name):
    if name == "sparse_matrix_builder":  # Taichi < 1.0; Taichi 1.7 lacks it too
        from fieldsim.lang.compat import FieldsimAttributeError, user_loc
        raise FieldsimAttributeError("ti.linalg.sparse_matrix_builder was removed before Taichi "
                                     "1.0 (Taichi 1.7 has no such name either); use "
                                     "ti.types.sparse_matrix_builder()", user_loc())
    raise AttributeError(f"module 'fieldsim.linalg' has no attribute {name!r}")


__all__ = ["LinearOperator", "MatrixFreeBICGSTAB", "MatrixFreeCG", "SparseCG", "SparseMatrix",
           "SparseMatrixBuilder", "SparseSolver", "polar_decompose", "solve", "svd"]
