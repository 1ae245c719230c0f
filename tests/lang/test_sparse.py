"""Sparse layout nodes: pointer/bitmasked activation, struct-for over active cells only,
deactivation (which zeroes the data below), dynamic nodes with append/length."""
import numpy as np
import pytest

import fieldsim as fs


def _count_cells(x):
    @fs.kernel
    def count() -> fs.i32:
        n = 0
        for I in fs.grouped(x):
            n += 1
        return n
    return count


@pytest.mark.parametrize("kind", ["pointer", "bitmasked"])
def test_struct_for_visits_active_cells_only(kind):
    x = fs.field(fs.i32)
    blk = getattr(fs.root, kind)(fs.i, 4)
    blk.dense(fs.i, 4).place(x)
    count = _count_cells(x)
    assert count() == 0

    @fs.kernel
    def write():
        x[5] = 3
        x[14] = 4

    write()
    assert count() == 8  # blocks 1 and 3, four cells each
    # the node's own cell coordinates, as in Taichi; fs.rescale_index maps field indices
    assert fs.is_active(blk, [1]) == 1 and fs.is_active(blk, [0]) == 0
    assert fs.is_active(blk, fs.rescale_index(x, blk, [14])) == 1
    with pytest.raises(IndexError, match="rescale_index"):
        fs.is_active(blk, [5])

    @fs.kernel
    def total() -> fs.i32:
        s = 0
        for i in x:
            s += x[i]
        return s

    assert total() == 7


def test_struct_for_over_a_pointer_node_yields_its_cell_coordinates():
    """As Taichi 1.7.4 (104 there too): the node's own cells, not their first field index."""
    f = fs.field(fs.f32)
    blk = fs.root.pointer(fs.ij, 4)
    blk.dense(fs.ij, 8).place(f)
    f[9, 30] = 1.0  # block (1, 3)
    f[10, 31] = 2.0  # same block

    @fs.kernel
    def origins() -> fs.i32:
        acc = 0
        for i, j in blk:
            acc += i * 100 + j + 1
        return acc

    assert origins() == 1 * 100 + 3 + 1


def test_deactivate_in_kernel_zeroes_block_and_python_deactivate_all():
    x = fs.field(fs.f32)
    blk = fs.root.pointer(fs.i, 3)
    blk.dense(fs.i, 2).place(x)
    for b in range(3):
        fs.activate(blk, [b])
    x.from_numpy(np.arange(6, dtype=np.float32) + 1)  # into active cells
    count = _count_cells(x)
    assert count() == 6

    @fs.kernel
    def drop(i: fs.i32):
        fs.deactivate(blk, [i])

    drop(1)  # block 1: cells 2, 3
    assert count() == 4
    np.testing.assert_array_equal(x.to_numpy(), [1, 2, 0, 0, 5, 6])
    x.fill(9.0)  # fills active cells only
    np.testing.assert_array_equal(x.to_numpy(), [9, 9, 0, 0, 9, 9])
    blk.deactivate_all()
    assert count() == 0
    np.testing.assert_array_equal(x.to_numpy(), np.zeros(6))


def test_python_scope_write_activates():
    x = fs.field(fs.i32)
    blk = fs.root.bitmasked(fs.ij, 2)
    blk.dense(fs.ij, 2).place(x)
    x[3, 0] = 1  # block (1, 0)
    assert _count_cells(x)() == 4
    fs.activate(blk, [0, 0])
    assert _count_cells(x)() == 8
    fs.deactivate(blk, [1, 0])
    assert x[3, 0] == 0 and _count_cells(x)() == 4


