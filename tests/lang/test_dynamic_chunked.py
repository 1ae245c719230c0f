"""Chunk-major storage of fields under a chunked dynamic node (fieldsim/lang/chunked.py): every
access path agrees with a numpy model of the same program, addresses follow the chunk-major
map, and a few appends to many cells commit about one chunk row, not a page per cell. The CPU
lays out only reservations (64 MB up) chunk-major; the small fields here are made so by
`small_chunked`."""
import numpy as np
import pytest

import fieldsim as fs
from support.backends import on_cpu
from support.memory import resident_kb

N, L, C = 6, 16, 4  # cells, slots per cell, chunk


@pytest.fixture
def small_chunked(monkeypatch):
    """Chunk-major layouts for small fields too (by default only reservations, 64 MB up)."""
    from fieldsim.codegen.cpu import CpuBackend
    monkeypatch.setattr(CpuBackend, "sparse_reserve_bytes", 0)


def _layout(arch, dyn_axis_last=True):
    fs.init(arch=arch)
    x = fs.field(fs.f32)
    v = fs.Vector.field(3, fs.i32)
    if dyn_axis_last:
        node = fs.root.dense(fs.i, N).dynamic(fs.j, L, chunk_size=C)
    else:  # the dynamic axis first: x[j, i]
        node = fs.root.dense(fs.j, N).dynamic(fs.i, L, chunk_size=C)
    node.place(x, v)
    return x, v, node


def _model():
    """What the kernels below store: cell i holds i + 1 values i * 10 + k."""
    x = np.zeros((N, L), np.float32)
    v = np.zeros((N, L, 3), np.int32)
    for i in range(N):
        for k in range(i + 1):
            x[i, k] = i * 10 + k
            v[i, k] = (i, k, i * k)
    return x, v


@pytest.mark.parametrize("last", [True, False])
def test_kernel_append_struct_for_and_host_reads_agree_with_numpy(small_chunked, last):
    x, v, node = _layout(fs.cpu, last)
    if on_cpu():  # CUDA allocates a field whole, row-major (tests forced onto it)
        assert x.index_map is not None and x.index_map.physical[0] == L // C

    def at(i, k):  # the field index of slot k of cell i
        return (i, k) if last else (k, i)

    @fs.kernel
    def fill():
        for i in range(N):
            for k in range(i + 1):
                if fs.static(last):
                    x[i, k] = i * 10.0 + k
                    v[i, k] = fs.Vector([i, k, i * k])
                else:
                    x[k, i] = i * 10.0 + k
                    v[k, i] = fs.Vector([i, k, i * k])

    @fs.kernel
    def weighted() -> fs.f64:
        s = fs.f64(0)
        for I in fs.grouped(x):
            k = I[1] if fs.static(last) else I[0]
            s += x[I] * (k + 1) + v[I].sum()
        return s

    fill()
    mx, mv = _model()
    if not last:
        mx, mv = mx.T, mv.transpose(1, 0, 2)
    np.testing.assert_array_equal(x.to_numpy(), mx)
    np.testing.assert_array_equal(v.to_numpy(), mv)
    k_axis = 1 if last else 0
    ks = np.arange(L).reshape((1, L) if last else (L, 1))
    assert weighted() == pytest.approx(float((mx * (ks + 1)).sum() + mv.sum()))
    assert [fs.length(node, [i]) for i in range(N)] == [i + 1 for i in range(N)]
    assert x[at(4, 3)] == 43 and list(v[at(5, 4)]) == [5, 4, 20]
    x[at(1, 9)] = 7.0  # Python-scope write: activates, lands in chunk 2
    mx[at(1, 9)] = 7
    np.testing.assert_array_equal(x.to_numpy(), mx)
    assert mx.shape[k_axis] == L


def test_fill_from_numpy_write_active_cells_only_copy_from_all(small_chunked):
    x, v, _ = _layout(fs.cpu)

    @fs.kernel
    def grow():
        for i in range(N):
            for k in range(i + 1):
                x[i].append(1.0)

    grow()
    active = np.arange(L)[None, :] < (np.arange(N) + 1)[:, None]
    x.fill(2.5)
    np.testing.assert_array_equal(x.to_numpy(), np.where(active, 2.5, 0))
    src = np.arange(N * L, dtype=np.float32).reshape(N, L)
    x.from_numpy(src)
    np.testing.assert_array_equal(x.to_numpy(), np.where(active, src, 0))
    v.fill([1, 2, 3])
    np.testing.assert_array_equal(v.to_numpy().sum(axis=(0, 1)), active.sum() * np.array([1, 2, 3]))
    y = fs.field(fs.f32)
    fs.root.dense(fs.i, N).dynamic(fs.j, L, chunk_size=C).place(y)
    y[N - 1, L - 1] = 1.0
    y.copy_from(x)  # Taichi's copies every cell (whole index range), inactive ones of x as 0
    np.testing.assert_array_equal(y.to_numpy(), np.where(active, src, 0))


