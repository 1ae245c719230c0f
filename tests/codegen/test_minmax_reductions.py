"""`ti.atomic_max`/`atomic_min` of a parallel loop into one element (a 0-D peak, a CFL
speed) are kept per worker and combined once at the end, in both float modes, like a sum:
one contended atomic per element per iteration ran 7-17x Taichi's time at two threads. A
min/max is exact in any order, so the results are the serial ones, NaNs skipped (maxnum)."""
import numpy as np
import pytest

import fieldsim as fs


def _data(n):
    v = np.random.default_rng(3).standard_normal(n).astype(np.float32) * 100
    v[::97] = np.nan
    return v


@pytest.mark.parametrize("fast", [False, True])
def test_float_and_int_extremes_match_numpy(fast):
    n = 20_011
    v = _data(n)
    fs.init(arch=fs.cpu, fast_math=fast, cpu_max_num_threads=2, offline_cache=False)
    x = fs.field(fs.f32, shape=n)
    fmx, fmn = fs.field(fs.f32, shape=()), fs.field(fs.f32, shape=())
    imx, imn = fs.field(fs.i32, shape=()), fs.field(fs.i32, shape=())
    umx, umn = fs.field(fs.u32, shape=()), fs.field(fs.u32, shape=())
    peaks = fs.field(fs.f32, shape=3)
    x.from_numpy(v)

    @fs.kernel
    def extremes():
        for i in x:
            fs.atomic_max(fmx[None], x[i])
            fs.atomic_min(fmn[None], x[i])
            if x[i] == x[i]:
                k = fs.cast(x[i], fs.i32)
                fs.atomic_max(imx[None], k)
                fs.atomic_min(imn[None], k)
                fs.atomic_max(umx[None], fs.cast(k + 1000, fs.u32))
                fs.atomic_min(umn[None], fs.cast(k + 1000, fs.u32))
            if x[i] > 0:  # a conditional max into an element of a constant index
                fs.atomic_max(peaks[2], x[i] * 2)

    fmx[None], fmn[None] = -1e30, 1e30
    imx[None], imn[None] = -(2 ** 31), 2 ** 31 - 1
    umx[None], umn[None] = 0, 2 ** 32 - 1
    peaks[2] = 5.0
    extremes()
    ok = v[~np.isnan(v)]
    k = ok.astype(np.int32)
    assert fmx[None] == np.nanmax(v) and fmn[None] == np.nanmin(v)
    assert imx[None] == k.max() and imn[None] == k.min()
    assert umx[None] == (k + 1000).max() and umn[None] == (k + 1000).min()
    assert peaks[2] == np.float32(ok.max() * 2)


def test_start_values_that_no_element_passes_stay():
    fs.init(arch=fs.cpu, fast_math=False, cpu_max_num_threads=2, offline_cache=False)
    x = fs.field(fs.f64, shape=1000)
    hi, lo = fs.field(fs.f64, shape=()), fs.field(fs.i64, shape=())
    x.from_numpy(np.linspace(-1, 1, 1000))

    @fs.kernel
    def k():
        for i in x:
            fs.atomic_max(hi[None], x[i])
            fs.atomic_min(lo[None], fs.cast(x[i] * 10, fs.i64))

    hi[None], lo[None] = 7.5, -2 ** 40
    k()
    assert hi[None] == 7.5 and lo[None] == -2 ** 40


def test_an_add_and_a_max_into_one_field_stay_atomics():
    fs.init(arch=fs.cpu, fast_math=True, cpu_max_num_threads=2, offline_cache=False)
    x = fs.field(fs.i32, shape=5000)
    acc = fs.field(fs.i32, shape=2)
    x.from_numpy(np.arange(5000, dtype=np.int32) % 71)

    @fs.kernel
    def k():
        for i in x:
            acc[0] += x[i]
            fs.atomic_max(acc[1], x[i])

    k()
    assert acc[0] == (np.arange(5000) % 71).sum() and acc[1] == 70


def test_the_loop_keeps_no_atomic(monkeypatch, capfd):
    fs.init(arch=fs.cpu, fast_math=False, cpu_max_num_threads=2, offline_cache=False)
    x = fs.field(fs.f32, shape=4096)
    peak = fs.field(fs.f32, shape=())

    @fs.kernel
    def k():
        for i in x:
            fs.atomic_max(peak[None], x[i])

    monkeypatch.setenv("FIELDSIM_PRINT_LLVM", "1")
    capfd.readouterr()
    k()
    text = capfd.readouterr().out
    # one atomic, after the loop: the worker's maximum combined into the element
    assert text.count("atomicrmw fmax") == 1, text
    assert "llvm.maxnum" in text


@pytest.mark.parametrize("fast", [False, True])
def test_a_conditional_max_over_a_2d_range(fast):
    # under fast math the `if` becomes predicated straight-line code (loopnest.if_convertible):
    # a masked-off lane combines the start value, which leaves the maximum as it is
    fs.init(arch=fs.cpu, fast_math=fast, cpu_max_num_threads=2, offline_cache=False)
    g = fs.field(fs.f32, shape=(67, 45))
    peak, low = fs.field(fs.f32, shape=()), fs.field(fs.i32, shape=())
    v = np.random.default_rng(5).random((67, 45)).astype(np.float32)
    g.from_numpy(v)

    @fs.kernel
    def k():
        for i, j in fs.ndrange((1, 66), (1, 44)):
            if g[i, j] < 0.5:
                fs.atomic_max(peak[None], g[i, j] - g[i - 1, j])
                fs.atomic_min(low[None], i * 100 - j)

    peak[None], low[None] = -5.0, 10 ** 6
    k()
    inner = v[1:66, 1:44]
    mask = inner < 0.5
    assert peak[None] == (inner - v[0:65, 1:44])[mask].max()
    ii, jj = np.meshgrid(np.arange(1, 66), np.arange(1, 44), indexing="ij")
    assert low[None] == (ii * 100 - jj)[mask].min()
