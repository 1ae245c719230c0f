"""Public builtins (`fs.sin`, `fs.atomic_add`, `fs.static`, ...): Python-scope behaviour here,
kernel-scope lowering registered in `KERNEL_BUILTINS` (function object -> handler).

A handler takes `(frontend, node, args, kwargs)` where args are evaluated frontend values, except
for handlers in `LVALUE_BUILTINS` (function object -> atomic kind), whose first argument arrives
as the reference it names, resolved before the other arguments are evaluated.
"""
from __future__ import annotations

import ast
import builtins
import math

import numpy as np

from fieldsim.errors import FieldsimSyntaxError, FieldsimTypeError
from fieldsim.ir.ir import Op, Stmt
from fieldsim.ir.opdefs import REAL_ONLY
from fieldsim.ir.subnormals import FLUSHING_MACHINE, SMALLEST_NORMAL, flushed_constant
from fieldsim.lang import types as T
from fieldsim.lang.expr import RSQRT_FNS, MatVal

KERNEL_BUILTINS: dict = {}
LVALUE_BUILTINS: dict = {}


def _np_unary(fn, keep_int=False, py_abs=False):
    """Python scope, as Taichi: numpy's `fn` in the input's precision (an f32 value or vector
    stays f32), a numpy scalar for a scalar."""
    def _in(a):
        return a if a.dtype.kind == "f" or (keep_int and a.dtype.kind in "iu") else a.astype(float)

    def apply(x, dtype=None):
        if py_abs and dtype is None and isinstance(x, (int, float)):
            return builtins.abs(x)  # Taichi's Python-scope abs is Python's: abs(-3) is an int
        if hasattr(x, "to_numpy"):
            from fieldsim.lang.matrix import _wrap
            r = fn(_in(np.asarray(x.to_numpy())))
            return _wrap(r.astype(dtype.np) if dtype is not None else r)
        r = fn(_in(np.asarray(x)))
        if dtype is not None:
            r = r.astype(dtype.np if isinstance(dtype, T.DataType) else dtype)
        return r[()] if np.ndim(r) == 0 else r
    return apply


def _py_matrix_aware(fn):
    """Python scope: numpy `fn` over scalars and fs.Vector/fs.Matrix values (result wrapped back)."""
    def apply(*args):
        like = any(hasattr(a, "to_numpy") for a in args)
        r = fn(*[np.asarray(a.to_numpy()) if hasattr(a, "to_numpy") else a for a in args])
        if like and np.ndim(r) > 0:
            from fieldsim.lang.matrix import _wrap
            return _wrap(np.asarray(r))
        return r.item() if isinstance(r, np.generic) or (np.ndim(r) == 0 and hasattr(r, "item")) else r
    return apply


_REAL_ONLY = REAL_ONLY
# as Taichi 1.7.4 folds them: numpy's `floor`/`ceil`/`round` of a Python number, a float (an int is
# welcome; `ti.round(2.5)` is 2.0, half to even, where a kernel value rounds half away from zero)
_ROUNDING = (Op.FLOOR, Op.CEIL, Op.ROUND)


def _def_unary(name, op, np_fn, float_only=True, py_fn=None):
    # abs(-3) stays an int; so does floor/ceil/round of an integer vector (`[1 2]`), as in Taichi
    fn = _np_unary(_ints_unrounded(np_fn) if op in _ROUNDING else np_fn,
                   keep_int=not float_only, py_abs=op == Op.ABS)
    fn.__name__ = name

    def handler(fe, node, args, kw):
        if py_fn is not None and len(args) == 1 and not kw and _is_py_number(args[0]):
            return _fold_py_math(py_fn, np_fn, args[0])
        if op in _ROUNDING and args and _is_py_number(args[0]):
            args = (_fold_py_math(_rounded_number(op, np_fn), np_fn, args[0]),) + tuple(args[1:])
            if len(args) == 1 and not kw:  # a Python number, as Taichi's (`ti.ceil(1e300)`)
                return args[0]
        if op in _REAL_ONLY:  # as in Taichi: these take real inputs only
            _require_real(fe, args[0], name)
        out = fe.e.unop(op, args[0], float_only)
        dtype = args[1] if len(args) > 1 else kw.get("dtype")
        if dtype is not None and op in (Op.FLOOR, Op.CEIL, Op.ROUND):  # ti.floor(x, ti.i32)
            return fe.e.cast(out, _dt(fe, dtype))
        if len(args) > 1 or set(kw) - {"dtype"}:
            raise FieldsimTypeError(f"fs.{name} takes one argument")
        return out

    KERNEL_BUILTINS[fn] = handler
    return fn


