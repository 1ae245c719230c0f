"""Nests whose workers take whole rows (loopnest.whole_rows, llvm_nest.nested_for with
`by_rows`), and loop counters used as i64 indices as they are (TaskLowering.narrow_index/wide).

Checks: which nests are cut between rows (a constant range of at least WHOLE_ROWS_MIN whole
rows) and which keep chunks of the linear index; on 1, 2, 3 and 32 threads, with more chunks
than rows and row counts no chunk count divides, every element, row accumulator (element
depends on the row only), column accumulator (on the column only) and total is exact, for
full and triangular nests; random numbers still follow the linear index (the same as a 1-d
loop over it, and as a nest cut by chunks); a float64 energy's gradient through row and
column accumulators on three threads matches the analytic one; the IR handed to LLVM
extends no loop counter (a computed index still is), and negative counters index right.
"""
import re

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.codegen import cpu, llvm_nest
from fieldsim.codegen.loopnest import WHOLE_ROWS_MIN


@pytest.fixture
def by_rows(monkeypatch):
    """Whether each nest the code generator lowers from now on was cut between rows."""
    seen = []
    real = llvm_nest.NestLowering.nested_for

    def spy(self, s, lo, hi, split, hint=llvm_nest.VECTOR, by_rows=False):
        seen.append(by_rows)
        return real(self, s, lo, hi, split, hint, by_rows)
    monkeypatch.setattr(llvm_nest.NestLowering, "nested_for", spy)
    return seen


@pytest.fixture
def always_split(monkeypatch):
    """Every parallel launch cut into threads x CHUNKS_PER_THREAD chunks, however small."""
    monkeypatch.setattr(cpu, "SMALL_LAUNCH", 0)
    monkeypatch.setattr(cpu, "SMALL_WORK", 0)


def test_which_nests_take_whole_rows(by_rows):
    fs.init(arch=fs.cpu, offline_cache=False)
    many = fs.field(fs.i32, shape=(WHOLE_ROWS_MIN, 3))
    few = fs.field(fs.i32, shape=(WHOLE_ROWS_MIN - 1, 300))

    @fs.kernel
    def fill(f: fs.template()):
        for i, j in f:
            f[i, j] = i - j

    @fs.kernel
    def runtime_rows(n: fs.i32):
        for i, j in fs.ndrange(n, 3):
            many[i, j] = i + j

    fill(many)
    fill(few)
    runtime_rows(WHOLE_ROWS_MIN)
    assert by_rows == [True, False, False]
    i, j = np.indices(many.shape)
    np.testing.assert_array_equal(many.to_numpy(), i + j)
    i, j = np.indices(few.shape)
    np.testing.assert_array_equal(few.to_numpy(), i - j)


def _accumulating(shape, triangle):
    out = fs.field(fs.i32, shape=shape)
    row_sum = fs.field(fs.i64, shape=shape[0])
    col_sum = fs.field(fs.i64, shape=shape[1])
    total = fs.field(fs.i64, shape=())

    @fs.kernel
    def full():
        for i, j in fs.ndrange(*shape):
            out[i, j] = i * 10000 + j
            row_sum[i] += j
            col_sum[j] += i
            total[None] += 1

    @fs.kernel
    def upper():
        for i, j in fs.ndrange(*shape):
            if i < j:
                out[i, j] = i * 10000 + j
                row_sum[i] += j
                col_sum[j] += i
                total[None] += 1

    (upper if triangle else full)()
    i, j = np.indices(shape)
    mask = i < j if triangle else np.ones(shape, bool)
    np.testing.assert_array_equal(out.to_numpy(), np.where(mask, i * 10000 + j, 0))
    np.testing.assert_array_equal(row_sum.to_numpy(), (j * mask).sum(axis=1))
    np.testing.assert_array_equal(col_sum.to_numpy(), (i * mask).sum(axis=0))
    assert total[None] == mask.sum()


@pytest.mark.parametrize("triangle", [False, True])
@pytest.mark.parametrize("shape", [(64, 3), (67, 129), (101, 70)])
@pytest.mark.parametrize("threads", [1, 2, 3, 32])
def test_every_row_runs_once_on_any_chunking(by_rows, always_split, threads, shape, triangle):
    # 32 threads: 128 chunks, more than any of these row counts (chunks left empty)
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=threads)
    _accumulating(shape, triangle)
    assert by_rows == [True]


