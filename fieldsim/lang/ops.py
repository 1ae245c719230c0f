"""Public builtins (`fs.sin`, `fs.atomic_add`, `fs.static`, ...): Python-scope behaviour here,
kernel-scope lowering registered in `KERNEL_BUILTINS` (function object -> handler).

A handler takes `(frontend, node, args, kwargs)` where args are evaluated frontend values, except
for handlers in `LVALUE_BUILTINS`, whose first argument arrives as an unevaluated AST node.
"""
from __future__ import annotations

import math

import numpy as np

from fieldsim.errors import FieldsimSyntaxError, FieldsimTypeError
from fieldsim.ir.ir import Op
from fieldsim.ir.opdefs import REAL_ONLY
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal

KERNEL_BUILTINS: dict = {}
LVALUE_BUILTINS: set = set()


def _np_unary(fn):
    def apply(x):
        if hasattr(x, "to_numpy"):
            from fieldsim.lang.matrix import Matrix
            return Matrix(fn(np.asarray(x.to_numpy(), dtype=float)))
        r = fn(np.asarray(x, dtype=float))
        return r.item() if np.ndim(r) == 0 else r
    return apply


_REAL_ONLY = REAL_ONLY


def _def_unary(name, op, np_fn, float_only=True):
    fn = _np_unary(np_fn)
    fn.__name__ = name

    def handler(fe, node, args, kw):
        if op in _REAL_ONLY:  # as in Taichi: these take real inputs only
            _require_real(fe, args[0], name)
        return fe.e.unop(op, args[0], float_only)

    KERNEL_BUILTINS[fn] = handler
    return fn


def _require_real(fe, v, name):
    entries = v.entries if isinstance(v, MatVal) else [v]
    for e in entries:
        if isinstance(e, bool) or (not hasattr(e, "dtype") and isinstance(e, int)) or \
                (hasattr(e, "dtype") and getattr(e.dtype, "is_int", False)):
            raise FieldsimTypeError(f"fs.{name} takes real (float) inputs only, got an integer; "
                                    f"cast it first, e.g. fs.{name}(float(n))")


sin = _def_unary("sin", Op.SIN, np.sin)
cos = _def_unary("cos", Op.COS, np.cos)
tan = _def_unary("tan", Op.TAN, np.tan)
asin = _def_unary("asin", Op.ASIN, np.arcsin)
acos = _def_unary("acos", Op.ACOS, np.arccos)
atan = _def_unary("atan", Op.ATAN, np.arctan)
tanh = _def_unary("tanh", Op.TANH, np.tanh)
exp = _def_unary("exp", Op.EXP, np.exp)
log = _def_unary("log", Op.LOG, np.log)
sqrt = _def_unary("sqrt", Op.SQRT, np.sqrt)
floor = _def_unary("floor", Op.FLOOR, np.floor, float_only=False)
ceil = _def_unary("ceil", Op.CEIL, np.ceil, float_only=False)
round = _def_unary("round", Op.ROUND, np.round, float_only=False)
abs = _def_unary("abs", Op.ABS, np.abs, float_only=False)
rsqrt = _np_unary(lambda x: 1 / np.sqrt(x))
KERNEL_BUILTINS[rsqrt] = lambda fe, n, a, k: fe.e.binop("/", 1.0, fe.e.unop(Op.SQRT, a[0], True))


def atan2(y, x):
    return math.atan2(y, x)


def pow(x, y):
    return x ** y


def min(*args):
    return np.minimum.reduce(args) if len(args) > 1 else args[0]


def max(*args):
    return np.maximum.reduce(args) if len(args) > 1 else args[0]


def _fold(op):
    def handler(fe, node, args, kw):
        acc = args[0]
        for a in args[1:]:
            acc = fe.e.binop(op, acc, a)
        return acc
    return handler


KERNEL_BUILTINS[atan2] = lambda fe, n, a, k: fe.e.binop("atan2", a[0], a[1])
KERNEL_BUILTINS[pow] = lambda fe, n, a, k: fe.e.binop("**", a[0], a[1])
KERNEL_BUILTINS[min] = _fold("min")
KERNEL_BUILTINS[max] = _fold("max")


def select(cond, a, b):
    return np.where(cond, a, b)


KERNEL_BUILTINS[select] = lambda fe, n, a, k: fe.e.select(a[0], a[1], a[2])


def cast(value, dtype):
    if isinstance(value, (int, float)):
        return dtype.np.type(value).item()
    return np.asarray(value).astype(dtype.np)


