"""Fill loops (codegen/fill_loops.py): parallel loops that only zero whole fields become memsets.

Checks: clears of scalar, vector and matrix fields over 1-3 axes, of 1- to 8-byte types, on one and two
threads, zero every element and touch no other field, and reach LLVM as memsets with no loop;
loops that look alike but must not be one memset (a component left unwritten, -0.0, a non-zero
value, part of a field, an offset field, a transposed index) keep their exact meaning; a
clear's adjoint on a Tape gives the analytic gradient.
"""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.codegen.fill_loops import fill_plan


def _is_fill(text):
    return "llvm.memset" in text and "for.cond" not in text and "nest.cond" not in text


@pytest.mark.parametrize("threads", [1, 2])
def test_clears_become_memsets_and_zero_exactly_their_fields(llvm_texts, threads):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=threads)
    grid_v = fs.Vector.field(2, fs.f32, shape=(300, 200))
    grid_m = fs.field(fs.f32, shape=(300, 200))
    stress = fs.Matrix.field(3, 3, fs.f64, shape=(12, 10, 8))
    count = fs.field(fs.i32, shape=2_000_003)  # big enough for two chunks
    other = fs.field(fs.f32, shape=(300, 200))

    @fs.kernel
    def clear_grid():
        for i, j in grid_m:
            grid_v[i, j] = [0, 0]
            grid_m[i, j] = 0

    @fs.kernel
    def clear_stress():
        for I in fs.grouped(stress):
            stress[I] = fs.Matrix.zero(fs.f64, 3, 3)

    @fs.kernel
    def clear_count():
        for i in count:
            count[i] = 0

    for f in (grid_v, grid_m, stress, count, other):
        f.from_numpy(np.full(f.to_numpy().shape, 7, dtype=f.to_numpy().dtype))
    clear_grid()
    clear_stress()
    clear_count()
    for f in (grid_v, grid_m, stress, count):
        assert not f.to_numpy().any()
    assert (other.to_numpy() == 7).all()
    assert len(llvm_texts) == 3 and all(_is_fill(t) for t in llvm_texts)


def test_look_alike_loops_keep_their_meaning(llvm_texts):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n, m = 96, 64
    v = fs.Vector.field(2, fs.f32, shape=(n, m))
    s = fs.field(fs.f32, shape=(n, m))
    sq = fs.field(fs.f32, shape=(m, m))
    off = fs.field(fs.f32, shape=(n,), offset=(-8,))

    @fs.kernel
    def first_component():
        for i, j in s:
            v[i, j][0] = 0.0

    @fs.kernel
    def negative_zero():
        for i, j in s:
            s[i, j] = -0.0

    @fs.kernel
    def non_zero():
        for i, j in s:
            s[i, j] = 2.0

    @fs.kernel
    def top_rows():
        for i, j in fs.ndrange(n // 2, m):
            s[i, j] = 0.0

    @fs.kernel
    def transposed():
        for i, j in fs.ndrange(m // 2, m):
            sq[j, i] = 0.0

    @fs.kernel
    def offset_clear():
        for i in off:
            off[i] = 0.0

    def fill(f):
        f.from_numpy(np.ones(f.to_numpy().shape, np.float32))

    fill(v)
    first_component()
    assert (v.to_numpy()[..., 0] == 0).all() and (v.to_numpy()[..., 1] == 1).all()
    fill(s)
    negative_zero()
    assert (s.to_numpy() == 0).all() and np.signbit(s.to_numpy()).all()
    non_zero()
    assert (s.to_numpy() == 2).all()
    fill(s)
    top_rows()
    assert not s.to_numpy()[: n // 2].any() and (s.to_numpy()[n // 2:] == 1).all()
    fill(sq)
    transposed()
    assert not sq.to_numpy()[:, : m // 2].any() and (sq.to_numpy()[:, m // 2:] == 1).all()
    fill(off)
    offset_clear()
    assert not off.to_numpy().any()
    # none of the first five is a whole-field zero fill (the offset clear may or may not be)
    assert not any(_is_fill(t) for t in llvm_texts[:5])


def test_clear_adjoint_on_a_tape_gives_analytic_gradients():
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n = 4096
    x = fs.field(fs.f32, shape=n, needs_grad=True)
    g = fs.field(fs.f32, shape=n, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def clear():
        for i in g:
            g[i] = 0.0

    @fs.kernel
    def scatter():
        for i in x:
            g[i] += x[i] * x[i]

    @fs.kernel
    def total():
        for i in g:
            loss[None] += 3.0 * g[i]

    xs = np.linspace(-1, 1, n).astype(np.float32)
    x.from_numpy(xs)
    with fs.ad.Tape(loss=loss):
        clear()
        scatter()
        total()
    # loss = sum 3 x^2: d loss / dx = 6x
    np.testing.assert_allclose(x.grad.to_numpy(), 6 * xs, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(loss[None], 3 * np.sum(xs.astype(np.float64) ** 2), rtol=1e-4)


def test_fill_plan_refuses_a_loop_that_does_anything_else(monkeypatch):
    import fieldsim.codegen.llvm as lowering
    plans = []

    def spy(loop):
        plans.append(fill_plan(loop))
        return plans[-1]
    monkeypatch.setattr(lowering, "fill_plan", spy)
    fs.init(arch=fs.cpu, offline_cache=False)
    a = fs.field(fs.f32, shape=(16, 8))
    b = fs.field(fs.f32, shape=(16, 8))

    @fs.kernel
    def clear_and_copy():
        for i, j in a:
            a[i, j] = 0.0
            b[i, j] = a[i, j]

    @fs.kernel
    def clear_both():
        for i, j in a:
            a[i, j] = 0.0
            b[i, j] = 0.0

    clear_and_copy()
    clear_both()
    assert plans[0] is None
    assert [(f, k) for f, k in plans[1].fields] == [(a, 1), (b, 1)]


@pytest.mark.parametrize("dtype", [fs.u8, fs.i64, fs.f16, fs.u1])
def test_clear_of_narrow_and_wide_types(llvm_texts, dtype):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    f = fs.Vector.field(3, dtype, shape=(33, 17))
    keep = fs.field(dtype, shape=(33, 17))

    @fs.kernel
    def clear():
        for i, j in f:
            f[i, j] = fs.Vector([0, 0, 0], dt=dtype)

    ones = np.ones(f.to_numpy().shape).astype(f.to_numpy().dtype)
    f.from_numpy(ones)
    keep.from_numpy(np.ones(keep.to_numpy().shape).astype(keep.to_numpy().dtype))
    clear()
    assert not f.to_numpy().any() and keep.to_numpy().all()
    assert _is_fill(llvm_texts[-1])
