"""`fs.algorithms`: Taichi's `ti.algorithms` helpers, `PrefixSumExecutor` and `parallel_sort`.

Takes fields (or ndarrays): `PrefixSumExecutor(n).run(a)` replaces a[0:n] of an i32 `a` by its
inclusive prefix sums (wrapping on overflow, as i32 additions do); `parallel_sort(keys, values)`
sorts `keys` (a 1-D scalar field) ascending in place and moves `values` (any field of the same
length) along. The sort is Taichi's Batcher odd-even merge network, compare-exchange for
compare-exchange, so equal keys leave their values in the order Taichi's does (it is not a
stable sort). Both run on the host (numpy) between launches; Taichi 1.7.4 runs the prefix sum
on CUDA and Vulkan only (its CPU backend raises), fieldsim on every backend.
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import FieldsimRuntimeError
from fieldsim.lang import runtime
from fieldsim.lang import types as T

__all__ = ["PrefixSumExecutor", "parallel_sort"]


class PrefixSumExecutor:
    """An in-place inclusive prefix sum over the first `length` items of an i32 field.

    >>> counts = fs.field(fs.i32, shape=5)
    >>> counts.from_numpy(np.array([3, 0, 2, 1, 4], np.int32))
    >>> fs.algorithms.PrefixSumExecutor(5).run(counts)
    >>> counts.to_numpy()
    array([ 3,  3,  5,  6, 10], dtype=int32)
    """

    def __init__(self, length: int):
        self.sorting_length = int(length)  # Taichi's attribute name

    def run(self, input_arr):
        """Replaces `input_arr[0:length]` by its inclusive prefix sums (see the class)."""
        runtime.python_scope_call("fs.algorithms.PrefixSumExecutor.run(...)")
        if getattr(input_arr, "dtype", None) is not T.i32:
            raise FieldsimRuntimeError("Only ti.i32 type is supported for prefix sum.")
        a = input_arr.to_numpy()
        n = self.sorting_length
        a[:n] = np.cumsum(a[:n], dtype=np.int32)
        input_arr.from_numpy(a)


def parallel_sort(keys, values=None):
    """Sorts a 1-D field of keys ascending in place, moving `values` along (Taichi's odd-even
    merge sort; equal keys keep the network's order, not necessarily their original one).

    >>> k = fs.field(fs.f32, shape=4); v = fs.field(fs.i32, shape=4)
    >>> k.from_numpy(np.array([0.5, -1.0, 2.0, 0.0], np.float32))
    >>> v.from_numpy(np.arange(4, dtype=np.int32))
    >>> fs.algorithms.parallel_sort(k, v)
    >>> k.to_numpy(), v.to_numpy()
    (array([-1. ,  0. ,  0.5,  2. ], dtype=float32), array([1, 3, 0, 2], dtype=int32))
    """
    # in a kernel it would sort once, while the kernel compiles (Taichi: a kernel cannot launch
    # the sort's kernels); refused under its own name, not its to_numpy
    runtime.python_scope_call("fs.algorithms.parallel_sort(...)")
    key_arr = keys.to_numpy()
    val_arr = values.to_numpy() if values is not None else None
    if _distinct_and_ordered(key_arr):
        # a sorting network's output is the sorted order; only ties (and NaN, which compares
        # false) depend on the network's exchanges, so distinct keys take numpy's sort
        order = np.argsort(key_arr, kind="stable")
        keys.from_numpy(key_arr[order])
        if values is not None:
            values.from_numpy(val_arr[order])
        return
    for a, b in _network(keys.shape[0]):
        swap = key_arr[a] > key_arr[b]
        a, b = a[swap], b[swap]
        key_arr[a], key_arr[b] = key_arr[b], key_arr[a].copy()
        if val_arr is not None:
            val_arr[a], val_arr[b] = val_arr[b], val_arr[a].copy()
    keys.from_numpy(key_arr)
    if values is not None:
        values.from_numpy(val_arr)


def _distinct_and_ordered(key_arr: np.ndarray) -> bool:
    """No two keys compare equal (0.0 and -0.0 do) and none is NaN."""
    if key_arr.dtype.kind == "f" and np.isnan(key_arr).any():
        return False
    return np.unique(key_arr).size == key_arr.size


def _network(n: int):
    """The compare-exchange pairs (a, b) of each stage of Taichi's `sort_stage` launches, a < b;
    the pairs of one stage are disjoint, so each stage is one vectorized step."""
    p = 1
    while p < n:
        k = p
        while k >= 1:
            invocations = int((n - k - k % p) / (2 * k)) + 1
            j = k % p + np.arange(invocations) * 2 * k
            i = np.arange(k)
            a = (j[:, None] + i[None, :])[i[None, :] < (n - j - k)[:, None]]
            b = a + k
            same_block = a // (p * 2) == b // (p * 2)
            yield a[same_block], b[same_block]
            k //= 2
        p *= 2
