"""The CUDA backend against the CPU backend: same programs, same results.

Every test runs twice: on `emu` (the CUDA backend over a host emulation of the device, see
cuda_emu.py: always runs) and on `cuda` (a real device: marked `cuda`, skipped without one by
tests/conftest.py; `pytest -m cuda tests/cuda` runs only those). Results must equal the CPU's
within each corpus entry's tolerance; random numbers and integer results bitwise.
"""
import re

import numpy as np
import pytest
from cuda_corpus import CORPUS, run
from cuda_emu import EmuBackend, use_emulator
from cuda_support import ad_corpus, ad_gradients
from support.programs import cube_sum_through_torch

import fieldsim as fs
from fieldsim.codegen import cuda as C
from fieldsim.errors import ADStackOverflowError, FieldsimError

BACKENDS = ["emu", pytest.param("cuda", marks=pytest.mark.cuda)]


def start(backend, **init):
    """A fresh runtime on `backend` ("cpu", "emu" or "cuda")."""
    if backend == "emu":
        return use_emulator(fs, **init)
    return fs.init(arch=fs.cuda if backend == "cuda" else fs.cpu, **init)


def assert_same(ref: dict, got: dict, tol=(0.0, 0.0), what=""):
    assert ref.keys() == got.keys()
    for k, ref_value in ref.items():
        a, b = np.asarray(ref_value), np.asarray(got[k])
        assert a.shape == b.shape and a.dtype == b.dtype, (what, k, a.shape, b.shape, a.dtype, b.dtype)
        if tol == (0.0, 0.0):
            bad = ~((a == b) | (np.isnan(a) & np.isnan(b)) if a.dtype.kind == "f" else (a == b))
            assert not bad.any(), f"{what}/{k}: {int(bad.sum())} differ, first at " \
                f"{np.argwhere(bad)[0]}: cpu {a[bad][0]} vs {b[bad][0]}"
        else:
            np.testing.assert_allclose(b, a, rtol=tol[0], atol=tol[1], equal_nan=True,
                                       err_msg=f"{what}/{k}")


@pytest.fixture(params=BACKENDS)
def backend(request):
    yield request.param
    fs.init(arch=fs.cpu)


# ---- the corpus ----------------------------------------------------------------------------------
@pytest.mark.parametrize("entry", CORPUS, ids=lambda e: e.name)
def test_corpus(entry, backend):
    start("cpu", **entry.init)
    ref = run(entry.build(fs))
    start(backend, **entry.init)
    got = run(entry.build(fs))
    assert_same(ref, got, entry.tol, entry.name)


def test_random_stream_equals_cpu(backend):
    """fs.random is keyed by (seed, launch, loop index, draw): the GPU thread id plays no part."""
    def draw():
        x = fs.field(fs.f32, shape=5000, name="x")
        y = fs.field(fs.f64, shape=(40, 50), name="y")

        @fs.kernel
        def k():
            for i in x:
                x[i] = fs.random() + fs.random()
            for i, j in y:
                y[i, j] = fs.random(fs.f64)

        k()
        k()
        return {"x": x.to_numpy(), "y": y.to_numpy()}

    start("cpu", random_seed=7)
    ref = draw()
    start(backend, random_seed=7)
    assert_same(ref, draw(), what="random")
    start(backend, random_seed=8)
    assert not np.array_equal(ref["x"], draw()["x"])


# ---- Python-scope storage --------------------------------------------------------------------------
def _storage_ops():
    s = fs.field(fs.f32, shape=(), name="s")
    x = fs.field(fs.f64, shape=(3, 4), name="x")
    v = fs.Vector.field(3, fs.i32, shape=5, name="v")
    m = fs.Matrix.field(2, 2, fs.f32, shape=(2, 3), name="m")
    u = fs.field(fs.u8, shape=7, name="u")
    w = fs.field(fs.f32, shape=(3, 4), name="w")
    out = {}
    s[None] = 2.5
    out["s"] = np.float64(s[None])
    s.from_numpy(np.array(-0.75))  # a 0-d array (numpy's ascontiguousarray makes it 1-d)
    out["s0d"] = s.to_numpy()
    x.fill(-1.25)
    x[1, 2] = 7.0
    out["x1"] = x.to_numpy()
    out["x12"] = np.float64(x[1, 2])
    v.fill([1, 2, 3])
    v[3] = [7, 8, 9]
    out["v"] = v.to_numpy()
    out["v3"] = np.array(list(v[3]))
    m.from_numpy(np.arange(24, dtype=np.float32).reshape(2, 3, 2, 2))
    m[1, 1] = [[1.0, 2.0], [3.0, 4.0]]
    out["m"] = m.to_numpy()
    out["m02"] = np.array(m[0, 2].to_numpy())
    u.fill(200)
    u[6] = 3
    out["u"] = u.to_numpy()
    w.copy_from(x)
    out["w"] = w.to_numpy()
    w.fill(0.1)  # a 4-byte pattern that is not one repeated byte
    out["w2"] = w.to_numpy()
    x.fill(0.0)
    out["x0"] = x.to_numpy()
    return out


