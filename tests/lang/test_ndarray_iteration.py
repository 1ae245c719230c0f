"""Iterating an ndarray in Python scope is refused, located at the user's line.

A liquid-crystal Monte Carlo program from GitHub computes `float(sum(self.s)) / n3` of a 3-D
int ndarray. Taichi 1.7.4 iterates an ndarray through `__getitem__`: a 3-D one stops at once
(`sum` is a silent 0) and a 1-D one reads past its end without stopping. fieldsim refuses it
(as both refuse iterating a field); the error said "field" and carried no location. Checks:
`sum`, `list` and `for` over scalar and vector ndarrays raise `FieldScopeError` (a
`NotImplementedError`) naming the ndarray, its shape and this file's line; a field's
iteration is located too; `.to_numpy()` still gives the sum.
"""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.lang.field import FieldScopeError


def _this_line_plus(k):
    import inspect
    return inspect.currentframe().f_back.f_lineno + k


@pytest.mark.parametrize("shape", [(3,), (2, 3), (2, 2, 2)])
def test_sum_of_ndarray_is_refused_at_the_users_line(shape):
    fs.init(arch=fs.cpu)
    spins = fs.ndarray(fs.i32, shape=shape)
    spins.from_numpy(np.ones(shape, np.int32))
    line = _this_line_plus(2)
    with pytest.raises(FieldScopeError) as err:
        sum(spins)
    text = str(err.value)
    assert isinstance(err.value, NotImplementedError)
    assert "ndarray 'spins'" in text and str(shape) in text and ".to_numpy()" in text
    assert f'{__file__}", line {line}' in text
    assert spins.to_numpy().sum() == np.prod(shape)


def test_list_and_for_over_vector_ndarray_are_refused():
    fs.init(arch=fs.cpu)
    v = fs.Vector.ndarray(2, fs.f32, shape=4)
    with pytest.raises(FieldScopeError, match="ndarray 'v'"):
        list(v)
    with pytest.raises(FieldScopeError, match="ndarray 'v'"):
        for _ in v:
            pass


def test_field_iteration_is_located():
    fs.init(arch=fs.cpu)
    f = fs.field(fs.f32, shape=3)
    line = _this_line_plus(2)
    with pytest.raises(FieldScopeError) as err:
        list(f)
    assert f'{__file__}", line {line}' in str(err.value)
