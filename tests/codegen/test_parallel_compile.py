"""Compiling on several threads at once (codegen.llvm_build), a Tape's backward that makes its
adjoints together first (runtime.pipeline.compile_adjoints), and the chunk runner built on a
compile thread.

Checked: object files built on two threads at once are byte-identical to ones built one at a
time; the three LLVM entry points that do the work are called without llvmlite's global lock;
a Tape's adjoints all exist before its first replay and the gradients match analytic ones; a
kernel that breaks the access rules inside a `grad_replaced` unit is refused with the same
error as on one thread, and its adjoint is never built; a build that fails on a compile thread
is redone, and its error raised, by the replay; twelve adjoints built and loaded at once give
right gradients in several fresh runtimes; the chunk runner leaves no entry in the disk
cache."""
import threading

import numpy as np
import pytest
from support.programs import unit_that_overwrites

import fieldsim as fs
from fieldsim.codegen import cpu, llvm_build
from fieldsim.errors import AccessRuleError
from fieldsim.runtime import pipeline


def _compile_some(texts):
    """Compile a few kernels (a scatter, a nest, a reduction and an adjoint); `texts` (the
    llvm_texts fixture) then holds their LLVM IR as the CPU backend hands it to LLVM."""
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    n = 64
    x = fs.field(fs.f32, shape=n, needs_grad=True)
    grid = fs.field(fs.f32, shape=(16, 16), needs_grad=True)
    total = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def scatter():
        for i in x:
            grid[int(x[i] * 3) % 16, i % 16] += x[i] * x[i]

    @fs.kernel
    def smooth():
        for i, j in grid:
            if 0 < i < 15:
                grid[i, j] += 0.5 * x[j]

    @fs.kernel
    def reduce():
        for i, j in grid:
            total[None] += fs.sin(grid[i, j])

    x.from_numpy(np.linspace(0.0, 2.0, n, dtype=np.float32))
    scatter()
    smooth()
    reduce()
    total.grad[None] = 1.0
    reduce.grad()
    return list(texts)


def test_objects_built_on_two_threads_equal_serial_ones(llvm_texts):
    texts = _compile_some(llvm_texts)
    assert len(texts) >= 4
    machines = fs.lang.runtime.get().backend().machines
    serial = [llvm_build.build_object(t, machines) for t in texts]
    jobs = texts * 3  # each text built three times, on whichever thread takes it
    built = [None] * len(jobs)
    lock = threading.Lock()
    left = list(range(len(jobs)))

    def worker():
        while True:
            with lock:
                if not left:
                    return
                k = left.pop()
            built[k] = llvm_build.build_object(jobs[k], machines)
    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for k, obj in enumerate(built):
        assert obj == serial[k % len(texts)]


def test_the_working_entry_points_bypass_llvmlites_lock():
    from llvmlite.binding import ffi
    for name in ("LLVMPY_ParseAssembly", "LLVMPY_RunNewModulePassManager",
                 "LLVMPY_TargetMachineEmitToMemory"):
        wrapped = getattr(ffi.lib, name)
        raw = llvm_build._unlocked(name)
        assert raw is not wrapped and raw is wrapped._cfn  # the ctypes function itself


def test_bad_ir_is_a_clear_error_and_frees_what_it_made():
    fs.init(arch=fs.cpu, offline_cache=False)
    machines = fs.lang.runtime.get().backend().machines
    with pytest.raises(RuntimeError, match="LLVM IR parsing error"):
        llvm_build.build_object("define void @f( {", machines)
    assert llvm_build.build_object("define void @f() {\n  ret void\n}\n", machines)


def _three_kernel_tape(threads, monkeypatch):
    """x -> a -> b -> loss through three kernels on a Tape; returns (x.grad, adjoint states
    seen at the first replay)."""
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=threads, default_fp=fs.f64)
    n = 50
    x = fs.field(fs.f64, shape=n, needs_grad=True)
    a = fs.field(fs.f64, shape=n, needs_grad=True)
    b = fs.field(fs.f64, shape=n, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def square():
        for i in x:
            a[i] = x[i] * x[i]

    @fs.kernel
    def sine():
        for i in a:
            b[i] = fs.sin(a[i])

    @fs.kernel
    def total():
        for i in b:
            loss[None] += b[i]

    xs = np.linspace(-1.0, 1.0, n)
    x.from_numpy(xs)
    seen = []
    real = pipeline.Driver.replay_adjoint

    def spy(self, kernel, ck, values, rng_key=None):
        if not seen:
            seen.extend(c.adjoint is not None for k in (square, sine, total)
                        for c in k._cache.values())
        return real(self, kernel, ck, values, rng_key)
    monkeypatch.setattr(pipeline.Driver, "replay_adjoint", spy)
    with fs.ad.Tape(loss=loss):
        square()
        sine()
        total()
    return xs, x.grad.to_numpy(), seen


@pytest.mark.parametrize("threads", [1, 2])
def test_tape_adjoints_made_together_before_the_first_replay(threads, monkeypatch):
    xs, grad, seen = _three_kernel_tape(threads, monkeypatch)
    np.testing.assert_allclose(grad, 2 * xs * np.cos(xs * xs), rtol=1e-12, atol=1e-14)
    if threads == 2:
        assert seen == [True, True, True]  # compile_adjoints made all three first
    else:
        assert seen == [False, False, False]  # one thread: each replay makes its own


def _unit_with_a_bad_kernel(threads):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=threads)
    p = unit_that_overwrites()
    with pytest.raises(AccessRuleError) as err, fs.ad.Tape(loss=p.loss):
        p.step()
        p.total()
    return str(err.value), [c.adjoint for c in p.overwrite._cache.values()]