def _rounded_number(op, np_fn):
    """floor/ceil/round of a Python number as Taichi folds it: numpy's, a NumPy double (so
    arithmetic on it is NumPy's: `ti.ceil(1e300) ** 2` is inf), except that `ti.round` of an
    integer stays that integer (`ti.round(2147483647)`, not f32's 2**31)."""
    def fold(v):
        if op == Op.ROUND and isinstance(v, (int, np.integer)) and not isinstance(v, bool):
            return int(v)
        return np.float64(np_fn(v))
    return fold


def _ints_unrounded(np_fn):
    def apply(a):
        return a.copy() if a.dtype.kind in "iu" else np_fn(a)
    return apply


def _is_py_number(v):
    return isinstance(v, (int, float, np.integer, np.floating))


def _fold_py_math(py_fn, np_fn, v):
    """As Taichi: math on a Python number in a kernel is folded in double precision
    (`ti.cos(1)` is `math.cos(1)`, an integer welcome), a constant of the kernel. Outside the
    domain it is numpy's value, as Taichi folds with numpy: `ti.log(-0.0)` is -inf,
    `ti.sqrt(-1.0)` NaN, `ti.exp(1000.0)` inf (math raises for these), with numpy's warning."""
    try:
        return py_fn(v)
    except (ValueError, OverflowError):
        return float(np_fn(np.float64(v)))


def _require_real(fe, v, name):
    entries = v.entries if isinstance(v, MatVal) else [v]
    for e in entries:
        if isinstance(e, bool) or (not hasattr(e, "dtype") and isinstance(e, int)) or \
                (hasattr(e, "dtype") and getattr(e.dtype, "is_int", False)):
            raise FieldsimTypeError(f"fs.{name} takes real (float) inputs only, got an integer; "
                                    f"cast it first, e.g. fs.{name}(float(n))")


sin = _def_unary("sin", Op.SIN, np.sin, py_fn=math.sin)
cos = _def_unary("cos", Op.COS, np.cos, py_fn=math.cos)
tan = _def_unary("tan", Op.TAN, np.tan, py_fn=math.tan)
asin = _def_unary("asin", Op.ASIN, np.arcsin, py_fn=math.asin)
acos = _def_unary("acos", Op.ACOS, np.arccos, py_fn=math.acos)
atan = _def_unary("atan", Op.ATAN, np.arctan, py_fn=math.atan)
tanh = _def_unary("tanh", Op.TANH, np.tanh, py_fn=math.tanh)
exp = _def_unary("exp", Op.EXP, np.exp, py_fn=math.exp)
log = _def_unary("log", Op.LOG, np.log, py_fn=math.log)
sqrt = _def_unary("sqrt", Op.SQRT, np.sqrt, py_fn=math.sqrt)
floor = _def_unary("floor", Op.FLOOR, np.floor, float_only=False)
ceil = _def_unary("ceil", Op.CEIL, np.ceil, float_only=False)
round = _def_unary("round", Op.ROUND, np.round, float_only=False)
abs = _def_unary("abs", Op.ABS, np.abs, float_only=False, py_fn=builtins.abs)
rsqrt = _np_unary(lambda x: 1 / np.sqrt(x))


