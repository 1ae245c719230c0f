"""Scatter privatization (fieldsim.codegen.privatize): a parallel task's pure scatters
(`grid[idx] += v`, nothing else touching `grid` in the task) go to per-chunk copies summed into
the field after the task. Results are checked against NumPy with launches forced onto two
threads (many chunks), and which fields are privatized is checked on the compiled tasks."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture
def threaded(monkeypatch):
    """Two workers (eight chunks) on every parallel launch, however small."""
    from fieldsim.codegen import cpu
    fs.init(arch=fs.cpu, default_fp=fs.f32, default_ip=fs.i32, cpu_max_num_threads=2)
    monkeypatch.setattr(cpu, "SMALL_LAUNCH", 0)
    monkeypatch.setattr(cpu, "SMALL_WORK", 0)


def private_fields(kernel, adjoint=False):
    """Names of the privatized fields of each compiled task of `kernel` (or of its adjoint)."""
    names = []
    for ck in kernel._cache.values():
        program = ck.adjoint[1] if adjoint else ck.program
        for task in program.info.tasks:
            names.append({p.field.ir_name for p in task.private.fields} if task.private else set())
    return names


def test_histogram_scatter_is_privatized_and_exact(threaded):
    n, bins = 50_000, 37
    idx = fs.field(fs.i32, shape=n, name="idx")
    hist = fs.field(fs.i32, shape=bins, name="hist")
    mass = fs.field(fs.f32, shape=bins, name="mass")
    rng = np.random.default_rng(1)
    data = rng.integers(0, bins, n).astype(np.int32)
    idx.from_numpy(data)

    @fs.kernel
    def scatter():
        for i in idx:
            hist[idx[i]] += 1
            mass[idx[i]] -= 0.25  # exactly representable: any order sums exactly

    scatter()
    scatter()  # the copies are zeroed again for the second launch
    assert private_fields(scatter) == [{"hist", "mass"}]
    np.testing.assert_array_equal(hist.to_numpy(), 2 * np.bincount(data, minlength=bins))
    np.testing.assert_array_equal(mass.to_numpy(), -0.5 * np.bincount(data, minlength=bins))


def test_f64_scatter_matches_numpy(threaded):
    fs.init(arch=fs.cpu, default_fp=fs.f64, cpu_max_num_threads=2)
    n, cells = 20_000, 64
    x = fs.field(fs.f64, shape=n, name="x")
    grid = fs.field(fs.f64, shape=(cells, cells), name="grid")
    pos = np.random.default_rng(2).random(n)
    x.from_numpy(pos)
    grid.fill(1.0)  # the scatter adds to what is there

    @fs.kernel
    def p2g():
        for p in x:
            base = int(x[p] * (cells - 2))
            for k in fs.static(range(3)):
                grid[base + k, (base * 7 + k) % cells] += x[p] * (k + 1)

    p2g()
    want = np.ones((cells, cells))
    base = (pos * (cells - 2)).astype(int)
    for k in range(3):
        np.add.at(want, (base + k, (base * 7 + k) % cells), pos * (k + 1))
    assert private_fields(p2g) == [{"grid"}]
    np.testing.assert_allclose(grid.to_numpy(), want, rtol=1e-12)


def test_read_or_used_result_keeps_the_atomic(threaded):
    n, bins = 30_000, 5
    a = fs.field(fs.i32, shape=bins, name="a")
    b = fs.field(fs.i32, shape=bins, name="b")
    c = fs.field(fs.i32, shape=n, name="c")
    a.fill(1)

    @fs.kernel
    def k():
        for i in c:
            b[i % bins] += a[i % bins]            # a is read, b only scattered
            c[i] = fs.atomic_add(a[i % bins], 0)  # the old value is used: a stays atomic

    k()
    assert private_fields(k) == [{"b"}]
    np.testing.assert_array_equal(b.to_numpy(), np.bincount(np.arange(n) % bins))
    np.testing.assert_array_equal(c.to_numpy(), np.ones(n))


def test_next_task_sees_the_summed_copies(threaded):
    n, bins = 40_000, 8
    hist = fs.field(fs.f32, shape=bins, name="hist")
    out = fs.field(fs.f32, shape=bins, name="out")

    @fs.kernel
    def k():
        for i in range(n):
            hist[i % bins] += 1.0
        for j in range(bins):  # a second task: runs after the copies were added into hist
            out[j] = hist[j] * 2.0

    k()
    np.testing.assert_array_equal(out.to_numpy(), np.full(bins, 2.0 * n / bins))


def test_few_iterations_into_a_large_field_run_on_one_chunk(threaded):
    big = fs.field(fs.f32, shape=100_000, name="big")
    src = fs.field(fs.i32, shape=50, name="src")
    src.from_numpy((np.arange(50) * 997 % 100_000).astype(np.int32))

    @fs.kernel
    def k():
        for i in src:
            big[src[i]] += 1.0

    k()
    assert private_fields(k) == [{"big"}]
    want = np.zeros(100_000, np.float32)
    np.add.at(want, np.arange(50) * 997 % 100_000, 1.0)
    np.testing.assert_array_equal(big.to_numpy(), want)


def test_adjoint_gather_scatter_gradient(threaded):
    """The adjoint of a gather `y[i] = w[i] * g[idx[i]]` scatters into g.grad: analytic
    dL/dg[j] = sum over i with idx[i] = j of w[i] (L = sum y)."""
    fs.init(arch=fs.cpu, default_fp=fs.f64, cpu_max_num_threads=2)
    n, bins = 30_000, 11
    idx = fs.field(fs.i32, shape=n, name="idx")
    w = fs.field(fs.f64, shape=n, name="w")
    g = fs.field(fs.f64, shape=bins, name="g", needs_grad=True)
    y = fs.field(fs.f64, shape=n, name="y", needs_grad=True)
    rng = np.random.default_rng(3)
    data, weights = rng.integers(0, bins, n).astype(np.int32), rng.random(n)
    idx.from_numpy(data)
    w.from_numpy(weights)
    g.from_numpy(rng.random(bins))

    @fs.kernel
    def gather():
        for i in idx:
            y[i] = w[i] * g[idx[i]]

    gather()
    y.grad.fill(1.0)
    gather.grad()
    assert {"g.grad"} in private_fields(gather, adjoint=True)
    np.testing.assert_allclose(g.grad.to_numpy(), np.bincount(data, weights=weights, minlength=bins),
                               rtol=1e-12)


def test_parallel_then_one_chunk_launches_of_one_kernel(threaded):
    """A launch split across threads, then one small enough to run as one chunk (it adds into
    the field itself), then a split one again: each adds exactly its own counts."""
    bins = 1000
    hist = fs.field(fs.i32, shape=bins, name="hist")

    @fs.kernel
    def count(n: fs.i32):
        for i in range(n):
            hist[i * 7 % bins] += 1

    want = np.zeros(bins, np.int64)
    for n in (50_000, 300, 20_000):
        count(n)
        np.add.at(want, np.arange(n) * 7 % bins, 1)
        np.testing.assert_array_equal(hist.to_numpy(), want)
    assert private_fields(count) == [{"hist"}]
