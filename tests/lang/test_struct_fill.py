"""`s[i].fill(c)` on an element of a struct field (and of its `.grad`), and on a struct local:
every member, scalar, vector, matrix or nested struct, becomes c, as Taichi's `Struct.fill`
did in Taichi scope in its earlier 1.x releases, which FluidLab was written for (it clears
its grid with `self.grid[f, I].fill(0)` and `self.grid.grad[f, I].fill(0)`). fieldsim refused
it ("has no member 'fill'"); Taichi 1.7.4 refuses it too (its struct elements lost `fill`):
a deliberate difference (docs/COMPAT.md)."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def _cell():
    inner = fs.types.struct(a=fs.f32, b=fs.types.vector(2, fs.i32))
    return fs.types.struct(v=fs.types.vector(3, fs.f32), m=fs.f32, M=fs.types.matrix(2, 2, fs.f32),
                           n=inner)


def test_fill_sets_every_member_of_a_field_element_and_of_its_gradient():
    grid = _cell().field(shape=(2, 4), needs_grad=False, layout=fs.Layout.SOA)
    g = fs.types.struct(v=fs.types.vector(3, fs.f32), m=fs.f32).field(shape=(4,), needs_grad=True)

    @fs.kernel
    def clear(f: fs.i32):
        for i in range(4):
            grid[f, i].fill(i + 0.5)
            g[i].fill(2)
            g.grad[i].fill(-1)

    clear(1)
    want = np.arange(4) + 0.5
    np.testing.assert_array_equal(grid.v.to_numpy()[1], np.repeat(want[:, None], 3, 1))
    np.testing.assert_array_equal(grid.m.to_numpy()[1], want)
    np.testing.assert_array_equal(grid.M.to_numpy()[1], np.broadcast_to(want[:, None, None], (4, 2, 2)))
    np.testing.assert_array_equal(grid.n.a.to_numpy()[1], want)
    np.testing.assert_array_equal(grid.n.b.to_numpy()[1], np.repeat(np.array([0, 1, 2, 3])[:, None], 2, 1))
    assert not grid.m.to_numpy()[0].any()
    assert (g.v.to_numpy() == 2).all() and (g.m.to_numpy() == 2).all()
    assert (g.v.grad.to_numpy() == -1).all() and (g.m.grad.to_numpy() == -1).all()


def test_fill_sets_every_member_of_a_struct_local():
    out = fs.field(fs.f32, shape=4)
    cell = _cell()

    @fs.kernel
    def run():
        s = cell(v=fs.Vector([1.0, 2.0, 3.0]), m=4.0, M=fs.Matrix([[1.0, 2.0], [3.0, 4.0]]),
                 n=fs.Struct(a=5.0, b=fs.Vector([6, 7])))
        s.fill(9)
        out[0] = s.v.sum()
        out[1] = s.m
        out[2] = s.M.sum()
        out[3] = s.n.a + s.n.b.sum()

    run()
    np.testing.assert_array_equal(out.to_numpy(), [27, 9, 36, 27])
