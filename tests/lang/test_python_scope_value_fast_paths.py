"""Python-scope `fs.Vector([...])`, `fs.Matrix([[...]])`, arithmetic results and `v[k]` take
short paths for plain numbers; these pin down that the values are the checked paths' own:
NumPy's dtypes, independent arrays, and the same located errors for bad entries."""
import numpy as np
import pytest

import fieldsim as fs


def test_plain_lists_make_the_dtypes_numpy_makes():
    assert fs.Vector([1, 2, 3]).to_numpy().dtype == np.int64
    assert fs.Vector((1.5, 2)).to_numpy().dtype == np.float64
    assert fs.Vector([np.float32(1), np.float32(2)]).to_numpy().dtype == np.float32
    assert fs.Vector([True, False]).to_numpy().dtype == np.bool_  # not numbers: checked path
    assert fs.Matrix([[1, 2], [3, 4]]).to_numpy().dtype == np.int64
    flat = fs.Matrix([1.0, 2.0])
    assert flat.ndim == 1 and flat.to_list() == [1.0, 2.0]
    rows = fs.Vector([[1, 2], [3, 4]])  # rows make a matrix, as in Taichi
    assert isinstance(rows, fs.Matrix) and rows.to_numpy().shape == (2, 2)


def test_results_and_rows_are_independent_values():
    v = fs.Vector([1.0, 2.0, 3.0])
    w = v + v
    w[0] = 100.0
    assert v.to_list() == [1.0, 2.0, 3.0] and w.to_list() == [100.0, 4.0, 6.0]
    m = fs.Matrix([[1.0, 2.0], [3.0, 4.0]])
    row = m[0]
    row[0] = 9.0
    assert m.to_list() == [[1.0, 2.0], [3.0, 4.0]] and row.to_list() == [9.0, 2.0]
    assert isinstance(v * 2.0, fs.Vector) and (v * 2.0).to_list() == [2.0, 4.0, 6.0]


def test_entries_read_as_numpy_scalars_and_bad_indices_are_located():
    v = fs.Vector([1.0, 2.0, 3.0])
    assert v[0] == 1.0 and v[-1] == 3.0 and isinstance(v[1], np.float64)
    with pytest.raises(IndexError, match="out of range"):
        v[3]
    with pytest.raises(fs.FieldsimValueError, match="rectangular"):
        fs.Matrix([[1.0, 2.0], [3.0]])
    with pytest.raises(fs.FieldsimTypeError, match="array-like"):
        fs.Vector(3)
