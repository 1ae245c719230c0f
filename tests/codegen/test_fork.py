"""A process forked from one that uses fieldsim (multiprocessing's default on Linux) can
compile and launch kernels: the fork waits for the backend's start-up compile (chunk runner
and LLVM warm-up, which runs on a compile thread from fs.init on; a fork in the middle of it
left LLVM's locks held in the child, which then hung), and the child makes its own thread
pools (a copied pool whose thread was idle in the parent never runs a job in the child) and
judges its Ctrl-C handling afresh.

Checks, each child under a time limit: a fork right after fs.init, several times (the window
is the start-up job's ~20 ms); a fork inside a Tape whose kernels began their adjoints on the
compile threads (no caller waits for those jobs until the backward; without the wait it hung
one child in three); a fork after a Tape's backward compiled its adjoints on the compile
threads, with the child running a Tape of new kernels (the compile-thread path) and a
parallel launch, against NumPy; Ctrl-C (SIGINT) stops a runaway `while` kernel in a forked
child although the parent's Ctrl-C watcher thread did not come along."""
import multiprocessing as mp
import queue

import numpy as np
import pytest
from support.programs import square_then_sum

import fieldsim as fs

N = 20_000


def _program():
    p = square_then_sum(N)

    def gradient(values):
        p.x.from_numpy(values)
        with fs.ad.Tape(loss=p.loss):
            p.square()
            p.total()
        return p.x.grad.to_numpy()
    return gradient


def _in_child(fn, *args):
    """fn(*args) in a forked child: its result, or a failure if it did not finish in time."""
    ctx = mp.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=lambda: out.put(fn(*args)))
    child.start()
    try:
        result = out.get(timeout=60)  # before join: a child blocks on a full pipe until read
    except queue.Empty:
        child.kill()
        pytest.fail("the forked child hung")
    child.join(30)
    assert child.exitcode == 0
    return result


def test_fork_right_after_init():
    values = np.linspace(-1, 1, N, dtype=np.float32)
    for _ in range(4):
        fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
        gradient = _program()
        np.testing.assert_allclose(_in_child(gradient, values), 2 * values, rtol=1e-6)


def test_fork_after_the_compile_threads_ran():
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    values = np.linspace(0, 2, N, dtype=np.float32)
    np.testing.assert_allclose(_program()(values), 2 * values, rtol=1e-6)  # pools now idle

    def child_work():
        gradient = _program()  # new kernels: their adjoints compile on the child's threads
        return gradient(values)
    np.testing.assert_allclose(_in_child(child_work), 2 * values, rtol=1e-6)


def test_fork_while_a_tape_has_an_adjoint_begun():
    """A kernel compiled on a Tape begins its adjoint on a compile thread (no caller waits for
    it until the backward): a fork inside the Tape waits for that job, and both the child and
    the parent's backward are right."""
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    p = square_then_sum(N)
    values = np.linspace(-1, 1, N, dtype=np.float32)
    p.x.from_numpy(values)
    backend = fs.lang.runtime.get().backend()

    def child_work():  # inside the parent's Tape (copied): a new kernel, its adjoint begun
        y = fs.field(fs.f32, shape=N, needs_grad=True)

        @fs.kernel
        def triple():
            for i in y:
                y[i] = 3.0 * p.x[i]
        triple()
        return y.to_numpy()
    with fs.ad.Tape(loss=p.loss):
        p.square()
        p.total()
        begun = [ck.adjoint_job is not None for k in (p.square, p.total)
                 for ck in k._cache.values()]
        from_child = _in_child(child_work)
    assert begun == [True, True]
    assert not backend.jobs  # the fork waited for them
    np.testing.assert_allclose(from_child, 3 * values, rtol=1e-6)
    np.testing.assert_allclose(p.x.grad.to_numpy(), 2 * values, rtol=1e-6)


def test_ctrl_c_stops_a_runaway_loop_in_a_forked_child():
    # the parent installed the Ctrl-C watcher (a thread the child does not have)
    import os
    import signal
    import time
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    x = fs.field(fs.i32, shape=4)

    @fs.kernel
    def spin(limit: fs.i32):
        for i in range(4):
            k = 0
            while k != limit:  # never true for an odd limit
                k += 2
            x[i] = 1

    spin(0)
    ctx = mp.get_context("fork")
    out = ctx.Queue()

    def child():
        signal.signal(signal.SIGINT, signal.default_int_handler)
        out.put("ready")
        try:
            spin(-1)
            out.put("finished")
        except KeyboardInterrupt:
            out.put("interrupted")

    proc = ctx.Process(target=child)
    proc.start()
    try:
        assert out.get(timeout=60) == "ready"
        time.sleep(0.5)
        os.kill(proc.pid, signal.SIGINT)
        assert out.get(timeout=30) == "interrupted"
    except queue.Empty:
        pytest.fail("Ctrl-C did not stop the forked child's loop")
    finally:
        proc.kill()
        proc.join(10)
