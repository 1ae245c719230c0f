"""`ti.math`: GLSL-style vector types and math functions, usable in kernels and Python scope.

Takes scalars, `fs.Vector`/`fs.Matrix` values (Python scope) or kernel values (scalars and
vectors/matrices, kernel scope); every function is element-wise unless its name says otherwise
(`dot`, `cross`, `length`, `distance`, `normalize`, `reflect`, `refract`, `determinant`,
`inverse`, `rotation2d`, `rotation3d`, `rot_by_axis`, `rot_yaw_pitch_roll`, `vdir`, `eye`). Guarantees Taichi 1.7.4's definitions (e.g. `sign(0) == 0`,
`step(edge, x) = 0 if x < edge else 1`, `mix(x, y, a) = x * (1 - a) + y * a`). In kernels the
functions are registered in `ops.KERNEL_BUILTINS` and lower to scalar IR through the frontend's
`Emitter`, so reverse and forward AD differentiate them like hand-written code.
"""
from __future__ import annotations

import functools
import math as _m

import numpy as np

from fieldsim.errors import FieldsimTypeError
from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang import matrix_ops, ops, runtime
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal, is_number
from fieldsim.lang.matrix import host_cross
from fieldsim.lang.ops import (
    acos,
    asin,
    atan,
    atan2,
    ceil,
    cos,
    exp,
    floor,
    log,
    max,
    min,
    pow,
    round,
    rsqrt,
    sin,
    sqrt,
    tan,
    tanh,
)

__all__ = [
    "acos",
    "asin",
    "atan",
    "atan2",
    "cconj",
    "cdiv",
    "ceil",
    "cexp",
    "cinv",
    "clamp",
    "clog",
    "clz",
    "cmul",
    "cos",
    "cpow",
    "cross",
    "csqrt",
    "degrees",
    "determinant",
    "distance",
    "dot",
    "e",
    "exp",
    "exp2",
    "eye",
    "floor",
    "fract",
    "inf",
    "inverse",
    "isinf",
    "isnan",
    "ivec2",
    "ivec3",
    "ivec4",
    "length",
    "log",
    "log2",
    "mat2",
    "mat3",
    "mat4",
    "max",
    "min",
    "mix",
    "mod",
    "nan",
    "normalize",
    "pi",
    "popcnt",
    "pow",
    "radians",
    "reflect",
    "refract",
    "rot_by_axis",
    "rot_yaw_pitch_roll",
    "rotation2d",
    "rotation3d",
    "round",
    "rsqrt",
    "scale",
    "sign",
    "sin",
    "smoothstep",
    "sqrt",
    "step",
    "tan",
    "tanh",
    "translate",
    "uvec2",  # noqa: F822 (module __getattr__: they follow default_ip)
    "uvec3",  # noqa: F822
    "uvec4",  # noqa: F822
    "vdir",
    "vec2",
    "vec3",
    "vec4",
]

vec2, vec3, vec4 = T.vector(2, float), T.vector(3, float), T.vector(4, float)
ivec2, ivec3, ivec4 = T.vector(2, int), T.vector(3, int), T.vector(4, int)
_UVEC = {"uvec2": 2, "uvec3": 3, "uvec4": 4}
_uvec_types: dict = {}


def __getattr__(name):
    """`uvec2`/`uvec3`/`uvec4`: vectors of Taichi's default_up, the unsigned type of default_ip
    (u64 after `init(default_ip=ti.i64)`, else u32), read when the name is looked up."""
    if name not in _UVEC:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    rt = runtime._current
    up = T.u64 if rt is not None and rt.default_ip is T.i64 else T.u32
    key = (_UVEC[name], up)
    if key not in _uvec_types:  # one type object per shape and dtype, as a module constant is
        _uvec_types[key] = T.vector(key[0], up)
    return _uvec_types[key]


mat2, mat3, mat4 = T.matrix(2, 2, float), T.matrix(3, 3, float), T.matrix(4, 4, float)

pi, e, inf, nan = _m.pi, _m.e, _m.inf, _m.nan


# ---- Python scope: numpy on the values, wrapped back into Vector/Matrix ---------------------
def _np(x):
    return np.asarray(x.to_numpy() if hasattr(x, "to_numpy") else x)


