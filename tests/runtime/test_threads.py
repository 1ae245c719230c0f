"""Launches from several Python threads: forward kernels, adjoints with AD stacks of different
sizes (each thread's scratch is its own), and Tapes (each belongs to the thread that opened it).
Results are compared with single-threaded runs and with analytic derivatives.
"""
import threading

import numpy as np
import pytest

import fieldsim as fs

N = 4096
THREADS = 4
ROUNDS = 12


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=2)
    yield


@fs.kernel
def chain(x: fs.template(), y: fs.template(), n: fs.i32):
    for i in x:
        v = x[i]
        for _ in range(n):  # a loop-carried value: the adjoint keeps it on an AD stack
            v = fs.sin(v) * 1.1
        y[i] = v


def _analytic(x0, n):
    v, d = x0.astype(np.float64), np.ones_like(x0, dtype=np.float64)
    for _ in range(n):
        d = d * 1.1 * np.cos(v)
        v = np.sin(v) * 1.1
    return v, d


def _fields(seed):
    x = fs.field(fs.f32, shape=N, needs_grad=True)
    y = fs.field(fs.f32, shape=N, needs_grad=True)
    x.from_numpy(np.random.default_rng(seed).uniform(-1, 1, N).astype(np.float32))
    return x, y


def _forward_and_adjoint(x, y, n):
    chain(x, y, n)
    x.grad.fill(0)
    y.grad.fill(1)
    chain.grad(x, y, n)
    return y.to_numpy(), x.grad.to_numpy()


def _run_threads(target, count):
    errors = []

    def guarded(t):
        try:
            target(t)
        except BaseException as e:  # noqa: BLE001 - reported by the test below
            errors.append(e)
    threads = [threading.Thread(target=guarded, args=(t,)) for t in range(count)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == []


def test_adjoints_from_threads_match_single_threaded_and_analytic():
    fields = [_fields(t) for t in range(THREADS)]
    depths = [[1 + (t * 7 + r * 5) % 23 for r in range(ROUNDS)] for t in range(THREADS)]
    want = {}
    for t, (x, y) in enumerate(fields):  # single-threaded reference, same launches
        for n in sorted(set(depths[t])):
            want[t, n] = _forward_and_adjoint(x, y, n)
    got = {}

    def worker(t):
        x, y = fields[t]
        for n in depths[t]:  # stack sizes rise and fall, so scratch buffers grow meanwhile
            got[t, n] = _forward_and_adjoint(x, y, n)
    _run_threads(worker, THREADS)
    for (t, n), (yv, g) in got.items():
        np.testing.assert_array_equal(yv, want[t, n][0])
        np.testing.assert_array_equal(g, want[t, n][1])
        v, d = _analytic(fields[t][0].to_numpy(), n)
        np.testing.assert_allclose(g, d, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(yv, v, rtol=1e-4, atol=1e-5)


def test_one_kernel_from_threads_with_different_arguments():
    x = fs.field(fs.f32, shape=(THREADS, N))

    @fs.kernel
    def fill_row(row: fs.i32, value: fs.f32):
        for j in range(N):
            x[row, j] = value + j

    def worker(t):
        for r in range(50):
            fill_row(t, t * 1000.0 + r)
    _run_threads(worker, THREADS)
    want = np.array([[t * 1000.0 + 49 + j for j in range(N)] for t in range(THREADS)])
    np.testing.assert_array_equal(x.to_numpy(), want.astype(np.float32))


def test_a_tape_records_only_its_own_threads_launches():
    x, y = _fields(0)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)
    other_x, other_y = _fields(1)

    @fs.kernel
    def total(y: fs.template(), loss: fs.template()):
        for i in y:
            loss[None] += y[i]

    started, finished = threading.Event(), threading.Event()

    def other_thread(_):
        started.wait()
        for _ in range(20):
            chain(other_x, other_y, 3)
            other_y.fill(0.5)  # a Python-scope write: recorded only on this thread's Tape
        finished.set()

    th = threading.Thread(target=other_thread, args=(0,))
    th.start()
    with fs.Tape(loss=loss) as tape:
        chain(x, y, 4)
        started.set()
        finished.wait()
        total(y, loss)
        assert len(tape.entries) == 2
    th.join()
    _, d = _analytic(x.to_numpy(), 4)
    np.testing.assert_allclose(x.grad.to_numpy(), d, rtol=1e-4, atol=1e-5)
    assert fs.lang.runtime.get().tape is None
