"""Python-scope `fs.Vector`/`fs.Matrix` values and ndarrays as Taichi 1.7.4 makes them: an int
entry out of a `dt`'s range is an OverflowError, iteration yields NumPy scalars, `diag` keeps an
int value's type, and a vector ndarray's `from_numpy` takes its exact shape only."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


@pytest.mark.parametrize("entries, dt", [([300, 1], "u8"), ([2, -1], "u8"), ([-129, 0.5], "i8"),
                                         ([[1, 200], [1, 1]], "i8"), ([2.5, -1.5], "u16")])
def test_int_entry_out_of_range_is_overflow_error(entries, dt):
    make = fs.Matrix if isinstance(entries[0], list) else fs.Vector
    with pytest.raises(OverflowError, match="out of bounds"):
        make(entries, dt=getattr(fs, dt))


def test_nan_entry_into_an_int_type_is_value_error():
    with pytest.raises(ValueError, match="NaN"):
        fs.Vector([float("nan"), 1], dt=fs.i32)


def test_int_entries_in_range_keep_their_values():
    v = fs.Vector([2.5, 255, True], dt=fs.u8)  # floats truncate, as np.array(..., np.uint8)
    assert v.to_numpy().tolist() == [2, 255, 1] and v.to_numpy().dtype == np.uint8
    m = fs.Matrix([[127, -128], [0, 3.9]], dt=fs.i8)
    assert m.to_numpy().tolist() == [[127, -128], [0, 3]]


def test_iteration_yields_numpy_scalars_of_the_entries_type():
    v = fs.Vector([200, -2], dt=fs.i32)
    items = list(v)
    assert items == [200, -2] and all(type(e) is np.int32 for e in items)
    rows = list(fs.Matrix([[1.0, 2.0], [3.0, 4.0]]))
    assert rows == [[1.0, 2.0], [3.0, 4.0]] and type(rows[1][0]) is np.float64


def test_iterating_a_field_element_yields_python_numbers():
    x = fs.Vector.field(2, fs.u64, shape=2)
    x[0] = [2**64 - 1, 7]
    assert [type(e) for e in x[0]] == [int, int] and list(x[0]) == [2**64 - 1, 7]


def test_diag_of_an_int_is_an_int_matrix():
    d = fs.Matrix.diag(3, 2)
    assert d.to_numpy().dtype.kind == "i"
    assert d.to_numpy().tolist() == [[2, 0, 0], [0, 2, 0], [0, 0, 2]]
    assert fs.Matrix.diag(2, 0.5).to_numpy().tolist() == [[0.5, 0.0], [0.0, 0.5]]


def test_vector_ndarray_from_numpy_refuses_a_keep_dims_shape():
    a = fs.Vector.ndarray(2, fs.f32, shape=(2, 3))
    with pytest.raises(ValueError, match=r"expected an array of shape \(2, 3, 2\), got \(2, 3, 2, 1\)"):
        a.from_numpy(np.zeros((2, 3, 2, 1)))
    a.from_numpy(np.arange(12, dtype=np.float32).reshape(2, 3, 2))
    assert a[1, 2].to_numpy().tolist() == [10.0, 11.0]


def test_struct_from_numpy_dict_missing_a_member_is_key_error():
    s = fs.Struct.field({"a": fs.i32, "v": fs.types.vector(2, fs.f32)}, shape=3)
    with pytest.raises(KeyError, match="has no v"):
        s.from_numpy({"a": np.array([7, 8, 9])})
    s.from_numpy({"a": np.array([7, 8, 9]), "v": np.ones((3, 2))})
    assert s.to_numpy()["a"].tolist() == [7, 8, 9] and s[2].v.to_list() == [1.0, 1.0]