def _k_rsqrt(fe, node, args, kw):
    v = args[0]
    if _is_py_number(v):  # Taichi's `1 / np.sqrt(x)` of a Python number: a NumPy double
        with np.errstate(all="ignore"):
            return 1 / np.sqrt(np.float64(v))
    if isinstance(v, Stmt) and v.op == Op.CONST and v.dtype.is_float:  # folded once, as Taichi
        return fe.e.folded_const(RSQRT_FNS, v)
    return fe.e.binop("/", 1.0, fe.e.unop(Op.SQRT, v, True))


KERNEL_BUILTINS[rsqrt] = _k_rsqrt


def atan2(y, x):
    if hasattr(y, "to_numpy") or hasattr(x, "to_numpy"):
        return _py_matrix_aware(np.arctan2)(y, x)
    return np.arctan2(y, x)  # numpy's, in the inputs' precision, as Taichi


def pow(x, y):
    return x ** y


def min(*args):
    if len(args) == 1:
        return args[0].min() if hasattr(args[0], "to_numpy") else args[0]
    return _py_matrix_aware(lambda *a: np.minimum.reduce(np.broadcast_arrays(*a)))(*args)


def max(*args):
    if len(args) == 1:
        return args[0].max() if hasattr(args[0], "to_numpy") else args[0]
    return _py_matrix_aware(lambda *a: np.maximum.reduce(np.broadcast_arrays(*a)))(*args)


def _fold(op):
    def handler(fe, node, args, kw):
        from fieldsim.lang.frontend_expr import coerce_pair  # imports this module
        acc = args[0]
        for a in args[1:]:
            acc = fe.e.binop(op, *coerce_pair(acc, a))  # `ti.max(v, [0, 0])` as Taichi
        return acc
    return handler


KERNEL_BUILTINS[atan2] = lambda fe, n, a, k: fe.e.binop("atan2", a[0], a[1])
KERNEL_BUILTINS[pow] = lambda fe, n, a, k: fe.e.binop("**", a[0], a[1])
KERNEL_BUILTINS[min] = _fold("min")
KERNEL_BUILTINS[max] = _fold("max")


def select(cond, a, b):
    return _py_matrix_aware(np.where)(cond, a, b)


KERNEL_BUILTINS[select] = lambda fe, n, a, k: fe.e.select(a[0], a[1], a[2])


def zero(x):
    """Zeros shaped and typed like `x` (a scalar, vector or matrix), as Taichi's `ti.zero`.

    >>> fs.zero(fs.Vector([1.5, 2.0]))
    [0. 0.]
    """
    return x * 0


def one(x):
    """Ones shaped and typed like `x`, as Taichi's `ti.one`.

    >>> fs.one(fs.Vector([3, 4]))
    [1 1]
    """
    return zero(x) + 1


KERNEL_BUILTINS[zero] = lambda fe, n, a, k: fe.e.binop("*", a[0], 0)
KERNEL_BUILTINS[one] = lambda fe, n, a, k: fe.e.binop("+", fe.e.binop("*", a[0], 0), 1)


def cast(value, dtype):
    if dtype in (float, int, bool):  # Python's types mean default_fp/default_ip/u1, as in kernels
        from fieldsim.lang import runtime
        rt = runtime.get()
        dtype = T.concrete_dtype(dtype, rt.default_fp, rt.default_ip)
    if hasattr(value, "to_numpy") and hasattr(value, "cast"):  # a Python-scope Vector/Matrix
        return value.cast(dtype)
    if isinstance(value, (int, float)):
        return dtype.np.type(value).item()
    return np.asarray(value).astype(dtype.np)


