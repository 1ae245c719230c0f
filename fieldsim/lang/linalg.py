"""Small-matrix decompositions for kernel scope: `fs.polar_decompose` and `fs.svd` (2x2, 3x3).

Everything here is ordinary fieldsim DSL code (`@fs.func`), inlined into the calling kernel and
differentiated by the compiler's reverse mode like any other code.  Only straight-line scalar
arithmetic is used: `fs.sqrt`, `fs.abs`, `fs.max`, `fs.select`, `fs.cast`, comparisons,
`fs.static` conditions and `fs.Matrix` built from scalars.  There is no data-dependent control
flow at all (every guard is an `fs.select`), no loop, and no global memory, so the adjoint is
plain straight-line code.

Guards use the "double select" pattern: where a formula would divide by zero, its *inputs* are
replaced by harmless values (`fs.select(ok, x, 1.0)`) before the division, so that neither the
value nor the gradient of the untaken side can become NaN/inf.

Conventions (matched to Taichi 1.7.4, checked against `ti.svd` / `ti.polar_decompose`):

* 2x2 `polar_decompose(A) -> (R, S)`, A = R @ S, S symmetric positive semi-definite.  As in
  Taichi, R is a rotation when det(A) >= 0 and a reflection (det -1) when det(A) < 0; for the
  zero matrix (I, A) is returned.
* 2x2 `svd(A) -> (U, sig, V)`, A = U @ sig @ V.T, sig = diag(s0, s1) with s0 >= s1 >= 0;
  V is a rotation whose angle lies in [-135, 45] degrees (Taichi's choice of eigenvector
  signs), U = R @ V, so det(U) = sign(det A) as in Taichi.
* 3x3 `svd(A)`: U and V are rotations (det +1); sig = diag(s0, s1, s2) with
  s0 >= s1 >= |s2|, s0, s1 >= 0 and sign(s2) = sign(det A) (the reflection is folded into the
  last singular value).
* 3x3 `polar_decompose(A)`: R = U @ V.T is always a rotation, S = sym(R.T @ A) (positive
  semi-definite when det(A) >= 0, indefinite when det(A) < 0), as in Taichi.

Algorithms (written for this project):

* 2x2 polar: closed form.  With x = a00 + a11, y = a10 - a01 (det >= 0; for det < 0 the
  reflection uses x = a00 - a11, y = a01 + a10), R = [[x, -y], [y, x]] / |(x, y)|, S = R.T A.
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

# Number of cyclic Jacobi sweeps (3 rotations each) for the 3x3 SVD.  Cyclic Jacobi converges
# quadratically; 6 sweeps take random, nearly singular and clustered matrices to the rounding
# level in f64 (and the unrolled derivative converges with the values).
_JACOBI_SWEEPS = 6

# Correction step of the 3x3 polar decomposition: skipped for a pair of singular values whose
# (signed) sum is below this fraction of the largest one (there the polar factor is itself
# ill-conditioned, and the correction would only amplify rounding).
_POLAR_PAIR_TOL = 1e-3


# ---------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------
@fs.func
def _cast(x, dt):
    """`x` as type `dt` (the default float type when dt is None)."""
    if fs.static(dt is None):
        return fs.cast(x, float)
    else:
        return fs.cast(x, dt)


@fs.func
def _sgn(x):
    """+1 for x >= 0, -1 otherwise (constant: no gradient)."""
    return fs.select(x >= 0.0, 1.0, -1.0)


@fs.func
def _jacobi_pair(app, aqq, apq):
    """Jacobi rotation for the symmetric 2x2 block [[app, apq], [apq, aqq]].

    Returns (c, s, h): with J = [[c, -s], [s, c]] on the (p, q) plane, J.T A J has a zero (p, q)
    entry, |rotation angle| <= 45 degrees, and the new diagonal is (app + h, aqq - h).
    """
    d = app - aqq
    ok = d * d + 4.0 * apq * apq > 0.0
    ds = fs.select(ok, d, 1.0)
    os = fs.select(ok, apq, 0.0)
    ad = fs.abs(ds)
    r = fs.sqrt(ds * ds + 4.0 * os * os)
    sg = _sgn(ds)
    c = fs.sqrt((r + ad) / (2.0 * r))
    s = sg * os / (r * c)
    h = sg * 2.0 * os * os / (r + ad)
    return c, s, h


@fs.func
def _givens(a, b):
    """(c, s) with c*a + s*b = |(a, b)| and -s*a + c*b = 0; (1, 0) when a = b = 0."""
    ok = a * a + b * b > 0.0
    as_ = fs.select(ok, a, 1.0)
    bs = fs.select(ok, b, 0.0)
    inv = 1.0 / fs.sqrt(as_ * as_ + bs * bs)
    return as_ * inv, bs * inv


# ---------------------------------------------------------------------------------------------
# 2x2
# ---------------------------------------------------------------------------------------------
@fs.func
def polar_decompose2d(A, dt):
    """(R, S) with A = R @ S, S symmetric PSD; R a rotation, or a reflection if det(A) < 0."""
    a = _cast(A[0, 0], dt)
    b = _cast(A[0, 1], dt)
    c = _cast(A[1, 0], dt)
    d = _cast(A[1, 1], dt)
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
    # S = R.T @ A, symmetrised (it is symmetric up to rounding)
    s00 = co * a + si * c
    s11 = r01 * b + r11 * d
    s01 = 0.5 * ((co * b + si * d) + (r01 * a + r11 * c))
    R = fs.Matrix([[co, r01], [si, r11]])
    S = fs.Matrix([[s00, s01], [s01, s11]])
    return R, S


@fs.func
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
    zero = _cast(0.0, dt)
    V = fs.Matrix([[ch, -sh], [sh, ch]])
    U = fs.Matrix([[R[0, 0] * ch + R[0, 1] * sh, R[0, 1] * ch - R[0, 0] * sh],
                   [R[1, 0] * ch + R[1, 1] * sh, R[1, 1] * ch - R[1, 0] * sh]])
    sig = fs.Matrix([[s0, zero], [zero, s1]])
    return U, sig, V


# ---------------------------------------------------------------------------------------------
# 3x3
# ---------------------------------------------------------------------------------------------
@fs.func
def svd3d(A, dt):
    """(U, sig, V) with A = U @ sig @ V.T, U, V rotations, sig = diag(s0 >= s1 >= |s2|)."""
    a00 = _cast(A[0, 0], dt)
    a01 = _cast(A[0, 1], dt)
    a02 = _cast(A[0, 2], dt)
    a10 = _cast(A[1, 0], dt)
    a11 = _cast(A[1, 1], dt)
    a12 = _cast(A[1, 2], dt)
    a20 = _cast(A[2, 0], dt)
    a21 = _cast(A[2, 1], dt)
    a22 = _cast(A[2, 2], dt)

    # symmetric S = A.T A (6 entries)
    s00 = a00 * a00 + a10 * a10 + a20 * a20
    s11 = a01 * a01 + a11 * a11 + a21 * a21
    s22 = a02 * a02 + a12 * a12 + a22 * a22
    s01 = a00 * a01 + a10 * a11 + a20 * a21
    s02 = a00 * a02 + a10 * a12 + a20 * a22
    s12 = a01 * a02 + a11 * a12 + a21 * a22

    # V = I, accumulated column by column (v<row><col>)
    one = _cast(1.0, dt)
    zero = _cast(0.0, dt)
    v00 = one
    v01 = zero
    v02 = zero
    v10 = zero
    v11 = one
    v12 = zero
    v20 = zero
    v21 = zero
    v22 = one

    for _sweep in fs.static(range(_JACOBI_SWEEPS)):
        # ---- plane (0, 1), third index 2
        c, s, h = _jacobi_pair(s00, s11, s01)
        s00 = s00 + h
        s11 = s11 - h
        s01 = zero
        t02 = c * s02 + s * s12
        s12 = c * s12 - s * s02
        s02 = t02
        t0 = c * v00 + s * v01
        v01 = c * v01 - s * v00
        v00 = t0
        t1 = c * v10 + s * v11
        v11 = c * v11 - s * v10
        v10 = t1
        t2 = c * v20 + s * v21
        v21 = c * v21 - s * v20
        v20 = t2
        # ---- plane (0, 2), third index 1
        c, s, h = _jacobi_pair(s00, s22, s02)
        s00 = s00 + h
        s22 = s22 - h
        s02 = zero
        t01 = c * s01 + s * s12
        s12 = c * s12 - s * s01
        s01 = t01
        t0 = c * v00 + s * v02
        v02 = c * v02 - s * v00
        v00 = t0
        t1 = c * v10 + s * v12
        v12 = c * v12 - s * v10
        v10 = t1
        t2 = c * v20 + s * v22
        v22 = c * v22 - s * v20
        v20 = t2
        # ---- plane (1, 2), third index 0
        c, s, h = _jacobi_pair(s11, s22, s12)
        s11 = s11 + h
        s22 = s22 - h
        s12 = zero
        t01 = c * s01 + s * s02
        s02 = c * s02 - s * s01
        s01 = t01
        t0 = c * v01 + s * v02
        v02 = c * v02 - s * v01
        v01 = t0
        t1 = c * v11 + s * v12
        v12 = c * v12 - s * v11
        v11 = t1
        t2 = c * v21 + s * v22
        v22 = c * v22 - s * v21
        v21 = t2

    # ---- sort the eigenpairs, largest first; a swap of columns (p, q) becomes (q, -p) so that
    # V stays a rotation
    # (0, 1)
    sw = s00 < s11
    t = fs.select(sw, s11, s00)
    s11 = fs.select(sw, s00, s11)
    s00 = t
    t0 = fs.select(sw, v01, v00)
    v01 = fs.select(sw, -v00, v01)
    v00 = t0
    t1 = fs.select(sw, v11, v10)
    v11 = fs.select(sw, -v10, v11)
    v10 = t1
    t2 = fs.select(sw, v21, v20)
    v21 = fs.select(sw, -v20, v21)
    v20 = t2
    # (1, 2)
    sw = s11 < s22
    t = fs.select(sw, s22, s11)
    s22 = fs.select(sw, s11, s22)
    s11 = t
    t0 = fs.select(sw, v02, v01)
    v02 = fs.select(sw, -v01, v02)
    v01 = t0
    t1 = fs.select(sw, v12, v11)
    v12 = fs.select(sw, -v11, v12)
    v11 = t1
    t2 = fs.select(sw, v22, v21)
    v22 = fs.select(sw, -v21, v22)
    v21 = t2
    # (0, 1) again
    sw = s00 < s11
    t = fs.select(sw, s11, s00)
    s11 = fs.select(sw, s00, s11)
    s00 = t
    t0 = fs.select(sw, v01, v00)
    v01 = fs.select(sw, -v00, v01)
    v00 = t0
    t1 = fs.select(sw, v11, v10)
    v11 = fs.select(sw, -v10, v11)
    v10 = t1
    t2 = fs.select(sw, v21, v20)
    v21 = fs.select(sw, -v20, v21)
    v20 = t2

    # ---- B = A V
    b00 = a00 * v00 + a01 * v10 + a02 * v20
    b01 = a00 * v01 + a01 * v11 + a02 * v21
    b02 = a00 * v02 + a01 * v12 + a02 * v22
    b10 = a10 * v00 + a11 * v10 + a12 * v20
    b11 = a10 * v01 + a11 * v11 + a12 * v21
    b12 = a10 * v02 + a11 * v12 + a12 * v22
    b20 = a20 * v00 + a21 * v10 + a22 * v20
    b21 = a20 * v01 + a21 * v11 + a22 * v21
    b22 = a20 * v02 + a21 * v12 + a22 * v22

    # ---- Givens QR of B: G3 G2 G1 B = upper triangular, U = G1.T G2.T G3.T
    # G1 on rows (0, 1) zeroes b10
    c1, s1 = _givens(b00, b10)
    t00 = c1 * b00 + s1 * b10
    t01 = c1 * b01 + s1 * b11
    t02 = c1 * b02 + s1 * b12
    b11 = c1 * b11 - s1 * b01
    b12 = c1 * b12 - s1 * b02
    b00 = t00
    b01 = t01
    b02 = t02
    # G2 on rows (0, 2) zeroes b20
    c2, s2 = _givens(b00, b20)
    t00 = c2 * b00 + s2 * b20
    t01 = c2 * b01 + s2 * b21
    t02 = c2 * b02 + s2 * b22
    b21 = c2 * b21 - s2 * b01
    b22 = c2 * b22 - s2 * b02
    b00 = t00
    b01 = t01
    b02 = t02
    # G3 on rows (1, 2) zeroes b21
    c3, s3 = _givens(b11, b21)
    t11 = c3 * b11 + s3 * b21
    b22 = c3 * b22 - s3 * b12
    b11 = t11

    # U = G1.T @ G2.T @ G3.T, with G.T = [[c, -s], [s, c]] on its plane
    # G1.T G2.T: rows (0, 1) then (0, 2)
    u00 = c1 * c2
    u01 = -s1
    u02 = -c1 * s2
    u10 = s1 * c2
    u11 = c1
    u12 = -s1 * s2
    u20 = s2
    u21 = zero
    u22 = c2
    # ... @ G3.T on columns (1, 2)
    w01 = c3 * u01 + s3 * u02
    u02 = c3 * u02 - s3 * u01
    u01 = w01
    w11 = c3 * u11 + s3 * u12
    u12 = c3 * u12 - s3 * u11
    u11 = w11
    w21 = c3 * u21 + s3 * u22
    u22 = c3 * u22 - s3 * u21
    u21 = w21

    U = fs.Matrix([[u00, u01, u02], [u10, u11, u12], [u20, u21, u22]])
    V = fs.Matrix([[v00, v01, v02], [v10, v11, v12], [v20, v21, v22]])
    sig = fs.Matrix([[b00, zero, zero], [zero, b11, zero], [zero, zero, b22]])
    return U, sig, V


@fs.func
def _pair_coef(m, si, sj, tol):
    """m / (si + sj), or 0 where |si + sj| <= tol."""
    den = si + sj
    ok = fs.abs(den) > tol
    return fs.select(ok, m, 0.0) / fs.select(ok, den, 1.0)


@fs.func
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
@fs.func
def polar_decompose(A, dt=None):
    """Polar decomposition A = R @ S of a 2x2 or 3x3 matrix (see the module docstring).

    `dt` is the computation/result type (the default float type when omitted).
    """
    if fs.static(A.n == 2 and A.m == 2):
        return polar_decompose2d(A, dt)
    else:
        fs.static_assert(A.n == 3 and A.m == 3, "polar_decompose supports 2x2 and 3x3 matrices only")
        return polar_decompose3d(A, dt)


@fs.func
def svd(A, dt=None):
    """Singular value decomposition A = U @ sig @ V.T of a 2x2 or 3x3 matrix (see the module
    docstring).  `dt` is the computation/result type (the default float type when omitted).
    """
    if fs.static(A.n == 2 and A.m == 2):
        return svd2d(A, dt)
    else:
        fs.static_assert(A.n == 3 and A.m == 3, "svd supports 2x2 and 3x3 matrices only")
        return svd3d(A, dt)
