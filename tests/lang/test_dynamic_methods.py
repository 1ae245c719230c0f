"""`x.append(v)`, `x.deactivate()`, `x.length()` and `x[i].append(v)` in kernels, on scalar,
vector and struct fields placed under a dynamic node (Taichi's frontend methods; the marching
squares example appends structs)."""
import numpy as np
import pytest

import fieldsim as fs


def test_scalar_and_row_methods():
    x = fs.field(fs.i32)
    fs.root.dense(fs.i, 4).dynamic(fs.j, 16, chunk_size=4).place(x)
    y = fs.field(fs.f32)
    fs.root.dynamic(fs.i, 16).place(y)

    @fs.kernel
    def fill() -> fs.i32:
        y.deactivate()
        for k in range(3):
            y.append(k * 1.5)
        for i in range(4):
            for j in range(i + 1):
                x[i].append(10 * i + j)
        x[2].deactivate()
        return y.length() + 100 * x[3].length() + 1000 * x[2].length()

    assert fill() == 3 + 400
    np.testing.assert_allclose(y.to_numpy()[:4], [0, 1.5, 3, 0])
    want = np.zeros((4, 16), np.int32)
    for i in (0, 1, 3):
        want[i, :i + 1] = 10 * i + np.arange(i + 1)
    np.testing.assert_array_equal(x.to_numpy(), want)
    assert fill() == 3 + 800  # y was emptied: it starts again at 0; x[3] grows on


def test_struct_field_append_and_read_back():
    Edge = fs.types.struct(p0=fs.math.vec2, p1=fs.math.vec2, k=fs.i32)
    edges = Edge.field()
    fs.root.dynamic(fs.i, 64, chunk_size=8).place(edges)
    total = fs.field(fs.f32, shape=())

    @fs.kernel
    def build(n: fs.i32) -> fs.i32:
        edges.deactivate()
        for i in range(n):
            edges.append(Edge(fs.math.vec2(i, 1), fs.math.vec2(2, i * i), i))
        return edges.length()

    @fs.kernel
    def read():
        total[None] = 0
        for k in range(edges.length()):
            total[None] += edges[k].p0.x + edges[k].p1.y * edges[k].k

    assert build(5) == 5
    read()
    assert total[None] == pytest.approx(sum(i + i * i * i for i in range(5)))
    assert build(3) == 3  # the previous 5 were dropped
    np.testing.assert_array_equal(edges.k.to_numpy()[:5], [0, 1, 2, 0, 0])


def test_append_takes_one_value():
    y = fs.field(fs.f32)
    fs.root.dynamic(fs.i, 8).place(y)

    @fs.kernel
    def bad():
        y.append(1.0, 2.0)

    with pytest.raises(TypeError, match="append"):
        bad()


def test_append_grouped_index_of_1d_field():
    # SnowFall's particle grid: `grid[cell].append(I)` with `I` from `ti.grouped` over a 1-D
    # field is a one-entry vector; Taichi appends its entry
    p = fs.field(fs.f32, 5)
    grid = fs.field(fs.i32)
    fs.root.dense(fs.i, 3).dynamic(fs.j, 8, chunk_size=4).place(grid)

    @fs.kernel
    def bin_particles():
        for I in fs.grouped(p):
            grid[I[0] % 3].append(I)

    bin_particles()
    got = grid.to_numpy()
    for c in range(3):
        assert sorted(got[c, :2 if c < 2 else 1]) == [i for i in range(5) if i % 3 == c]
