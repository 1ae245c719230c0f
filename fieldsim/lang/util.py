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
