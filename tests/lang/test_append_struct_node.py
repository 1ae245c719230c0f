"""`fs.append(node, indices, value)` on a dynamic node holding a struct field's members
(`S.field()` placed under it, nested structs and matrices included) appends the whole struct,
as Taichi does: an XPBD rigid-body solver appends `Entity` and `Constraint` structs this way. A
node holding two unrelated fields is still refused."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import FieldsimTypeError


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def _types():
    inner = fs.types.struct(p=fs.math.vec3, q=fs.math.vec4)
    return fs.types.struct(a=fs.f32, k=fs.i32, inner=inner, m=fs.math.mat2), inner


def test_appending_a_struct_to_a_root_dynamic_node():
    S, _ = _types()
    f = S.field()
    node = fs.root.dynamic(fs.i, 8)
    node.place(f)
    one = S.field(shape=())

    @fs.kernel
    def add(v: fs.template()) -> fs.i32:
        return fs.append(node, [], v[None])

    one[None].a = 1.5
    one[None].k = 3
    one[None].inner.p = fs.math.vec3(1, 2, 3)
    one[None].m = fs.math.mat2([[1, 2], [3, 4]])
    assert add(one) == 0
    one[None].a = 2.5
    assert add(one) == 1
    assert fs.length(node, []) == 2
    np.testing.assert_allclose(f.a.to_numpy()[:3], [1.5, 2.5, 0])
    assert f[1].k == 3
    np.testing.assert_allclose(f.inner.p.to_numpy()[1], [1, 2, 3])
    np.testing.assert_allclose(f.m.to_numpy()[1], [[1, 2], [3, 4]])


def test_appending_a_struct_built_in_the_kernel_to_a_row():
    S, inner = _types()
    g = S.field()
    node = fs.root.dense(fs.i, 2).dynamic(fs.j, 8)
    node.place(g)

    @fs.kernel
    def add(r: fs.i32, x: fs.f32) -> fs.i32:
        s = S(a=x, k=7, inner=inner(p=fs.math.vec3(x, 2 * x, 3), q=fs.math.vec4(1, 2, 3, x)),
              m=fs.math.mat2([[x, 1], [2, 3]]))
        return fs.append(node, r, s)

    assert [add(1, 0.5), add(1, 0.25), add(0, 4.0)] == [0, 1, 0]
    assert g[1, 1].a == 0.25 and g[0, 0].k == 7
    np.testing.assert_allclose(g.inner.q.to_numpy()[1, 1], [1, 2, 3, 0.25])
    np.testing.assert_allclose(g.m.to_numpy()[1, 0], [[0.5, 1], [2, 3]])


def test_two_unrelated_fields_under_the_node_are_still_refused():
    x, y = fs.field(fs.f32), fs.field(fs.f32)
    node = fs.root.dynamic(fs.i, 8)
    node.place(x, y)

    @fs.kernel
    def add():
        fs.append(node, [], 1.0)

    with pytest.raises(FieldsimTypeError, match="exactly one field"):
        add()
