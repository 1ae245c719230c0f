"""Loop hints (codegen/loop_hints.py, issue #13's compile time): which loops LLVM may vectorize.

Checks: a parallel loop that reads a field at data-dependent elements (a gather) carries
`llvm.loop.vectorize.enable false` and its optimised code has no vector gather, while a loop
of affine accesses still vectorizes; loop ids are distinct and self-referencing (LLVM ignores
them otherwise); the results of hinted loops (gathers, a nest's row loop and column flush) are
right; `loopnest.data_indexed` tells data-dependent indices from affine ones, through locals;
a loop whose body divides or takes a square root asks for one group of lanes
(`llvm.loop.interleave.count 1`), still vectorizes and sums right, and integer division alone
does not count.
"""
import re

import numpy as np

import fieldsim as fs
from fieldsim.codegen import loopnest


def _loop_ids(text):
    """The numbers of the `distinct !{ !N, ... }` loop ids that point at themselves."""
    found = re.finditer(r"^!(\d+) = distinct !\{ !(\d+),", text, re.MULTILINE)
    return [int(m.group(1)) for m in found if m.group(1) == m.group(2)]


def test_gather_loop_stays_scalar_and_affine_loop_vectorizes(llvm_texts, monkeypatch, capfd):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n = 4096
    src = fs.field(fs.f32, shape=n)
    idx = fs.field(fs.i32, shape=n)
    out = fs.field(fs.f32, shape=n)

    @fs.kernel
    def gather():
        for i in out:
            out[i] = src[idx[i]] * 2.0

    @fs.kernel
    def scale():
        for i in out:
            out[i] = src[i] * 3.0

    texts = llvm_texts
    monkeypatch.setenv("FIELDSIM_PRINT_LLVM", "1")
    rng = np.random.default_rng(0)
    data = rng.standard_normal(n).astype(np.float32)
    perm = rng.permutation(n).astype(np.int32)
    src.from_numpy(data)
    idx.from_numpy(perm)
    capfd.readouterr()
    gather()
    optimised_gather = capfd.readouterr().out
    np.testing.assert_array_equal(out.to_numpy(), data[perm] * 2)
    scale()
    optimised_scale = capfd.readouterr().out
    np.testing.assert_array_equal(out.to_numpy(), data * 3)

    assert _loop_ids(texts[0]) and '!"llvm.loop.vectorize.enable", i1 0' in texts[0]
    assert "masked.gather" not in optimised_gather
    assert re.search(r"<\d+ x float>", optimised_gather) is None
    assert not _loop_ids(texts[1])  # affine: LLVM's cost model decides
    assert re.search(r"<(8|16) x float>", optimised_scale) is not None


def test_nest_with_row_loop_and_column_flush_hints(llvm_texts):
    # x.grad[j] (a column accumulator, flushed by a hinted loop) and rows[i] (a row one)
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n, m = 37, 300
    w = fs.field(fs.f32, shape=(n, m))
    rows = fs.field(fs.f32, shape=n)
    cols = fs.field(fs.f32, shape=m)

    @fs.kernel
    def sums():
        for i, j in fs.ndrange(n, m):
            rows[i] += w[i, j]
            cols[j] += 2.0 * w[i, j]

    texts = llvm_texts
    wn = np.random.default_rng(1).integers(-8, 8, size=(n, m)).astype(np.float32)
    w.from_numpy(wn)
    sums()
    assert len(_loop_ids(texts[0])) == 2  # the row loop and the column flush
    np.testing.assert_array_equal(rows.to_numpy(), wn.sum(1))  # small integers: exact
    np.testing.assert_array_equal(cols.to_numpy(), 2 * wn.sum(0))


def test_data_indexed_follows_locals(monkeypatch):
    fs.init(arch=fs.cpu, offline_cache=False)
    n = 64
    a = fs.field(fs.f32, shape=n)
    k = fs.field(fs.i32, shape=())
    b = fs.field(fs.f32, shape=2 * n + 1)
    verdicts = []
    real = loopnest.data_indexed

    def spy(loop, outside):
        verdicts.append(real(loop, outside))
        return verdicts[-1]
    from fieldsim.codegen import llvm as lowering
    monkeypatch.setattr(lowering, "data_indexed", spy)

    @fs.kernel
    def affine_local():
        for i in a:
            t = i * 2
            t += 1
            a[i] = b[t]  # t = 2i + 1: affine

    @fs.kernel
    def loaded_local():
        for i in a:
            t = 0
            t = fs.cast(a[i], fs.i32) % n  # from a loaded value
            a[i] = b[t]

    @fs.kernel
    def uniform_index():
        for i in a:
            a[i] = b[k[None] + i]  # a scalar field: the same element every iteration

    b.from_numpy(np.arange(2 * n + 1, dtype=np.float32))
    affine_local()
    np.testing.assert_array_equal(a.to_numpy(), 2 * np.arange(n) + 1)
    loaded_local()
    np.testing.assert_array_equal(a.to_numpy(), (2 * np.arange(n) + 1) % n)
    k[None] = 3
    uniform_index()
    np.testing.assert_array_equal(a.to_numpy(), np.arange(n) + 3)
    assert verdicts == [False, True, False]


