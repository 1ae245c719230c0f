"""Python-scope writes of one entry of a float field's element (`v[i][k] = x`, `m[i][r, c] = x`,
`v[i].y = x`): that entry alone is stored, through every storage kind, as a whole-element
write would store it."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import AccessRuleError


@pytest.mark.parametrize("dtype", [fs.f16, fs.f32, fs.f64])
def test_entry_writes_store_that_entry_in_the_fields_type(dtype):
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(3, dtype, 4)
    m = fs.Matrix.field(2, 2, dtype, 3)
    v[2][1] = 0.1
    v[2].z = np.float32(2.5)
    v[2][-3] = 1  # an int into a float entry, a negative entry index
    m[1][1, 0] = 4.0
    m[1][-1, -2] += 1.0
    want = np.zeros((4, 3), dtype.np)
    want[2] = [1, np.asarray(0.1, dtype.np), 2.5]
    np.testing.assert_array_equal(v.to_numpy(), want)
    assert m.to_numpy()[1].tolist() == [[0.0, 0.0], [5.0, 0.0]]
    assert v[2][1] == float(np.asarray(0.1, dtype.np))


def test_a_held_element_writes_its_entry_over_the_fields_newer_values():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(3, fs.f32, 4)
    held = v[1]
    v[1] = [1.0, 2.0, 3.0]  # after the element was read
    held[0] = 9.0
    assert v[1].to_list() == [9.0, 2.0, 3.0]


def test_struct_members_and_soa_fields():
    fs.init(arch=fs.cpu)
    S = fs.types.struct(a=fs.f32, b=fs.math.vec3)
    s = S.field(shape=4)
    s[1].b[2] = 5.0
    s[1].b.y = 3.0
    soa = fs.Vector.field(3, fs.f32, 4, layout=fs.Layout.SOA)
    soa[2][1] = 7.0
    soa[2].z = 2.5
    assert s.b.to_numpy()[1].tolist() == [0.0, 3.0, 5.0]
    assert s.a.to_numpy().tolist() == [0.0] * 4
    assert soa.to_numpy()[2].tolist() == [0.0, 7.0, 2.5]
    assert soa.to_numpy()[[0, 1, 3]].sum() == 0


def test_an_entry_write_activates_its_sparse_cell():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(2, fs.f32)
    fs.root.pointer(fs.i, 4).dense(fs.i, 4).place(v)
    v[9][1] = 3.0

    @fs.kernel
    def active_cells() -> fs.i32:
        n = 0
        for i in v:
            n += 1
        return n

    assert active_cells() == 4  # the block of cells 8..11
    assert v.to_numpy()[9].tolist() == [0.0, 3.0]


def test_out_of_range_entries_raise_and_store_nothing():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(2, fs.f32, 3)
    m = fs.Matrix.field(2, 2, fs.f32, 3)
    with pytest.raises(IndexError):
        v[1][2] = 1.0
    with pytest.raises(IndexError):
        m[1][2, 0] = 1.0
    assert v.to_numpy().sum() == 0 and m.to_numpy().sum() == 0


def test_an_entry_write_after_a_taped_read_is_refused_before_it_stores():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(2, fs.f32, 4, needs_grad=True)
    loss = fs.field(fs.f32, (), needs_grad=True)
    v.fill(1.0)

    @fs.kernel
    def k():
        for i in v:
            loss[None] += v[i][0] * v[i][1]

    with pytest.raises(AccessRuleError, match="Python-scope `v\\[1\\] = ...`"):
        with fs.ad.Tape(loss):
            k()
            v[1][0] = 2.0
    assert v[1].to_list() == [1.0, 1.0]
