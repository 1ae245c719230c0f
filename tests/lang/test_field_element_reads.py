"""Python-scope reads of vector/matrix field elements: the key is checked once per read, and the
element value still writes through, sees newer values and keeps its last ones after a re-init."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import FieldsimRuntimeError
from fieldsim.lang.field import Field


@pytest.fixture
def index_calls(monkeypatch):
    calls = []
    original = Field._index

    def counted(self, key):
        calls.append(key)
        return original(self, key)
    monkeypatch.setattr(Field, "_index", counted)
    return calls


def test_an_entry_of_an_element_checks_the_key_once(index_calls):
    # a FEM program read `edges[i][0], edges[i][1]` for every edge each frame: the element's
    # entries re-read the field at each use, and each re-read re-checked the key
    edges = fs.Vector.field(2, fs.i32, 8)
    edges[3] = [4, 5]
    index_calls.clear()
    assert edges[3][0] == 4
    assert len(index_calls) == 1
    m = fs.Matrix.field(2, 2, fs.f32, (3, 2))
    m[1, 1] = [[1.0, 2.0], [3.0, 4.0]]
    index_calls.clear()
    assert m[1, 1][1, 0] == 3.0 and m[1, 1].to_numpy().tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert len(index_calls) == 2


def test_element_values_write_through_and_see_newer_values():
    x = fs.Vector.field(3, fs.f32, 5, offset=-2)
    x[-2] = [1.0, 2.0, 3.0]
    v = x[-2]
    assert type(v) is fs.Vector and v.dtype is None and v.to_numpy().dtype == np.float64
    v[0] = 7.0
    v.z = 9.0
    assert x[-2].to_numpy().tolist() == [7.0, 2.0, 9.0]
    x[-2] = [4.0, 5.0, 6.0]
    assert v.to_numpy().tolist() == [4.0, 5.0, 6.0] and v.y == 5.0
    m = fs.Matrix.field(2, 2, fs.i32, 2)
    e = m[1]
    e[0, 1] = 3
    assert type(e) is fs.Matrix and m.to_numpy()[1].tolist() == [[0, 3], [0, 0]]


def test_bad_keys_are_still_refused():
    x = fs.Vector.field(2, fs.f32, 4)
    with pytest.raises(IndexError, match="out of range"):
        x[4]
    with pytest.raises(TypeError, match="not an int"):
        x[True]
    with pytest.raises(TypeError, match="not an int"):
        x[1.0]
    assert x[np.int64(3)].to_numpy().tolist() == [0.0, 0.0]


def test_an_element_of_a_dropped_field_keeps_its_last_values():
    x = fs.Vector.field(2, fs.f32, 4)
    x[1] = [1.5, 2.5]
    v = x[1]
    fs.init(arch=fs.cpu)
    assert v.to_numpy().tolist() == [1.5, 2.5]
    with pytest.raises(FieldsimRuntimeError, match="earlier fs.init"):
        v[0] = 3.0