def test_dynamic_append_length_and_struct_for():
    d = fs.field(fs.i32)
    node = fs.root.dense(fs.i, 3).dynamic(fs.j, 5)
    node.place(d)
    assert d.shape == (3, 5) and d.parent() is node

    @fs.kernel
    def fill():
        for i in range(3):
            for k in range(3 * i + 1):  # row 2 asks for 7 cells: only the first 5 fit
                fs.append(d.parent(), i, k + 1)

    @fs.kernel
    def stats() -> fs.i32:
        s = 0
        for i, j in d:
            s += d[i, j]
        return s

    fill()
    # Taichi 1.7.4 counts every append, stored or not: row 2's length is 7
    assert [fs.length(node, i) for i in range(3)] == [1, 4, 7]
    assert stats() == 1 + (1 + 2 + 3 + 4) + (1 + 2 + 3 + 4 + 5)
    fs.deactivate(node, [1])
    assert fs.length(node, 1) == 0 and stats() == 1 + 15
    assert fs.append(node, [1], 7) == 0 and d[1, 0] == 7


def test_sparse_misuse_is_a_clear_error():
    x = fs.field(fs.i32, shape=4)

    @fs.kernel
    def bad():
        fs.is_active(x.parent(), [0])

    with pytest.raises(fs.FieldsimTypeError, match="pointer, bitmasked or dynamic"):
        bad()
    node = fs.root.pointer(fs.i, 2)
    with pytest.raises(fs.FieldsimTypeError, match="dynamic"):
        fs.length(node, [0])


def test_fill_in_kernel_fills_active_cells_only():
    x = fs.field(fs.f32)
    blk = fs.root.pointer(fs.i, 4)
    blk.dense(fs.i, 2).place(x)
    x[3] = 1.0  # block 1

    @fs.kernel
    def k(v: fs.f32):
        x.fill(v)

    k(2.5)
    np.testing.assert_array_equal(x.to_numpy(), [0, 0, 2.5, 2.5, 0, 0, 0, 0])
    assert fs.is_active(blk, [0]) == 0


def test_rescale_index_and_is_active_in_a_kernel():
    x = fs.field(fs.i32)
    b1 = fs.root.pointer(fs.ij, 2)
    b2 = b1.pointer(fs.ij, 2)
    b2.dense(fs.ij, 2).place(x)  # x is 8 x 8; b2 cells are 2 x 2 blocks, b1 cells 4 x 4
    out = fs.field(fs.i32, shape=(8, 8))

    @fs.kernel
    def mark():
        fs.activate(b2, [1, 2])  # cells [2..3, 4..5] of x; activates b1 cell (0, 1) too
        for i, j in out:
            out[i, j] = fs.is_active(b2, fs.rescale_index(x, b2, [i, j])) * 2 + \
                fs.is_active(b1, fs.rescale_index(x, b1, [i, j]))

    mark()
    got = out.to_numpy()
    want = np.zeros((8, 8), np.int32)
    want[0:4, 4:8] = 1
    want[2:4, 4:6] = 3
    np.testing.assert_array_equal(got, want)

    @fs.kernel
    def origins() -> fs.i32:
        acc = 0
        for i, j in b2:  # b2's own cell coordinates, as Taichi 1.7.4
            acc += i * 10 + j
        return acc

    assert origins() == 12


def test_deactivate_all_snodes_and_no_activate():
    x = fs.field(fs.i32)
    b1 = fs.root.pointer(fs.ij, 4)
    b2 = b1.bitmasked(fs.ij, 2)
    b2.dense(fs.ij, 2).place(x)
    d = fs.field(fs.i32)
    dyn = fs.root.dynamic(fs.k, 8, chunk_size=4)
    dyn.place(d)
    x[9, 13] = 5
    d[7] = 1

    @fs.kernel
    def bump():
        fs.no_activate(x)  # a hint: the struct-for touches active cells only
        for i, j in x:
            x[i, j] += 1

    @fs.kernel
    def state() -> fs.i32:  # (Taichi's is_active/length work in kernels only)
        return fs.is_active(b1, [2, 3]) + 2 * fs.is_active(b2, [4, 6]) + 4 * fs.length(dyn, [])

    bump()
    assert x[9, 13] == 6 and x[8, 12] == 1 and x[0, 0] == 0
    assert state() == 1 + 2 + 4 * 8
    fs.deactivate_all_snodes()
    assert state() == 0
    assert x[9, 13] == 0 and x.to_numpy().sum() == 0


