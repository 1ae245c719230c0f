"""`taichi.lang.util`'s helpers that Taichi programs import: which array libraries are present.

fieldsim takes numpy arrays and its own `fs.ndarray`s as ndarray arguments; torch and paddle
tensors are not accepted (`has_pytorch()` still says whether torch is installed, as in Taichi).
"""
from __future__ import annotations

import importlib.util


def has_pytorch() -> bool:
    return importlib.util.find_spec("torch") is not None


def has_paddle() -> bool:
    return importlib.util.find_spec("paddle") is not None
