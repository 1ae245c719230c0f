"""Small-matrix decompositions for kernel scope: `fs.polar_decompose`, `fs.svd` and the linear
solve `fs.solve` (2x2, 3x3);
and `fs.linalg`, Taichi's `ti.linalg`: the sparse matrices and solvers of
`fieldsim.sparse_matrix` and `fieldsim.sparse_solver` are re-exported here.

Everything here is ordinary fieldsim DSL code (`@fs.pyfunc`: also callable from Python scope),
inlined into the calling kernel and differentiated by the compiler's reverse mode like any other
code.  Only scalar arithmetic is used: `fs.sqrt`, `fs.rsqrt`, `fs.abs`, `fs.max`, `fs.select`,
`fs.cast`, comparisons, `fs.static` conditions and `fs.Matrix` built from scalars.  There is no
data-dependent control flow (every guard is an `fs.select`) and no global memory; the one loop
is the 3x3 SVD's fixed number of Jacobi sweeps (a runtime loop, as Taichi's: it compiles
faster than unrolled).

Guards use the "double select" pattern: where a formula would divide by zero, its *inputs* are
replaced by harmless values (`fs.select(ok, x, 1.0)`) before the division, so that neither the
value nor the gradient of the untaken side can become NaN/inf.

Conventions and arithmetic are Taichi 1.7.4's: with `fast_math=False` the results agree with
`ti.svd` / `ti.polar_decompose` bit for bit (f32 and f64; measured on 2,500 matrices of each
kind, docs/COMPAT.md block gh-svdbits; 3x3 polar up to the sign of some zeros).

* 2x2 `polar_decompose(A) -> (R, S)`: R = B / sqrt|det B| with B = [[a + d, b - c],
  [c - b, d + a]] (det A >= 0; a rotation) or [[a - d, b + c], [c + b, d - a]] (a reflection),
  S = (A.T A + |det A| I) / sqrt|det B|; (I, A) for the zero matrix.
* 2x2 `svd(A) -> (U, sig, V)`: S from the polar decomposition, then one Jacobi rotation
  (t = S01 / (tau +- sqrt(tau^2 + S01^2)), c = 1 / sqrt(t^2 + 1), s = -t c), the rotated
  diagonal as sig, swapped into decreasing order with V turned a quarter; an off-diagonal
  |S01| < 1e-5 counts as zero (V = I or the quarter turn). V is a rotation, U = R V, so
  det(U) = sign(det A).
* 3x3 `svd(A)`: McAdams, Selle, Tamstorf, Teran, Sifakis (2011), "Computing the singular value
  decomposition of 3x3 matrices with minimal branching and elementary floating point
  operations", in the operation order of its published scalar listing: approximate-Givens
  Jacobi sweeps on A.T A accumulated in a quaternion (5 sweeps in f32, 8 in f64, as Taichi),
  V from the quaternion, columns of A V sorted by norm (with a sign flip per swap), then a
  Givens QR giving U and sig.  The listing's constants are float32 literals (also in f64) and
  its 1/sqrt gets one Newton step.  U and V are rotations; sig = diag(s0 >= s1 >= |s2|), the
  sign of det(A) in s2.
* 3x3 `polar_decompose(A)`: R = U V.T, S = V sig V.T from the SVD (R a rotation).

All branches of the algorithms are `fs.select`s; where a formula would divide by zero on the
untaken side its inputs are replaced first (`fs.select(ok, x, 1.0)`), so reverse mode (checked
against float64 central differences, tests/lang/test_linalg_bits.py) never meets NaN/inf.
"""
import numpy as np

import fieldsim as fs
from fieldsim.matrixfree import LinearOperator, MatrixFreeBICGSTAB, MatrixFreeCG
from fieldsim.sparse_matrix import SparseMatrix, SparseMatrixBuilder
from fieldsim.sparse_solver import SparseCG, SparseSolver


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