def test_store_under_if_stays_scalar_and_is_right(llvm_texts):
    # mpm88's update_grid: a guarded store vectorizes into masked stores that ran slower
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n = 4096
    m = fs.field(fs.f32, shape=n)
    v = fs.field(fs.f32, shape=n)

    @fs.kernel
    def update():
        for i in m:
            if m[i] > 0:
                v[i] = v[i] / m[i] - 1.0

    @fs.kernel
    def unguarded():
        for i in m:
            v[i] = v[i] * 2.0

    texts = llvm_texts
    rng = np.random.default_rng(2)
    mn = rng.integers(-2, 3, size=n).astype(np.float32)
    vn = rng.standard_normal(n).astype(np.float32)
    m.from_numpy(mn)
    v.from_numpy(vn)
    update()
    expect = np.where(mn > 0, vn / np.where(mn > 0, mn, 1) - 1, vn).astype(np.float32)
    np.testing.assert_allclose(v.to_numpy(), expect, rtol=1e-6)
    unguarded()
    assert _loop_ids(texts[0]) and not _loop_ids(texts[1])


def test_guarded_store_sees_nested_ifs_only():
    from fieldsim.ir.ir import Op, Stmt

    def stmt(op, blocks=None):
        return Stmt(op, None, (), None, blocks)

    store = stmt(Op.STORE)
    flat = stmt(Op.FOR, [[store]])
    inside = stmt(Op.FOR, [[stmt(Op.IF, [[stmt(Op.IF, [[store], []])], []])]])
    assert not loopnest.guarded_store(flat)
    assert loopnest.guarded_store(inside)


def test_long_latency_body_vectorizes_with_one_lane_group(llvm_texts, monkeypatch, capfd):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n = 4096
    a = fs.field(fs.f32, shape=n)
    k = fs.field(fs.i32, shape=n)
    total = fs.field(fs.f32, shape=())

    @fs.kernel
    def softened():  # gravity's shape: a reduction of 1 / sqrt(.)
        for i in a:
            total[None] += 1.0 / fs.sqrt(a[i] * a[i] + 1.0)

    @fs.kernel
    def halves():
        for i in k:
            k[i] = k[i] // 2  # integer division: the usual hints

    texts = llvm_texts
    monkeypatch.setenv("FIELDSIM_PRINT_LLVM", "1")
    an = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    a.from_numpy(an)
    k.from_numpy(np.arange(n, dtype=np.int32))
    capfd.readouterr()
    softened()
    optimised = capfd.readouterr().out
    halves()
    assert '!"llvm.loop.interleave.count", i32 1' in texts[0] and len(_loop_ids(texts[0])) == 1
    assert re.search(r"@llvm\.sqrt\.v(8|16)f32", optimised) is not None  # still vectorized
    expect = np.sum(1.0 / np.sqrt(an.astype(np.float64) ** 2 + 1.0))
    np.testing.assert_allclose(total[None], expect, rtol=1e-5)
    assert not _loop_ids(texts[1]) and "interleave" not in texts[1]
    np.testing.assert_array_equal(k.to_numpy(), np.arange(n) // 2)


def test_inner_loop_reading_under_a_condition_stays_scalar(llvm_texts, monkeypatch, capfd):
    # an SPH pair loop: `if i != j` reads x[j] (a vector field: interleaved components, so
    # LLVM's masked vector reads are gathers, 6x slower here than the branchy scalar loop)
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n = 300
    x = fs.Vector.field(3, fs.f32, shape=n)
    out = fs.Vector.field(3, fs.f32, shape=n)

    @fs.kernel
    def pairs():
        for i in range(n):
            acc = fs.Vector([0.0, 0.0, 0.0])
            for j in range(n):
                if i != j:
                    d = x[j] - x[i]
                    if d.norm() < 0.2:
                        acc += d
            out[i] = acc

    monkeypatch.setenv("FIELDSIM_PRINT_LLVM", "1")
    pts = np.random.default_rng(3).random((n, 3)).astype(np.float32)
    x.from_numpy(pts)
    capfd.readouterr()
    pairs()
    optimised = capfd.readouterr().out
    assert '!"llvm.loop.vectorize.enable", i1 0' in llvm_texts[0]
    assert "masked.gather" not in optimised
    d = pts[None, :, :] - pts[:, None, :]
    near = (np.linalg.norm(d, axis=-1) < 0.2) & ~np.eye(n, dtype=bool)
    np.testing.assert_allclose(out.to_numpy(), (d * near[..., None]).sum(1), atol=1e-5)


def test_inner_loop_reading_before_the_if_is_left_to_llvm(llvm_texts):
    # reads before the `if` (an SPH density loop): nothing is read under a mask, no hint
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n = 64
    x = fs.field(fs.f32, shape=n)
    out = fs.field(fs.f32, shape=n)

    @fs.kernel
    def dens():
        for i in range(n):
            s = 0.0
            for j in range(n):
                r = x[j] - x[i]
                if r * r < 0.01:
                    s += (0.01 - r * r) ** 3.0
            out[i] = s

    v = np.random.default_rng(4).random(n).astype(np.float32)
    x.from_numpy(v)
    dens()
    assert '!"llvm.loop.vectorize.enable", i1 0' not in llvm_texts[0]
    r2 = (v[None, :] - v[:, None]) ** 2
    want = np.where(r2 < 0.01, (0.01 - r2) ** 3, 0.0).sum(1)
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-4, atol=1e-12)


