"""A struct-for whose body deactivates blocks of the layout it walks runs every cell of the
blocks active when it started (Taichi lists them before the body runs), so a block deactivated
before the loop reaches it still has its cells visited."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.mark.parametrize("kind", ["pointer", "bitmasked"])
def test_deactivated_ahead_blocks_are_still_visited(kind):
    x = fs.field(fs.f32)
    visits = fs.field(fs.i32, shape=())
    top = getattr(fs.root, kind)(fs.i, 4)
    top.dense(fs.i, 4).place(x)

    @fs.kernel
    def fill():
        for i in range(16):
            x[i] = 1.0

    @fs.kernel
    def clear():
        for i in x:
            visits[None] += 1
            if i < 4:  # the cells of block 0 deactivate blocks 0..3
                fs.deactivate(top, i)

    @fs.kernel
    def active_cells() -> fs.i32:
        c = 0
        for i in x:
            c += 1
        return c

    fill()
    clear()
    assert visits[None] == 16  # 4 blocks of 4 cells, all active at the start
    assert active_cells() == 0
    assert np.all(x.to_numpy() == 0)


def test_2d_blocks_cleared_through_cell_indices():
    y = fs.field(fs.f32)
    seen = fs.field(fs.i32, shape=(8, 8))
    top = fs.root.pointer(fs.ij, 4)
    top.dense(fs.ij, 2).place(y)

    @fs.kernel
    def fill():
        for i, j in fs.ndrange(8, 8):
            y[i, j] = 2.0

    @fs.kernel
    def clear():
        for i, j in y:
            seen[i, j] = 1
            if i < 4 and j < 4:  # cell (i, j) names block (i, j): all 16 blocks
                fs.deactivate(top, [i, j])

    fill()
    clear()
    assert np.all(seen.to_numpy() == 1)
    assert float(y.to_numpy().sum()) == 0.0
    assert not any(fs.is_active(top, [i, j]) for i in range(4) for j in range(4))


def _blocks_of_two(n):
    x = fs.field(fs.f32)
    top = fs.root.pointer(fs.i, n)
    top.dense(fs.i, 2).place(x)
    return x, top


def test_node_loop_runs_the_blocks_listed_at_launch():
    x, top = _blocks_of_two(8)
    visits = fs.field(fs.i32, shape=())

    @fs.kernel
    def fill():
        for i in range(16):
            x[i] = 1.0

    @fs.kernel
    def clear():
        for i in x.parent():  # the dense node's cells: 2 per block, global indices
            visits[None] += 1
            if i < 8:  # cells 0..7 name blocks 0..7: block 0..3's cells clear every block
                fs.deactivate(top, i)

    fill()
    clear()
    assert visits[None] == 16
    assert not any(fs.is_active(top, [b]) for b in range(8))


def test_walked_node_cells_are_tested_as_reached():
    # the loop walks the pointer's own cells: one activated ahead of the loop is reached
    x, top = _blocks_of_two(8)
    visits = fs.field(fs.i32, shape=())

    @fs.kernel
    def grow():
        for b in top:
            visits[None] += 1
            if b + 1 < 8:
                fs.activate(top, b + 1)

    x[0] = 1.0
    grow()
    assert visits[None] == 8  # block 0, then each block the one before it activated
    assert all(fs.is_active(top, [b]) for b in range(8))