# ---------------------------------------------------------------------------------------------
# 2x2
# ---------------------------------------------------------------------------------------------
@fs.pyfunc
def polar_decompose2d(A, dt):
    """(R, S) with A = R @ S, S symmetric PSD; R a rotation, or a reflection if det(A) < 0."""
    a, b, c, d = _entries2x2(A, dt)
    det = a * d - c * b
    neg = det < 0.0
    # det >= 0: R = [[a + d, b - c], [c - b, d + a]] / r ; det < 0: [[a - d, b + c], [c + b, d - a]]
    # / r; each entry formed on its own, as Taichi does (the signs of zeros follow)
    r00 = fs.select(neg, a - d, a + d)
    r01 = fs.select(neg, b + c, b - c)
    r10 = fs.select(neg, c + b, c - b)
    r11 = fs.select(neg, d - a, d + a)
    nonzero = (a != 0.0) | (b != 0.0) | (c != 0.0) | (d != 0.0)  # Taichi: (I, A) for A = 0
    r2 = fs.abs(r00 * r11 - r10 * r01)
    inv = 1.0 / fs.sqrt(fs.select(nonzero, r2, 1.0))
    one = _cast(1.0, dt)
    zero = _cast(0.0, dt)
    R = fs.Matrix([[fs.select(nonzero, r00 * inv, one), fs.select(nonzero, r01 * inv, zero)],
                   [fs.select(nonzero, r10 * inv, zero), fs.select(nonzero, r11 * inv, one)]])
    # S = (A.T @ A + |det A| I) / r, as Taichi 1.7.4 computes it: symmetric by construction
    adet = fs.abs(det)
    s00 = fs.select(nonzero, (a * a + c * c + adet) * inv, a)
    # (Taichi adds |det A| I whole: + |det A| * 0 off the diagonal turns a -0 into +0)
    s01 = fs.select(nonzero, ((a * b + c * d) + adet * 0.0) * inv, b)
    s10 = fs.select(nonzero, ((b * a + d * c) + adet * 0.0) * inv, c)
    s11 = fs.select(nonzero, (b * b + d * d + adet) * inv, d)
    S = fs.Matrix([[s00, s01], [s10, s11]])
    return R, S


@fs.pyfunc
def svd2d(A, dt):
    """(U, sig, V) with A = U @ sig @ V.T, sig = diag(s0 >= s1), V a rotation: the symmetric
    polar factor S diagonalised by one Jacobi rotation (tangent of the smaller angle), in
    Taichi 1.7.4's operation order."""
    R, S = polar_decompose2d(A, dt)
    p = S[0, 0]
    q = S[1, 1]
    o = S[0, 1]
    # as Taichi: an off-diagonal under 1e-5 is taken as zero (V = I or the quarter turn that
    # sorts the diagonal); an angle from it would be rounding noise (near-identity MPM F)
    diagonal = fs.abs(o) < 1e-5
    tau = _cast(0.5, dt) * (p - q)
    os = fs.select(diagonal, 1.0, o)  # the untaken side stays finite (values and adjoints)
    w = fs.sqrt(tau * tau + os * os)
    t = os / fs.select(tau > 0.0, tau + w, tau - w)
    ct = 1.0 / fs.sqrt(t * t + 1.0)
    st = -t * ct
    one = _cast(1.0, dt)
    zero = _cast(0.0, dt)
    c = fs.select(diagonal, one, ct)
    s = fs.select(diagonal, zero, st)
    s0 = fs.select(diagonal, p, ((c * c) * p - ((2.0 * c) * s) * o) + (s * s) * q)
    s1 = fs.select(diagonal, q, ((s * s) * p + ((2.0 * c) * s) * o) + (c * c) * q)
    swap = s0 < s1
    v00 = fs.select(swap, -s, c)
    v01 = fs.select(swap, c, s)
    v10 = fs.select(swap, -c, -s)
    v11 = fs.select(swap, -s, c)
    V = fs.Matrix([[v00, v01], [v10, v11]])
    U = fs.Matrix([[R[0, 0] * v00 + R[0, 1] * v10, R[0, 0] * v01 + R[0, 1] * v11],
                   [R[1, 0] * v00 + R[1, 1] * v10, R[1, 0] * v01 + R[1, 1] * v11]])
    sig = fs.Matrix([[fs.select(swap, s1, s0), zero], [zero, fs.select(swap, s0, s1)]])
    return U, sig, V


