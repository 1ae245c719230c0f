"""Block-major storage of big fields under pointer/bitmasked nodes (fieldsim/lang/blocked.py):
the layout is chosen only where it changes something, every access path (kernels, struct-fors,
Python scope, numpy, fs.get_addr, deactivation) agrees with a numpy model, a struct-for's walk
through a block still vectorizes, and a scatter of active blocks commits about their bytes,
not a page per row of each (at most a page per block). The CPU lays out only reservations (64 MB up) block-major; the
small fields of most tests here are made so by `small_blocked`."""
import os
import re

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.lang.blocked import BlockLayout
from support.backends import on_cpu
from support.memory import resident_kb

N, B = 64, 8  # cells per axis, block


@pytest.fixture
def small_blocked(monkeypatch):
    """Block-major layouts for small fields too (by default only reservations, 64 MB up)."""
    from fieldsim.codegen.cpu import CpuBackend
    monkeypatch.setattr(CpuBackend, "sparse_reserve_bytes", 0)


def _grid(kind="pointer"):
    fs.init(arch=fs.cpu, offline_cache=False)
    x = fs.field(fs.f32)
    v = fs.Vector.field(3, fs.i32)
    block = getattr(fs.root, kind)(fs.ij, N // B)
    block.dense(fs.ij, B).place(x, v)
    return x, v, block


def _active_model(seed=0):
    """Which blocks the tests activate (about a third) and the values their cells get."""
    rng = np.random.default_rng(seed)
    on = rng.random((N // B, N // B)) < 0.35
    cells = np.kron(on, np.ones((B, B), bool))
    i, j = np.indices((N, N))
    return on, cells, np.where(cells, i * 100.0 + j, 0).astype(np.float32)


def _physical_offset(i, j):
    """The element number of x[i, j] block-major: blocks row-major, cells row-major in one."""
    return ((i // B) * (N // B) + j // B) * B * B + (i % B) * B + j % B


@pytest.mark.parametrize("kind", ["pointer", "bitmasked"])
def test_kernels_struct_for_python_and_numpy_agree_with_numpy(small_blocked, kind):
    x, v, _ = _grid(kind)
    if on_cpu():
        assert isinstance(x.index_map, BlockLayout) and x.index_map.physical == (8, 8, 8, 8)
        assert v.index_map.physical == (8, 8, 8, 8, 3)
    on, cells, want = _active_model()
    mask = fs.field(fs.i32, shape=(N // B, N // B))
    mask.from_numpy(on.astype(np.int32))

    @fs.kernel
    def activate():
        for i, j in fs.ndrange(N, N):
            if mask[i // B, j // B]:
                x[i, j] = i * 100.0 + j

    @fs.kernel
    def twice_and_vector():
        for i, j in x:
            x[i, j] = x[i, j] * 2.0
            v[i, j] = fs.Vector([i, j, i * j])

    activate()
    np.testing.assert_array_equal(x.to_numpy(), want)
    twice_and_vector()
    np.testing.assert_array_equal(x.to_numpy(), 2 * want)
    i, j = np.indices((N, N))
    vw = np.where(cells[..., None], np.stack([i, j, i * j], -1), 0)
    np.testing.assert_array_equal(v.to_numpy(), vw)
    bi, bj = np.argwhere(on)[3] * B
    assert x[bi + 5, bj + 2] == 2 * ((bi + 5) * 100 + bj + 2)
    assert list(v[bi + 1, bj + 7]) == [bi + 1, bj + 7, (bi + 1) * (bj + 7)]
    x[bi + 5, bj + 2] = -1.0
    assert x.to_numpy()[bi + 5, bj + 2] == -1.0


def test_from_numpy_fill_and_deactivate_touch_active_blocks_only(small_blocked):
    x, _, block = _grid()
    on, cells, want = _active_model(1)
    x.from_numpy(np.ones((N, N), np.float32))  # no block active yet: nothing written
    assert not x.to_numpy().any()
    for bi, bj in np.argwhere(on):
        x[bi * B, bj * B] = 0.0  # activates the block
    x.from_numpy(want + 1.0)
    np.testing.assert_array_equal(x.to_numpy(), np.where(cells, want + 1.0, 0))
    x.fill(3.0)
    np.testing.assert_array_equal(x.to_numpy(), np.where(cells, 3.0, 0))
    first = tuple(np.argwhere(on)[0])

    @fs.kernel
    def drop(a: fs.i32, b: fs.i32):
        fs.deactivate(block, [a, b])

    drop(*first)
    cells[first[0] * B:(first[0] + 1) * B, first[1] * B:(first[1] + 1) * B] = False
    np.testing.assert_array_equal(x.to_numpy(), np.where(cells, 3.0, 0))
    second = tuple(np.argwhere(on)[1])
    fs.deactivate(block, list(second))
    cells[second[0] * B:(second[0] + 1) * B, second[1] * B:(second[1] + 1) * B] = False
    np.testing.assert_array_equal(x.to_numpy(), np.where(cells, 3.0, 0))
    x[second[0] * B + 1, second[1] * B] = 7.0  # reactivated: the rest of its block reads 0
    assert x.to_numpy()[second[0] * B:(second[0] + 1) * B, second[1] * B:(second[1] + 1) * B].sum() == 7.0


@pytest.mark.cpu_backend("the CPU backend lays out reservations block-major; CUDA row-major")
def test_get_addr_follows_the_block_major_map(small_blocked):
    x, _, _ = _grid()
    x[0, 0] = 1.0
    base = fs.get_addr(x, [0, 0])
    out = fs.field(fs.u64, shape=4)
    points = [(3, 5), (13, 2), (40, 63), (63, 9)]

    @fs.kernel
    def addrs(i0: fs.i32, j0: fs.i32, i1: fs.i32, j1: fs.i32):
        out[0] = fs.get_addr(x, [i0, j0])
        out[1] = fs.get_addr(x, [i1, j1])

    for (i, j) in points:
        assert fs.get_addr(x, [i, j]) - base == 4 * _physical_offset(i, j)
    addrs(*points[0], *points[1])
    got = out.to_numpy()[:2].astype(np.int64) - base
    assert got.tolist() == [4 * _physical_offset(*points[0]), 4 * _physical_offset(*points[1])]


def test_index_arithmetic_the_block_walk_does_not_cover_still_maps(small_blocked):
    """Indices that are not a block origin plus loop variables (a permutation, an offset that
    crosses blocks) go through the shift and mask, with the same result."""
    x, _, _ = _grid()
    y = fs.field(fs.f32, shape=(N, N))
    data = np.random.default_rng(2).standard_normal((N, N)).astype(np.float32)
    y.from_numpy(data)

    @fs.kernel
    def scatter(shift: fs.i32):
        for i, j in fs.ndrange(N, N):
            x[(i * 7 + shift) % N, (j + 3) % N] = y[i, j]

    scatter(5)
    want = np.zeros((N, N), np.float32)
    i, j = np.indices((N, N))
    want[(i * 7 + 5) % N, (j + 3) % N] = data
    np.testing.assert_array_equal(x.to_numpy(), want)


@pytest.mark.cpu_backend("the CPU backend lays out reservations block-major; CUDA row-major")
def test_layout_only_where_it_changes_something(small_blocked):
    fs.init(arch=fs.cpu)
    a, b, c, d, e = (fs.field(fs.f32) for _ in range(5))
    fs.root.pointer(fs.i, 8).dense(fs.j, 64).place(a)  # a block is one row: contiguous already
    fs.root.dense(fs.i, 64).place(b)  # no sparse node
    fs.root.pointer(fs.ij, 4).dense(fs.ij, (3, 8)).place(c)  # 3 wide: not a power of two
    fs.root.pointer(fs.i, 4).dynamic(fs.j, 64, chunk_size=8).place(d)  # chunk-major instead
    fs.root.pointer(fs.ijk, 4).dense(fs.ijk, 4).place(e)
    assert a.index_map is None and b.index_map is None and c.index_map is None
    assert d.index_map is not None and not isinstance(d.index_map, BlockLayout)
    assert isinstance(e.index_map, BlockLayout) and e.index_map.physical == (4, 4, 4, 4, 4, 4)


def test_fields_below_the_reservation_size_stay_row_major():
    fs.init(arch=fs.cpu)
    small, big = fs.field(fs.f32), fs.field(fs.f32)
    fs.root.pointer(fs.ij, 16).dense(fs.ij, 16).place(small)  # 256 KB
    fs.root.pointer(fs.ij, 256).dense(fs.ij, 16).place(big)  # 64 MB
    assert small.index_map is None and isinstance(big.index_map, BlockLayout) == on_cpu()


@pytest.mark.cpu_backend("the CPU backend lays out reservations block-major; CUDA row-major")
def test_struct_for_over_a_block_major_field_vectorizes(small_blocked, monkeypatch, capfd):
    x, _, _ = _grid()

    @fs.kernel
    def scale():
        for i, j in x:
            x[i, j] = x[i, j] * 3.0 + 1.0

    x[0, 0] = 1.0
    monkeypatch.setenv("FIELDSIM_PRINT_LLVM", "1")
    capfd.readouterr()
    scale()
    text = capfd.readouterr().out
    assert "define void @fs_scale" in text
    assert re.search(r"<(4|8|16) x float>", text) is not None
    assert x[0, 0] == 4.0 and x[0, 1] == 1.0


@pytest.mark.skipif(not os.path.exists("/proc/self/smaps"), reason="Linux only")
@pytest.mark.cpu_backend("the CPU backend lays out reservations block-major; CUDA row-major")
def test_scattered_blocks_commit_about_their_own_bytes():
    fs.init(arch=fs.cpu)
    n, blk = 4096, 16  # 64 MB reserved; row-major: a 4 KB page per row of each block
    x = fs.field(fs.f32)
    fs.root.pointer(fs.ij, n // blk).dense(fs.ij, blk).place(x)
    rng = np.random.default_rng(4)
    picks = rng.choice((n // blk) ** 2, size=1500, replace=False)
    blocks = fs.field(fs.i32, shape=(len(picks), 2))
    blocks.from_numpy(np.stack([picks // (n // blk), picks % (n // blk)], -1).astype(np.int32))

    @fs.kernel
    def touch():
        for b, di, dj in fs.ndrange(len(picks), blk, blk):
            x[blocks[b, 0] * blk + di, blocks[b, 1] * blk + dj] = 1.0 + b

    touch()
    rss = resident_kb(x.storage.ptr)
    pages_kb = len(picks) * 4  # a 1 KB block is within one page: at most a page per block
    assert rss <= pages_kb + 2048, rss  # row-major commits 1500 x 16 pages = 94 MB here
    k = 7
    bi, bj = picks[k] // (n // blk) * blk, picks[k] % (n // blk) * blk
    assert x[bi + 15, bj + 3] == 1.0 + k and x[bi + 3, bj + 15] == 1.0 + k
