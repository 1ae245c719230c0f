"""Eigen-decompositions of small matrices for kernel scope: `fs.sym_eig` (2x2, 3x3 symmetric)
and `fs.eig` (2x2 real), Taichi's `ti.sym_eig` / `ti.eig`.

Everything is ordinary fieldsim DSL code (`@fs.pyfunc`: also callable from Python scope),
inlined into the calling kernel.  Results follow Taichi 1.7.4's conventions and arithmetic, so
that a program gets the same bits where Taichi's result is right:

* 2x2 `sym_eig(A) -> (w, Q)`: w = (l1, l2) in *decreasing* order, l = (tr +- sqrt(gap)) / 2
  with gap = tr^2 - 4 det; the eigenvector of l1 is the normalised first column of A - l2 I
  (those columns span its eigenspace), and that of l2 the first column of A - l1 I; a multiple
  of the identity gives the columns (0, 1), (1, 0).
* 3x3 `sym_eig(A) -> (w, Q)`: w in *increasing* order, the columns of Q the eigenvectors.
  The analytic method of Kopp, "Efficient numerical diagonalization of hermitian 3x3
  matrices" (2008): eigenvalues by Cardano's trigonometric formula on the characteristic
  polynomial, the first two eigenvectors as cross products of the first two rows of A - w I,
  the third as their cross product; where one of those cross products is too small to
  normalise (nearly repeated eigenvalues), cyclic Jacobi rotations instead.
* 2x2 `eig(A) -> (w, V)`: w is 2x2, row i = (Re, Im) of eigenvalue i (the one with + sqrt
  first); V is 4x2, column i = (Re v0, Im v0, Re v1, Im v1) of its normalised eigenvector.

Where Taichi 1.7.4's result is not an eigen-decomposition, fieldsim's differs (docs/COMPAT.md):
a zero first column (a diagonal, non-scalar 2x2 matrix) gives Taichi NaN vectors and fieldsim
the normalised second column; a gap rounded below zero gives Taichi NaN, fieldsim a repeated
eigenvalue; for nearly repeated 3x3 eigenvalues Taichi's iterative fallback starts from a
partly filled matrix and returns vectors that are not eigenvectors, fieldsim Jacobi's.
Symmetry is not checked (Taichi asserts it in debug mode); the 3x3 method reads the diagonal and
the upper triangle.
"""
import math

import fieldsim as fs
from fieldsim.linalg import _cast, _entries2x2, _jacobi_pair, _rot

_SQRT3_INV = 1.0 / math.sqrt(3.0)
# Kopp's threshold for normalising a cross-product eigenvector: 256 double epsilons, scaled by
# the square of the largest eigenvalue magnitude (or its 4th power above 1)
_KOPP_EPS = 256.0 * 2.2204460492503131e-16
_JACOBI_SWEEPS = 5


# ---------------------------------------------------------------------------------------------
# 2x2
# ---------------------------------------------------------------------------------------------
@fs.pyfunc
def _column_direction(c00, c10, c01, c11):
    """A nonzero column of the 2x2 matrix [[c00, c01], [c10, c11]]: the first unless it is zero
    (then Taichi divides 0 by 0)."""
    first = (c00 != 0.0) | (c10 != 0.0)
    return fs.select(first, c00, c01), fs.select(first, c10, c11)


@fs.pyfunc
def _unit2(x, y):
    """(x, y) normalised as Taichi's `normalized()`: times 1 / |(x, y)|."""
    inv = 1.0 / fs.sqrt(x * x + y * y)
    return x * inv, y * inv


@fs.pyfunc
def sym_eig2x2(A, dt):
    """(w, Q) of a symmetric 2x2 matrix: w decreasing, Q's columns the eigenvectors."""
    a00, a01, a10, a11 = _entries2x2(A, dt)
    tr = a00 + a11
    det = a00 * a11 - a01 * a10
    root = fs.sqrt(fs.max(tr * tr - 4 * det, 0.0))
    l1 = (tr + root) * 0.5
    l2 = (tr - root) * 0.5
    scalar = (a00 == l1) & (a01 == 0.0) & (a10 == 0.0) & (a11 == l1)
    x1, y1 = _unit2(*_column_direction(a00 - l2, a10, a01, a11 - l2))
    x2, y2 = _unit2(*_column_direction(a00 - l1, a10, a01, a11 - l1))
    one = _cast(1.0, dt)
    zero = _cast(0.0, dt)
    Q = fs.Matrix([[fs.select(scalar, zero, x1), fs.select(scalar, one, x2)],
                   [fs.select(scalar, one, y1), fs.select(scalar, zero, y2)]])
    return fs.Vector([l1, l2]), Q


