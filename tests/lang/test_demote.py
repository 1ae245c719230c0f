"""Atomic demotion (fieldsim.codegen.demote): `+=` on an element only its own loop iteration
touches is lowered without an atomic; every other atomic stays atomic. Results are checked
against NumPy with launches forced onto two threads, and the analysis itself on kernels' IR."""
import numpy as np
import pytest

import fieldsim as fs

pytestmark = pytest.mark.fieldsim_specific


@pytest.fixture
def threaded(monkeypatch):
    """Two workers on every parallel launch, however small."""
    from fieldsim.codegen import cpu
    fs.init(arch=fs.cpu, default_fp=fs.f32, default_ip=fs.i32, cpu_max_num_threads=2)
    monkeypatch.setattr(cpu, "SMALL_LAUNCH", 0)
    monkeypatch.setattr(cpu, "SMALL_WORK", 0)


def demoted_fields(kernel):
    """Names of the fields whose atomics in `kernel`'s (compiled) tasks are demoted."""
    from fieldsim.codegen.demote import owned_atomics
    from fieldsim.ir.ir import Op, walk
    from fieldsim.ir.passes.offload import is_task
    ir = next(iter(kernel._cache.values())).ir
    prologue = [s for s in ir.body if not is_task(s)]
    names = set()
    for task in (s for s in ir.body if is_task(s)):
        owned = owned_atomics(task, prologue)
        names |= {s.field.ir_name for s in walk(task.body) if s.op == Op.ATOMIC and id(s) in owned}
    return names


def test_owned_elements_are_demoted_shared_ones_are_not(threaded):
    n, bins = 40_000, 7
    x = fs.field(fs.f32, shape=n, name="x")
    hist = fs.field(fs.i32, shape=bins, name="hist")
    total = fs.field(fs.f32, shape=(), name="total")
    data = np.random.default_rng(0).random(n).astype(np.float32)
    x.from_numpy(data)

    @fs.kernel
    def k():
        for i in x:
            x[i] += 1.0          # only iteration i touches x[i]
            hist[i % bins] += 1  # every iteration meets every bin
            total[None] += 0.5   # exactly representable: any order sums exactly

    k()
    assert demoted_fields(k) == {"x"}
    np.testing.assert_allclose(x.to_numpy(), data + 1.0, rtol=1e-6)
    np.testing.assert_array_equal(hist.to_numpy(), np.bincount(np.arange(n) % bins))
    assert total[None] == n * 0.5


def test_another_index_of_the_same_field_keeps_the_atomic(threaded):
    n = 40_000
    a = fs.field(fs.i32, shape=n + 1, name="a")

    @fs.kernel
    def k():
        for i in range(n):
            a[i] += 1
            a[i + 1] += 1  # iteration i - 1 also adds to a[i]

    k()
    assert demoted_fields(k) == set()
    expect = np.zeros(n + 1, np.int32)
    expect[:n] += 1
    expect[1:] += 1
    np.testing.assert_array_equal(a.to_numpy(), expect)


def test_2d_struct_for_and_time_indexed_fields(threaded):
    g = fs.Vector.field(2, fs.f32, shape=(64, 96), name="g")
    traj = fs.field(fs.f32, shape=(3, 5000), name="traj")

    @fs.kernel
    def grid():
        for i, j in g:
            g[i, j] += fs.Vector([i * 1.0, j * 1.0])

    @fs.kernel
    def step(t: fs.i32):
        for p in range(5000):
            traj[t + 1, p] += traj[t, p] + 1.0  # rows t and t + 1, column p: iteration p only

    grid()
    step(0)
    step(1)
    assert demoted_fields(grid) == {"g"}
    assert demoted_fields(step) == {"traj"}
    ii, jj = np.meshgrid(np.arange(64), np.arange(96), indexing="ij")
    np.testing.assert_array_equal(g.to_numpy(), np.stack([ii, jj], -1).astype(np.float32))
    np.testing.assert_array_equal(traj.to_numpy(), np.array([[0.0], [1.0], [2.0]]) * np.ones(5000))