def test_python_scope_storage(backend):
    start("cpu")
    ref = _storage_ops()
    start(backend)
    assert_same(ref, _storage_ops(), what="storage")


def test_fields_of_an_earlier_init_are_dropped(backend):
    start(backend)
    x = fs.field(fs.f32, shape=4, name="x")
    x.fill(1.0)
    start(backend)
    with pytest.raises(RuntimeError, match="earlier"):
        x.to_numpy()
    y = fs.field(fs.f32, shape=4, name="y")
    assert (y.to_numpy() == 0).all()


# ---- errors from the device ----------------------------------------------------------------------
def test_debug_bounds_and_assert(backend):
    start(backend, debug=True)
    x = fs.field(fs.f32, shape=8, name="x")

    @fs.kernel
    def oob(j: fs.i32):
        for i in x:
            x[i + j] = 1.0

    @fs.kernel
    def check(limit: fs.f32):
        for i in x:
            assert x[i] < limit, "too large"

    oob(0)
    with pytest.raises(IndexError, match="out of range"):
        oob(3)
    check(2.0)
    with pytest.raises(Exception, match="too large"):
        check(0.5)
    oob(0)  # the runtime stays usable


def test_ad_stack_overflow_is_reported(backend):
    start(backend, default_fp=fs.f64, ad_stack_size=8)
    x = fs.field(float, shape=4, needs_grad=True, name="x")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.fill(0.5)

    @fs.kernel
    def overflowing():
        for i in x:
            s = x[i]
            j = 0
            while j < 100:
                s = fs.sin(s) * 0.9 + x[i] * 0.2
                j += 1
            loss[None] += s

    with pytest.raises(ADStackOverflowError), fs.ad.Tape(loss=loss):
        overflowing()


# ---- differentiation --------------------------------------------------------------------------------
AD = ad_corpus()


@pytest.mark.parametrize("fp", ["f64", "f32"])
@pytest.mark.parametrize("entry", AD, ids=lambda e: e.name)
def test_ad_corpus_gradients(entry, fp, backend):
    tol = (1e-9, 1e-11) if fp == "f64" else (2e-4, 2e-5)
    start("cpu", default_fp=getattr(fs, fp))
    loss_ref, ref = ad_gradients(entry)
    start(backend, default_fp=getattr(fs, fp))
    loss_got, got = ad_gradients(entry)
    np.testing.assert_allclose(loss_got, loss_ref, rtol=tol[0] * 10, atol=tol[1] * 10)
    assert_same(ref, got, tol, entry.name)


def test_kernel_grad_and_dynamic_stack(backend):
    """kernel.grad with a loop-carried local in a dynamic inner loop (an AD stack per thread)."""
    def go():
        n = 300
        x = fs.field(fs.f64, shape=n, needs_grad=True, name="x")
        y = fs.field(fs.f64, shape=n, needs_grad=True, name="y")

        @fs.kernel
        def k(steps: fs.i32):
            for i in x:
                s = x[i]
                for t in range(steps + i % 3):
                    s = fs.sin(s) + 0.5 * s
                y[i] = s

        x.from_numpy(np.linspace(-1, 1, n))
        k(20)
        y.grad.fill(1.0)
        k.grad(20)
        return {"y": y.to_numpy(), "gx": x.grad.to_numpy()}

    start("cpu", default_fp=fs.f64)
    ref = go()
    start(backend, default_fp=fs.f64)
    assert_same(ref, go(), (1e-12, 1e-12), "kernel.grad")


