"""Python-scope integer field elements: what Taichi 1.7.4 stores and reads back."""
import pytest

import numpy as np

import fieldsim as fs
from fieldsim.errors import FieldsimTypeError


def test_vector_entries_wrap_one_by_one_as_scalars_do():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(2, fs.u8, shape=2)
    v[0] = [2 ** 63, -1]  # 2^63 mod 256 = 0; -1 mod 256 = 255 (one NumPy array made them floats)
    assert v[0][0] == 0 and v[0][1] == 255
    v[1] = [np.uint64(2 ** 64 - 1), 1]
    assert v.to_numpy()[1].tolist() == [255, 1]
    m = fs.Matrix.field(2, 2, fs.i8, shape=())
    m[None] = [[300, -129], [True, np.int64(-5)]]  # 300 - 256, -129 + 256
    assert m.to_numpy().tolist() == [[44, 127], [1, -5]]
    with pytest.raises(TypeError):
        v[1] = [2 ** 64, 1]  # beyond u64 in Taichi too


def test_numpy_float32_truncates_into_int_fields_and_python_floats_are_refused():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.i16, shape=3)
    x[0] = np.float32(-2.5)
    x[1] = np.float16(3.5)
    assert x[0] == -2 and x[1] == 3
    with pytest.raises(FieldsimTypeError):
        x[2] = np.float64(2.0)  # a Python float subclass: refused, as Taichi does
    with pytest.raises(FieldsimTypeError):
        x[2] = 2.5


def test_field_element_entries_are_exact_python_numbers():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(2, fs.u64, shape=1)
    v[0] = [-1, 5]
    e = v[0]
    assert type(e[0]) is int and e[0] == 2 ** 64 - 1  # not np.float64(1.8446744073709552e+19)
    assert e.x == 2 ** 64 - 1 and type(e.y) is int
    w = fs.Vector.field(3, fs.f32, shape=1)
    w[0] = [0.1, 2, 3]
    assert type(w[0][0]) is float and w[0][0] == float(np.float32(0.1))
    assert repr([w[0].x, w[0][1]]) == "[0.10000000149011612, 2.0]"
    m = fs.Matrix.field(2, 2, fs.i32, shape=())
    m[None] = [[1, 2], [3, 4]]
    assert type(m[None][0, 1]) is int and m[None][1, 0] == 3


def test_a_value_of_the_wrong_shape_is_a_type_error_as_in_taichi():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(2, fs.f32, shape=2)
    x = fs.field(fs.i32, shape=2)
    with pytest.raises(TypeError, match="has shape"):
        v[0] = 0.5
    with pytest.raises(TypeError, match="has shape"):
        x.fill([1, 2])
    with pytest.raises(ValueError):  # still what fieldsim raised before
        x[0] = [1, 2]


def test_a_float32_array_truncates_entry_by_entry_and_a_float64_one_is_refused():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(3, fs.i64, shape=())
    v[None] = np.array([-129, 2 ** 63, 2.7], dtype=np.float32)  # 2^63 wraps to -2^63 in i64
    assert v[None].to_list() == [-129, -2 ** 63, 2]
    with pytest.raises(TypeError):
        v[None] = np.array([1.5, 2, 3])


def test_struct_element_members_by_name():
    fs.init(arch=fs.cpu)
    f = fs.Struct.field({"a": fs.i16, "b": fs.types.vector(2, fs.i64)}, shape=2)
    f[0]["a"] = 7
    f[1]["b"] = [1, 2]
    assert f[0]["a"] == 7 and f.a[0] == 7
    assert f[1]["b"].to_list() == [1, 2] and f[1].b.to_list() == [1, 2]
    with pytest.raises(TypeError, match="by name"):
        f[0][0]


def test_one_entry_through_the_element_wraps_as_a_whole_store():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(2, fs.i32, shape=3)
    v[0][0] = 2 ** 63  # 2^63 mod 2^32 = 0 (overflowed the element's int64 entries before)
    v[0].y = 2 ** 64 - 1  # -1 in i32
    assert v[0].to_list() == [0, -1]
    m = fs.Matrix.field(2, 2, fs.u8, shape=())
    m[None][1, 0] = 300  # 44
    m[None][0, 1] = 7
    assert m.to_numpy().tolist() == [[0, 7], [44, 0]]
    w = fs.Vector.field(2, fs.f32, shape=1)
    w[0].x = 2.5
    w[0][1] = 1.25
    assert w[0].to_list() == [2.5, 1.25]