def _wrap(out, like_matrix):
    from fieldsim.lang.matrix import Matrix, Vector
    out = np.asarray(out)
    if out.ndim == 0:
        return out.item()
    if not like_matrix:
        return out
    return Vector(out) if out.ndim == 1 else Matrix(out)


def _py(fn):
    """A Python-scope implementation from a numpy one."""
    def apply(*args):
        like = any(hasattr(a, "to_numpy") for a in args)
        return _wrap(fn(*[_np(a) for a in args]), like)
    return apply


# ---- kernel scope: element-wise lifting of scalar emitters ---------------------------------------
def _lift(fe, scalar_fn, *args):
    mats = [a for a in args if isinstance(a, MatVal)]
    if not mats:
        return scalar_fn(*args)
    shape = mats[0]
    for m in mats[1:]:
        if m.shape != shape.shape:
            raise FieldsimTypeError(f"shape mismatch: {shape.shape} and {m.shape}")
    cols = [a.entries if isinstance(a, MatVal) else [a] * len(shape.entries) for a in args]
    return MatVal([scalar_fn(*vals) for vals in zip(*cols)], shape.n, shape.m, shape.ndim)


# Taichi defines these as `ti.func`s taking their arguments by value: a Python number argument
# becomes a variable of default_fp/default_ip first, so `mix(x, y, 0.9)` computes `1 - a` with
# an f32 `a` (0.10000002), not folded in double precision (0.1).
_BY_VALUE = frozenset(("clamp", "mix", "step", "smoothstep", "fract", "sign", "degrees", "radians",
                       "mod", "reflect", "refract", "distance", "length", "normalize", "log2"))


def _typed_numbers(fe, args):
    return [fe.e.value(a) if is_number(a) and not isinstance(a, bool) else a for a in args]


def _define(name, py_impl, kernel_impl):
    """A `ti.math` function: `py_impl(*args)` in Python scope, `kernel_impl(fe, *args)` in kernels."""
    py_impl.__name__ = name
    py_impl.__qualname__ = name
    if name in _BY_VALUE:
        ops.KERNEL_BUILTINS[py_impl] = lambda fe, node, args, kw: kernel_impl(
            fe, *_typed_numbers(fe, args), **kw)
    else:
        ops.KERNEL_BUILTINS[py_impl] = lambda fe, node, args, kw: kernel_impl(fe, *args, **kw)
    return py_impl


def _require_float(fe, v):
    return fe.e.cast(v, fe.e.fp) if isinstance(v, int) or (
        isinstance(v, Stmt) and not v.dtype.is_float) else v


def _k_clamp(fe, x, lo, hi):
    # Taichi's operand order, min(hi, max(lo, x)): a tie's adjoint goes to the second operand, x
    return fe.e.binop("min", hi, fe.e.binop("max", lo, x))


def _k_mix(fe, x, y, a):
    e = fe.e
    return e.binop("+", e.binop("*", x, e.binop("-", 1.0, a)), e.binop("*", y, a))


def _k_step(fe, edge, x):
    e = fe.e
    return _lift(fe, lambda ed, xv: e.select(e.compare("<", xv, ed), 0.0, 1.0), edge, x)


def _k_smoothstep(fe, edge0, edge1, x):
    e = fe.e
    t = _k_clamp(fe, e.binop("/", e.binop("-", x, edge0), e.binop("-", edge1, edge0)), 0.0, 1.0)
    return e.binop("*", e.binop("*", t, t), e.binop("-", 3.0, e.binop("*", 2.0, t)))


def _k_fract(fe, x):
    return fe.e.binop("-", x, fe.e.unop(Op.FLOOR, x))


def _k_sign(fe, x):
    # Taichi: cast(x >= 0, float) - cast(x <= 0, float): default_fp whatever x's type (an int
    # sign kept as an int truncated `s = sign(n); s *= 0.5` to 0), and sign(0) == 0
    e = fe.e

    def one(v):
        if not isinstance(v, Stmt):
            return float((v > 0) - (v < 0))
        return e.binop("-", e.cast(e.binop(">=", v, 0), e.fp), e.cast(e.binop("<=", v, 0), e.fp))
    return _lift(fe, one, x)


