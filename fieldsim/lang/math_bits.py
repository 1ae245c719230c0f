"""`ti.math.popcnt`, `ti.math.clz` (bit counts), `ti.math.vdir` and the 4x4 rotations
`rotation3d`, `rot_by_axis`, `rot_yaw_pitch_roll`.

Takes integers (bit counts) or floats (angles), scalars or vectors/matrices (bit counts are
element-wise), in kernels or Python scope. Guarantees Taichi 1.7.4's results: `popcnt(x)` counts
the set bits of `x` in its own width (`popcnt(i8(-1)) == 8`), `clz(x)` its leading zeros in that
width (`clz(u8(0x70)) == 1`, `clz(0) ==` the width), both as i32; a Python int is an i32, as in
kernels. The rotations are Taichi's matrices entry for entry (`rotation3d(x, y, z)` is
`rot_yaw_pitch_roll(z, x, y)`). Kernel-scope lowering only combines existing IR ops: the bit
counts zero-extend to u64 and count with the SWAR sequence (which LLVM turns into `ctpop`).
"""
from __future__ import annotations

import math as _m

import numpy as np

from fieldsim.errors import FieldsimTypeError
from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal

_M1, _M2, _M4, _H01 = 0x5555555555555555, 0x3333333333333333, 0x0F0F0F0F0F0F0F0F, 0x0101010101010101


# ---- bit counts ---------------------------------------------------------------------------------
def _width_and_bits(x):
    """(width, non-negative bit pattern) of a Python-scope integer (a Python int is an i32)."""
    if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)):
        raise FieldsimTypeError(f"popcnt/clz need an integer, got {x!r}")
    width = np.dtype(type(x)).itemsize * 8 if isinstance(x, np.integer) else 32
    return width, int(x) & ((1 << width) - 1)


def _py_popcnt(x):
    return _width_and_bits(x)[1].bit_count()


def _py_clz(x):
    width, bits = _width_and_bits(x)
    return width - bits.bit_length()


def _py_elementwise(fn):
    def apply(x):
        if hasattr(x, "to_numpy"):
            from fieldsim.lang.matrix import _wrap
            a = np.asarray(x.to_numpy())
            return _wrap(np.vectorize(fn, otypes=[np.int32])(a))
        return fn(x)
    return apply


def _u64_of(fe, x):
    dt = fe.e.dtype_of(x)
    if not dt.is_int or dt is T.u1:
        raise FieldsimTypeError(f"popcnt/clz need an integer, got {dt}")
    v = fe.e.value(x, dt)
    unsigned = {8: T.u8, 16: T.u16, 32: T.u32, 64: T.u64}[dt.bits]
    return fe.b.cast(fe.b.cast(v, unsigned), T.u64), dt.bits  # zero-extends


def _swar_popcnt(b, v):
    """The set bits of u64 `v`, as an i32."""
    def k(c):
        return b.const(c, T.u64)

    def shr(x, n):
        return b.binary(Op.SHR, x, k(n))

    def band(x, c):
        return b.binary(Op.BIT_AND, x, k(c))

    v = b.sub(v, band(shr(v, 1), _M1))
    v = b.add(band(v, _M2), band(shr(v, 2), _M2))
    v = band(b.add(v, shr(v, 4)), _M4)
    return b.cast(shr(b.mul(v, k(_H01)), 56), T.i32)


def _k_popcnt_scalar(fe, x):
    if not isinstance(x, Stmt):
        return _py_popcnt(x)
    v, _ = _u64_of(fe, x)
    return _swar_popcnt(fe.b, v)


def _k_clz_scalar(fe, x):
    if not isinstance(x, Stmt):
        return _py_clz(x)
    b = fe.b
    v, width = _u64_of(fe, x)
    for n in (1, 2, 4, 8, 16, 32):  # smear the highest set bit down: its popcount is bit_length
        v = b.binary(Op.BIT_OR, v, b.binary(Op.SHR, v, b.const(n, T.u64)))
    return b.sub(b.const(width, T.i32), _swar_popcnt(b, v))


def _elementwise(scalar_fn):
    def lower(fe, node, args, kw):
        x = args[0] if args else kw["x"]
        if isinstance(x, MatVal):
            return MatVal([scalar_fn(fe, v) for v in x.entries], x.n, x.m, x.ndim)
        return scalar_fn(fe, x)
    return lower


# ---- rotations ----------------------------------------------------------------------------------
def _yaw_pitch_roll_rows(cos, sin, yaw, pitch, roll):
    ch, sh, cp, sp, cb, sb = cos(yaw), sin(yaw), cos(pitch), sin(pitch), cos(roll), sin(roll)
    return [[ch * cb + sh * sp * sb, sb * cp, -sh * cb + ch * sp * sb, 0.0],
            [-ch * sb + sh * sp * cb, cb * cp, sb * sh + ch * sp * cb, 0.0],
            [sh * cp, -sp, ch * cp, 0.0],
            [0.0, 0.0, 0.0, 1.0]]


def _by_axis_rows(cos, sin, axis, ang):
    c, s = cos(ang), sin(ang)
    t = [(1 - c) * a for a in axis]
    x, y, z = axis
    return [[c + t[0] * x, t[0] * y + s * z, t[0] * z - s * y, 0.0],
            [t[1] * x - s * z, c + t[1] * y, t[1] * z + s * x, 0.0],
            [t[2] * x + s * y, t[2] * y - s * x, c + t[2] * z, 0.0],
            [0.0, 0.0, 0.0, 1.0]]