# ---------------------------------------------------------------------------------------------
# 3x3: McAdams et al. 2011, "Computing the singular value decomposition of 3x3 matrices with
# minimal branching and elementary floating point operations", in the operation order of its
# published scalar listing (which Taichi 1.7.4 compiles), so that results agree bit for bit.
# The listing's bit masks are `fs.select`s here (a masked AND/OR/XOR picks one of two values).
# ---------------------------------------------------------------------------------------------
def _f32_literal(x):
    """Plain Python: `x` rounded to float32, as the listing writes its constants (`5.828...f`);
    in f64 the float32 value is widened, not the exact one."""
    return float(np.float32(x))


_FOUR_GAMMA_SQ = _f32_literal(5.82842712474619)  # (1 + sqrt 2)^2: tan^2(pi/8) test
_SIN_PI_8 = _f32_literal(0.3826834323650897)
_COS_PI_8 = _f32_literal(0.9238795325112867)
_TINY = _f32_literal(1e-20)
_SMALL = _f32_literal(1e-12)


def _mcadams_sweeps(dt):
    """Plain Python: Jacobi sweeps of the 3x3 SVD, 5 in f32 and 8 in f64 (Taichi's counts)."""
    t = _fp(dt)
    if t is float:
        t = fs.cfg.default_fp
    return 8 if t == fs.f64 else 5


@fs.pyfunc
def _rsqrt_refined(x):
    """1/sqrt(x) with the listing's Newton step: r + r/2 - x r (r r/2)."""
    r = fs.rsqrt(x)
    h = r * 0.5
    return (r + h) - x * (r * (r * h))


@fs.pyfunc
def _jacobi_conjugate(pp, qq, rr, qp, rp, rq, dt):
    """One approximate Givens conjugation of the symmetric S on the plane (p, q); r is the
    third index.  Returns the updated (pp, qq, rr, qp, rp, rq) and the quaternion half angle
    (ch, sh)."""
    sh = qp * 0.5
    d = pp - qq
    ok = sh * sh >= _cast(_TINY, dt)
    sh = fs.select(ok, sh, 0.0)
    ch = fs.select(ok, d, 1.0)
    sh2 = sh * sh
    ch2 = ch * ch
    r = fs.rsqrt(sh2 + ch2)
    sh = r * sh
    ch = r * ch
    far = ch2 <= _cast(_FOUR_GAMMA_SQ, dt) * sh2  # angle beyond pi/8: take pi/8 itself
    sh = fs.select(far, _cast(_SIN_PI_8, dt), sh)
    ch = fs.select(far, _cast(_COS_PI_8, dt), ch)
    sh2 = sh * sh
    ch2 = ch * ch
    c = ch2 - sh2
    s = ch * sh
    s = s + s
    scale = sh2 + ch2  # the unnormalised quaternion's squared length
    rr = rr * scale * scale  # the listing scales S_rr twice
    rp = rp * scale
    rq = rq * scale
    rp, rq = s * rq + c * rp, c * rq - s * rp
    s2 = s * s
    c2 = c * c
    pp, qq = pp * c2 + qq * s2, qq * c2 + pp * s2
    cs = c * s
    two = (qp + qp) * cs
    qp = qp * (c2 - s2) - d * cs
    return pp + two, qq - two, rr, qp, rp, rq, ch, sh


@fs.pyfunc
def _quat_turn(qs, qa, qb, qr, ch, sh):
    """The accumulated quaternion times the half-angle rotation about axis r (a, b, r cyclic)."""
    ta = sh * qa
    tb = sh * qb
    tr = sh * qr
    sh = sh * qs
    return ch * qs - tr, ch * qa + tb, ch * qb - ta, ch * qr + sh


