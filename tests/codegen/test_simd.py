"""SIMD code for parallel loops and the fast-math option (issue #13).

Checks: with `fast_math=True` (the default) a parallel float reduction and an ndrange loop
with an `if` are vectorized (the optimised LLVM module has vector types and reassociable
ops); with `fast_math=False` float ops carry no flags and an in-order sum is bit-identical to
numpy's sequential float32 sum; both modes compile to different cache entries; the nested
ndrange lowering (rows, columns, if-conversion, local accumulators) gives the same values as
numpy, exactly for integers, across thread chunk boundaries; NaN/inf tests still work; sqrt,
1/sqrt and division stay correctly rounded (no hardware estimates), so the polar decomposition
of the identity is the identity.
"""
import re

import numpy as np
import pytest

import fieldsim as fs


def _optimised_llvm(monkeypatch, capfd, run):
    """The optimised LLVM text of every kernel `run` compiles (FIELDSIM_PRINT_LLVM)."""
    monkeypatch.setenv("FIELDSIM_PRINT_LLVM", "1")
    capfd.readouterr()
    run()
    return capfd.readouterr().out


def _sum_kernel(n, dtype=fs.f32):
    a = fs.field(dtype, shape=n)
    s = fs.field(dtype, shape=())

    @fs.kernel
    def total():
        for i in a:
            s[None] += a[i]
    return a, s, total


@pytest.mark.parametrize("fast", [True, False])
def test_parallel_reduction_is_vectorized_only_with_fast_math(monkeypatch, capfd, fast):
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=fast)
    a, s, total = _sum_kernel(4096)
    a.fill(1.0)
    text = _optimised_llvm(monkeypatch, capfd, total)
    assert "define void @fs_total" in text
    vector = re.search(r"<(4|8|16) x float>", text) is not None
    if fast:
        assert vector and "fadd reassoc" in text
    else:
        # IEEE order: no flags, so the float sum stays one scalar chain
        assert "reassoc" not in text and "llvm.vector.reduce.fadd" not in text
    assert s[None] == 4096.0


@pytest.mark.parametrize("dtype", ["f32", "f64"])
def test_exact_mode_sums_in_order_like_numpy(dtype):
    # One thread, one chunk: the kernel adds a[0], a[1], ... in order. 2^p + 1 rounds back to
    # 2^p (p = 24 in float32, 53 in float64), so the in-order sum loses every 1; a reordered
    # sum keeps many.
    npt, p = (np.float32, 24) if dtype == "f32" else (np.float64, 53)
    n = 1000
    data = np.ones(n, npt)
    data[0] = 2.0 ** p
    data[1::7] = npt(0.3)
    expected = np.add.accumulate(data, dtype=npt)[-1]  # sequential additions, in order
    results = {}
    for fast in (False, True):
        fs.init(arch=fs.cpu, offline_cache=False, fast_math=fast, cpu_max_num_threads=1)
        a, s, total = _sum_kernel(n, getattr(fs, dtype))
        a.from_numpy(data)
        total()
        results[fast] = s[None]
    assert npt(results[False]).tobytes() == expected.tobytes()
    exact = sum(map(float, data[1:])) + float(data[0])  # the rounding-free value, nearly
    assert results[True] != results[False]  # reassociated: partial sums per vector lane
    assert abs(results[True] - exact) < abs(results[False] - exact)


def test_exact_and_fast_builds_are_distinct_cache_entries(tmp_path):
    data = np.ones(1000, np.float32)
    data[0] = 2.0 ** 24
    out = {}
    for fast in (True, False, True):
        fs.init(arch=fs.cpu, offline_cache=True, offline_cache_file_path=str(tmp_path),
                fast_math=fast, cpu_max_num_threads=1)
        a, s, total = _sum_kernel(1000)
        a.from_numpy(data)
        total()
        out.setdefault(fast, set()).add(s[None])
    assert out[False] == {2.0 ** 24}  # not the fast build read back from the cache
    assert len(out[True]) == 1 and out[True] != out[False]


