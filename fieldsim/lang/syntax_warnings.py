"""Taichi's compile-time `SyntaxWarning`s about kernel code that runs but may not do what its
author meant.

Takes the frontend, the called object or the unrolled loop, and the AST node. Guarantees, as
Taichi 1.7.4 (measured):

* a call in a kernel or func of a plain Python callable (a user function or method, a lambda,
  a class, `len` of a list, `math.sqrt`, `np.float32`, `round`, ...) outside `fs.static(...)`
  warns `Calling non-taichi function "<callee as written>"`: fieldsim runs such a function on
  kernel values (inlined), where a Python-only construct in it fails or is evaluated once at
  compile time. No warning for fieldsim's own objects (funcs, kernels, fs.* functions, field
  and matrix methods, types), for the builtins Taichi maps to kernel operations (print, min,
  max, int, float, bool, abs, pow, any, all, `@`, `len` of a vector) or for `str.format`;
* an `if`, `while` or `a if c else b` inside such a plain helper that tests a kernel value warns
  once at its line (fieldsim's own warning, no Taichi one): Taichi 1.7.4 runs the helper as
  Python, where a kernel value is always true, so it takes the first branch for every value;
  fieldsim branches on each value, as a `@ti.func` does;
* an `fs.static` loop warns "You are unrolling more than N iterations" when it unrolls an
  iteration past `fs.init(unrolling_limit=N)` (default 32; 0 turns it off).

Each warning is shown at the user's file and line, once per location (fieldsim's own funcs
never warn).
"""
from __future__ import annotations

import ast
import builtins
import operator
import warnings

from fieldsim.lang.expr import MatVal

_registry: dict = {}  # warn_explicit's once-per-location record

# the builtins Taichi's frontend turns into kernel operations (no warning)
_MAPPED_BUILTINS = frozenset(map(id, (builtins.print, builtins.min, builtins.max, builtins.int,
                                      builtins.bool, builtins.float, builtins.any, builtins.all,
                                      builtins.abs, builtins.pow, operator.matmul)))


def _is_python_callable(fn, args) -> bool:
    """Whether Taichi would call `fn` as an outside ("non-taichi") Python function."""
    if id(fn) in _MAPPED_BUILTINS:
        return False
    if fn is builtins.len and len(args) == 1 and isinstance(args[0], MatVal):
        return False
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, str) and getattr(fn, "__name__", "") == "format":
        return False
    module = getattr(fn, "__module__", None) or getattr(type(fn), "__module__", None) or ""
    return not module.startswith(("fieldsim.", "taichi."))


def _warn(fe, message: str, node) -> None:
    warn_at(fe, message, node)


def warn_at(fe, message: str, node, category=SyntaxWarning) -> None:
    """Warns once at the user's line of `node`."""
    loc = fe.loc(node)
    warnings.warn_explicit(message, category, loc.file, loc.line,
                           registry=_registry.setdefault(loc.file, {}))


def check_call(fe, fn, args, node) -> None:
    """Warns when the kernel code at `node` calls the Python callable `fn` outside fs.static."""
    if node is None or node is fe.for_iter or fe.static_args or fe.frame.source.in_fieldsim \
            or fe.frame.plain:
        return
    if not _is_python_callable(fn, args):
        return
    name = ast.unparse(node.func).strip() if isinstance(node, ast.Call) else repr(fn)
    _warn(fe, f'Calling non-taichi function "{name}". Scope inside the function is not '
              "processed by fieldsim's kernel frontend: fieldsim runs it on the kernel's values "
              "as Taichi does, and it may not work as expected. Maybe you can consider turning "
              "it into a @ti.func?", node)


def check_plain_branch(fe, kind: str, node) -> None:
    """Warns where the plain helper being inlined branches (`kind`) on a kernel value: Taichi's
    results differ there (every value taken as true), a silent difference otherwise."""
    if not fe.frame.plain or fe.frame.source.in_fieldsim:
        return
    name = getattr(fe.frame.fn, "__name__", "?")
    _warn(fe, f'`{kind}` on a kernel value in the plain Python function "{name}": fieldsim '
              "tests each value, as a @ti.func does; Taichi runs the function as Python, where "
              "a kernel value is always true, so it takes the first branch for every value. "
              "Decorate it with @ti.func for the same results in both.", node)


def check_unroll(fe, iteration: int, node) -> None:
    """Warns once an fs.static loop unrolls iteration `iteration` (from 0) past the limit."""
    limit = getattr(fe.rt, "unrolling_limit", 32)
    if not limit or iteration != limit or fe.frame.source.in_fieldsim:
        return
    _warn(fe, f"You are unrolling more than {limit} iterations, so the compile time may be "
              "extremely long. You can use a non-static for loop if you want to decrease the "
              "compile time. You can disable this warning by setting "
              "ti.init(unrolling_limit=0).", node)