def _k_isnan(fe, x):
    e = fe.e
    # a u1, as Taichi 1.7.4 types it: `isnan(a) + isnan(b)` wraps to one bit
    return _lift(fe, lambda v: e.as_bool(e.b.unary(Op.NOT, e.compare("==", v, v))) if isinstance(v, Stmt)
                 else int(_m.isnan(v)), x)


def _k_isinf(fe, x):
    e = fe.e

    def one(v):
        if not isinstance(v, Stmt):
            return int(_m.isinf(v))
        if not v.dtype.is_float:
            return 0
        return e.as_bool(e.compare("==", e.unop(Op.ABS, v), e.value(_m.inf, v.dtype)))
    return _lift(fe, one, x)


def _k_length(fe, x):
    if not isinstance(x, MatVal):
        return fe.e.unop(Op.ABS, x)
    return matrix_ops.norm(fe.e, x)


def _k_distance(fe, x, y):
    return _k_length(fe, fe.e.binop("-", x, y))


def _k_normalize(fe, x):
    if not isinstance(x, MatVal):
        raise FieldsimTypeError("ti.math.normalize needs a vector")
    return fe.e.binop("/", x, matrix_ops.norm(fe.e, x))  # Taichi: v / v.norm()


def _k_dot(fe, x, y):
    return matrix_ops.dot(fe.e, x, y)


def _k_cross(fe, x, y):
    return matrix_ops.cross(fe.e, x, y)


def _k_reflect(fe, x, n):
    e = fe.e
    return e.binop("-", x, e.binop("*", e.binop("*", 2.0, e.dot(n, x)), n))


def _k_refract(fe, x, n, eta):
    # GLSL: k = 1 - eta^2 (1 - dot(n, x)^2); 0 if k < 0 else eta x - (eta dot(n, x) + sqrt(k)) n
    e = fe.e
    eta = e.value(eta) if is_number(eta) else eta  # a Taichi func argument: typed, as there
    d = e.dot(n, x)
    k = e.binop("-", 1.0, e.binop("*", e.binop("*", eta, eta), e.binop("-", 1.0, e.binop("*", d, d))))
    safe_k = e.select(e.compare("<", k, 0.0), 0.0, k)
    r = e.binop("-", e.binop("*", eta, x),
                e.binop("*", e.binop("+", e.binop("*", eta, d), e.unop(Op.SQRT, safe_k, True)), n))
    return e.select(e.compare("<", k, 0.0), e.binop("-", r, r), r)  # +0.0 (0 * x can be -0.0)


def _k_rotation2d(fe, ang):
    e = fe.e
    c, s = e.unop(Op.COS, ang, True), e.unop(Op.SIN, ang, True)
    return MatVal([c, e.unop(Op.NEG, s) if isinstance(s, Stmt) else -s, s, c], 2, 2, 2)


def _k_eye(fe, n):
    return MatVal([fe.b.const(float(r == c), fe.e.fp) for r in range(n) for c in range(n)], n, n, 2)


def _py_sign(x):
    return (x >= 0).astype(x.dtype) - (x <= 0).astype(x.dtype)


def _py_refract(x, n, eta):
    d = np.dot(n.reshape(-1), x.reshape(-1))
    k = 1.0 - eta * eta * (1.0 - d * d)
    return np.zeros_like(x) if k < 0 else eta * x - (eta * d + np.sqrt(k)) * n


def _py_normalize(x):
    return x / np.sqrt(np.sum(x * x))


def _py_rotation2d(ang):
    from fieldsim.lang.matrix import Matrix
    c, s = _m.cos(ang), _m.sin(ang)
    return Matrix([[c, -s], [s, c]])


def _py_eye(n):
    from fieldsim.lang.matrix import Matrix
    return Matrix(np.eye(n))


_LN2 = _m.log(2.0)

clamp = _define("clamp", _py(lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi)), _k_clamp)
mix = _define("mix", _py(lambda x, y, a: x * (1 - a) + y * a), _k_mix)
step = _define("step", _py(lambda edge, x: np.where(x < edge, 0.0, 1.0)), _k_step)
def _py_smoothstep(e0, e1, x):
    t = np.clip((x - e0) / (e1 - e0), 0, 1)
    return t * t * (3 - 2 * t)