@fs.pyfunc
def _qr_givens(app, aqp, dt):
    """The listing's Givens rotation (c, s) zeroing aqp against app (sign-folding: app < 0
    swaps the half-angle pair)."""
    small = _cast(_SMALL, dt)
    sh = fs.select(aqp * aqp >= small, aqp, 0.0)
    ch = fs.max(fs.max(0.0 - app, app), small)
    pos = app >= 0.0
    n = ch * ch + sh * sh
    ch = ch + _rsqrt_refined(n) * n
    ch, sh = fs.select(pos, ch, sh), fs.select(pos, sh, ch)
    r = _rsqrt_refined(ch * ch + sh * sh)
    ch = ch * r
    sh = sh * r
    s = sh * ch
    return ch * ch - sh * sh, s + s


@fs.pyfunc
def _turn(c, s, x, y):
    """(c x + s y, c y - s x), each product rounded on its own."""
    return c * x + s * y, c * y - s * x


@fs.pyfunc
def _sort_swap(B, V, rho, i, j, k):
    """Columns i and j of B and V (and their squared norms) exchanged where rho_i < rho_j;
    column k (i or j) then negated, so that V stays a rotation."""
    sw = rho[i] < rho[j]
    ri = rho[i]
    rho[i] = fs.select(sw, rho[j], ri)
    rho[j] = fs.select(sw, ri, rho[j])
    for r in fs.static(range(3)):
        bi = B[r, i]
        B[r, i] = fs.select(sw, B[r, j], bi)
        B[r, j] = fs.select(sw, bi, B[r, j])
        B[r, k] = fs.select(sw, -B[r, k], B[r, k])
        vi = V[r, i]
        V[r, i] = fs.select(sw, V[r, j], vi)
        V[r, j] = fs.select(sw, vi, V[r, j])
        V[r, k] = fs.select(sw, -V[r, k], V[r, k])
    return B, V, rho