class _Sym:
    """A kernel scalar (Stmt or constant) whose Python operators emit the frontend's binops, so
    one row builder serves both scopes."""

    def __init__(self, e, v):
        self.e, self.v = e, v

    def _op(self, op, a, b):
        a, b = (x.v if isinstance(x, _Sym) else x for x in (a, b))
        return _Sym(self.e, self.e.binop(op, a, b))

    def __add__(self, o): return self._op("+", self, o)
    def __radd__(self, o): return self._op("+", o, self)
    def __sub__(self, o): return self._op("-", self, o)
    def __rsub__(self, o): return self._op("-", o, self)
    def __mul__(self, o): return self._op("*", self, o)
    def __rmul__(self, o): return self._op("*", o, self)
    def __neg__(self):
        return _Sym(self.e, self.e.unop(Op.NEG, self.v) if isinstance(self.v, Stmt) else -self.v)


def _kernel_trig(e):
    def trig(op):
        return lambda a: _Sym(e, e.unop(op, a.v if isinstance(a, _Sym) else a, True))
    return trig(Op.COS), trig(Op.SIN)


def _to_value(fe, rows):
    def plain(x):
        return x.v if isinstance(x, _Sym) else x
    if isinstance(rows[0], list):
        return fe.e.cast(MatVal.rows([[plain(x) for x in r] for r in rows]), fe.e.fp)
    return fe.e.cast(MatVal([plain(x) for x in rows], len(rows), 1, 1), fe.e.fp)


def _k_yaw_pitch_roll(fe, node, args, kw):
    return _to_value(fe, _yaw_pitch_roll_rows(*_kernel_trig(fe.e), *args))


def _k_rotation3d(fe, node, args, kw):
    x, y, z = args
    return _to_value(fe, _yaw_pitch_roll_rows(*_kernel_trig(fe.e), z, x, y))


def _k_by_axis(fe, node, args, kw):
    from fieldsim.lang.math import _k_normalize
    axis, ang = args
    unit = [_Sym(fe.e, v) for v in _k_normalize(fe, fe.e.cast(axis, fe.e.fp)).entries]
    return _to_value(fe, _by_axis_rows(*_kernel_trig(fe.e), unit, ang))


def _k_vdir(fe, node, args, kw):
    cos, sin = _kernel_trig(fe.e)
    return _to_value(fe, [cos(args[0]), sin(args[0])])


# ---- the public functions -----------------------------------------------------------------------
def _matrix(rows):
    from fieldsim.lang.matrix import Matrix, Vector
    return Matrix(rows) if isinstance(rows[0], list) else Vector(rows)


def _py_axis(axis):
    a = np.asarray(axis.to_numpy() if hasattr(axis, "to_numpy") else axis, dtype=np.float64)
    return list(a / np.sqrt(np.sum(a * a)))


def popcnt(x):
    """The set bits of an integer in its own width, as i32 (element-wise).

    >>> fs.math.popcnt(fs.u8(0xF0)), fs.math.popcnt(-1)
    (4, 32)
    """
    return _py_elementwise(_py_popcnt)(x)


def clz(x):
    """The leading zero bits of an integer in its own width, as i32 (element-wise).

    >>> fs.math.clz(1), fs.math.clz(fs.u8(0x70))
    (31, 1)
    """
    return _py_elementwise(_py_clz)(x)


def rot_yaw_pitch_roll(yaw, pitch, roll):
    """Taichi's 4x4 rotation from yaw, pitch and roll angles (radians).

    >>> fs.math.rot_yaw_pitch_roll(0.0, 0.0, 0.0).to_numpy().tolist()[0]
    [1.0, 0.0, 0.0, 0.0]
    """
    return _matrix(_yaw_pitch_roll_rows(_m.cos, _m.sin, yaw, pitch, roll))


def rotation3d(ang_x, ang_y, ang_z):
    """Taichi's 4x4 rotation by angles about x, y and z: `rot_yaw_pitch_roll(ang_z, ang_x, ang_y)`.

    >>> bool(abs(fs.math.rotation3d(0.0, 0.0, 1.0)[2, 0] - __import__("math").sin(1.0)) < 1e-6)
    True
    """
    return rot_yaw_pitch_roll(ang_z, ang_x, ang_y)


def rot_by_axis(axis, ang):
    """Taichi's 4x4 rotation by `ang` radians about `axis` (normalised first).

    >>> fs.math.rot_by_axis([0.0, 0.0, 2.0], 0.0).to_numpy().tolist()[2]
    [0.0, 0.0, 1.0, 0.0]
    """
    return _matrix(_by_axis_rows(_m.cos, _m.sin, _py_axis(axis), ang))


def vdir(ang):
    """The unit 2-vector at angle `ang`: (cos ang, sin ang).

    >>> fs.math.vdir(0.0).to_numpy().tolist()
    [1.0, 0.0]
    """
    return _matrix([_m.cos(ang), _m.sin(ang)])


def register(kernel_builtins):
    """Enters the kernel-scope lowerings into the frontend's builtin table."""
    kernel_builtins[popcnt] = _elementwise(_k_popcnt_scalar)
    kernel_builtins[clz] = _elementwise(_k_clz_scalar)
    kernel_builtins[rot_yaw_pitch_roll] = _k_yaw_pitch_roll
    kernel_builtins[rotation3d] = _k_rotation3d
    kernel_builtins[rot_by_axis] = _k_by_axis
    kernel_builtins[vdir] = _k_vdir