KERNEL_BUILTINS[cast] = lambda fe, n, a, k: fe.e.cast(a[0], _dt(fe, a[1] if len(a) > 1 else k["dtype"]))


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
    return np.random.random() if dtype in (float, T.f32, T.f64) else np.random.randint(0, 2**31)


def _random_kernel(fe, node, args, kw):
    dt = _dt(fe, args[0] if args else kw.get("dtype", float))
    return fe.e.b.emit(Op.RAND, dt)


KERNEL_BUILTINS[random] = _random_kernel
KERNEL_BUILTINS[static_print] = lambda fe, n, a, k: None


def _atomic(kind):
    def py(x, y):
        raise FieldsimSyntaxError(f"fs.atomic_{kind} is only available inside kernels")

    def handler(fe, node, args, kw):
        return fe.atomic_on_target(node.args[0], kind, args[1], node)

    py.__name__ = f"atomic_{kind}"
    KERNEL_BUILTINS[py] = handler
    LVALUE_BUILTINS.add(py)
    return py


atomic_add = _atomic("add")
atomic_sub = _atomic("sub")
atomic_min = _atomic("min")
atomic_max = _atomic("max")
atomic_and = _atomic("and")
atomic_or = _atomic("or")
atomic_xor = _atomic("xor")
atomic_mul = _atomic("mul")


def _is_int_bound(v) -> bool:
    """An ndrange bound: a Python or numpy integer, or an integer kernel value."""
    import numbers
    if isinstance(v, bool):
        return True
    if isinstance(v, numbers.Integral) or isinstance(v, np.integer):
        return True
    dt = getattr(v, "dtype", None)
    return dt is not None and hasattr(dt, "is_float") and not dt.is_float and not isinstance(v, MatVal)


class ndrange:
    """`fs.ndrange(n, (b, e), ...)`: a multi-dimensional range; parallel when outermost."""

    def __init__(self, *dims):
        self.bounds = [((0, d) if not isinstance(d, (tuple, list)) else tuple(d)) for d in dims]
        # A float bound would be truncated silently: refuse it (Taichi's wording).
        for b in self.bounds:
            if len(b) != 2:
                raise FieldsimSyntaxError("Every argument of ndrange should be a scalar or a "
                                          f"tuple/list like (begin, end); got {b}")
            if not all(_is_int_bound(v) for v in b):
                raise FieldsimTypeError("Every argument of ndrange should be an integer scalar or "
                                        f"a tuple/list of (int, int); got {b}")

    def __iter__(self):
        import itertools
        return itertools.product(*[range(b, e) for b, e in self.bounds])


class grouped:
    """`for I in fs.grouped(x)`: iterate a field or ndrange with a vector index."""

    def __init__(self, target):
        self.target = target

    def __iter__(self):
        import itertools

        from fieldsim.lang.matrix import Vector
        shape = self.target.shape if not isinstance(self.target, ndrange) else None
        if shape is not None:
            return (Vector(list(ix)) for ix in itertools.product(*[range(s) for s in shape]))
        return (Vector(list(ix)) for ix in self.target)


_pending_loop_config: dict = {}


def loop_config(serialize=False, block_dim=None, parallelize=None, **kw):
    """Configure the next top-level for loop (kernel scope); a no-op in Python scope."""


KERNEL_BUILTINS[loop_config] = lambda fe, n, a, k: fe.set_loop_config(**k)


def _matval_ctor(fe, node, args, kw, ndim):
    if len(args) != 1:
        entries = list(args)
    else:
        entries = args[0]
    if isinstance(entries, MatVal):
        return entries
    if not isinstance(entries, (list, tuple)):
        raise FieldsimTypeError("fs.Vector/fs.Matrix need a list of values")
    dt = kw.get("dt")
    if ndim == 2 or (entries and isinstance(entries[0], (list, tuple, MatVal))):
        rows = [list(r.entries) if isinstance(r, MatVal) else list(r) for r in entries]
        if ndim == 1 or any(len(r) != len(rows[0]) for r in rows):
            if ndim == 1:
                raise FieldsimTypeError("fs.Vector takes a flat list of scalars")
            raise FieldsimTypeError("fs.Matrix rows must all have the same length")
        m = MatVal.rows(rows)
    else:
        m = MatVal.vector(list(entries))
    return fe.e.cast(m, _dt(fe, dt)) if dt is not None else m


def is_available_in_python(fn) -> bool:
    return fn in KERNEL_BUILTINS