smoothstep = _define("smoothstep", _py(_py_smoothstep), _k_smoothstep)
fract = _define("fract", _py(lambda x: x - np.floor(x)), _k_fract)
sign = _define("sign", _py(_py_sign), _k_sign)
degrees = _define("degrees", _py(lambda x: x * (180.0 / _m.pi)),
                  lambda fe, x: fe.e.binop("*", _require_float(fe, x), 180.0 / _m.pi))
radians = _define("radians", _py(lambda x: x * (_m.pi / 180.0)),
                  lambda fe, x: fe.e.binop("*", _require_float(fe, x), _m.pi / 180.0))
isnan = _define("isnan", _py(lambda x: np.isnan(x).astype(np.int32)), _k_isnan)
isinf = _define("isinf", _py(lambda x: np.isinf(x).astype(np.int32)), _k_isinf)
length = _define("length", _py(lambda x: np.sqrt(np.sum(x * x))), _k_length)
distance = _define("distance", _py(lambda x, y: np.sqrt(np.sum((x - y) ** 2))), _k_distance)
normalize = _define("normalize", _py(_py_normalize), _k_normalize)
dot = _define("dot", _py(lambda x, y: np.dot(x.reshape(-1), y.reshape(-1))), _k_dot)
cross = _define("cross", _py(host_cross), _k_cross)
reflect = _define("reflect", _py(lambda x, n: x - 2 * np.dot(n.reshape(-1), x.reshape(-1)) * n),
                  _k_reflect)
refract = _define("refract", _py(_py_refract), _k_refract)
log2 = _define("log2", _py(np.log2), lambda fe, x: fe.e.binop(
    "/", fe.e.unop(Op.LOG, x, True), _LN2))
exp2 = _define("exp2", _py(np.exp2), lambda fe, x: fe.e.unop(
    Op.EXP, fe.e.binop("*", _require_float(fe, x), _LN2), True))
determinant = _define("determinant", _py(np.linalg.det),
                      lambda fe, x: matrix_ops.determinant(fe.e, x))
inverse = _define("inverse", _py(np.linalg.inv), lambda fe, x: matrix_ops.inverse(fe.e, x))
rotation2d = _define("rotation2d", _py_rotation2d, _k_rotation2d)
eye = _define("eye", _py_eye, _k_eye)


# ---- complex numbers as vec2 (x + iy), as Taichi's ti.math.c* -----------------------------------
def _vec2(x):
    if not isinstance(x, MatVal) or x.shape != (2,):
        raise FieldsimTypeError("ti.math complex functions take 2-D vectors (x + iy)")
    return x.entries


def _k_cmul(fe, a, b):
    e = fe.e
    (ax, ay), (bx, by) = _vec2(a), _vec2(b)
    return MatVal.vector([e.binop("-", e.binop("*", ax, bx), e.binop("*", ay, by)),
                          e.binop("+", e.binop("*", ax, by), e.binop("*", ay, bx))])


def _k_cconj(fe, a):
    ax, ay = _vec2(a)
    return MatVal.vector([ax, fe.e.unop(Op.NEG, ay) if isinstance(ay, Stmt) else -ay])


def _k_cinv(fe, a):
    e = fe.e
    ax, ay = _vec2(a)
    d = e.binop("+", e.binop("*", ax, ax), e.binop("*", ay, ay))
    return e.binop("/", _k_cconj(fe, a), d)


def _k_cdiv(fe, a, b):
    # Taichi's formula: (x1 x2 + y1 y2, -x1 y2 + x2 y1) / |z2|^2 (not a * (1 / b): other rounding)
    e = fe.e
    (ax, ay), (bx, by) = _vec2(a), _vec2(b)
    num = MatVal.vector([e.binop("+", e.binop("*", ax, bx), e.binop("*", ay, by)),
                         e.binop("+", e.binop("*", e.binop("*", -1, ax), by), e.binop("*", bx, ay))])
    return e.binop("/", num, e.binop("+", e.binop("*", bx, bx), e.binop("*", by, by)))