def test_blocked_struct_for_loads_block_rows_as_vectors(llvm_texts, monkeypatch, capfd):
    # (lang.sparse_kernel.SparseBlocks) unrolled whole, a block's 16-cell row loop left its
    # row loop to vectorize: 16-lane gathers down the block's columns
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    y = fs.field(fs.f32)
    fs.root.pointer(fs.ij, 8).dense(fs.ij, 16).place(y)

    @fs.kernel
    def fill():
        for i, j in fs.ndrange(128, 128):
            if (i // 16 + j // 16) % 3 != 1:
                y[i, j] = (i * 128 + j) % 7

    @fs.kernel
    def total() -> fs.f32:
        s = 0.0
        for i, j in y:
            s += y[i, j]
        return s

    fill()
    monkeypatch.setenv("FIELDSIM_PRINT_LLVM", "1")
    capfd.readouterr()
    got = total()
    optimised = capfd.readouterr().out
    i, j = np.meshgrid(np.arange(128), np.arange(128), indexing="ij")
    want = np.where((i // 16 + j // 16) % 3 != 1, (i * 128 + j) % 7, 0).sum()
    assert got == want  # small integers: exact in any order
    assert '!"llvm.loop.unroll.disable"' in llvm_texts[-1]
    assert "masked.gather" not in optimised
    assert re.search(r"load <(4|8|16) x float>", optimised) is not None


def test_inner_neighbour_loop_over_sorted_ids_stays_scalar(llvm_texts, monkeypatch, capfd):
    # a cell list's candidates `j = ids[k]`, then pos[j]: every pos access of a vector form is
    # a gather, and a cell's ~20 candidates never fill its 64 lanes x interleave (hash-grid
    # queries ran 1.2-2x Taichi's time); the cell's start, read before the loop, is no gather
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n, cells = 400, 16
    pos = fs.field(fs.f32, shape=n)
    ids = fs.field(fs.i32, shape=n)
    start = fs.field(fs.i32, shape=cells)
    near = fs.field(fs.i32, shape=n)

    @fs.kernel
    def count():
        for i in near:
            c = fs.cast(pos[i] * cells, fs.i32)
            m = 0
            for k in range(start[c], start[c] + n // cells):
                if abs(pos[i] - pos[ids[k]]) < 0.01:
                    m += 1
            near[i] = m

    p = np.sort(np.random.default_rng(2).random(n).astype(np.float32))
    pos.from_numpy(p)
    ids.from_numpy(np.arange(n, dtype=np.int32))
    start.from_numpy(np.arange(cells, dtype=np.int32) * (n // cells))
    monkeypatch.setenv("FIELDSIM_PRINT_LLVM", "1")
    capfd.readouterr()
    count()
    optimised = capfd.readouterr().out
    per = n // cells
    want = [sum(abs(p[i] - p[k]) < np.float32(0.01)
                for k in range(int(p[i] * cells) * per, int(p[i] * cells) * per + per))
            for i in range(n)]
    np.testing.assert_array_equal(near.to_numpy(), want)
    assert "masked.gather" not in optimised and "vector.body" not in optimised