@fs.pyfunc
def svd3d(A, dt):
    """(U, sig, V) with A = U @ sig @ V.T, U, V rotations, sig = diag(s0 >= s1 >= |s2|)."""
    B = _cast(A, dt)
    # S = A.T A, lower triangle, each sum ((x0 x0 + x1 x1) + x2 x2)
    s00 = (B[0, 0] * B[0, 0] + B[1, 0] * B[1, 0]) + B[2, 0] * B[2, 0]
    s10 = (B[0, 1] * B[0, 0] + B[1, 1] * B[1, 0]) + B[2, 1] * B[2, 0]
    s20 = (B[0, 2] * B[0, 0] + B[1, 2] * B[1, 0]) + B[2, 2] * B[2, 0]
    s11 = (B[0, 1] * B[0, 1] + B[1, 1] * B[1, 1]) + B[2, 1] * B[2, 1]
    s21 = (B[0, 2] * B[0, 1] + B[1, 2] * B[1, 1]) + B[2, 2] * B[2, 1]
    s22 = (B[0, 2] * B[0, 2] + B[1, 2] * B[1, 2]) + B[2, 2] * B[2, 2]
    qs = _cast(1.0, dt)
    qx = _cast(0.0, dt)
    qy = _cast(0.0, dt)
    qz = _cast(0.0, dt)
    # unrolled (Taichi loops at run time): a loop over elements calling svd then holds no inner
    # loop and LLVM vectorizes it: 12x faster per SVD, for 1.5-2x that kernel's compile
    for _sweep in fs.static(range(_mcadams_sweeps(dt))):
        s00, s11, s22, s10, s20, s21, ch, sh = _jacobi_conjugate(s00, s11, s22, s10, s20, s21, dt)
        qs, qx, qy, qz = _quat_turn(qs, qx, qy, qz, ch, sh)
        s11, s22, s00, s21, s10, s20, ch, sh = _jacobi_conjugate(s11, s22, s00, s21, s10, s20, dt)
        qs, qy, qz, qx = _quat_turn(qs, qy, qz, qx, ch, sh)
        s22, s00, s11, s20, s21, s10, ch, sh = _jacobi_conjugate(s22, s00, s11, s20, s21, s10, dt)
        qs, qz, qx, qy = _quat_turn(qs, qz, qx, qy, ch, sh)
    # V from the normalised quaternion
    r = _rsqrt_refined(qz * qz + (qy * qy + (qx * qx + qs * qs)))
    qs = qs * r
    qx = qx * r
    qy = qy * r
    qz = qz * r
    xx = qx * qx
    yy = qy * qy
    zz = qz * qz
    ss = qs * qs
    x2 = qx + qx
    y2 = qy + qy
    z2 = qz + qz
    sx = qs * x2
    sy = qs * y2
    sz = qs * z2
    xy = qy * x2
    yz = qz * y2
    zx = qx * z2
    V = fs.Matrix([[((ss + xx) - yy) - zz, xy - sz, zx + sy],
                   [xy + sz, ((ss - xx) + yy) - zz, yz - sx],
                   [zx - sy, yz + sx, ((ss - xx) - yy) + zz]])
    # B = A V, each entry ((a_i0 v0j + a_i1 v1j) + a_i2 v2j)
    B = _mul3(B, V, False)
    rho = fs.Vector([(B[0, 0] * B[0, 0] + B[1, 0] * B[1, 0]) + B[2, 0] * B[2, 0],
                     (B[0, 1] * B[0, 1] + B[1, 1] * B[1, 1]) + B[2, 1] * B[2, 1],
                     (B[0, 2] * B[0, 2] + B[1, 2] * B[1, 2]) + B[2, 2] * B[2, 2]])
    B, V, rho = _sort_swap(B, V, rho, 0, 1, 1)
    B, V, rho = _sort_swap(B, V, rho, 0, 2, 0)
    B, V, rho = _sort_swap(B, V, rho, 1, 2, 2)
    # QR by three Givens rotations on the rows (0, 1), (0, 2), (1, 2); U accumulates them
    one = _cast(1.0, dt)
    zero = _cast(0.0, dt)
    U = fs.Matrix([[one, zero, zero], [zero, one, zero], [zero, zero, one]])
    for p, q in fs.static(((0, 1), (0, 2), (1, 2))):
        c, s = _qr_givens(B[p, p], B[q, p], dt)
        for j in fs.static(range(3)):
            bp, bq = _turn(c, s, B[p, j], B[q, j])
            B[p, j] = bp
            B[q, j] = bq
            up, uq = _turn(c, s, U[j, p], U[j, q])
            U[j, p] = up
            U[j, q] = uq
    sig = fs.Matrix([[B[0, 0], zero, zero], [zero, B[1, 1], zero], [zero, zero, B[2, 2]]])
    return U, sig, V


@fs.pyfunc
def _rot(c, s, x, y):
    """The plane rotation (x, y) -> (c x + s y, c y - s x), for scalars or vectors."""
    return c * x + s * y, c * y - s * x


@fs.pyfunc
def _mul3(X, Y, transpose_y):
    """X @ Y (or X @ Y.T), each entry summed left to right as a kernel's `@` does (also in
    Python scope, where NumPy's product may round otherwise)."""
    if fs.static(transpose_y):
        return fs.Matrix([[(X[i, 0] * Y[j, 0] + X[i, 1] * Y[j, 1]) + X[i, 2] * Y[j, 2]
                           for j in fs.static(range(3))] for i in fs.static(range(3))])
    return fs.Matrix([[(X[i, 0] * Y[0, j] + X[i, 1] * Y[1, j]) + X[i, 2] * Y[2, j]
                       for j in fs.static(range(3))] for i in fs.static(range(3))])

@fs.pyfunc
def polar_decompose3d(A, dt):
    """(R, S) with A = R @ S: R = U V.T a rotation, S = V sig V.T symmetric (PSD when
    det(A) >= 0), from the 3x3 SVD, as Taichi 1.7.4 forms them."""
    U, sig, V = svd3d(A, dt)
    R = _mul3(U, V, True)
    S = _mul3(_mul3(V, sig, False), V, True)
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