def test_fill_of_nested_2d_sparse_fills_active_cells_only():
    """Nested pointer/bitmasked nodes over 2-D blocks, one node over one axis only: `fill`
    writes exactly the cells whose every sparse ancestor is active."""
    x = fs.field(fs.f32)
    outer = fs.root.pointer(fs.i, 3)
    inner = outer.bitmasked(fs.ij, (2, 2))
    inner.dense(fs.ij, (2, 3)).place(x)  # shape (12, 6)
    assert x.shape == (12, 6)

    @fs.kernel
    def touch():
        x[0, 0] = 1.0    # outer 0, inner (0, 0)
        x[5, 4] = 1.0    # outer 1, inner (1, 1)
        x[9, 1] = 1.0    # outer 2, inner (0, 0)

    touch()
    x.fill(0.0)
    assert not x.to_numpy().any()
    x.fill(2.5)
    want = np.zeros((12, 6), np.float32)
    for i0, j0 in [(0, 0), (4, 3), (8, 0)]:
        want[i0:i0 + 2, j0:j0 + 3] = 2.5
    np.testing.assert_array_equal(x.to_numpy(), want)


def test_a_dense_copy_too_big_to_allocate_is_a_clear_error():
    """fieldsim lays a dynamic node out densely at its full size (reserved, committed where
    written): when even the reservation fails (here 256 TiB, beyond the address space), the
    error names the field, its size, the node to shrink and the user's line, instead of numpy's
    MemoryError."""
    x = fs.Vector.field(4, fs.f32)
    with pytest.raises(MemoryError) as info:
        fs.root.dense(fs.ij, (1 << 10, 1 << 10)).dynamic(fs.k, 1 << 24).place(x)
    msg = str(info.value)
    assert "'x'" in msg and "GiB" in msg and "dynamic(axis 2: 16777216)" in msg
    assert "test_sparse.py" in msg and ".place(x)" in msg


@pytest.mark.parametrize("scope", ["python", "kernel"])
def test_deactivate_zeroes_the_cells_block_over_axes_the_node_lacks(scope):
    x = fs.field(fs.f32)
    blk = fs.root.pointer(fs.i, 3)
    blk.dense(fs.ij, (2, 4)).place(x)  # x is 6 x 4; a pointer cell holds 2 rows, all columns

    @fs.kernel
    def fill():
        for i, j in fs.ndrange(6, 4):
            x[i, j] = i * 4 + j + 1

    @fs.kernel
    def drop(c: fs.i32):
        fs.deactivate(blk, [c])

    fill()
    if scope == "python":
        fs.deactivate(blk, [1])
    else:
        drop(1)
    want = np.arange(1, 25, dtype=np.float32).reshape(6, 4)
    want[2:4, :] = 0
    assert np.array_equal(x.to_numpy(), want)
    assert fs.is_active(blk, [0]) == 1 and fs.is_active(blk, [1]) == 0


def test_numpy_transfers_and_fill_touch_active_cells_only():
    """Taichi 1.7.4's from_numpy/fill are struct-fors: inactive cells stay inactive
    and read 0; a dynamic node's lengths do not change (checked against Taichi on the CPU)."""
    x = fs.field(fs.i32)
    node = fs.root.dense(fs.i, 3).dynamic(fs.j, 8, chunk_size=4)
    node.place(x)
    y = fs.field(fs.i32)
    fs.root.dense(fs.i, 3).dynamic(fs.j, 8).place(y)

    @fs.kernel
    def lengths(f: fs.template()) -> fs.types.vector(3, fs.i32):
        return fs.Vector([f[0].length(), f[1].length(), f[2].length()])

    src = np.arange(24, dtype=np.int32).reshape(3, 8) + 1
    x.from_numpy(src)
    assert list(lengths(x)) == [0, 0, 0] and not x.to_numpy().any()
    x[1, 2] = 5  # activates slots 0..2 of row 1
    x.from_numpy(src)
    want = np.zeros((3, 8), np.int32)
    want[1, :3] = src[1, :3]
    np.testing.assert_array_equal(x.to_numpy(), want)
    x.fill(7)
    want[1, :3] = 7
    np.testing.assert_array_equal(x.to_numpy(), want)
    assert list(lengths(x)) == [0, 3, 0]


