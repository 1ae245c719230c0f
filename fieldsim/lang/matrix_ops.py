"""Vector/matrix methods in kernel scope, as scalar IR (the frontend's `MatVal`).

Each entry of `METHODS` takes `(emitter, value, *args, **kwargs)` and returns a scalar or a
`MatVal`; they only combine scalar operations of `Emitter`, so reverse and forward AD need no
matrix-specific rules.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimTypeError, SwizzleError
from fieldsim.ir.dtypes import promote
from fieldsim.ir.ir import Op
from fieldsim.lang.expr import Emitter, MatVal


def norm_sqr(e: Emitter, a: MatVal):
    return e.dot(a, a)


def _plus_eps(e: Emitter, s, eps):
    """`s + eps` as Taichi 1.7.4's norm adds it: its default eps is the Python float 0.0, so an
    f32 vector's norm is default_fp (f64 under `default_fp=ti.f64`) even when eps is zero."""
    if isinstance(eps, float):
        s = e.value(s, promote(e.dtype_of(s), e.fp))
    if not (isinstance(eps, (int, float)) and eps == 0):
        s = e.binop("+", s, eps)
    return s


def norm(e: Emitter, a: MatVal, eps=0.0):
    return e.unop(Op.SQRT, _plus_eps(e, norm_sqr(e, a), eps), float_only=True)


def normalized(e: Emitter, a: MatVal, eps=0.0):
    # Taichi 1.7.4: invlen = 1 / (self.norm() + eps): eps is added to the norm, not under the root
    inv = e.binop("/", 1.0, _plus_eps(e, norm(e, a), eps))
    return e.elementwise("*", a, inv)


def norm_inv(e: Emitter, a: MatVal, eps=0.0):
    return e.binop("/", 1.0, norm(e, a, eps))


def transpose(e: Emitter, a: MatVal):
    if a.ndim == 1:  # as Taichi: a vector has no transpose
        raise FieldsimTypeError("`transpose()` cannot apply to a vector. If you want something like "
                                "`a @ b.transpose()`, write `a.outer_product(b)` instead.")
    return MatVal([a.at(c, r) for r in range(a.m) for c in range(a.n)], a.m, a.n, 2)


def trace(e: Emitter, a: MatVal):
    _square(a, "trace")
    return e.reduce("+", MatVal.vector([a.at(i, i) for i in range(min(a.n, a.m))]))


def _det2(e, a, b, c, d):
    return e.binop("-", e.binop("*", a, d), e.binop("*", b, c))


def determinant(e: Emitter, a: MatVal):
    _square(a, "determinant")
    if a.n == 1:
        return a.at(0, 0)
    if a.n == 2:
        return _det2(e, a.at(0, 0), a.at(0, 1), a.at(1, 0), a.at(1, 1))
    if a.n == 3:  # Taichi's expansion down the first column, product for product
        m = a.at
        t0 = e.binop("*", m(0, 0), _det2(e, m(1, 1), m(2, 1), m(1, 2), m(2, 2)))
        t1 = e.binop("*", m(1, 0), _det2(e, m(0, 1), m(2, 1), m(0, 2), m(2, 2)))
        t2 = e.binop("*", m(2, 0), _det2(e, m(0, 1), m(1, 1), m(0, 2), m(1, 2)))
        return e.binop("+", e.binop("-", t0, t1), t2)
    if a.n == 4:
        acc = None
        for i in range(4):
            t = e.binop("*", a.at(i, 0), _cyclic_minor4(e, a, i, 0))
            t = t if i % 2 == 0 else e.unop(Op.NEG, t) if not isinstance(t, (int, float)) else -t
            acc = t if acc is None else e.binop("+", acc, t)
        return acc
    return _det_laplace(e, a)


def _cyclic_minor4(e, a: MatVal, i, j):
    """The 3x3 determinant Taichi 1.7.4 writes for a 4x4 matrix: rows i+1..i+3 and columns
    j+1..j+3 taken cyclically, in its own product order (so results round as Taichi's)."""
    def m(r, c):
        return a.at((i + r) % 4, (j + c) % 4)
    return e.binop("+", e.binop("-", e.binop("*", m(1, 1), _det2(e, m(2, 2), m(3, 2), m(2, 3), m(3, 3))),
                                e.binop("*", m(2, 1), _det2(e, m(1, 2), m(3, 2), m(1, 3), m(3, 3)))),
                   e.binop("*", m(3, 1), _det2(e, m(1, 2), m(2, 2), m(1, 3), m(2, 3))))


def _det_laplace(e, a: MatVal):
    acc = None
    for c in range(a.n):
        rows = [[a.at(r, k) for k in range(a.n) if k != c] for r in range(1, a.n)]
        t = e.binop("*", a.at(0, c), determinant(e, MatVal.rows(rows)))
        if c % 2:
            t = e.unop(Op.NEG, t) if not isinstance(t, (int, float)) else -t
        acc = t if acc is None else e.binop("+", acc, t)
    return acc