def test_vector_matrix_struct_and_tuple_returns(backend):
    start(backend)
    pair = fs.types.struct(n=fs.i32, v=fs.types.vector(2, fs.f64))

    @fs.kernel
    def vec(k: fs.u64) -> fs.types.vector(3, fs.u64):
        return fs.Vector([k, k // 2, 5])

    @fs.kernel
    def mat(s: fs.f32) -> fs.types.matrix(2, 3, fs.f64):
        return fs.Matrix([[1.0, 2.0, 0.0], [3.0, 4.0, -1.0]]) * s

    @fs.kernel
    def tup(a: fs.i32) -> (fs.i32, fs.f64, fs.types.vector(3, fs.i8)):
        return a + 1, a * 0.5, fs.Vector([a, -a, 2 * a])

    @fs.kernel
    def rec(a: fs.i32) -> pair:
        return pair(n=a, v=fs.Vector([a * 0.25, -1.5]))

    assert list(vec(2 ** 64 - 1)) == [2 ** 64 - 1, 2 ** 63 - 1, 5]
    assert np.array_equal(np.asarray(mat(2.0).to_numpy()), [[2.0, 4.0, 0.0], [6.0, 8.0, -2.0]])
    n, half, v = tup(7)
    assert (n, half, list(v)) == (8, 3.5, [7, -7, 14])
    r = rec(6)
    assert r.n == 6 and list(r.v) == [1.5, -1.5]
    assert vec(4)[1] == 2  # again: the status words are zeroed per launch


def test_print_and_assert_message_values(backend, capfd):
    start(backend, debug=True)
    x = fs.field(fs.i32, shape=4)

    @fs.kernel
    def show(a: fs.f64):
        for i in x:
            print("i =", i, "a*i =", a * i, fs.u8(200 + i))

    @fs.kernel
    def check():
        for i in x:
            assert x[i] < 3, "x[%d] = %d" % (i, x[i])  # noqa: UP031 - the % format is what is tested

    print("before", end=" ")
    show(0.5)
    out = capfd.readouterr().out
    assert out.startswith("before ")
    assert sorted(out[len("before "):].splitlines()) == [
        f"i = {i} a*i = {0.5 * i:.12f} {200 + i}" for i in range(4)]  # f64: 12 decimals, as Taichi
    x.from_numpy(np.array([0, 1, 2, 7], dtype=np.int32))
    with pytest.raises(FieldsimError, match=r"x\[3\] = 7"):
        check()


def test_ndarray_arguments(backend):
    """numpy arrays are copied to the device and back around each launch (in place for the
    user, Fortran order and read-only inputs too); fs.ndarray lives on the device, gradients
    through a Tape with numpy inputs beside it."""
    start(backend)

    @fs.kernel
    def axpy(a: fs.f32, x: fs.types.ndarray(), y: fs.types.ndarray()):
        for i, j in y:
            y[i, j] += a * x[i, j]

    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    x.flags.writeable = False
    y = np.asfortranarray(np.ones((2, 3), dtype=np.float32))
    axpy(2.0, x, y)
    assert np.array_equal(y, 1 + 2 * x) and y.flags.f_contiguous
    z = np.ones((2, 3), dtype=np.float32)
    axpy(3.0, z, z)  # one array, two arguments: one device copy, so it reads what it writes
    assert np.array_equal(z, np.full((2, 3), 4.0))

    @fs.kernel
    def weighted(w: fs.types.ndarray(), v: fs.types.ndarray(), out: fs.types.ndarray()):
        for i in v:
            out[None] += w[i] * v[i] ** 2

    w = np.array([1.0, -2.0, 0.5])
    v = fs.ndarray(fs.f64, shape=3, needs_grad=True)
    v.from_numpy(np.array([0.5, 1.5, -3.0]))
    out = fs.ndarray(fs.f64, shape=(), needs_grad=True)
    with fs.ad.Tape(loss=out):
        weighted(w, v, out)
    assert out[None] == pytest.approx(float((w * v.to_numpy() ** 2).sum()))
    assert np.allclose(v.grad.to_numpy(), 2 * w * v.to_numpy())  # d/dv of sum(w v^2)
    assert np.array_equal(w, [1.0, -2.0, 0.5])


def test_torch_copies_and_the_bridge_with_device_fields(backend):
    """to_torch/from_torch copy through device memory; fs.ad.torch_function's gradients reach
    a tensor through fields whose gradients live on the device."""
    torch = pytest.importorskip("torch")
    start(backend)
    prog = cube_sum_through_torch()
    f, x = prog.f, prog.x

    t = torch.linspace(0.5, 2.0, 4, dtype=torch.float64, requires_grad=True)
    out = f(t)
    assert float(out) == pytest.approx(float((t.detach() ** 3).sum()))
    assert np.array_equal(x.to_torch().numpy(), t.detach().numpy())
    out.backward()
    np.testing.assert_allclose(t.grad.numpy(), 3 * t.detach().numpy() ** 2, rtol=1e-12)


def test_launch_words_kept_between_launches(backend):
    """A program's launch words are written again only where they change: every argument at
    every launch, from several threads at once too (each launch its own words then)."""
    import threading
    start(backend)
    out = fs.field(fs.f64, shape=(8, 64))

    @fs.kernel
    def put(row: fs.i32, a: fs.f64, k: fs.u64):
        for j in range(64):
            out[row, j] = a * j + fs.cast(k % 1000, fs.f64)

    for row in range(4):
        put(row, 0.5 * row, 2 ** 64 - 1 - row)
    threads = [threading.Thread(target=lambda r=r: [put(r, 0.5 * r, 2 ** 64 - 1 - r) for _ in range(20)])
               for r in range(4, 8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    j = np.arange(64)
    want = np.array([0.5 * r * j + (2 ** 64 - 1 - r) % 1000 for r in range(8)])
    assert np.array_equal(out.to_numpy(), want)


def test_forward_mode(backend):
    def go():
        x = fs.field(fs.f32, shape=64, needs_dual=True, name="x")
        loss = fs.field(fs.f32, shape=(), needs_dual=True, name="loss")

        @fs.kernel
        def k():
            for i in x:
                loss[None] += fs.sin(x[i]) * x[i]

        x.from_numpy(np.linspace(0, 1, 64, dtype=np.float32))
        with fs.ad.FwdMode(loss=loss, param=x, seed=np.ones(64, np.float32)):
            k()
        return {"loss": loss.to_numpy(), "dual": loss.dual.to_numpy()}

    start("cpu")
    ref = go()
    start(backend)
    assert_same(ref, go(), (1e-5, 1e-5), "fwd")


# ---- launch geometry (emulator only: it records its launches) ----------------------------------
def test_launch_geometry():
    rt = use_emulator(fs, sm_count=2)
    drv = rt.device.drv
    x = fs.field(fs.f32, shape=100000, name="x")
    n = fs.field(fs.i32, shape=(), name="n")
    s = fs.field(fs.f32, shape=(), name="s")

    @fs.kernel
    def k():
        for i in x:
            x[i] = 1.0
        s[None] = 2.0
        fs.loop_config(block_dim=64)
        for i in range(n[None]):
            x[i] = 3.0
        for i in range(5):
            x[i] = 4.0

    n[None] = 10
    k()
    (_, g0, b0), (_, g1, b1), (_, g2, b2), (_, g3, b3) = drv.launches[-4:]
    assert (b0, g0) == (C.BLOCK_DIM, 2 * C.BLOCKS_PER_SM)  # capped: grid-stride covers the rest
    assert (g1, b1) == (1, 1)  # a serial task: one thread
    assert (b2, g2) == (64, 2 * C.BLOCKS_PER_SM)  # unknown trip count: a full grid of 64s
    assert (g3, b3) == (1, C.BLOCK_DIM)
    assert (x.to_numpy()[:12] == [4] * 5 + [3] * 5 + [1] * 2).all()


def test_scratch_is_bounded(monkeypatch):
    monkeypatch.setattr(C, "SCRATCH_LIMIT", 1 << 16)
    rt = use_emulator(fs, sm_count=4, default_fp=fs.f64, ad_stack_size=64)
    x = fs.field(float, shape=5000, needs_grad=True, name="x")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.fill(0.25)

    @fs.kernel
    def k():
        for i in x:
            s = x[i]
            j = 0
            while j < 10:
                s = s * 0.5 + x[i]
                j += 1
            loss[None] += s

    with fs.ad.Tape(loss=loss):
        k()
    assert rt.device.scratch.nbytes <= 1 << 16
    _, grid, block = rt.device.drv.launches[-1]
    assert grid * block < 5000
    g = x.grad.to_numpy()
    np.testing.assert_allclose(g, np.full(5000, g[0]))
    assert g[0] > 1.9


def test_emulator_is_the_cuda_backend():
    rt = use_emulator(fs)
    assert isinstance(rt.device, C.CudaBackend) and isinstance(rt.device, EmuBackend)
    fs.init(arch=fs.cpu)


def test_forced_arch_is_checked(monkeypatch):
    monkeypatch.setenv("FIELDSIM_CUDA_ARCH", "86")
    with pytest.raises(FieldsimError, match="FIELDSIM_CUDA_ARCH='86' is not a CUDA architecture"):
        use_emulator(fs)
    monkeypatch.setenv("FIELDSIM_CUDA_ARCH", "sm_75")
    assert use_emulator(fs).device.arch == "sm_75"
    fs.init(arch=fs.cpu)


def test_unknown_driver_name_warns(monkeypatch):
    class Fake:
        def close(self):
            pass

    monkeypatch.setattr(C, "_driver_state", {})
    monkeypatch.setattr(C, "_DRIVERS", {"pycuda": Fake, "cuda-python": Fake})
    monkeypatch.setenv("FIELDSIM_CUDA_DRIVER", "cuda_python")
    with pytest.warns(UserWarning, match="FIELDSIM_CUDA_DRIVER='cuda_python' is not one of"):
        assert isinstance(C.driver(), Fake)


# ---- 32-bit grid-stride counters (Target.narrow_counters) ------------------------------------------
def test_narrow_counters_run_every_index_once_with_negative_and_wide_bounds():
    """Constant bounds within [0, 2**30] count in 32 bits (a range from a negative start too:
    the frontend shifts it to start at 0), other loops in 64; each grid-strides several times
    here (32 blocks of 32)."""
    use_emulator(fs, sm_count=1)
    hits = fs.field(fs.i32, shape=20000)
    wide = fs.field(fs.i64, shape=10)

    @fs.kernel
    def k():
        fs.loop_config(block_dim=32)
        for i in range(-9000, 11000):  # narrow
            hits[i + 9000] += 1 + (i < 0)
        fs.loop_config(block_dim=32)
        for i in range(0, 5000):  # narrow
            hits[i] += 10
        for i in range((1 << 31) + 5, (1 << 31) + 15):  # i64 bounds: 64-bit counter
            wide[i - (1 << 31) - 5] = i

    k()
    want = np.ones(20000, dtype=np.int32) + (np.arange(20000) < 9000)
    want[:5000] += 10
    assert (hits.to_numpy() == want).all()
    assert (wide.to_numpy() == (1 << 31) + 5 + np.arange(10)).all()
    fs.init(arch=fs.cpu)


def test_narrow_counters_in_ptx():
    from fieldsim.codegen import ptx as P
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=1 << 20)

    @fs.kernel
    def small():
        for i in x:
            x[i] = 1.0

    @fs.kernel
    def by_argument(n: fs.i32):
        for i in range(n):  # bounds known only at launch: a 64-bit counter
            x[i] = 2.0

    narrow = P.emit_ptx(P.kernel_ir(small), "sm_90")
    assert re.search(r"setp\.lt\.u32\s+%p\d+, %r\d+, 1048576", narrow)
    assert "setp.lt.u64" not in narrow and "setp.lt.s64" not in narrow
    wide = P.emit_ptx(P.kernel_ir(by_argument, 5), "sm_90")
    assert re.search(r"setp\.\w+\.[su]64", wide)


def test_grids_stay_under_2_to_the_30_threads():
    rt = use_emulator(fs, sm_count=1 << 20)  # more SMs than any GPU: the thread cap binds
    x = fs.field(fs.f32, shape=10)

    @fs.kernel
    def k():
        for i in x:
            x[i] = 1.0

    k()
    task = rt.device.programs[-1].info.tasks[0]
    blocks, block = rt.device.geometry(task, 1 << 40)
    assert blocks * block <= C.MAX_GRID_THREADS and blocks * block > C.MAX_GRID_THREADS // 2
    fs.init(arch=fs.cpu)


def test_a_field_too_big_for_the_device_is_a_clear_error_and_the_runtime_lives_on(backend):
    """cuMemAlloc's CUDA_ERROR_OUT_OF_MEMORY (a RuntimeError from the driver binding until
    an H200 run showed it) is the MemoryError naming the field that the CPU gives."""
    start(backend)
    huge = fs.field(fs.f32, name="huge")
    with pytest.raises(MemoryError) as info:
        fs.root.dense(fs.ij, (1 << 24, 1 << 22)).place(huge)  # 256 TiB
    assert "'huge'" in str(info.value) and "test_cuda_run.py" in str(info.value)
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def fill():
        for i in x:
            x[i] = i * 2.0

    fill()
    assert x.to_numpy().tolist() == [0.0, 2.0, 4.0, 6.0]


def test_a_graph_checks_every_launchs_arrays_before_any_runs(backend):
    """On the CUDA backend a graph checked only scalars up front (binding a host array copies it
    to the device), so a later kernel's wrong-dtype array was refused after the first kernel
    had run; arrays are now checked without being copied."""
    start(backend)

    @fs.kernel
    def bump(a: fs.types.ndarray(dtype=fs.f32, ndim=1)):
        for i in a:
            a[i] += 1

    @fs.kernel
    def add(a: fs.types.ndarray(dtype=fs.f32, ndim=1), b: fs.types.ndarray(dtype=fs.f32, ndim=1)):
        for i in a:
            a[i] += b[i]

    sym_a = fs.graph.Arg(fs.graph.ArgKind.NDARRAY, "a", dtype=fs.f32, ndim=1)
    sym_b = fs.graph.Arg(fs.graph.ArgKind.NDARRAY, "b", dtype=None, ndim=1)
    builder = fs.graph.GraphBuilder()
    builder.dispatch(bump, sym_a)
    builder.dispatch(add, sym_a, sym_b)
    graph = builder.compile()
    a = fs.ndarray(fs.f32, shape=4)
    for b in (fs.ndarray(fs.f64, shape=4), np.zeros(4, np.float64)):
        with pytest.raises(fs.FieldsimTypeError, match="f64"):
            graph.run({"a": a, "b": b})
        assert not a.to_numpy().any()  # `bump` never ran
    graph.run({"a": a, "b": np.full(4, 2.0, np.float32)})
    assert a.to_numpy().tolist() == [3.0] * 4


class _FakeCu:
    """What `_CudaPythonDriver.check` asks of cuda-python: an error's name."""

    @staticmethod
    def cuGetErrorName(err):
        return 0, {2: b"CUDA_ERROR_OUT_OF_MEMORY", 700: b"CUDA_ERROR_ILLEGAL_ADDRESS",
                   1: b"CUDA_ERROR_INVALID_VALUE"}[int(err)]


def test_driver_errors_say_what_they_mean():
    """A fault inside a kernel (an illegal address) leaves CUDA's context unusable: every later
    call fails alike, which the raw driver error did not say; out of memory is a MemoryError
    (named by the field that asked, lang/field.py)."""
    drv = object.__new__(C._CudaPythonDriver)
    drv.cu = _FakeCu()
    with pytest.raises(fs.FieldsimRuntimeError, match="ILLEGAL_ADDRESS.*restart the process.*debug=True"):
        drv.check((700,))
    with pytest.raises(MemoryError):
        drv.check((2, None))
    with pytest.raises(RuntimeError, match="CUDA_ERROR_INVALID_VALUE") as info:
        drv.check((1,))
    assert not isinstance(info.value, fs.FieldsimError)
    assert drv.check((0, 5)) == 5


def test_pycuda_errors_after_a_kernel_fault_say_the_context_is_lost():
    import threading

    class LaunchError(Exception):  # pycuda.driver.LaunchError, as pycuda words it
        pass

    class FakePycuda:
        @staticmethod
        def memcpy_dtoh(arr, dptr):
            raise LaunchError("cuMemcpyDtoH failed: an illegal memory access was encountered")

        @staticmethod
        def memset_d8(dptr, value, nbytes):
            raise ValueError("some other error")

    drv = object.__new__(C._PycudaDriver)
    drv.drv, drv.threads = FakePycuda(), threading.local()
    drv.threads.current = True
    with pytest.raises(fs.FieldsimRuntimeError, match="illegal memory access.*restart the process"):
        drv.dtoh(np.zeros(1), 0)
    with pytest.raises(ValueError, match="some other error"):
        drv.memset8(0, 0, 1)


def test_pycuda_out_of_memory_is_a_memory_error():
    import threading

    class FakePycuda:
        class MemoryError(Exception):  # pycuda.driver.MemoryError: not Python's
            pass

        @classmethod
        def mem_alloc(cls, nbytes):
            raise cls.MemoryError("cuMemAlloc failed: out of memory")

    drv = object.__new__(C._PycudaDriver)
    drv.drv, drv.threads = FakePycuda(), threading.local()
    drv.threads.current = True
    with pytest.raises(MemoryError, match="could not allocate 4096 bytes"):
        drv.alloc(4096)