@fs.pyfunc
def eig2x2(A, dt):
    """(w, V) of a real 2x2 matrix in Taichi's complex layout (module docstring)."""
    a00, a01, a10, a11 = _entries2x2(A, dt)
    tr = a00 + a11
    gap = tr * tr - 4 * (a00 * a11 - a01 * a10)
    real = gap > 0.0  # as Taichi: gap == 0 takes the complex branch (imaginary parts +-0)
    root = fs.sqrt(fs.abs(gap))
    zero = _cast(0.0, dt)
    # (tr +- root) / 2 when real; (tr +- i root) / 2 otherwise
    re1 = fs.select(real, tr + root, tr) * 0.5
    re2 = fs.select(real, tr - root, tr) * 0.5
    im1 = fs.select(real, zero, root * 0.5)
    im2 = fs.select(real, zero, -root * 0.5)
    # the eigenvector of 1 is a column of A - l2 I and vice versa; with complex eigenvalues
    # the first column, whose imaginary part -Im(l2) = Im(l1) is nonzero.  Entries formed as
    # Taichi's A - l I does (a10 - l * 0: the signs of zeros follow)
    b10 = a10 - re2 * 0.0
    d10 = a10 - re1 * 0.0
    c1x, c1y = _column_direction(a00 - re2, b10, a01, a11 - re2)
    c2x, c2y = _column_direction(a00 - re1, d10, a01, a11 - re1)
    v1 = fs.Vector([fs.select(real, c1x, a00 - re2), fs.select(real, zero, -im2),
                    fs.select(real, c1y, b10), fs.select(real, zero, -im2 * 0.0)])
    v2 = fs.Vector([fs.select(real, c2x, a00 - re1), fs.select(real, zero, -im1),
                    fs.select(real, c2y, d10), fs.select(real, zero, -im1 * 0.0)])
    scalar = (a00 == re1) & (a01 == 0.0) & (a10 == 0.0) & (a11 == re1)
    v1 = v1.normalized()
    v2 = v2.normalized()
    one = _cast(1.0, dt)
    v1 = fs.Vector([fs.select(scalar, zero, v1[0]), fs.select(scalar, zero, v1[1]),
                    fs.select(scalar, one, v1[2]), fs.select(scalar, zero, v1[3])])
    v2 = fs.Vector([fs.select(scalar, one, v2[0]), fs.select(scalar, zero, v2[1]),
                    fs.select(scalar, zero, v2[2]), fs.select(scalar, zero, v2[3])])
    w = fs.Matrix([[re1, im1], [re2, im2]])
    V = fs.Matrix([[v1[0], v2[0]], [v1[1], v2[1]], [v1[2], v2[2]], [v1[3], v2[3]]])
    return w, V


# ---------------------------------------------------------------------------------------------
# 3x3
# ---------------------------------------------------------------------------------------------
@fs.pyfunc
def _cardano3(a00, a01, a02, a11, a12, a22):
    """The eigenvalues (w0, w1, w2) of the symmetric matrix, unsorted (Kopp's dsyevc3)."""
    m = a00 + a11 + a22
    dd = a01 * a01
    ee = a12 * a12
    ff = a02 * a02
    c1 = a00 * a11 + a00 * a22 + a11 * a22 - (dd + ee + ff)
    c0 = a22 * dd + a00 * ee + a11 * ff - a00 * a11 * a22 - 2.0 * a02 * a01 * a12
    p = m * m - 3.0 * c1
    q = m * (p - 1.5 * c1) - 13.5 * c0
    sqrt_p = fs.sqrt(fs.abs(p))
    phi = 27.0 * (0.25 * c1 * c1 * (p - c1) + c0 * (q + 6.75 * c0))
    phi = (1.0 / 3.0) * fs.atan2(fs.sqrt(fs.abs(phi)), q)
    c = sqrt_p * fs.cos(phi)
    s = _SQRT3_INV * sqrt_p * fs.sin(phi)
    w1 = (1.0 / 3.0) * (m - c)
    return w1 + c, w1 - s, w1 + s


@fs.pyfunc
def _cross_vector(a00, a11, a02, a12, base, w):
    """(A0 - w e0) x (A1 - w e1), from the w-free part `base` (Kopp's grouping)."""
    return fs.Vector([base[0] + a02 * w, base[1] + a12 * w, (a00 - w) * (a11 - w) - base[2]])


@fs.pyfunc
def _jacobi_sym3(a00, a01, a02, a11, a12, a22):
    """(w, Q) by cyclic Jacobi rotations, for nearly repeated eigenvalues (unsorted)."""
    one = a00 * 0.0 + 1.0
    zero = a00 * 0.0
    q0 = fs.Vector([one, zero, zero])
    q1 = fs.Vector([zero, one, zero])
    q2 = fs.Vector([zero, zero, one])
    for _sweep in fs.static(range(_JACOBI_SWEEPS)):
        c, s, h = _jacobi_pair(a00, a11, a01)
        a00, a11, a01 = a00 + h, a11 - h, zero
        a02, a12 = _rot(c, s, a02, a12)
        q0, q1 = _rot(c, s, q0, q1)
        c, s, h = _jacobi_pair(a00, a22, a02)
        a00, a22, a02 = a00 + h, a22 - h, zero
        a01, a12 = _rot(c, s, a01, a12)
        q0, q2 = _rot(c, s, q0, q2)
        c, s, h = _jacobi_pair(a11, a22, a12)
        a11, a22, a12 = a11 + h, a22 - h, zero
        a01, a02 = _rot(c, s, a01, a02)
        q1, q2 = _rot(c, s, q1, q2)
    return fs.Vector([a00, a11, a22]), q0, q1, q2


