"""Scatters on CUDA: lanes of a warp adding into one element add once (`scatter_atomic`), and
field accesses use the global address space (`field_memory`).

A run of neighbouring lanes with the same address sums its values by shuffles and the run's
first lane issues the atomic; lanes with their own addresses, a warp not all present, and
atomics whose old value is used keep one atomic each. The PTX checks run anywhere (ptxas where
installed); the sums run on a device (marked `cuda`) and must equal numpy's `add.at` exactly:
integers, and floats whose partial sums are all exact.
"""
import re

import numpy as np
import pytest
from test_ptx import check_ptx

import fieldsim as fs
from fieldsim.codegen import ptx as P
from fieldsim.codegen.demote import discarded_atomics
from fieldsim.ir.ir import Op, walk

DTYPES = {"i32": (fs.i32, np.int32), "i64": (fs.i64, np.int64), "f32": (fs.f32, np.float32),
          "f64": (fs.f64, np.float64)}


def scatter_kernel(dtype, n, m, block_dim=None, subtract=False):
    idx = fs.field(fs.i32, shape=n)
    src = fs.field(dtype, shape=n)
    out = fs.field(dtype, shape=m)

    @fs.kernel
    def scatter():
        if fs.static(block_dim is not None):
            fs.loop_config(block_dim=block_dim)
        for i in src:
            if fs.static(subtract):
                out[idx[i]] -= src[i]
            else:
                out[idx[i]] += src[i]
    return idx, src, out, scatter


