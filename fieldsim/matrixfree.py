"""`ti.linalg.LinearOperator`, `MatrixFreeCG`, `MatrixFreeBICGSTAB`: Krylov solvers whose matrix
is a user's kernel `matvec(x, Ax)`.

Takes fields `b` and `x` (scalar f32 or f64, 1-3 dimensions, the same shape and dtype) and a
`LinearOperator` wrapping a kernel that writes A x into its second field argument. Solves
A x = b in place of `x`, starting from `x`, with Taichi 1.7's argument names and defaults; every
step (the matvec, dot products, axpy updates) is a fieldsim kernel over the fields, so nothing
leaves the device between iterations except the scalars of the dot products.

Guarantees: returns True when the residual's 2-norm fell below `tol` within `maxiter`
iterations (False otherwise, `x` then holds the last iterate); a dtype or shape mismatch is a
`FieldsimTypeError` / `FieldsimRuntimeError` naming both fields before anything runs; a step
that would divide by zero (A singular, or not positive definite for CG) raises
`SolverBreakdownError`, a ZeroDivisionError as Taichi's.
`MatrixFreeCG` needs A symmetric positive definite, `MatrixFreeBICGSTAB` only nonsingular.
Taichi's CG compares the squared residual with `tol` for its return value; fieldsim compares
the norm, the same test that ends the iterations.
"""
from __future__ import annotations

import math

from fieldsim.errors import FieldsimError, FieldsimRuntimeError, FieldsimTypeError
from fieldsim.lang import types as T
from fieldsim.lang.field import Field, field
from fieldsim.lang.kernel import kernel, template
from fieldsim.lang.naming import user_loc
from fieldsim.lang.ops import cast, grouped

__all__ = ["LinearOperator", "MatrixFreeBICGSTAB", "MatrixFreeCG"]


class LinearOperator:
    """A matrix given by its product: `matvec(x, Ax)` is a kernel writing A x into `Ax`.

    >>> n = 4
    >>> @fs.kernel
    ... def twice(v: fs.template(), out: fs.template()):
    ...     for i in v:
    ...         out[i] = 2 * v[i]
    >>> b, x = fs.field(fs.f32, shape=n), fs.field(fs.f32, shape=n)
    >>> b.fill(1.0)
    >>> fs.linalg.MatrixFreeCG(fs.linalg.LinearOperator(twice), b, x)
    True
    >>> x.to_numpy().tolist()
    [0.5, 0.5, 0.5, 0.5]
    """

    def __init__(self, matvec_kernel):
        if not callable(matvec_kernel):
            raise FieldsimTypeError("LinearOperator takes a kernel matvec(x, Ax); got "
                                    f"{type(matvec_kernel).__name__}", user_loc())
        self._matvec = matvec_kernel

    def matvec(self, x, Ax):
        if x.shape != Ax.shape:
            raise FieldsimRuntimeError(f"LinearOperator.matvec: x has shape {x.shape}, Ax "
                                       f"{Ax.shape}", user_loc())
        self._matvec(x, Ax)


@kernel
def _dot(p: template(), q: template()) -> T.f64:
    total: T.f64 = 0.0  # an f64 sum for any field type (a bare 0.0 is default_fp)
    for i in grouped(p):
        total += p[i] * q[i]
    return total


@kernel
def _residual(b: template(), ax: template(), r: template()):
    for i in grouped(b):
        r[i] = b[i] - ax[i]


@kernel
def _axpy(y: template(), a: T.f64, x: template()):
    for i in grouped(y):
        y[i] += cast(a * x[i], y.dtype)  # the field's type, as the store makes it anyway


@kernel
def _xpay(y: template(), x: template(), a: T.f64):
    """y = x + a y."""
    for i in grouped(y):
        y[i] = cast(x[i] + a * y[i], y.dtype)


@kernel
def _combine(out: template(), x: template(), a: T.f64, y: template()):
    """out = x + a y."""
    for i in grouped(out):
        out[i] = cast(x[i] + a * y[i], out.dtype)