def test_nan_and_inf_tests_survive_fast_math():
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=True)
    x = fs.field(fs.f32, shape=4)
    flags = fs.field(fs.i32, shape=4)

    @fs.kernel
    def classify():
        for i in x:
            v = x[i] * 2.0
            flags[i] = fs.math.isnan(v) * 2 + fs.math.isinf(v)

    x.from_numpy(np.array([np.nan, np.inf, 1.0, -np.inf], np.float32))
    classify()
    assert flags.to_numpy().tolist() == [2, 1, 0, 1]


@pytest.mark.parametrize("n", [7, 4096])  # one thread's scalar code; vectorized chunks
def test_sqrt_and_division_are_correctly_rounded_under_fast_math(n):
    """No reciprocal estimate: sqrt and x/y give numpy's correctly rounded float32 results bit
    for bit, vectorized or not. 1/sqrt is the refined estimate (codegen.llvm_arith.fast_rsqrt):
    within an ulp of the exact value, and exact where that is a float (powers of 4)."""
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=True)
    a, b = fs.field(fs.f32, shape=n), fs.field(fs.f32, shape=n)
    root, inv_root, ratio = (fs.field(fs.f32, shape=n) for _ in range(3))

    @fs.kernel
    def ops():
        for i in a:
            root[i] = fs.sqrt(a[i])
            inv_root[i] = 1.0 / fs.sqrt(a[i])
            ratio[i] = a[i] / b[i]

    rng = np.random.default_rng(11)
    av = np.concatenate([[4.0, 1.0, 0.25], rng.uniform(1e-3, 1e3, n - 3)]).astype(np.float32)
    bv = rng.uniform(0.1, 10.0, n).astype(np.float32)
    a.from_numpy(av)
    b.from_numpy(bv)
    ops()
    np.testing.assert_array_equal(root.to_numpy(), np.sqrt(av))
    np.testing.assert_array_equal(ratio.to_numpy(), av / bv)
    exact = 1.0 / np.sqrt(av.astype(np.float64))
    got = inv_root.to_numpy()
    np.testing.assert_array_equal(got[:3], [0.5, 1.0, 2.0])
    assert np.max(np.abs(got - exact) / np.spacing(exact.astype(np.float32))) <= 1.0


def test_polar_decomposition_of_the_identity_is_the_identity_under_fast_math():
    """diffmpm's stress at rest: F - R must be exactly zero for F = I (a 1/sqrt estimate gave
    R a few ulps off I, and so an elastic stress from nothing)."""
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=True)
    F = fs.Matrix.field(2, 2, dtype=fs.f32, shape=64)
    residual = fs.field(fs.f32, shape=64)

    @fs.kernel
    def polar():
        for p in F:
            R, _S = fs.polar_decompose(F[p])
            d = F[p] - R
            residual[p] = abs(d[0, 0]) + abs(d[0, 1]) + abs(d[1, 0]) + abs(d[1, 1])

    F.from_numpy(np.broadcast_to(np.eye(2, dtype=np.float32), (64, 2, 2)).copy())
    polar()
    assert not residual.to_numpy().any()


def test_integer_power_under_fast_math():
    # pow(x, float(n)) must not become llvm.powi, a libgcc call the JIT cannot link
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=True)
    x = fs.field(fs.f32, shape=64)
    y = fs.field(fs.f32, shape=64)

    @fs.kernel
    def cube(p: fs.i32):
        for i in x:
            y[i] = x[i] ** p

    x.from_numpy(np.linspace(-2, 2, 64).astype(np.float32))
    cube(3)
    np.testing.assert_allclose(y.to_numpy(), x.to_numpy().astype(np.float64) ** 3, rtol=1e-6)