def test_only_atomics_whose_old_value_is_unused_are_discarded():
    fs.init(arch=fs.cpu)
    a = fs.field(fs.f32, shape=8)
    b = fs.field(fs.f32, shape=8)

    @fs.kernel
    def k():
        for i in a:
            a[i // 2] += 1.0          # old value unused: may be combined
            b[i] = fs.atomic_add(a[(i + 1) % 8], 2.0)  # old value read
            fs.atomic_max(a[0], 3.0)  # not an add

    ir = P.kernel_ir(k)
    task = next(s for s in ir.body if s.op == Op.FOR)
    atomics = [s for s in walk(task.body) if s.op == Op.ATOMIC]
    found = discarded_atomics(task)
    assert [id(s) in found for s in atomics] == [True, False, False]


@pytest.mark.parametrize("name", list(DTYPES))
def test_scatter_ptx_combines_runs_of_lanes(name):
    fs.init(arch=fs.cpu)
    _idx, _src, _out, scatter = scatter_kernel(DTYPES[name][0], 1000, 100)
    text = P.emit_ptx(P.kernel_ir(scatter), "sm_90")
    assert "activemask.b32" in text and "vote.sync.ballot.b32" in text
    # the neighbour's address (two halves) and five steps of the run's sum
    halves = 1 if name.endswith("32") else 2
    assert text.count("shfl.sync.down.b32") == 2 + 5 * halves
    assert re.search(r"(atom|red)\.global\.add", text), "the atomic is not in the global space"
    assert "ld.global" in text
    check_ptx(text, "sm_90", entries=1)


def test_used_old_value_keeps_one_atomic_per_lane():
    fs.init(arch=fs.cpu)
    a = fs.field(fs.i32, shape=8)
    b = fs.field(fs.i32, shape=64)

    @fs.kernel
    def k():
        for i in b:
            b[i] = fs.atomic_add(a[i % 8], 1)

    text = P.emit_ptx(P.kernel_ir(k), "sm_90")
    assert "vote.sync.ballot" not in text and "shfl.sync" not in text
    check_ptx(text, "sm_90", entries=1)


def index_patterns(n, m, rng):
    return {
        "sorted_runs": np.sort(rng.integers(0, m, n)),    # runs of equal neighbours
        "random": rng.integers(0, m, n),                  # mostly distinct neighbours
        "one_element": np.zeros(n, dtype=np.int64),       # the whole warp on one address
        "alternating": np.arange(n) % 2,                  # equal addresses, never neighbours
        "runs_of_3": (np.arange(n) // 3) % m,             # runs crossing warp boundaries
    }


@pytest.mark.cuda
@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("pattern", ["sorted_runs", "random", "one_element", "alternating",
                                     "runs_of_3"])
@pytest.mark.parametrize("n, block_dim", [(100_003, None), (5000, 48), (31, None)])
def test_scatter_sums_equal_numpy_exactly(name, pattern, n, block_dim):
    fs.init(arch=fs.cuda)
    dtype, np_dtype = DTYPES[name]
    m = 257
    idx, src, out, scatter = scatter_kernel(dtype, n, m, block_dim)
    where = index_patterns(n, m, np.random.default_rng(n)).get(pattern)
    # small integers: every partial sum is exact (f32 sums stay below 2^24)
    values = (np.arange(n) % 7 - 3).astype(np_dtype)
    start = (np.arange(m) % 5).astype(np_dtype)
    idx.from_numpy(where.astype(np.int32))
    src.from_numpy(values)
    out.from_numpy(start)
    scatter()
    expect = start.astype(np.float64 if name.startswith("f") else np.int64)
    np.add.at(expect, where, values)
    np.testing.assert_array_equal(out.to_numpy(), expect.astype(np_dtype))
    fs.init(arch=fs.cpu)


@pytest.mark.cuda
@pytest.mark.parametrize("name", ["i32", "f64"])
def test_scatter_subtract_equals_numpy(name):
    fs.init(arch=fs.cuda)
    dtype, np_dtype = DTYPES[name]
    n, m = 40_000, 97
    idx, src, out, scatter = scatter_kernel(dtype, n, m, subtract=True)
    where = np.sort(np.random.default_rng(1).integers(0, m, n))
    values = (np.arange(n) % 11 - 5).astype(np_dtype)
    idx.from_numpy(where.astype(np.int32))
    src.from_numpy(values)
    out.fill(0)
    scatter()
    expect = np.zeros(m, dtype=np.float64 if name.startswith("f") else np.int64)
    np.subtract.at(expect, where, values)
    np.testing.assert_array_equal(out.to_numpy(), expect.astype(np_dtype))
    fs.init(arch=fs.cpu)


# ---- vector scatters (codegen.vector_scatters, CudaTarget.vector_scatter) -------------------------
def vector_scatter_kernel(n_comp, n, m, dtype=fs.f32, gap=False):
    """`out[idx[i]] += src[i]` on an n_comp-vector field; `gap`: a scalar add between the
    component adds (the group is then not consecutive)."""
    idx = fs.field(fs.i32, shape=n)
    src = fs.Vector.field(n_comp, dtype, shape=n)
    out = fs.Vector.field(n_comp, dtype, shape=m)
    other = fs.field(dtype, shape=m)

    @fs.kernel
    def scatter():
        for i in src:
            j = idx[i]
            if fs.static(gap):
                out[j][0] += src[i][0]
                other[j] += 1.0
                out[j][1] += src[i][1]
            else:
                out[j] += src[i]
    return idx, src, out, scatter


def _groups(kernel):
    from fieldsim.codegen.vector_scatters import vector_scatters
    ir = P.kernel_ir(kernel)
    task = next(s for s in ir.body if s.op == Op.FOR)
    found = vector_scatters(task, discarded_atomics(task))
    return sorted(len(g) for g in found.groups.values()), len(found.absorbed)


@pytest.mark.parametrize("n_comp, dtype, gap, want", [
    (2, fs.f32, False, ([2], 1)),       # a 2D velocity: one v2 add
    (4, fs.f32, False, ([4], 3)),       # one v4 add
    (3, fs.f32, False, ([], 0)),        # 12-byte elements: an odd element's pair is misaligned
    (6, fs.f32, False, ([2, 2, 2], 3)),  # 24-byte elements: pairs, never 16-byte aligned fours
    (2, fs.f64, False, ([], 0)),        # no f64 vector reductions
    (2, fs.f32, True, ([], 0)),         # another add between the components
])
def test_vector_scatter_groups(n_comp, dtype, gap, want):
    fs.init(arch=fs.cpu)
    *_, scatter = vector_scatter_kernel(n_comp, 64, 8, dtype, gap)
    assert _groups(scatter) == want


def test_vector_scatter_ptx_is_one_v2_reduction_on_sm_90_only():
    fs.init(arch=fs.cpu)
    *_, scatter = vector_scatter_kernel(2, 1000, 100)
    ir = P.kernel_ir(scatter)
    text = P.emit_ptx(ir, "sm_90")
    assert text.count("red.relaxed.gpu.global.add.v2.f32") == 1  # one site, reached through phis
    assert "atom.global.add.f32" not in text and ".version 8.1" in text
    # one run detection (the address's two halves), five steps of each component's run sum
    assert text.count("shfl.sync.down.b32") == 2 + 5 * 2
    check_ptx(text, "sm_90", entries=1)
    old = P.emit_ptx(ir, "sm_80")  # no vector reductions before Hopper: one atomic each
    assert ".v2.f32" not in old and old.count("atom.global.add.f32") == 2
    check_ptx(old, "sm_80", entries=1)


@pytest.mark.parametrize("backend", ["emu", pytest.param("cuda", marks=pytest.mark.cuda)])
@pytest.mark.parametrize("n_comp", [2, 4, 6])
@pytest.mark.parametrize("pattern", ["sorted_runs", "random", "one_element", "runs_of_3"])
def test_vector_scatter_sums_equal_numpy_exactly(backend, n_comp, pattern):
    """Each component's sum exact (small integers in f32), whichever lanes share an element;
    the emulator adds a group one component at a time (no warps there)."""
    if backend == "emu":
        from cuda_emu import use_emulator
        use_emulator(fs)
        n = 3001
    else:
        fs.init(arch=fs.cuda)
        n = 100_003
    m = 131
    idx, src, out, scatter = vector_scatter_kernel(n_comp, n, m)
    where = index_patterns(n, m, np.random.default_rng(n)).get(pattern)
    values = ((np.arange(n * n_comp) % 7) - 3).reshape(n, n_comp).astype(np.float32)
    start = (np.arange(m * n_comp) % 5).reshape(m, n_comp).astype(np.float32)
    idx.from_numpy(where.astype(np.int32))
    src.from_numpy(values)
    out.from_numpy(start)
    scatter()
    expect = start.astype(np.float64)
    np.add.at(expect, where, values)
    np.testing.assert_array_equal(out.to_numpy(), expect.astype(np.float32))
    fs.init(arch=fs.cpu)


def test_vector_reductions_only_where_the_driver_loads_their_ptx():
    """Their inline assembly needs PTX 8.1 (CUDA 12.1): only modules that hold one declare it,
    and a backend over an older driver lowers without them."""
    fs.init(arch=fs.cpu)
    *_, scatter = vector_scatter_kernel(2, 1000, 100)
    plain_scatter = scatter_kernel(fs.f32, 1000, 100)[3]
    ir = P.kernel_ir(scatter)
    assert ".version 8.1" in P.emit_ptx(ir, "sm_90")
    assert ".version 8.1" not in P.emit_ptx(P.kernel_ir(plain_scatter), "sm_90")  # LLVM's own
    module, _, _ = P.lower_for_cuda(ir, "k", arch="sm_90", vector_reductions=False)
    assert ".v2.f32" not in str(module)
    assert P._ptx_for_inline_asm(".version 7.8\nred.relaxed.gpu.global.add.v4.f32 [x]") \
        == ".version 8.1\nred.relaxed.gpu.global.add.v4.f32 [x]"
    assert P._ptx_for_inline_asm(".version 8.7\nred.relaxed.gpu.global.add.v2.f32") \
        == ".version 8.7\nred.relaxed.gpu.global.add.v2.f32"