def _first_draw(shape, nested):
    """The numbers `fs.random()` gives each element of `shape` in the first launch after
    `fs.init` (so every kernel drawn this way gets the same launch key)."""
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=3, random_seed=7)
    if nested:
        f = fs.field(fs.f32, shape=shape)

        @fs.kernel
        def draw():
            for i, j in f:
                f[i, j] = fs.random()
    else:
        f = fs.field(fs.f32, shape=shape[0] * shape[1])

        @fs.kernel
        def draw():
            for k in range(shape[0] * shape[1]):  # no index recovered by // and %: no nest
                f[k] = fs.random()
    draw()
    return f.to_numpy().reshape(shape)


def test_random_numbers_follow_the_linear_index(by_rows, always_split):
    rows, cols = WHOLE_ROWS_MIN + 3, 5
    whole_rows = _first_draw((rows, cols), nested=True)
    chunks = _first_draw((4, cols), nested=True)
    flat = _first_draw((rows, cols), nested=False)
    assert by_rows == [True, False]
    assert len(np.unique(whole_rows)) == whole_rows.size
    np.testing.assert_array_equal(whole_rows, flat)
    np.testing.assert_array_equal(chunks, flat[:4])


def test_gradient_through_row_and_column_accumulators(always_split):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=3, default_fp=fs.f64)
    n, m = 67, 50
    a = fs.field(fs.f64, shape=n, needs_grad=True)
    b = fs.field(fs.f64, shape=m, needs_grad=True)
    energy = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def coupling():
        for i, j in fs.ndrange(n, m):
            energy[None] += fs.sin(a[i] * b[j]) + a[i] ** 2 * b[j]

    rng = np.random.default_rng(3)
    av, bv = rng.uniform(-1, 1, n), rng.uniform(-1, 1, m)
    a.from_numpy(av)
    b.from_numpy(bv)
    with fs.ad.Tape(loss=energy):
        coupling()
    ab = np.outer(av, bv)
    np.testing.assert_allclose(energy[None], (np.sin(ab) + np.outer(av ** 2, bv)).sum(),
                               rtol=1e-12)
    want_a = (np.cos(ab) * bv).sum(axis=1) + 2 * av * bv.sum()
    want_b = (np.cos(ab) * av[:, None]).sum(axis=0) + (av ** 2).sum()
    np.testing.assert_allclose(a.grad.to_numpy(), want_a, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(b.grad.to_numpy(), want_b, rtol=1e-10, atol=1e-12)


def _body(text, name):
    start = text.index("define")
    assert name in text
    return text[start:]


def test_loop_counters_are_not_extended(llvm_texts):
    fs.init(arch=fs.cpu, offline_cache=False)
    n = 100
    x = fs.field(fs.f32, shape=n + 1)
    y = fs.field(fs.f32, shape=n)
    grid = fs.field(fs.f32, shape=(WHOLE_ROWS_MIN, 8))
    few = fs.field(fs.f32, shape=(3, 8))

    @fs.kernel
    def scale():
        for i in range(n):
            y[i] = 2 * x[i]

    @fs.kernel
    def shift():
        for i in range(n):
            y[i] = x[i + 1]

    @fs.kernel
    def cells(f: fs.template()):
        for i, j in f:
            f[i, j] = i + 0.5 * j

    x.from_numpy(np.arange(n + 1, dtype=np.float32))
    scale()
    np.testing.assert_array_equal(y.to_numpy(), 2 * np.arange(n))
    shift()
    np.testing.assert_array_equal(y.to_numpy(), np.arange(1, n + 1))
    cells(grid)
    cells(few)
    texts = {name: _body(t, name) for name, t in zip(["scale", "shift", "cells", "cells"],
                                                     llvm_texts)}
    assert "sext" not in texts["scale"]
    assert len(re.findall(r"= sext i32 ", texts["shift"])) == 1  # i + 1 is not a counter
    assert all("sext" not in _body(t, "cells") for t in llvm_texts[2:])
    i, j = np.indices(grid.shape)
    np.testing.assert_array_equal(grid.to_numpy(), i + 0.5 * j)
    i, j = np.indices(few.shape)
    np.testing.assert_array_equal(few.to_numpy(), i + 0.5 * j)


def test_negative_counters_index_right():
    fs.init(arch=fs.cpu, offline_cache=False)
    y = fs.field(fs.i32, shape=10)
    z = fs.field(fs.i32, shape=10)

    @fs.kernel
    def fill():
        for i in range(-5, 5):
            y[i + 5] = i
        for k in range(1):
            for i in range(-5, 5):
                z[-i + 4] = i * i

    fill()
    np.testing.assert_array_equal(y.to_numpy(), np.arange(-5, 5))
    np.testing.assert_array_equal(z.to_numpy(), np.arange(4, -6, -1) ** 2)