def _k_cexp(fe, a):
    e = fe.e
    ax, ay = _vec2(a)
    r = e.unop(Op.EXP, ax, True)
    return MatVal.vector([e.binop("*", r, e.unop(Op.COS, ay, True)),
                          e.binop("*", r, e.unop(Op.SIN, ay, True))])


def _k_clog(fe, a):
    e = fe.e
    ax, ay = _vec2(a)
    r2 = e.binop("+", e.binop("*", ax, ax), e.binop("*", ay, ay))
    return MatVal.vector([e.binop("*", 0.5, e.unop(Op.LOG, r2, True)),
                          e.binop("atan2", _require_float(fe, ay), _require_float(fe, ax))])


def _guard_zero(fe, ax, ay):
    """Taichi's csqrt and cpow return +0 at z = 0 without evaluating their formula (`if any(z)`).
    Here the formula runs on z = 1 there and the result is then replaced: evaluated at 0 itself,
    its value (|z|^n for n < 0) or its adjoint (atan2's 0/0, sqrt's 1/0) would be infinite, and
    the adjoint of the replacement would carry 0 * inf = NaN into z's gradient."""
    e = fe.e
    zero = e.binop("&", e.compare("==", ax, 0), e.compare("==", ay, 0))
    return zero, e.select(zero, 1.0, ax), e.select(zero, 0.0, ay)


def _zero_where(fe, zero, r):
    return fe.e.select(zero, r.map(lambda v: fe.e.value(0.0, v.dtype)), r)


def _k_csqrt(fe, a):
    e = fe.e
    zero, ax, ay = _guard_zero(fe, *_vec2(a))
    r = e.unop(Op.SQRT, e.binop("+", e.binop("*", ax, ax), e.binop("*", ay, ay)), True)
    half = e.binop("*", 0.5, e.binop("atan2", _require_float(fe, ay), _require_float(fe, ax)))
    sr = e.unop(Op.SQRT, r, True)
    return _zero_where(fe, zero, MatVal.vector([e.binop("*", sr, e.unop(Op.COS, half, True)),
                                                e.binop("*", sr, e.unop(Op.SIN, half, True))]))


def _py_complex(fn):
    def apply(*args):
        from fieldsim.lang.matrix import Vector
        zs = []
        for a in args:
            v = _np(a).reshape(-1)
            if v.shape != (2,):
                raise FieldsimTypeError("ti.math complex functions take 2-D vectors (x + iy)")
            zs.append(complex(v[0], v[1]))
        z = fn(*zs)
        return Vector([z.real, z.imag])
    return apply


cmul = _define("cmul", _py_complex(lambda a, b: a * b), _k_cmul)
cconj = _define("cconj", _py_complex(lambda a: a.conjugate()), _k_cconj)
cdiv = _define("cdiv", _py_complex(lambda a, b: a / b), _k_cdiv)
cinv = _define("cinv", _py_complex(lambda a: 1 / a), _k_cinv)
cexp = _define("cexp", _py_complex(lambda a: __import__("cmath").exp(a)), _k_cexp)
clog = _define("clog", _py_complex(lambda a: __import__("cmath").log(a)), _k_clog)
csqrt = _define("csqrt", _py_complex(lambda a: __import__("cmath").sqrt(a)), _k_csqrt)


def _k_cpow(fe, a, n):
    # Taichi's formula, rounding for rounding: |z|^2 ** (n / 2) * (cos nt, sin nt), t = arg z
    # (exp(n log z) rounds differently: escape-time fractals then count other iterations)
    e = fe.e
    n = e.value(n) if is_number(n) else n  # a Taichi func argument: typed, as there
    zero, ax, ay = _guard_zero(fe, *_vec2(a))
    r2 = e.binop("+", e.binop("*", ax, ax), e.binop("*", ay, ay))
    ang = e.binop("*", e.binop("atan2", _require_float(fe, ay), _require_float(fe, ax)), n)
    mag = e.binop("**", _require_float(fe, r2), e.binop("/", n, 2.0))
    return _zero_where(fe, zero, MatVal.vector([e.binop("*", mag, e.unop(Op.COS, ang, True)),
                                                e.binop("*", mag, e.unop(Op.SIN, ang, True))]))


