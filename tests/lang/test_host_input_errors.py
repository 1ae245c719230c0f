"""Bad values handed to fields from Python scope: a clear error naming the field, and the
field's data left as it was.

Checks: float and ragged shapes, string dtypes and empty vector/matrix elements are refused
when the field is declared (Taichi refuses them too; fieldsim used to truncate 2.5 to 2 and
read "float" as f64); `from_numpy` refuses NaN or infinity into an integer field (a cast would
store INT_MIN) and a ragged list, naming the field, without touching the data; integer-like
extents (NumPy integers, 0-d and 1-d NumPy arrays) still work.
"""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu, offline_cache=False)
    yield
    fs.reset()


@pytest.mark.parametrize("shape", [(2.5,), 2.5, (3, 2.0)])
def test_a_float_extent_is_refused(shape):
    with pytest.raises(TypeError, match=r"field 'x': shape .* extents are integers"):
        x = fs.field(fs.f32, shape=shape)  # noqa: F841 - its name is the one the message gives


def test_an_ndarray_float_extent_is_refused():
    with pytest.raises(TypeError, match="extents are integers"):
        fs.ndarray(fs.f32, shape=3.5)


@pytest.mark.parametrize("shape, want", [(np.int64(3), (3,)), (np.array(4), (4,)),
                                         (np.array([2, 3]), (2, 3)), ([5], (5,)), ((), ())])
def test_integer_like_extents_are_taken(shape, want):
    assert fs.field(fs.f32, shape=shape).shape == want


def test_a_string_dtype_is_refused():
    with pytest.raises(TypeError, match="unsupported field dtype 'float'"):
        fs.field("float", shape=3)


@pytest.mark.parametrize("make", [lambda: fs.Vector.field(0, fs.f32, shape=3),
                                  lambda: fs.Matrix.field(2, 0, fs.f32, shape=3),
                                  lambda: fs.Vector.field(2.0, fs.f32, shape=3)])
def test_an_empty_or_float_element_shape_is_refused(make):
    with pytest.raises(ValueError, match="dimensions of at least 1"):
        make()


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_from_numpy_refuses_non_finite_values_into_an_integer_field(bad):
    n = fs.field(fs.i32, shape=4)
    n.from_numpy(np.array([5, 6, 7, 8]))
    with pytest.raises(ValueError, match=r"field 'n'.from_numpy: the array holds .* at \(2,\), "
                                         r"which the i32 field cannot store"):
        n.from_numpy(np.array([1.0, 2.0, bad, 3.0]))
    assert n.to_numpy().tolist() == [5, 6, 7, 8]


def test_from_numpy_of_finite_floats_into_an_integer_field_truncates_as_before():
    n = fs.field(fs.i32, shape=3)
    n.from_numpy(np.array([1.7, -2.2, 3.0]))
    assert n.to_numpy().tolist() == [1, -2, 3]


def test_from_numpy_refuses_a_ragged_list_naming_the_field():
    x = fs.field(fs.f32, shape=(2, 2))
    x.fill(3)
    with pytest.raises(ValueError, match=r"field 'x'.from_numpy: list is not a rectangular array"):
        x.from_numpy([[1, 2], [3]])
    assert (x.to_numpy() == 3).all()
