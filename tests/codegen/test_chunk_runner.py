"""Native chunk scheduling (fieldsim.codegen.chunk_runner): split launches without per-chunk
Python work take chunks from a mailbox in native code. Checked: every element of many
back-to-back launches is written exactly once (counts against NumPy), launches from two
Python threads at once (one takes the Python chunk loop) give exact results, the
launches went through the mailbox, and launches made while the runner is still being built
(on a compile thread from fs.init on) take the Python chunk loop instead of waiting."""
import threading
from concurrent.futures import Future

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
    _backend().runner_object.result()  # the runner is built: launches use the mailbox


def _backend():
    return fs.lang.runtime.get().backend()


def test_every_chunk_runs_once_over_many_launches(threaded):
    n = 10_007  # not a multiple of the chunk count
    hits = fs.field(fs.i32, shape=n, name="hits")
    where = fs.field(fs.i32, shape=n, name="where")

    @fs.kernel
    def count(k: fs.i32):
        for i in hits:
            hits[i] += 1  # each element by one iteration only: a double run shows
            where[i] = i * 3 + k

    for k in range(300):
        count(k)
    np.testing.assert_array_equal(hits.to_numpy(), np.full(n, 300, np.int32))
    np.testing.assert_array_equal(where.to_numpy(), np.arange(n, dtype=np.int32) * 3 + 299)
    mb = _backend().mailbox
    assert mb.words[0] >= 300  # the launches went through the mailbox (job numbers)


def test_launches_from_two_python_threads(threaded):
    n = 6000
    a = fs.field(fs.f32, shape=n, name="a")
    b = fs.field(fs.f32, shape=n, name="b")

    @fs.kernel
    def add_a():
        for i in a:
            a[i] += 1.0

    @fs.kernel
    def add_b():
        for i in b:
            b[i] += 2.0

    add_a(), add_b()  # compile both first
    errors = []

    def loop(fn):
        try:
            for _ in range(200):
                fn()
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)
    threads = [threading.Thread(target=loop, args=(f,)) for f in (add_a, add_b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    np.testing.assert_array_equal(a.to_numpy(), np.full(n, 201.0, np.float32))
    np.testing.assert_array_equal(b.to_numpy(), np.full(n, 402.0, np.float32))


def test_back_to_back_jobs_of_different_kernels_and_chunk_counts(threaded, monkeypatch):
    # a helper that sees a finished job late must not run the next job's function with words
    # half of the old job (fs_launch closes a job before posting the next one)
    from fieldsim.codegen import cpu
    small, large = 509, 20_011
    hits_s = fs.field(fs.i32, shape=small, name="hits_s")
    hits_l = fs.field(fs.i32, shape=large, name="hits_l")

    @fs.kernel
    def bump_small():
        for i in hits_s:
            hits_s[i] += 1

    @fs.kernel
    def bump_large():
        for i in hits_l:
            hits_l[i] += 1

    rounds = 1500
    for r in range(rounds):
        monkeypatch.setattr(cpu, "CHUNKS_PER_THREAD", 2 + r % 7)  # chunk counts change too
        bump_small()
        bump_large()
    np.testing.assert_array_equal(hits_s.to_numpy(), np.full(small, rounds, np.int32))
    np.testing.assert_array_equal(hits_l.to_numpy(), np.full(large, rounds, np.int32))


def test_launches_do_not_wait_for_the_runner(threaded):
    n = 10_007
    hits = fs.field(fs.i32, shape=n, name="hits")

    @fs.kernel
    def bump():
        for i in hits:
            hits[i] += 1

    be = _backend()
    built = be.runner_object
    be.runner_object = Future()  # a build still running
    for _ in range(50):
        bump()  # would wait forever if a launch waited for the build
    assert be.mailbox is None
    be.runner_object.set_result(built.result())  # the build finishes
    for _ in range(50):
        bump()
    assert be.mailbox is not None and be.mailbox.words[0] >= 50
    np.testing.assert_array_equal(hits.to_numpy(), np.full(n, 100, np.int32))


def _function(text, name):
    start = text.index(f"define void @{name}(")
    return text[start:text.index("\n}\n", start)]


def test_waits_yield_the_processor_on_posix_only():
    """A caller spinning for a descheduled helper's chunk, and an idle helper polling, hand
    their core over every SPINS_BEFORE_YIELD spins (an oversubscribed machine ran a 2-thread
    cloth step at half the speed of one thread); Windows has no sched_yield."""
    import llvmlite.binding as llvm

    from fieldsim.codegen import chunk_runner
    linux = chunk_runner.ir_text("x86_64-unknown-linux-gnu")
    for name in ("fs_launch", "fs_worker"):
        body = _function(linux, name)
        assert "call i32 @sched_yield()" in body and "llvm.x86.sse2.pause" in body
    assert "declare i32 @sched_yield()" in linux
    windows = chunk_runner.ir_text("x86_64-pc-windows-msvc")
    assert "sched_yield" not in windows
    for text in (linux, windows, chunk_runner.ir_text("aarch64-unknown-linux-gnu")):
        llvm.parse_assembly(text).verify()


def test_every_chunk_runs_once_when_waits_yield_at_once(monkeypatch):
    from fieldsim.codegen import chunk_runner, cpu
    monkeypatch.setattr(chunk_runner, "SPINS_BEFORE_YIELD", 1)  # before the runner is built
    fs.init(arch=fs.cpu, cpu_max_num_threads=2)
    monkeypatch.setattr(cpu, "SMALL_LAUNCH", 0)
    monkeypatch.setattr(cpu, "SMALL_WORK", 0)
    _backend().runner_object.result()
    hits = fs.field(fs.i32, shape=4099, name="hits")

    @fs.kernel
    def count():
        for i in hits:
            hits[i] += 1

    for _ in range(200):
        count()
    np.testing.assert_array_equal(hits.to_numpy(), np.full(4099, 200, np.int32))
    assert _backend().mailbox.words[0] >= 200