def test_a_refused_adjoint_is_reported_as_on_one_thread_and_never_built():
    message_1, adjoints_1 = _unit_with_a_bad_kernel(1)
    message_2, adjoints_2 = _unit_with_a_bad_kernel(2)
    assert message_2 == message_1
    assert "programs.py" in message_2  # where the kernel is, for the user
    assert adjoints_1 == adjoints_2 == [None]


def test_chunk_runner_is_built_off_the_launch_and_kept_out_of_the_cache(tmp_path, monkeypatch):
    from fieldsim.codegen import disk_cache
    fs.init(arch=fs.cpu, offline_cache=True, offline_cache_file_path=str(tmp_path),
            cpu_max_num_threads=2)
    monkeypatch.setattr(cpu, "SMALL_LAUNCH", 0)
    monkeypatch.setattr(cpu, "SMALL_WORK", 0)
    x = fs.field(fs.i32, shape=10_000)

    @fs.kernel
    def count():
        for i in x:
            x[i] += 1

    count()
    count()
    backend = fs.lang.runtime.get().backend()
    backend.runner_object.result()  # launches before it is built take the Python chunk loop
    count()
    assert backend.mailbox is not None
    np.testing.assert_array_equal(x.to_numpy(), 3)
    assert len(disk_cache.entries(str(tmp_path))) == 1  # the kernel's object only


def test_an_adjoint_that_fails_to_build_fails_in_the_replay_as_before(monkeypatch):
    """A build that fails on a compile thread makes nothing: the replay builds that adjoint
    again and raises its error; the other adjoints were made together and are kept."""
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    x = fs.field(fs.f32, shape=16, needs_grad=True)
    y = fs.field(fs.f32, shape=16, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def double():
        for i in x:
            y[i] = 2.0 * x[i]

    @fs.kernel
    def total():
        for i in y:
            loss[None] += y[i]

    real = cpu.CpuBackend._build

    def broken(self, text, symbol, info, rt):
        if info.name == "double.grad":
            raise RuntimeError("LLVM says no")
        return real(self, text, symbol, info, rt)
    monkeypatch.setattr(cpu.CpuBackend, "_build", broken)
    with pytest.raises(RuntimeError, match="LLVM says no"), fs.ad.Tape(loss=loss):
        double()
        total()
    (total_ck,) = total._cache.values()
    (double_ck,) = double._cache.values()
    assert total_ck.adjoint is not None and double_ck.adjoint is None
    monkeypatch.setattr(cpu.CpuBackend, "_build", real)
    with fs.ad.Tape(loss=loss):
        double()
        total()
    np.testing.assert_allclose(x.grad.to_numpy(), 2.0)


def _sine_term(m, x, loss):
    @fs.kernel
    def term():
        for i in x:
            loss[None] += fs.sin(m * x[i])
    return term


def test_many_adjoints_made_together_over_several_inits():
    """Twelve adjoints built and loaded at once, in three fresh runtimes: every gradient is
    right (d/dx sum_m sin(m x) = sum_m m cos(m x))."""
    n, kinds = 32, 12
    xs = np.linspace(-1.0, 1.0, n)
    for _ in range(3):
        fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2, default_fp=fs.f64)
        x = fs.field(fs.f64, shape=n, needs_grad=True)
        loss = fs.field(fs.f64, shape=(), needs_grad=True)
        x.from_numpy(xs)

        terms = [_sine_term(float(m), x, loss) for m in range(1, kinds + 1)]
        with fs.ad.Tape(loss=loss):
            for term in terms:
                term()
        assert all(c.adjoint is not None for t in terms for c in t._cache.values())
        expected = sum(m * np.cos(m * xs) for m in range(1, kinds + 1))
        np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-12, atol=1e-12)


def test_a_machine_is_lent_to_one_thread_at_a_time_and_reused():
    import llvmlite.binding as llvm
    fs.init(arch=fs.cpu, offline_cache=False)
    pool = llvm_build.MachinePool(llvm.get_process_triple(), llvm.get_host_cpu_name(),
                                  llvm.get_host_cpu_features().flatten())
    with pool.borrow() as a:
        with pool.borrow() as b:
            assert a is not b  # two builds at once: two machines
        with pool.borrow() as c:
            assert c is b  # b was free again
    with pool.borrow() as d:
        assert d is a  # the most recently returned first
    assert pool.made == 2


def test_the_first_kernel_compiles_on_the_warmed_up_machine():
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    backend = fs.lang.runtime.get().backend()
    backend.runner_object.result()  # the chunk runner built, LLVM warmed up: one machine
    assert backend.machines.made == 1
    y = fs.field(fs.f32, shape=8)

    @fs.kernel
    def fill():
        for i in y:
            y[i] = fs.sqrt(i * 1.0)

    fill()  # compiled on this (the main) thread
    np.testing.assert_allclose(y.to_numpy(), np.sqrt(np.arange(8)), rtol=1e-6)
    assert backend.machines.made == 1