@fs.pyfunc
def _sort_eigenpair(wa, wb, qa, qb):
    """Order one pair by increasing eigenvalue."""
    sw = wb < wa
    return (fs.select(sw, wb, wa), fs.select(sw, wa, wb),
            fs.Vector([fs.select(sw, qb[k], qa[k]) for k in fs.static(range(3))]),
            fs.Vector([fs.select(sw, qa[k], qb[k]) for k in fs.static(range(3))]))


@fs.pyfunc
def sym_eig3x3(A, dt):
    """(w, Q) of a symmetric 3x3 matrix: w increasing, Q's columns the eigenvectors."""
    a00 = _cast(A[0, 0], dt)
    a01 = _cast(A[0, 1], dt)
    a02 = _cast(A[0, 2], dt)
    a11 = _cast(A[1, 1], dt)
    a12 = _cast(A[1, 2], dt)
    a22 = _cast(A[2, 2], dt)
    w0, w1, w2 = _cardano3(a00, a01, a02, a11, a12, a22)
    t = fs.max(fs.abs(w0), fs.abs(w1), fs.abs(w2))
    u = fs.select(t < 1.0, t, t * t)
    error = _KOPP_EPS * u * u
    base = fs.Vector([a01 * a12 - a02 * a11, a02 * a01 - a12 * a00, a01 * a01])
    q0 = _cross_vector(a00, a11, a02, a12, base, w0)
    n0 = q0.dot(q0)
    q1 = _cross_vector(a00, a11, a02, a12, base, w1)
    n1 = q1.dot(q1)
    ok = (n0 > error) & (n1 > error)
    q0 = q0 * fs.sqrt(1.0 / fs.select(ok, n0, 1.0))
    q1 = q1 * fs.sqrt(1.0 / fs.select(ok, n1, 1.0))
    q2 = q0.cross(q1)
    w = fs.Vector([w0, w1, w2])
    if not ok:
        w, q0, q1, q2 = _jacobi_sym3(a00, a01, a02, a11, a12, a22)
    e0, e1, e2 = w[0], w[1], w[2]
    e0, e1, q0, q1 = _sort_eigenpair(e0, e1, q0, q1)
    e0, e2, q0, q2 = _sort_eigenpair(e0, e2, q0, q2)
    e1, e2, q1, q2 = _sort_eigenpair(e1, e2, q1, q2)
    Q = fs.Matrix([[q0[0], q1[0], q2[0]], [q0[1], q1[1], q2[1]], [q0[2], q1[2], q2[2]]])
    return fs.Vector([e0, e1, e2]), Q


# ---------------------------------------------------------------------------------------------
# public entry points (fs.sym_eig, fs.eig)
# ---------------------------------------------------------------------------------------------
@fs.pyfunc
def sym_eig(A, dt=None):
    """Eigenvalues and eigenvectors (columns) of a symmetric 2x2 or 3x3 matrix, as Taichi's
    `ti.sym_eig` (2x2: decreasing, 3x3: increasing eigenvalues; module docstring).

    >>> w, Q = fs.sym_eig(fs.Matrix([[2.0, 1.0, 0.0], [1.0, 2.0, 0.0], [0.0, 0.0, 5.0]]))
    >>> np.round(w.to_numpy(), 6).tolist()
    [1.0, 3.0, 5.0]
    """
    fs.static_assert(A.n == A.m and 2 <= A.n <= 3,
                     "sym_eig supports 2x2 and 3x3 matrices only (as Taichi)")
    if fs.static(A.n == 2):
        return sym_eig2x2(A, dt)
    else:
        return sym_eig3x3(A, dt)


@fs.pyfunc
def eig(A, dt=None):
    """Eigenvalues and eigenvectors of a real 2x2 matrix in Taichi's complex layout (`ti.eig`):
    a 2x2 matrix of (Re, Im) rows and a 4x2 matrix of eigenvector columns.

    >>> w, V = fs.eig(fs.Matrix([[0.0, -1.0], [1.0, 0.0]]))  # eigenvalues +i and -i
    >>> w.to_numpy().tolist()
    [[0.0, 1.0], [0.0, -1.0]]
    """
    fs.static_assert(A.n == 2 and A.m == 2, "eig supports 2x2 matrices only (as Taichi)")
    return eig2x2(A, dt)
