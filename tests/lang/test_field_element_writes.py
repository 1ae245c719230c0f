"""Python-scope scalar writes `x[i, j] = v` with plain ints and a Python int or float: the short
path stores what the general coercion stores, and every key or value the general checks must
word still reaches them."""
import math

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import FieldsimError
from fieldsim.lang.field import Field

DTYPES = [fs.f16, fs.f32, fs.f64, fs.i8, fs.i32, fs.i64, fs.u8, fs.u16, fs.u32, fs.u64]
VALUES = [0, 1, -1, 127, 128, 255, 256, -129, 2 ** 24 + 1, 2 ** 31, -2 ** 31 - 1, 2 ** 53,
          2 ** 53 + 1, 2 ** 63, -2 ** 63 - 1, 2 ** 64, 10 ** 40, 0.0, -0.0, 1.5, -2.5, 0.1,
          65504.0, 65519.0, 65520.0, 3.4028235e38, 3.5e38, 1e300, -1e300, math.inf, math.nan,
          True, np.float32(2.7), np.int64(-3)]


def _general(field, value):
    """What the general coercion stores (or the error type it raises)."""
    try:
        return field._coerce(value, (), "element")
    except (TypeError, ValueError) as err:
        return type(err)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_scalar_writes_store_what_the_general_coercion_stores(dtype):
    x = fs.field(dtype, (3, 4))
    for value in VALUES:
        want = _general(x, value)
        if isinstance(want, type):
            with pytest.raises(want):
                x[1, 2] = value
            continue
        x[1, 2] = value
        got = x.to_numpy()[1, 2]
        assert got.dtype == want.dtype, (dtype, value)
        assert got.tobytes() == want.tobytes(), (dtype, value, got, want)


def test_scalar_writes_skip_the_general_coercion_only_for_plain_values(monkeypatch):
    calls = []
    original = Field._coerce

    def counted(self, value, *args, **kwargs):
        calls.append(value)
        return original(self, value, *args, **kwargs)
    monkeypatch.setattr(Field, "_coerce", counted)
    x = fs.field(fs.f32, (4, 4))
    x[1, 2] = 0.5
    x[2, 1] = 3
    assert calls == []
    x[0, 0] = np.float32(1.0)
    x[0, 1] = 1e300  # overflows f32: the general path stores inf, silently
    assert len(calls) == 2 and x[0, 1] == math.inf
    v = fs.Vector.field(2, fs.f32, 3)
    v[1] = [1.0, 2.0]
    assert len(calls) == 3


def test_two_and_three_axis_writes_land_on_their_cells():
    x = fs.field(fs.i32, (5, 6, 7), offset=(-2, 0, 3))
    ref = np.zeros((5, 6, 7), np.int32)
    for n, (i, j, k) in enumerate([(-2, 0, 3), (2, 5, 9), (0, 3, 5), (1, 1, 8)]):
        x[i, j, k] = n + 10
        ref[i + 2, j, k - 3] = n + 10
    assert (x.to_numpy() == ref).all()
    assert x[2, 5, 9] == 11


@pytest.mark.parametrize("key, error", [
    ((5, 0), IndexError), ((-1, 0), IndexError), ((0, 6), IndexError), ((0,), IndexError),
    ((0, 0, 0), IndexError), ((0.0, 1), TypeError), ((True, 1), TypeError),
    ((slice(None), 1), TypeError)])
def test_two_axis_keys_the_general_checks_must_word_still_raise(key, error):
    x = fs.field(fs.f32, (5, 6), name="grid")
    with pytest.raises(error) as info:
        x[key] = 1.0
    assert isinstance(info.value, FieldsimError) and "grid" in str(info.value)


def test_numpy_integer_keys_still_index():
    x = fs.field(fs.f32, (5, 6))
    x[np.int64(2), np.int32(3)] = 4.0
    assert x[2, 3] == 4.0 and x.to_numpy().sum() == 4.0