def _kernel_cast(fe, n, a, k):
    """`ti.cast(v, dtype)` in a kernel. A Python float `v` is first a default_fp constant, as
    Taichi 1.7.4's `Expr(v)` makes it: `ti.cast(0.1, ti.f64)` under default_fp=f32 is 0.1f
    (and `ti.cast(1e300, ti.f64)` is inf), while `ti.f64(0.1)` stays the exact double."""
    dtype = _dt(fe, a[1] if len(a) > 1 else k["dtype"])
    return fe.e.cast(_as_default_fp(fe, a[0]), dtype)


def _as_default_fp(fe, v):
    if isinstance(v, MatVal):
        return v.map(lambda x: _as_default_fp(fe, x))
    if type(v) is float:
        with np.errstate(over="ignore"):
            v = float(fe.e.fp.np.type(v))
        # a subnormal constant of default_fp is 0 in Taichi's x64 kernels before any widening
        if -SMALLEST_NORMAL[32] < v < SMALLEST_NORMAL[32] and FLUSHING_MACHINE:
            from fieldsim.lang import runtime
            if runtime.get().arch == runtime.cpu:
                return flushed_constant(v, fe.e.fp.bits)
    return v


KERNEL_BUILTINS[cast] = _kernel_cast


def _dt(fe, dt):
    if dt is float:
        return fe.e.fp
    if dt is int:
        return fe.e.ip
    if not isinstance(dt, T.DataType):
        raise FieldsimTypeError(f"expected a dtype such as fs.f32, got {dt!r}")
    return dt


def static(x, *more):
    return (x, *more) if more else x


def static_print(*args):
    print(*args)


def random(dtype=float):
    if dtype in (float, T.f16, T.f32, T.f64):
        return np.random.random()
    info = np.iinfo((dtype if isinstance(dtype, T.DataType) else T.i32).np)
    return int(np.random.randint(info.min, info.max, dtype=np.int64 if info.bits < 64 else info.dtype))


def _random_kernel(fe, node, args, kw):
    dt = _dt(fe, args[0] if args else kw.get("dtype", float))
    return fe.e.b.emit(Op.RAND, dt)


KERNEL_BUILTINS[random] = _random_kernel
KERNEL_BUILTINS[static_print] = lambda fe, n, a, k: None


def _atomic(kind):
    def py(x, y):
        raise FieldsimSyntaxError(f"fs.atomic_{kind} is only available inside kernels")

    def handler(fe, node, args, kw):
        return fe.atomic_on_target(args[0], kind, args[1], node)

    py.__name__ = f"atomic_{kind}"
    KERNEL_BUILTINS[py] = handler
    LVALUE_BUILTINS[py] = kind
    return py


atomic_add = _atomic("add")
atomic_sub = _atomic("sub")
atomic_min = _atomic("min")
atomic_max = _atomic("max")
atomic_and = _atomic("and")
atomic_or = _atomic("or")
atomic_xor = _atomic("xor")
atomic_mul = _atomic("mul")


class ndrange:
    """`fs.ndrange(n, (b, e), ...)`: a multi-dimensional range; parallel when outermost."""

    def __init__(self, *dims):
        self.bounds = [_ndrange_bound(d) for d in dims]

    def __iter__(self):
        import itertools
        return itertools.product(*[range(b, e) for b, e in self.bounds])


def _ndrange_int(v):
    from fieldsim.ir.ir import Stmt
    if isinstance(v, Stmt) and not v.dtype.is_float:
        return v
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
        got = f"a {v.dtype} value" if isinstance(v, Stmt) else repr(v)
        raise FieldsimTypeError("Every argument of ndrange should be an integer scalar or a "
                                f"tuple/list of (int, int); got {got}")
    return int(v)


def _ndrange_bound(d):
    if isinstance(d, (tuple, list)):
        if len(d) != 2:
            raise FieldsimSyntaxError("Every argument of ndrange should be a scalar or a tuple/list "
                                      f"like (begin, end); got {tuple(d)!r}")
        return (_ndrange_int(d[0]), _ndrange_int(d[1]))
    return (0, _ndrange_int(d))