def _k_mod(fe, x, y):
    # GLSL: x - y * floor(x / y)
    e = fe.e
    return e.binop("-", x, e.binop("*", y, e.unop(Op.FLOOR, e.binop("/", x, y))))


def _k_translate(fe, dx, dy, dz):
    rows = [[1.0, 0.0, 0.0, dx], [0.0, 1.0, 0.0, dy], [0.0, 0.0, 1.0, dz], [0.0, 0.0, 0.0, 1.0]]
    return fe.e.cast(MatVal.rows(rows), fe.e.fp)


def _k_scale(fe, sx, sy, sz):
    rows = [[sx, 0.0, 0.0, 0.0], [0.0, sy, 0.0, 0.0], [0.0, 0.0, sz, 0.0], [0.0, 0.0, 0.0, 1.0]]
    return fe.e.cast(MatVal.rows(rows), fe.e.fp)


def _py_mat4(rows):
    from fieldsim.lang.matrix import Matrix
    return Matrix(rows)


cpow = _define("cpow", lambda z, n: _py_complex(lambda a: 0j if a == 0 else a ** n)(z), _k_cpow)
mod = _define("mod", _py(lambda x, y: x - y * np.floor(x / y)), _k_mod)
translate = _define("translate", lambda dx, dy, dz: _py_mat4(
    [[1.0, 0, 0, dx], [0, 1.0, 0, dy], [0, 0, 1.0, dz], [0, 0, 0, 1.0]]), _k_translate)
scale = _define("scale", lambda sx, sy, sz: _py_mat4(
    [[sx, 0, 0, 0.0], [0, sy, 0, 0.0], [0, 0, sz, 0.0], [0, 0, 0, 1.0]]), _k_scale)


# ---- rotations: one formula for both scopes, over `_PyArith` or `_KernelArith` -------------------
class _PyArith:
    cos, sin, sqrt = staticmethod(_m.cos), staticmethod(_m.sin), staticmethod(_m.sqrt)

    @staticmethod
    def add(a, b):
        return a + b

    @staticmethod
    def sub(a, b):
        return a - b

    @staticmethod
    def mul(a, b):
        return a * b

    @staticmethod
    def div(a, b):
        return a / b


class _KernelArith:
    """Kernel values; Python 0 and 1 operands fold away (the rotation matrices' zeros)."""

    def __init__(self, fe):
        self.e = fe.e

    def cos(self, x):
        return self.e.unop(Op.COS, x, True)

    def sin(self, x):
        return self.e.unop(Op.SIN, x, True)

    def sqrt(self, x):
        return self.e.unop(Op.SQRT, x, True)

    def add(self, a, b):
        return b if _is(a, 0) else a if _is(b, 0) else self.e.binop("+", a, b)

    def sub(self, a, b):
        return a if _is(b, 0) else self.e.binop("-", a, b)

    def mul(self, a, b):
        if _is(a, 0) or _is(b, 0):
            return 0
        return b if _is(a, 1) else a if _is(b, 1) else self.e.binop("*", a, b)

    def div(self, a, b):
        return self.e.binop("/", a, b)


def _is(v, k) -> bool:
    return not isinstance(v, Stmt) and v == k


def _matmul3(ar, a, b):
    return [[_sum(ar, [ar.mul(a[i][k], b[k][j]) for k in range(3)]) for j in range(3)]
            for i in range(3)]


def _sum(ar, terms):
    return functools.reduce(ar.add, terms)


def _homogeneous(rows3):
    return [list(r) + [0.0] for r in rows3] + [[0.0, 0.0, 0.0, 1.0]]


def _ypr_rows(ar, yaw, pitch, roll):
    """Taichi's `rot_yaw_pitch_roll`: the transpose of Ry(yaw) Rx(pitch) Rz(roll) (right-handed
    rotations about y, x and z), in homogeneous 4x4 form."""
    ch, sh, cp, sp, cb, sb = (f(a) for a in (yaw, pitch, roll) for f in (ar.cos, ar.sin))
    ry = [[ch, 0, sh], [0, 1, 0], [ar.sub(0, sh), 0, ch]]
    rx = [[1, 0, 0], [0, cp, ar.sub(0, sp)], [0, sp, cp]]
    rz = [[cb, ar.sub(0, sb), 0], [sb, cb, 0], [0, 0, 1]]
    m = _matmul3(ar, _matmul3(ar, ry, rx), rz)
    return _homogeneous([[m[j][i] for j in range(3)] for i in range(3)])