def test_3d_and_4d_struct_fors_own_their_elements(threaded):
    # the frontend splits a 3-D loop index L into L // (n1 * n2), (L // n2) % n1 and L % n2
    rho = fs.field(fs.f32, shape=(6, 7, 9), name="rho")
    v = fs.Vector.field(3, fs.f32, shape=(6, 7, 9), name="v")
    f = fs.field(fs.f32, shape=(6, 7, 9, 5), name="f")
    w = fs.field(fs.i32, shape=(3, 4, 5, 6), name="w")
    rng = np.random.default_rng(2)
    f.from_numpy(rng.random((6, 7, 9, 5)).astype(np.float32))

    @fs.kernel
    def macro():
        for i, j, k in rho:
            rho[i, j, k] = 0.0
            v[i, j, k] = fs.Vector([0.0, 0.0, 0.0])
            for s in fs.static(range(5)):
                rho[i, j, k] += f[i, j, k, s]
                v[i, j, k] += fs.Vector([1.0, 2.0, 3.0]) * f[i, j, k, s]

    @fs.kernel
    def four():
        for a, b, c, d in w:
            w[a, b, c, d] += a * 1000 + b * 100 + c * 10 + d

    macro()
    four()
    assert demoted_fields(macro) == {"rho", "v"}
    assert demoted_fields(four) == {"w"}
    fn = f.to_numpy()
    expect = fn.sum(-1)
    np.testing.assert_allclose(rho.to_numpy(), expect, rtol=1e-6)  # fast math may reorder the sum
    np.testing.assert_allclose(v.to_numpy(), expect[..., None] * np.array([1, 2, 3], np.float32),
                               rtol=1e-6)
    a, b, c, d = np.meshgrid(*(np.arange(n) for n in (3, 4, 5, 6)), indexing="ij")
    np.testing.assert_array_equal(w.to_numpy(), a * 1000 + b * 100 + c * 10 + d)


def test_3d_loop_adding_to_a_2d_slice_keeps_the_atomic(threaded):
    g = fs.field(fs.f32, shape=(8, 9, 10), name="g")
    acc = fs.field(fs.i32, shape=(8, 9), name="acc")
    mid = fs.field(fs.i32, shape=(9,), name="mid")

    @fs.kernel
    def k():
        for i, j, k in g:
            acc[i, j] += 1  # the ten iterations over k share acc[i, j]
            mid[j] += 1     # (L // 10) % 9 alone does not fix L

    k()
    assert demoted_fields(k) == set()
    np.testing.assert_array_equal(acc.to_numpy(), np.full((8, 9), 10))
    np.testing.assert_array_equal(mid.to_numpy(), np.full(9, 80))


def test_demoted_atomic_returns_the_old_value(threaded):
    n = 30_000
    x = fs.field(fs.f32, shape=n, name="x")
    old = fs.field(fs.f32, shape=n, name="old")
    data = np.arange(n, dtype=np.float32)
    x.from_numpy(data)

    @fs.kernel
    def k():
        for i in x:
            old[i] = fs.atomic_add(x[i], 2.0)
            x[i] *= 3.0

    k()
    assert demoted_fields(k) == {"x"}
    np.testing.assert_array_equal(old.to_numpy(), data)
    np.testing.assert_array_equal(x.to_numpy(), (data + 2.0) * 3.0)


def test_adjoint_accumulations_are_demoted_and_exact(threaded):
    n = 20_000
    x = fs.field(fs.f32, shape=n, name="x", needs_grad=True)
    y = fs.field(fs.f32, shape=n, name="y", needs_grad=True)
    data = np.random.default_rng(1).random(n).astype(np.float32)
    x.from_numpy(data)

    @fs.kernel
    def square():
        for i in x:
            y[i] = x[i] * x[i] + x[i]

    square()
    y.grad.from_numpy(np.ones(n, np.float32))
    square.grad()
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * data + 1, rtol=1e-6)  # d(x^2 + x)/dx


def test_serialized_loop_atomics_are_demoted():
    s = fs.field(fs.i32, shape=(), name="s")
    c = fs.field(fs.i32, shape=12, name="c")

    @fs.kernel
    def k():
        fs.loop_config(serialize=True)  # one thread runs the loop
        for i in range(10):
            s[None] += i
            c[i + 2] += c[i] + 1

    k()
    assert demoted_fields(k) == {"s", "c"}
    assert s[None] == 45
    expect = np.zeros(12, np.int32)
    for i in range(10):
        expect[i + 2] += expect[i] + 1
    np.testing.assert_array_equal(c.to_numpy(), expect)
