"""`fs.experimental`: Taichi 1.7's deprecated home of `real_func`.

Takes a function, as `fs.real_func` does. Guarantees: the same real function `fs.real_func`
makes, after a `DeprecationWarning` naming the new spelling (Taichi 1.7 warns the same), so
programs written for Taichi 1.5-1.6 run unmodified.
"""
from __future__ import annotations

import warnings

from fieldsim.lang.kernel import real_func as _real_func

__all__ = ["real_func"]


def real_func(func):
    """``@ti.experimental.real_func``: ``@ti.real_func`` under its pre-1.7 name.

    >>> import warnings, fieldsim as fs
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     @fs.experimental.real_func
    ...     def twice(x: fs.i32) -> fs.i32:
    ...         return 2 * x
    >>> callable(twice)
    True
    """
    warnings.warn("ti.experimental.real_func is deprecated because it is no longer "
                  "experimental. Use ti.real_func instead.", DeprecationWarning, stacklevel=2)
    return _real_func(func)
