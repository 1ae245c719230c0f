"""Subnormal floats as Taichi 1.7.4's x64 CPU backend leaves them: flushed to a zero of their sign.

Taichi's x86-64 kernels run with flush-to-zero set (`codegen/denormals.py`), and its Python-scope
writes are kernels too, so a subnormal written from Python is stored as 0 where the write
converts or copies through a kernel: every `fill`, and an f32 element write or `from_numpy`
(f64 ones keep the value: measured on 1.7.4). A kernel's own constants are flushed as well.
Pure helpers, used by codegen (constants) and lang (Python-scope writes).
"""
import math
import platform
import struct

import numpy as np

FLUSHING_MACHINE = platform.machine().lower() in ("x86_64", "amd64")  # where the CPU backend flushes
SMALLEST_NORMAL = {32: 2.0 ** -126, 64: 2.0 ** -1022}


def flushing_widths(arch: str, fast_math: bool) -> frozenset:
    """The float widths (bits) whose subnormals a kernel flushes to zero on `arch`: f32 and f64
    on the x86-64 CPU (FTZ/DAZ, codegen.denormals), f32 on CUDA under fast-math (codegen.ptx).

    >>> sorted(flushing_widths("cuda", True)), sorted(flushing_widths("cuda", False))
    ([32], [])
    """
    if arch == "cpu":
        return frozenset((32, 64)) if FLUSHING_MACHINE else frozenset()
    return frozenset((32,)) if arch == "cuda" and fast_math else frozenset()


def flushed_constant(value: float, bits: int) -> float:
    """A float constant as a flushing task sees it: a subnormal of its type (after rounding to
    it) is a zero of its sign, as Taichi's x64 kernels store `a[0] = 1e-45` as 0.

    >>> flushed_constant(1e-45, 32), flushed_constant(-1e-320, 64), flushed_constant(1e-45, 64)
    (0.0, -0.0, 1e-45)
    """
    if bits not in SMALLEST_NORMAL or not math.isfinite(value):
        return value
    rounded = struct.unpack("f", struct.pack("f", value))[0] if bits == 32 else value
    if rounded != 0.0 and abs(rounded) < SMALLEST_NORMAL[bits]:
        return math.copysign(0.0, value)
    return value


def flushed_array(arr: np.ndarray) -> np.ndarray:
    """`arr` (f32 or f64) with its subnormals made zeros of their sign; `arr` itself where it
    has none (never changed in place: it may be the caller's).

    >>> flushed_array(np.array([1e-45, -1e-45, 1.0, 0.0], np.float32)).tolist()
    [0.0, -0.0, 1.0, 0.0]
    """
    bits = arr.dtype.itemsize * 8
    if arr.dtype.kind != "f" or bits not in SMALLEST_NORMAL:
        return arr
    smallest = SMALLEST_NORMAL[bits]
    if arr.size <= 16 and min(map(abs, arr.ravel().tolist()), default=1.0) >= smallest:
        return arr  # an element (the common write): a Python check is 5x cheaper than numpy's
    tiny = (np.abs(arr) < smallest) & (arr != 0)
    if not tiny.any():
        return arr
    out = np.array(arr)
    out[tiny] *= 0  # keeps the sign
    return out