# In kernels fs.ndrange takes runtime bounds (`fs.ndrange(n[None], m)`) as well.
KERNEL_BUILTINS[ndrange] = lambda fe, node, args, kw: ndrange(*args)


class grouped:
    """`for I in fs.grouped(x)`: iterate a field or ndrange with a vector index."""

    def __init__(self, target):
        self.target = target

    def __iter__(self):
        import itertools

        from fieldsim.lang.matrix import Vector
        if isinstance(self.target, ndrange):
            return (Vector(list(ix)) for ix in self.target)
        # a field (its indices start at its offset) or a layout node
        offset = getattr(self.target, "_offset", None) or (0,) * len(self.target.shape)
        ranges = [range(o, o + s) for s, o in zip(self.target.shape, offset)]
        return (Vector(list(ix)) for ix in itertools.product(*ranges))


_pending_loop_config: dict = {}


def loop_config(serialize=False, block_dim=None, parallelize=None, **kw):
    """Configure the next top-level for loop (kernel scope); a no-op in Python scope."""


KERNEL_BUILTINS[loop_config] = lambda fe, n, a, k: fe.set_loop_config(**k)


def _numpy_as_lists(entries):
    """A captured numpy array (`fs.Matrix(M_np)`, `fs.Vector([row_np[0], ...])`) gives its values
    as Python numbers, as Taichi takes any array-like of constants."""
    if isinstance(entries, np.ndarray):
        return entries.tolist()
    if isinstance(entries, (list, tuple)):
        return [e.tolist() if isinstance(e, np.ndarray) else e for e in entries]
    return entries


def _matval_ctor(fe, node, args, kw, ndim):
    kw = dict(kw)
    if len(args) == 2 and (args[1] is None or isinstance(args[1], T.DataType)
                           or args[1] in (int, float)):
        # fs.Vector([...], fs.f32): the dtype given positionally; None (a helper passing its
        # own `dtype=None` on) is Taichi's default, the entries' own type
        kw["dt"] = args[1]
        args = args[:1]
    if len(args) != 1:
        entries = list(args)
    else:
        entries = args[0]
    dt = kw.get("dt")
    if isinstance(entries, MatVal):
        return fe.e.cast(entries, _dt(fe, dt)) if dt is not None else entries
    entries = _numpy_as_lists(entries)
    if not isinstance(entries, (list, tuple)):
        raise FieldsimTypeError("fs.Vector/fs.Matrix need a list of values")
    if not entries:
        raise FieldsimTypeError("fs.Vector/fs.Matrix need at least one value")
    flat = not isinstance(entries[0], (list, tuple, MatVal))
    if ndim == 2 and flat:  # as Taichi: fs.Matrix([1, 2, 3]) is a vector
        ndim = 1
    if ndim == 2 or not flat:
        rows = [list(r.entries) if isinstance(r, MatVal) else list(r) for r in entries]
        # as Taichi: fs.Vector of nested lists is the matrix of those rows
        if any(len(r) != len(rows[0]) for r in rows):
            raise FieldsimTypeError("fs.Matrix rows must all have the same length")
        m = MatVal.rows(rows)
    else:
        m = MatVal.vector(list(entries))
    return fe.e.cast(m, _dt(fe, dt)) if dt is not None else m


def logical_not(x):
    """`not x`, element-wise on a vector or matrix, 1 or 0 (Taichi's `ti.lang.ops.logical_not`).

    >>> logical_not(0), logical_not(2.5)
    (1, 0)
    """
    return _py_matrix_aware(lambda v: np.logical_not(v).astype(np.int32))(x)


def _logical_not_kernel(fe, node, args, kw):
    return fe.expr_UnaryOp(ast.UnaryOp(op=ast.Not(), operand=node), operand=args[0])


KERNEL_BUILTINS[logical_not] = _logical_not_kernel


def is_available_in_python(fn) -> bool:
    return fn in KERNEL_BUILTINS