def _axis_rows(ar, axis, ang):
    """Taichi's `rot_by_axis`: Rodrigues' rotation by `ang` about the normalised `axis`,
    transposed (c I - s [k]x + (1 - c) k k^T), in homogeneous 4x4 form."""
    norm = ar.sqrt(_sum(ar, [ar.mul(a, a) for a in axis]))
    k = [ar.div(a, norm) for a in axis]
    c, s = ar.cos(ang), ar.sin(ang)
    cross = [[0, ar.sub(0, k[2]), k[1]], [k[2], 0, ar.sub(0, k[0])], [ar.sub(0, k[1]), k[0], 0]]
    one_minus_c = ar.sub(1.0, c)
    rows = [[ar.sub(ar.add(c if i == j else 0, ar.mul(ar.mul(one_minus_c, k[i]), k[j])),
                    ar.mul(s, cross[i][j])) for j in range(3)] for i in range(3)]
    return _homogeneous(rows)


def _kernel_matrix(fe, rows):
    return fe.e.cast(MatVal.rows(rows), fe.e.fp)


def _entries(fe, v, n, what):
    if not isinstance(v, MatVal) or len(v.entries) != n:
        raise FieldsimTypeError(f"ti.math.{what} needs a {n}-vector, got {v!r}")
    return v.entries


rot_yaw_pitch_roll = _define(
    "rot_yaw_pitch_roll", lambda yaw, pitch, roll: _py_mat4(_ypr_rows(_PyArith, yaw, pitch, roll)),
    lambda fe, yaw, pitch, roll: _kernel_matrix(fe, _ypr_rows(_KernelArith(fe), yaw, pitch, roll)))
rotation3d = _define(
    "rotation3d", lambda ax, ay, az: _py_mat4(_ypr_rows(_PyArith, az, ax, ay)),
    lambda fe, ax, ay, az: _kernel_matrix(fe, _ypr_rows(_KernelArith(fe), az, ax, ay)))
rot_by_axis = _define(
    "rot_by_axis",
    lambda axis, ang: _py_mat4(_axis_rows(_PyArith, [float(a) for a in _np(axis).ravel()], ang)),
    lambda fe, axis, ang: _kernel_matrix(
        fe, _axis_rows(_KernelArith(fe), _entries(fe, axis, 3, "rot_by_axis"), ang)))


def _py_vdir(ang):
    from fieldsim.lang.matrix import Vector
    return Vector([_m.cos(ang), _m.sin(ang)])


vdir = _define("vdir", _py_vdir, lambda fe, ang: fe.e.cast(MatVal.vector(
    [fe.e.unop(Op.COS, ang, True), fe.e.unop(Op.SIN, ang, True)]), fe.e.fp))


# ---- bit counts --------------------------------------------------------------------------------
def _py_bits(count):
    """A Python-scope bit count of an integer of its numpy width (a Python int: an i32)."""
    def apply(x):
        a = np.asarray(_np(x))
        if a.dtype.kind not in "iub":
            raise FieldsimTypeError(f"expected integers, got {a.dtype}")
        width = 32 if a.dtype == np.int64 and isinstance(x, int) else 8 * a.dtype.itemsize
        out = np.vectorize(lambda v: count(int(v) & ((1 << width) - 1), width))(a).astype(a.dtype)
        return out.item() if out.ndim == 0 else _wrap(out, hasattr(x, "to_numpy"))
    return apply


def _k_bits(op, name):
    def lower(fe, x):
        def one(v):
            v = fe.e.value(v)
            if v.dtype.is_float:
                raise FieldsimTypeError(f"ti.math.{name} needs an integer, got {v.dtype}")
            return fe.b.unary(op, v)
        return _lift(fe, one, x)
    return lower


popcnt = _define("popcnt", _py_bits(lambda v, width: v.bit_count()),
                 _k_bits(Op.POPCNT, "popcnt"))
clz = _define("clz", _py_bits(lambda v, width: width - v.bit_length()), _k_bits(Op.CLZ, "clz"))
