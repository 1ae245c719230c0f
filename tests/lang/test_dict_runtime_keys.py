"""Kernel dicts keyed by scalar kernel values (each value its own key, as Taichi's Expr keys)
and Python's `sum` over containers of kernel values."""
import warnings

import numpy as np
import pytest

import fieldsim as fs


def _field():
    fs.init(arch=fs.cpu)
    w = fs.field(fs.i32, shape=6)
    w.from_numpy(np.array([5, 1, 4, 1, 7, 2], np.int32))
    return w


def test_values_of_a_dict_keyed_by_loads():
    w = _field()

    @fs.kernel
    def weighted() -> fs.i32:
        d = {w[i]: w[i] * (i + 1) for i in range(6) if i % 2 == 1}
        return sum(d.values())

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        assert weighted() == 1 * 2 + 1 * 4 + 2 * 6


def test_equal_runtime_keys_stay_distinct_items():
    w = _field()

    @fs.kernel
    def count() -> fs.i32:
        d = {w[1]: 10, w[3]: 20}  # both keys read 1: two items still
        n = 0
        for v in fs.static(list(d.values())):
            n += v
        return n

    assert count() == 30


def test_sum_of_lists_with_start_and_plain_numbers():
    w = _field()

    @fs.kernel
    def s() -> fs.i32:
        return sum([w[0], w[2], 3]) + sum((w[4],), 100) + sum([1, 2])

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        assert s() == 5 + 4 + 3 + 107 + 3


def test_runtime_key_lookup_and_vector_sum_are_refused():
    w = _field()

    @fs.kernel
    def lookup(i: fs.i32) -> fs.i32:
        d = {w[0]: 1}
        return d[w[i]]

    @fs.kernel
    def vec_sum() -> fs.i32:
        return sum(fs.Vector([w[0], w[1]]))

    with pytest.raises(fs.FieldsimCompilationError):
        lookup(0)
    with pytest.raises(fs.FieldsimCompilationError):
        vec_sum()