def test_copy_from_writes_and_activates_every_cell():
    """Taichi 1.7.4's copy_from loops over the whole index range (not a struct-for): every
    destination cell gets the source's value (0 where inactive there) and ends up active, a
    dynamic node at its full length (checked against Taichi on the CPU)."""
    x = fs.field(fs.i32)
    fs.root.pointer(fs.i, 3).dynamic(fs.j, 8, chunk_size=4).place(x)
    y = fs.field(fs.i32)
    ynode = fs.root.pointer(fs.i, 3)
    ynode.dynamic(fs.j, 8).place(y)
    z = fs.field(fs.i32)
    zleaf = fs.root.pointer(fs.i, 4).bitmasked(fs.i, 4)
    zleaf.place(z)
    w = fs.field(fs.i32)
    fs.root.pointer(fs.i, 4).bitmasked(fs.i, 4).place(w)

    @fs.kernel
    def lengths(f: fs.template()) -> fs.types.vector(3, fs.i32):
        return fs.Vector([f[0].length(), f[1].length(), f[2].length()])

    @fs.kernel
    def count(f: fs.template()) -> fs.i32:
        c = 0
        for _ in f:
            c += 1
        return c

    x[1, 2] = 5
    y.copy_from(x)
    assert list(lengths(y)) == [8, 8, 8] and list(lengths(x)) == [0, 3, 0]
    assert [fs.is_active(ynode, [i]) for i in range(3)] == [1, 1, 1]
    assert y[1, 2] == 5 and y.to_numpy().sum() == 5
    w[5] = 3
    z[9] = 1
    z.copy_from(w)
    assert count(z) == 16 and count(w) == 1
    assert z.to_numpy().tolist() == [0] * 5 + [3] + [0] * 10


def test_append_past_capacity_counts_as_taichi_does():
    y = fs.field(fs.f32)
    fs.root.dynamic(fs.i, 6, chunk_size=2).place(y)
    olds = fs.field(fs.i32, shape=8)

    @fs.kernel
    def push(n: fs.i32):
        fs.loop_config(serialize=True)
        for k in range(n):
            olds[k] = fs.append(y.parent(), [], k + 1.0)

    @fs.kernel
    def length() -> fs.i32:
        return y.length()

    push(8)
    # every append returns its own slot and counts; the two that do not fit are dropped
    np.testing.assert_array_equal(olds.to_numpy(), np.arange(8))
    assert length() == 8
    np.testing.assert_array_equal(y.to_numpy(), np.arange(6) + 1.0)

    @fs.kernel
    def clear():
        y.deactivate()

    clear()
    assert length() == 0 and not y.to_numpy().any()


def test_deactivate_all_zeroes_components_placed_one_by_one():
    # taichi_elements places a grid's velocity one component at a time under its blocks
    v = fs.Vector.field(2, fs.f32)
    w = fs.Vector.field(2, fs.f32)
    blk = fs.root.pointer(fs.ij, 4)
    for d in range(2):
        blk.dense(fs.ij, 8).place(v.get_scalar_field(d))
    blk.dense(fs.ij, 8).place(w.get_scalar_field(0))
    fs.root.dense(fs.ij, 32).place(w.get_scalar_field(1))

    @fs.kernel
    def write():
        for i, j in fs.ndrange(32, 32):
            if (i + j) % 5 == 0:
                v[i, j] = [i + 1.0, j + 2.0]
                w[i, j] = [i + 3.0, j + 4.0]

    write()
    assert np.count_nonzero(v.to_numpy()) > 0
    blk.deactivate_all()
    assert not np.any(v.to_numpy())
    wn = w.to_numpy()
    assert not np.any(wn[..., 0])  # under the block: zeroed
    i, j = np.meshgrid(np.arange(32), np.arange(32), indexing="ij")
    np.testing.assert_array_equal(wn[..., 1], np.where((i + j) % 5 == 0, j + 4.0, 0.0))


