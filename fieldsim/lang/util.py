"""`taichi.lang.util`'s helpers that Taichi programs import: which array libraries are present.

fieldsim takes numpy arrays, its own `fs.ndarray`s, torch tensors and DLPack arrays (JAX) as
ndarray arguments (fieldsim.lang.interop); paddle tensors are not accepted.
"""
from __future__ import annotations

import importlib.util


def has_pytorch() -> bool:
    return importlib.util.find_spec("torch") is not None


def has_paddle() -> bool:
    return importlib.util.find_spec("paddle") is not None


# Taichi's type conversions and scope helpers, which libraries import from `taichi.lang.util`
# (`to_taichi_type(arr.dtype)` to annotate a kernel from a numpy array, `python_scope` as a
# decorator on their own host methods).

def _dtype(dt):
    from fieldsim.lang import types as T
    if isinstance(dt, T.DataType):
        return dt
    if dt is float:
        return T.f64
    if dt is int:
        return T.i64
    if dt is bool:
        return T.u1
    try:
        return T.from_numpy(dt)
    except (TypeError, ValueError, KeyError):
        raise TypeError(f"no fieldsim type for {dt!r}") from None


def to_numpy_type(dt):
    """The numpy scalar type of a fieldsim type (`np.float32` for `fs.f32`).

    >>> to_numpy_type(fs.f32).__name__
    'float32'
    """
    import numpy as np
    return np.dtype(_dtype(dt).np).type


def to_taichi_type(dt):
    """The fieldsim type of a numpy or torch dtype (a fieldsim type comes back as it is).

    >>> to_taichi_type(np.float64), to_taichi_type(fs.i32)
    (f64, i32)
    """
    if type(dt).__module__ == "torch":  # a torch.dtype: through the numpy type it converts to
        import torch
        return _dtype(torch.empty((), dtype=dt).numpy().dtype)
    return _dtype(dt)


def to_pytorch_type(dt):
    """The torch dtype of a fieldsim type (`torch.float32` for `fs.f32`)."""
    import numpy as np
    import torch
    return torch.from_numpy(np.zeros((), dtype=to_numpy_type(dt))).dtype


def cook_dtype(dt):
    """A fieldsim type from a fieldsim type or Python's `float`/`int`/`bool`, read with the
    current `init`'s default types, as Taichi's `cook_dtype` reads them."""
    from fieldsim.lang import types as T
    from fieldsim.lang.runtime import cfg
    return T.concrete_dtype(dt, cfg.default_fp, cfg.default_ip)


def in_taichi_scope() -> bool:
    """True while a kernel or func being compiled calls Python code (the frontend's calls)."""
    from fieldsim.lang.runtime import _KERNEL_PYTHON_CALLS
    return _KERNEL_PYTHON_CALLS.depth > 0


def in_python_scope() -> bool:
    return not in_taichi_scope()


def _scope_guard(want_taichi: bool, fn):
    import functools

    @functools.wraps(fn)
    def guarded(*args, **kwargs):
        if in_taichi_scope() != want_taichi:  # Taichi's guard is an assert, too
            raise AssertionError(f"{fn.__qualname__} cannot be called in "
                                 f"{'Python' if want_taichi else 'Taichi'}-scope")
        return fn(*args, **kwargs)
    return guarded


def python_scope(fn):
    """Decorator: `fn` may be called from Python scope only."""
    return _scope_guard(False, fn)


def taichi_scope(fn):
    """Decorator: `fn` may be called while a kernel or func compiles only."""
    return _scope_guard(True, fn)


def warning(msg, warning_type=UserWarning, stacklevel=1, print_stack=True):
    """Taichi's `warning`: a Python warning (fieldsim's messages are all Python warnings)."""
    import warnings
    del print_stack
    warnings.warn(msg, warning_type, stacklevel=stacklevel + 1)
