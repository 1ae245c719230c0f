"""A vector/matrix read from a field element in Python scope is Taichi's host-access proxy:
every use reads the element's current value (TaichiSim's cloth kept `rest = x[0]` while it
rewrote `x[0]` each frame, drifting in Taichi 1.7.4; fieldsim's snapshot did not drift).
Writes through it still change only the entries written."""
import numpy as np

import fieldsim as fs


def test_field_element_reads_follow_later_writes():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(3, fs.f32, shape=4)
    m = fs.Matrix.field(2, 2, fs.f32, shape=2)
    v[0] = [1, 2, 3]
    r = v[0]
    v[0] = [10, 20, 30]
    assert r.to_list() == [10, 20, 30]
    assert (r + fs.Vector([1, 1, 1])).to_list() == [11, 21, 31]
    assert r[2] == 30 and r.y == 20 and float(r.norm_sqr()) == 1400
    q = m[1]
    snapshot = q.transpose()  # an operation's result is a plain value
    m[1] = [[1, 2], [3, 4]]
    np.testing.assert_array_equal(snapshot.to_numpy(), np.zeros((2, 2)))
    np.testing.assert_array_equal((q @ q).to_numpy(), [[7, 10], [15, 22]])
    assert float(q.sum()) == 10


def test_swap_through_a_python_variable_keeps_taichis_aliasing():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(2, fs.i32, shape=2)
    v[0] = [1, 2]
    v[1] = [3, 4]
    tmp = v[0]
    v[0] = v[1]
    v[1] = tmp  # tmp now reads [3, 4]: no swap, as in Taichi
    assert v.to_numpy().tolist() == [[3, 4], [3, 4]]


def test_struct_member_and_ndarray_elements_are_live():
    fs.init(arch=fs.cpu)
    s = fs.Struct.field({"p": fs.types.vector(2, fs.f32), "m": fs.f32}, shape=2)
    s[0].p = [1, 2]
    p = s[0].p
    s[0].p = [5, 6]
    assert p.to_list() == [5, 6]
    p[0] = 7
    assert s[0].p.to_list() == [7, 6]
    a = fs.Vector.ndarray(3, fs.f32, 4)
    a[1] = [1, 2, 3]
    r = a[1]
    a[1] = [4, 5, 6]
    assert r.to_list() == [4, 5, 6]


def test_element_of_a_dropped_field_keeps_its_last_value():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(2, fs.f32, shape=1)
    v[0] = [1.5, 2.5]
    r = v[0]
    fs.init(arch=fs.cpu)
    assert r.to_list() == [1.5, 2.5]
