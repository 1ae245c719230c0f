"""Taichi's `ti.lang.ops` comparison and logic names: `cmp_eq`, `cmp_ne`, `cmp_lt`, `cmp_le`,
`cmp_gt`, `cmp_ge`, `bit_not`, `logical_and`, `logical_or`, `ifte`, `clz`, `popcnt`, `frexp`
(in kernels the `math`/`ops_int` ones; in Python scope Taichi's own arithmetic on the value,
which is not the 32-bit one: `clz(-1)` is 32, `popcnt(-1)` 1, `frexp` numpy's pair).

Guarantees Taichi 1.7.4's results in both scopes: in Python scope a comparison is a bool (a
vector of bools for vectors), `logical_and`/`logical_or`/`ifte` are Python's `and`/`or`/`if`
(a vector operand raises, as there); in a kernel they are what `<`, `~`, `and`, `or` and
`ti.select` compile to (`logical_and(3, 5)` is 5, element-wise 0/1 on vectors).
"""
from __future__ import annotations

import operator

import numpy as np

from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang import math as math_module
from fieldsim.lang import ops as ops_module
from fieldsim.lang import ops_int
from fieldsim.lang.expr import MatVal
from fieldsim.lang.ops import KERNEL_BUILTINS


def _named(fn, name):
    def call(*args):
        return fn(*args)
    call.__name__ = call.__qualname__ = name
    return call


def _compare(symbol):
    def handler(fe, node, args, kw):
        from fieldsim.lang.frontend_expr import coerce_pair
        a, b = coerce_pair(*args)
        if not isinstance(a, (Stmt, MatVal)) and not isinstance(b, (Stmt, MatVal)):
            return int(_PY_CMP[symbol](a, b))
        return fe.e.binop(symbol, a, b)
    return handler


_PY_CMP = {"==": operator.eq, "!=": operator.ne, "<": operator.lt, "<=": operator.le,
           ">": operator.gt, ">=": operator.ge}
_CMP_NAMES = {"cmp_eq": "==", "cmp_ne": "!=", "cmp_lt": "<", "cmp_le": "<=", "cmp_gt": ">",
              "cmp_ge": ">="}


def bit_not(x):
    """`~x`, element-wise on vectors and matrices (`bit_not(5)` is -6).

    >>> bit_not(5)
    -6
    """
    return ~int(x) if isinstance(x, bool) else ~x


def _truth(v):
    if hasattr(v, "to_numpy"):  # Taichi's Python-scope and/or/ifte take a vector's truth: numpy's error
        raise ValueError("The truth value of a vector/matrix with more than one element is "
                         "ambiguous; in Python scope ti.lang.ops.logical_and/logical_or/ifte take "
                         "scalars (use .all()/.any(), or call them inside a kernel)")
    return v


def logical_and(a, b):
    """Python's `a and b` (`logical_and(3, 5)` is 5); in a kernel, what `a and b` compiles to.

    >>> logical_and(3, 5), logical_and(0, 5)
    (5, 0)
    """
    return _truth(a) and b


def logical_or(a, b):
    """Python's `a or b`; in a kernel, what `a or b` compiles to.

    >>> logical_or(0, 5), logical_or(2, 0)
    (5, 2)
    """
    return _truth(a) or b


def ifte(cond, x, y):
    """`x if cond else y`; in a kernel, `ti.select(cond, x, y)`.

    >>> ifte(0, 2.0, 3)
    3
    """
    return x if _truth(cond) else y


def clz(x):
    """Python scope: 32 less the exponent of the first power of two above `x` (32 for x <= 0,
    0 from 2**31 up), Taichi's `ti.lang.ops.clz` of a number; in a kernel, `ti.math.clz`.

    >>> clz(8), clz(-1), clz(2**31)
    (28, 32, 0)
    """
    if hasattr(x, "to_numpy"):
        return math_module.clz(x)
    return next((32 - i for i in range(32) if 2 ** i > x), 0)


def popcnt(x):
    """Python scope: the ones of `bin(x)` (`popcnt(-1)` is 1: the sign is no bits), Taichi's
    `ti.lang.ops.popcnt` of a number; in a kernel, `ti.math.popcnt`.

    >>> popcnt(7), popcnt(-1), popcnt(2**40)
    (3, 1, 1)
    """
    if hasattr(x, "to_numpy"):
        return math_module.popcnt(x)
    return operator.index(x).bit_count()


def frexp(x):
    """Python scope: numpy's `frexp` pair (np.float64 / np.int32 for a Python float), as
    Taichi's `ti.lang.ops.frexp`; in a kernel, `ti.frexp`.

    >>> [type(v).__name__ for v in frexp(8.0)]
    ['float64', 'int32']
    """
    if hasattr(x, "to_numpy"):
        return ops_int.frexp(x)
    return np.frexp(x)


def _bit_not_kernel(fe, node, args, kw):
    x = args[0]
    return fe.e.unop(Op.BIT_NOT, x) if isinstance(x, (Stmt, MatVal)) else bit_not(x)


KERNEL_BUILTINS[bit_not] = _bit_not_kernel
KERNEL_BUILTINS[logical_and] = lambda fe, node, args, kw: fe.combine_bool(list(args), True)
KERNEL_BUILTINS[logical_or] = lambda fe, node, args, kw: fe.combine_bool(list(args), False)
KERNEL_BUILTINS[ifte] = lambda fe, node, args, kw: fe.e.select(args[0], args[1], args[2])


def _constant_folded(fn, compiled):
    # Taichi applies ops' Python function to a Python number even in a kernel: `ops.clz(0) +
    # ops.popcnt(-1)` there is 33, not the 32-bit 64
    def handler(fe, node, args, kw):
        if len(args) == 1 and isinstance(args[0], int) and not kw:
            return fn(args[0])
        return compiled(fe, node, args, kw)
    return handler


def _register():
    for name, symbol in _CMP_NAMES.items():
        fn = _named(_PY_CMP[symbol], name)
        KERNEL_BUILTINS[fn] = _compare(symbol)
        setattr(ops_module, name, fn)
    for fn, compiled in ((clz, math_module.clz), (popcnt, math_module.popcnt)):
        KERNEL_BUILTINS[fn] = _constant_folded(fn, KERNEL_BUILTINS[compiled])
    KERNEL_BUILTINS[frexp] = KERNEL_BUILTINS[ops_int.frexp]
    for fn in (bit_not, logical_and, logical_or, ifte, clz, popcnt, frexp):
        setattr(ops_module, fn.__name__, fn)


_register()