@pytest.mark.parametrize("fast", [True, False])
def test_nested_ndrange_accumulators_are_exact_for_integers(fast):
    # 2 threads and a large range: several chunks, each starting mid-row. Row sums (index
    # depends on i only), column sums (on j only), a masked total and a 3-d ndrange with an
    # offset, compared exactly with numpy.
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=fast, cpu_max_num_threads=2)
    n, m = 301, 997
    w = fs.field(fs.i32, shape=(n, m))
    rows = fs.field(fs.i32, shape=n)
    cols = fs.field(fs.i32, shape=m + 1)
    upper = fs.field(fs.i32, shape=())
    cube = fs.field(fs.i32, shape=(4, 5, 6))

    @fs.kernel
    def sums():
        for i, j in fs.ndrange(n, m):
            v = w[i, j]
            if i < j:
                upper[None] += v
                rows[i] += v
            cols[j + 1] -= v * 2

    @fs.kernel
    def offsets():
        for i, j, k in fs.ndrange((1, 4), 5, 6):
            cube[i, j, k] += i * 100 + j * 10 + k

    rng = np.random.default_rng(1)
    wn = rng.integers(-50, 50, size=(n, m)).astype(np.int32)
    w.from_numpy(wn)
    sums()
    offsets()
    mask = np.triu(np.ones((n, m), bool), 1)
    assert upper[None] == int(wn[mask].sum())
    assert rows.to_numpy().tolist() == (wn * mask).sum(1).tolist()
    assert cols.to_numpy().tolist() == [0] + (-2 * wn.sum(0)).tolist()
    ii, jj, kk = np.meshgrid(np.arange(4), np.arange(5), np.arange(6), indexing="ij")
    assert (cube.to_numpy() == np.where(ii >= 1, ii * 100 + jj * 10 + kk, 0)).all()


@pytest.mark.parametrize("width", [64, 10])
def test_loads_are_speculated_only_when_in_bounds(monkeypatch, width):
    # The ndrange may be wider than the field; the `if` keeps the load in bounds. Only when
    # every j of the range is inside the field may the load move before the branch.
    from fieldsim.codegen import llvm_nest
    seen = []
    real = llvm_nest.speculable_loads

    def spy(*a):
        out = real(*a)
        seen.extend(out)
        return out
    monkeypatch.setattr(llvm_nest, "speculable_loads", spy)
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=True)
    x = fs.field(fs.f32, shape=10)
    s = fs.field(fs.f32, shape=())

    @fs.kernel
    def guarded():
        for i, j in fs.ndrange(4, width):
            if j < 10:
                s[None] += x[j] * i

    x.from_numpy(np.arange(10, dtype=np.float32))
    guarded()
    assert s[None] == 45.0 * 6
    assert len(seen) == (0 if width > 10 else 1)


@pytest.mark.parametrize("fast", [True, False])
def test_pairwise_energy_gradient_matches_analytic(fast):
    # gravity's pattern: a masked pair loop summed into a scalar; its adjoint scatters to
    # x.grad[i] (a row accumulator) and x.grad[j] (a column accumulator)
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=fast, cpu_max_num_threads=2)
    n = 700
    x = fs.field(fs.f32, shape=n, needs_grad=True)
    u = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def energy():
        for i, j in fs.ndrange(n, n):
            if i < j:
                d = x[i] - x[j]
                u[None] += 1.0 / fs.sqrt(d * d + 0.01)

    pos = np.random.default_rng(0).random(n).astype(np.float32)
    x.from_numpy(pos)
    with fs.ad.Tape(loss=u):
        energy()
    p = pos.astype(np.float64)
    d = p[:, None] - p[None, :]
    s = d * d + 0.01
    mask = np.triu(np.ones((n, n), bool), 1)
    assert u[None] == pytest.approx((s[mask] ** -0.5).sum(), rel=2e-5)
    coef = np.where(mask | mask.T, -d * s ** -1.5, 0.0)  # d/dx_i of s_ij^-1/2, both orders
    expected = coef.sum(1)
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-4,
                               atol=1e-5 * np.abs(expected).max())


@pytest.mark.parametrize("fast", [True, False])
def test_masked_1d_reduction(monkeypatch, capfd, fast):
    # `if x[i] > 0: total += x[i]` over a 1-d field: the load is in bounds for every i, so
    # with fast-math the `if` becomes a select and the loop vectorizes
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=fast)
    n = 5000
    x = fs.field(fs.f32, shape=n)
    total = fs.field(fs.f32, shape=())

    @fs.kernel
    def positive_sum():
        for i in x:
            if x[i] > 0:
                total[None] += x[i]

    data = np.random.default_rng(3).standard_normal(n).astype(np.float32)
    x.from_numpy(data)
    text = _optimised_llvm(monkeypatch, capfd, positive_sum)
    assert (re.search(r"<(4|8|16) x float>", text) is not None) == fast
    assert total[None] == pytest.approx(float(data[data > 0].astype(np.float64).sum()), rel=1e-5)