def test_deactivate_zeroes_only_that_cell(small_chunked):
    x, _, node = _layout(fs.cpu)

    @fs.kernel
    def grow():
        for i in range(N):
            for k in range(L):
                x[i].append(i * 100 + k)

    @fs.kernel
    def drop(i: fs.i32):
        x[i].deactivate()

    grow()
    want = (np.arange(N)[:, None] * 100 + np.arange(L)[None, :]).astype(np.float32)
    drop(2)
    fs.deactivate(node, [4])  # Python scope
    want[[2, 4]] = 0
    np.testing.assert_array_equal(x.to_numpy(), want)
    assert fs.length(node, [2]) == 0 and fs.length(node, [3]) == L


def test_addresses_follow_the_chunk_major_map(small_chunked):
    x, v, _ = _layout(fs.cpu)

    @fs.kernel
    def offset(i: fs.i32, k: fs.i32) -> fs.u64:
        return fs.get_addr(x, [i, k]) - fs.get_addr(x, [0, 0])

    def element(i, k):  # the element number of x[i, k]: chunk-major, or row-major on CUDA
        return (k // C) * N * C + i * C + k % C if on_cpu() else i * L + k

    for i, k in [(0, 0), (1, 5), (5, 15), (3, 4)]:
        want = element(i, k) * 4
        assert fs.get_addr(x, [i, k]) - fs.get_addr(x, [0, 0]) == want
        assert offset(i, k) == want
    comp = v.get_scalar_field(2)
    assert fs.get_addr(comp, [1, 5]) - fs.get_addr(v, [0, 0]) == element(1, 5) * 12 + 8


def test_gradients_of_a_chunked_field(small_chunked):
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32)
    fs.root.dense(fs.i, N).dynamic(fs.j, L, chunk_size=C).place(x, x.grad)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)
    vals = np.random.default_rng(1).uniform(-1, 1, (N, L)).astype(np.float32)

    @fs.kernel
    def grow():
        for i, k in fs.ndrange(N, L):
            x[i, k] = 0.0

    @fs.kernel
    def f():
        for i, k in fs.ndrange(N, L):
            loss[None] += x[i, k] ** 2 * (k + 1)

    grow()
    x.from_numpy(vals)
    with fs.ad.Tape(loss):
        f()
    want = 2 * vals.astype(np.float64) * (np.arange(L) + 1)
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-6)


def test_layouts_left_row_major(small_chunked):
    fs.init(arch=fs.cpu)
    a, b, c = fs.field(fs.f32), fs.field(fs.f32), fs.field(fs.f32)
    fs.root.dense(fs.i, 4).dynamic(fs.j, 16).place(a)  # chunk = the whole size
    fs.root.dynamic(fs.i, 64, chunk_size=8).place(b)  # one cell: already chunk-major
    fs.root.dense(fs.i, 4).dynamic(fs.j, 12, chunk_size=8).place(c)  # 8 does not divide 12
    assert a.index_map is None and b.index_map is None and c.index_map is None
    d = fs.field(fs.f32)
    fs.root.dense(fs.i, 4).dynamic(fs.j, 16, chunk_size=3).place(d)  # rounded up to 4
    assert d.index_map.chunk == 4 if on_cpu() else d.index_map is None


def test_small_fields_stay_row_major_by_default():
    fs.init(arch=fs.cpu)
    small, big = fs.field(fs.f32), fs.field(fs.f32)
    fs.root.dense(fs.i, 64).dynamic(fs.j, 1024, chunk_size=64).place(small)  # 256 kB
    fs.root.dense(fs.i, 1 << 14).dynamic(fs.j, 1024, chunk_size=64).place(big)  # 64 MB
    assert small.index_map is None and (big.index_map is not None) == on_cpu()


@pytest.mark.cpu_backend("the CPU backend's chunk-major reservation; CUDA allocates in full")
@pytest.mark.skipif(not __import__("os").path.exists("/proc/self/smaps"), reason="Linux only")
def test_few_appends_to_many_cells_commit_about_one_chunk_row():
    fs.init(arch=fs.cpu)
    cells, size, chunk = 20000, 1024, 32  # 80 MB reserved; row-major: a page per cell
    x = fs.field(fs.f32)
    fs.root.dense(fs.i, cells).dynamic(fs.j, size, chunk_size=chunk).place(x)

    @fs.kernel
    def grow():
        for i in range(cells):
            for k in range(i % 3 + 1):
                x[i].append(i + k)

    grow()
    rss = resident_kb(x.storage.ptr)
    row_kb = cells * chunk * 4 // 1024  # the first chunk of every cell: 2.5 MB
    assert rss <= row_kb + 1024, rss  # the row-major layout commits 80 MB here
    assert x[19999, 1] == 20000 and x[19998, 0] == 19998