@pytest.mark.parametrize("many", [False, True])
def test_numpy_writes_reach_exactly_the_active_blocks(many, monkeypatch):
    # a write goes block by block (few active blocks) or through a mask over every cell
    from fieldsim.lang import sparse_host
    if many:
        monkeypatch.setattr(sparse_host, "BLOCK_SLICES", 0)
    v = fs.Vector.field(2, fs.f32)
    top = fs.root.pointer(fs.ij, (4, 2))
    top.bitmasked(fs.ij, 2).dense(fs.ij, (3, 4)).place(v, offset=(-5, 7))
    for i, j in [(-5, 7), (10, 20), (1, 7)]:
        v[i, j] = [1.0, 1.0]  # storage (0, 0), (15, 13), (6, 0): bitmasked cells (0, 0), (5, 3), (2, 0)
    active = np.zeros((24, 16), bool)
    for bi, bj in [(0, 0), (5, 3), (2, 0)]:
        active[bi * 3:bi * 3 + 3, bj * 4:bj * 4 + 4] = True
    v.fill([2.0, -3.0])
    got = v.to_numpy()
    np.testing.assert_array_equal(got[active], np.tile([2.0, -3.0], (active.sum(), 1)))
    assert not got[~active].any()
    data = np.arange(24 * 16 * 2, dtype=np.float32).reshape(24, 16, 2)
    v.from_numpy(data)
    got = v.to_numpy()
    np.testing.assert_array_equal(got[active], data[active])
    assert not got[~active].any()


def test_grad_of_a_sparse_field_shares_its_activation():
    """needs_grad under a pointer node: Taichi places x.grad beside x, so a struct-for over
    x.grad visits x's active cells, a write to x.grad activates x's block and deactivation
    zeroes the gradient too (checked against Taichi on the CPU)."""
    x = fs.field(fs.f32, needs_grad=True)
    blk = fs.root.pointer(fs.ijk, 8)
    blk.dense(fs.ijk, 8).place(x)

    @fs.kernel
    def count(f: fs.template()) -> fs.i32:
        c = 0
        for _ in fs.grouped(f):
            c += 1
        return c

    x[3, 4, 5] = 1.0
    x.grad[40, 40, 40] = 2.0
    assert count(x) == 1024 and count(x.grad) == 1024
    assert x.grad.to_numpy().sum() == 2.0
    blk.deactivate_all()
    assert count(x.grad) == 0 and x.grad[40, 40, 40] == 0.0


def test_lazy_grad_places_gradients_beside_sparse_fields():
    """fs.root.lazy_grad() after a bitmasked placement: x.grad lives under the same nodes,
    so it has x's active cells and is zeroed with them (checked against Taichi on the CPU)."""
    x = fs.field(fs.f32)
    blk = fs.root.pointer(fs.ij, 8)
    blk.bitmasked(fs.ij, 4).place(x)
    fs.root.lazy_grad()

    @fs.kernel
    def count(f: fs.template()) -> fs.i32:
        c = 0
        for _i, _j in f:
            c += 1
        return c

    x[1, 2] = 1.0
    x.grad[9, 9] = 1.0
    assert count(x) == 2 and count(x.grad) == 2
    blk.deactivate_all()
    assert count(x.grad) == 0 and x.grad[9, 9] == 0.0