def _work_fields(b, x, names: str, count: int) -> list:
    for name, value in (("b", b), ("x", x)):
        if not isinstance(value, Field):
            raise FieldsimTypeError(f"{names}: {name} must be a ti.field; got "
                                    f"{type(value).__name__}", user_loc())
    if b.dtype != x.dtype:
        raise FieldsimTypeError(f"{names}: b is {b.dtype} but x is {x.dtype}", user_loc())
    if b.dtype not in (T.f32, T.f64) or b.element_shape:
        raise FieldsimTypeError(f"{names}: b and x must be scalar f32 or f64 fields; got "
                                f"{b.dtype} elements of shape {b.element_shape}", user_loc())
    if b.shape != x.shape:
        raise FieldsimRuntimeError(f"{names}: b has shape {b.shape} but x {x.shape}",
                                   user_loc())
    if not 1 <= len(b.shape) <= 3:
        raise FieldsimRuntimeError(f"{names} takes 1-D to 3-D fields; got {len(b.shape)}-D",
                                   user_loc())
    return [field(b.dtype, shape=b.shape) for _ in range(count)]


class SolverBreakdownError(FieldsimError, ZeroDivisionError):
    """A Krylov step would divide by zero. A ZeroDivisionError, as Taichi's solvers raise
    there."""


def _breakdown(name: str, it: int, what: str):
    raise SolverBreakdownError(f"{name}: {what} is 0 at iteration {it} (A singular, or not "
                               "positive definite for CG); x holds the last iterate", user_loc())


def _log(quiet, text):
    if not quiet:
        print(text)


def MatrixFreeCG(A: LinearOperator, b, x, tol=1e-6, maxiter=5000, quiet=True) -> bool:
    """Conjugate gradients for a symmetric positive definite A (see the module docstring)."""
    r, p, ap = _work_fields(b, x, "MatrixFreeCG", 3)
    A.matvec(x, ap)
    _residual(b, ap, r)
    p.copy_from(r)
    rr = _dot(r, r)
    _log(quiet, f">>> Initial residual = {math.sqrt(rr):e}")
    for it in range(maxiter):
        if math.sqrt(rr) < tol:
            _log(quiet, f">>> Conjugate Gradient method converged after {it} iterations.")
            return True
        A.matvec(p, ap)
        pap = _dot(p, ap)
        if pap == 0.0:
            _breakdown("MatrixFreeCG", it, "p.Ap")
        alpha = rr / pap
        _axpy(x, alpha, p)
        _axpy(r, -alpha, ap)
        rr, rr_old = _dot(r, r), rr
        _xpay(p, r, rr / rr_old)
        _log(quiet, f">>> Iter = {it + 1:4}, Residual = {math.sqrt(rr):e}")
    return math.sqrt(rr) < tol


def MatrixFreeBICGSTAB(A: LinearOperator, b, x, tol=1e-6, maxiter=5000, quiet=True) -> bool:
    """BiCGSTAB for a nonsingular A (see the module docstring)."""
    r, r0, p, v, s, t = _work_fields(b, x, "MatrixFreeBICGSTAB", 6)
    A.matvec(x, v)
    _residual(b, v, r)
    r0.copy_from(r)
    p.copy_from(r)
    rho = _dot(r0, r)
    for it in range(maxiter):
        if math.sqrt(_dot(r, r)) < tol:
            _log(quiet, f">>> BiCGSTAB converged after {it} iterations.")
            return True
        A.matvec(p, v)
        r0v = _dot(r0, v)
        if r0v == 0.0:
            _breakdown("MatrixFreeBICGSTAB", it, "r0.v")
        alpha = rho / r0v
        _combine(s, r, -alpha, v)
        A.matvec(s, t)
        tt = _dot(t, t)
        omega = _dot(t, s) / tt if tt else 0.0
        _axpy(x, alpha, p)
        _axpy(x, omega, s)
        _combine(r, s, -omega, t)
        rho, rho_old = _dot(r0, r), rho
        if rho == 0.0 or omega == 0.0:  # breakdown: the last iterate stands
            break
        beta = (rho / rho_old) * (alpha / omega)
        _axpy(p, -omega, v)
        _xpay(p, r, beta)
        _log(quiet, f">>> Iter = {it + 1:4}, Residual = {math.sqrt(_dot(r, r)):e}")
    return math.sqrt(_dot(r, r)) < tol