def inverse(e: Emitter, a: MatVal):
    _square(a, "inverse")
    if a.n == 1:
        return MatVal([e.binop("/", 1.0, a.at(0, 0))], 1, 1, 2)
    inv_det = e.binop("/", 1.0, determinant(e, a))
    if a.n == 2:
        adj = [a.at(1, 1), e.unop(Op.NEG, a.at(0, 1)), e.unop(Op.NEG, a.at(1, 0)), a.at(0, 0)]
        return MatVal([e.binop("*", x, inv_det) for x in adj], 2, 2, 2)
    cofactor = {3: _cofactor3, 4: _cofactor4}.get(a.n, _cofactor_laplace)
    # entry (r, c) of the inverse is the cofactor of (c, r) over the determinant
    out = [e.binop("*", inv_det, cofactor(e, a, r, c)) for r in range(a.n) for c in range(a.n)]
    return MatVal(out, a.n, a.n, 2)


def _negate_if_odd(e, v, k):
    if k % 2 == 0:
        return v
    return e.unop(Op.NEG, v) if not isinstance(v, (int, float)) else -v


def _cofactor3(e, a: MatVal, r, c):
    # Taichi's cofactor of (c, r): cyclic indices carry the sign
    m = [[a.at((c + x) % 3, (r + y) % 3) for y in range(3)] for x in range(3)]
    return _det2(e, m[1][1], m[2][1], m[1][2], m[2][2])


def _cofactor4(e, a: MatVal, r, c):
    return _negate_if_odd(e, _cyclic_minor4(e, a, c, r), r + c)


def _cofactor_laplace(e, a: MatVal, r, c):
    # larger than Taichi allows: the minor's determinant by Laplace expansion
    minor = MatVal.rows([[a.at(i, j) for j in range(a.n) if j != r] for i in range(a.n) if i != c])
    return _negate_if_odd(e, determinant(e, minor), r + c)


def require_vectors(a, b, what: str) -> None:
    """Taichi 1.7.4 refuses a matrix operand of dot/cross/outer_product; read as flat entries,
    one would give a silently wrong product."""
    for side, v in (("lhs", a), ("rhs", b)):
        if isinstance(v, MatVal) and v.ndim != 1:
            raise FieldsimTypeError(f"{side} for {what} is not a vector (shape {v.shape})")


def dot(e: Emitter, a: MatVal, b: MatVal):
    require_vectors(a, b, "dot")
    return e.dot(a, b)


def cross(e: Emitter, a: MatVal, b: MatVal):
    require_vectors(a, b, "cross")
    if a.n == 2 and b.n == 2:
        return _det2(e, a.at(0), a.at(1), b.at(0), b.at(1))
    if a.n != 3 or b.n != 3:
        raise FieldsimTypeError(f"cross needs two 2-D or two 3-D vectors, got {a.shape}, {b.shape}")
    out = [_det2(e, a.at(i1), a.at(i2), b.at(i1), b.at(i2)) for i1, i2 in ((1, 2), (2, 0), (0, 1))]
    return MatVal.vector(out)


def outer_product(e: Emitter, a: MatVal, b: MatVal):
    require_vectors(a, b, "outer_product")
    return MatVal([e.binop("*", x, y) for x in a.entries for y in b.entries], a.n, b.n, 2)


def _square(a: MatVal, what):
    if a.ndim != 2 or a.n != a.m:
        raise FieldsimTypeError(f"{what}: expected a square matrix, got shape {a.shape}")


def _cast(e: Emitter, a: MatVal, dtype):
    return e.cast(a, dtype)  # (Emitter.cast reads `float`/`int` as default_fp/default_ip)


METHODS = {
    "norm": norm, "norm_sqr": norm_sqr, "norm_inv": norm_inv, "normalized": normalized, "transpose": transpose,
    "trace": trace, "determinant": determinant, "inverse": inverse, "cross": cross,
    "outer_product": outer_product, "dot": dot,
    "sum": lambda e, a: e.reduce("+", a), "max": lambda e, a: e.reduce("max", a),
    "min": lambda e, a: e.reduce("min", a), "cast": _cast,
    "any": lambda e, a: e.as_bool(e.truthy(e.reduce("|", a.map(e.truthy)))),
    "all": lambda e, a: e.as_bool(e.truthy(e.reduce("&", a.map(e.truthy)))),
}
SWIZZLE = {"x": 0, "y": 1, "z": 2, "w": 3, "r": 0, "g": 1, "b": 2, "a": 3}


def check_swizzle(name: str, sw, n: int, what: str) -> None:
    """Refuse swizzle `name` (indices `sw`) of an n-vector (`what` names it) when it reaches
    past the end, in Taichi's words, which programs match.

    >>> check_swizzle("z", [2], 2, "v")
    Traceback (most recent call last):
    ...
    fieldsim.errors.SwizzleError: ...vec2 only has attributes=('x', 'y'), got=('z',)...
    """
    if max(sw) < n:
        return
    group = next(g for g in ("xyzw", "rgba", "stpq") if name[0] in g)
    raise SwizzleError(f"swizzle .{name} reaches past the end of {what}: vec{n} only has "
                       f"attributes={tuple(group[:n])!r}, got={tuple(name)!r}")


def swizzle_indices(name: str):
    """Component indices of a swizzle such as `xy`, `zyx`, `rgba` or `stpq` (one letter group),
    or None."""
    if not 1 <= len(name) <= 4:
        return None
    for group in ("xyzw", "rgba", "stpq"):
        if all(ch in group for ch in name):
            return [group.index(ch) for ch in name]
    return None
