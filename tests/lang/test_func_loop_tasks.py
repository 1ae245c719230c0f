"""A loop at the top of a func inlined at a kernel's top level is an outermost, parallel loop,
as in Taichi (which refuses `break` there: "Cannot break in the outermost loop"). fieldsim ran
such loops serially, one thread for a whole `substep(): p2g(); grid_op(); g2p()` kernel; a
radix sort from GitHub written that way ran to the previous launch's sizes.

Values a func leaves across its loops (by-value parameters, `a + f()`, a non-tail return's
variable, locals) pass between the tasks (lang/cross_task.py): results are checked against
NumPy, gradients against analytic ones.
"""
import numpy as np
import pytest
from support.ir_kit import KB, compiled_ir, field

import fieldsim as fs
from fieldsim.ir.ir import ForInfo, Op
from fieldsim.lang import cross_task
from fieldsim.lang import types as T


def _tasks(ir):
    return [s for s in ir.body if s.op == Op.FOR and s.attr.parallel]


def test_func_loop_at_kernel_top_is_a_parallel_task(arch):
    fs.init(arch=arch)
    x = fs.field(fs.f32, 32)

    @fs.func
    def scale(n, k):
        for i in range(n):
            x[i] = i * k

    @fs.func
    def inner_only(n):
        s = 0.0
        for i in range(n):
            s += x[i]
        return s

    @fs.kernel
    def run(n: fs.i32) -> fs.f32:
        scale(n, 0.5)
        t = 0.0
        for j in range(2):  # a func called inside a loop keeps its loops inner
            t += inner_only(n)
        return t

    assert run(8) == 2 * sum(i * 0.5 for i in range(8))
    assert len(_tasks(compiled_ir(run, 8))) == 2


def test_values_cross_func_loops():
    fs.init(arch=fs.cpu, cpu_max_num_threads=2)
    n_max = 64
    x = fs.field(fs.f32, n_max)
    v = fs.Vector.field(2, fs.f32, n_max)
    y = fs.field(fs.f32, 8)

    @fs.func
    def total(n):
        s = 0.0
        for i in range(n):
            s += x[i]
        return s

    @fs.func
    def scaled_sum(n, k):
        s = 0.0
        for i in range(n):
            s += x[i] * k
        y[5] = n * 2 + k  # parameters read after the loop
        return s

    @fs.func
    def early(n):
        s = 0.0
        for i in range(n):
            s += x[i]
        if s > 100.0:  # a non-tail return: its variable crosses the loop
            return -1.0
        return s

    @fs.func
    def clobber(val):
        for i in range(4):
            x[i] = 1000.0  # the argument keeps the value it had at the call
        return val

    @fs.func
    def vsum(n):
        acc = fs.Vector([0.0, 0.0])
        for i in range(n):
            acc += v[i]
        return acc

    @fs.kernel
    def run(n: fs.i32):
        y[0] = y[7] + total(n)
        y[1] = total(n) + total(n // 2)
        y[2] = scaled_sum(n, 0.5)
        y[3] = early(n)
        y[4] = clobber(x[0])
        w = vsum(n)
        y[6] = w[0] - w[1]

    for n in (10, 40, 3):
        x0 = np.arange(n_max, dtype=np.float32) * 0.25
        x.from_numpy(x0)
        v.from_numpy(np.stack([x0, x0 * 0.5], 1))
        y.fill(0)
        y[7] = 2.0
        run(n)
        s, h = x0[:n].sum(dtype=np.float64), x0[:n // 2].sum(dtype=np.float64)
        want = [2.0 + s, s + h, 0.5 * s, -1.0 if s > 100 else s, x0[0], 2 * n + 0.5, 0.5 * s, 2.0]
        np.testing.assert_allclose(y.to_numpy(), want, rtol=1e-5)


def test_func_loop_that_breaks_or_returns_stays_serial():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.i32, 16)

    @fs.func
    def first_over(n, limit):
        for i in range(n):
            if x[i] > limit:
                return i
        return -1

    @fs.func
    def count_until(n, stop):
        c = 0
        for i in range(n):
            if x[i] == stop:
                break
            c += 1
        return c

    @fs.kernel
    def run(n: fs.i32) -> fs.types.vector(2, fs.i32):
        return fs.Vector([first_over(n, 9), count_until(n, 7)])

    x.from_numpy(np.arange(16, dtype=np.int32))
    assert list(run(16)) == [10, 7]
    assert list(run(5)) == [-1, 5]
    assert not _tasks(compiled_ir(run, 16))


def test_gradients_through_func_loops():
    fs.init(arch=fs.cpu)
    n_max = 16
    x = fs.field(fs.f32, n_max, needs_grad=True)
    loss = fs.field(fs.f32, (), needs_grad=True)

    @fs.func
    def squares(n):
        s = 0.0
        for i in range(n):
            s += x[i] * x[i]
        return s

    @fs.func
    def sines(n):
        for i in range(n):
            loss[None] += fs.sin(x[i])

    @fs.kernel
    def k_sines(n: fs.i32):
        sines(n)

    @fs.kernel
    def k_product(n: fs.i32):
        loss[None] = squares(n) * squares(n // 2)

    x0 = np.linspace(0.1, 1.5, n_max)
    x.from_numpy(x0.astype(np.float32))
    xf = x.to_numpy().astype(np.float64)
    with fs.ad.Tape(loss=loss):
        k_sines(10)
    want = np.zeros(n_max)
    want[:10] = np.cos(xf[:10])
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-5)
    with fs.ad.Tape(loss=loss):
        k_product(12)
    a, b = (xf[:12] ** 2).sum(), (xf[:6] ** 2).sum()
    want = np.zeros(n_max)
    want[:12] += 2 * xf[:12] * b
    want[:6] += 2 * xf[:6] * a
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-4)


class _Fe:
    kernel_name = "k"

    def __init__(self):
        self.hidden_fields = []


def test_spill_gives_up_on_a_crossing_local_array():
    """A local read as an array in two tasks cannot become a field: spill changes nothing and
    says so (the kernel is then built with func loops serial)."""
    b = field("b", shape=(4,), dtype=T.i32)
    kb = KB()
    with kb.into(kb.body):
        e0, e1 = kb.alloca(T.i32), kb.alloca(T.i32)
        kb.emit(Op.ARRAY_STORE, None, (e0, e1, kb.i(1), kb.i(5)))
    with kb.task_for(kb.i(0), kb.i(4), ForInfo(True)) as loop:
        kb.store(b, [loop], kb.emit(Op.ARRAY_LOAD, T.i32, (e0, e1, kb.i(1))))
    body = kb.kernel().body
    before = list(body)
    fe = _Fe()
    assert cross_task.spill(fe, body) is False
    assert body == before and not fe.hidden_fields


def test_spill_turns_a_crossing_local_into_a_zeroed_field():
    b = field("b", shape=(4,), dtype=T.i32)
    kb = KB()
    with kb.into(kb.body):
        var = kb.alloca(T.i32)
    with kb.task_for(kb.i(0), kb.i(4), ForInfo(True)) as loop:
        kb.store(b, [loop], kb.local_load(var))
    body = kb.kernel().body
    fe = _Fe()
    assert cross_task.spill(fe, body) is True
    (hidden,) = fe.hidden_fields
    assert [s.op for s in body[:2]] == [Op.CONST, Op.STORE] and body[1].attr is hidden
    assert all(s.op != Op.ALLOCA for s in body)


def test_tape_checks_a_func_like_the_kernel_top_level():
    """A func variable read and then rewritten across the func's loop is a kernel variable, as
    at the top level: on a Tape, rewritten linearly (`s = s / n`, an in-place linear update)
    it is differentiated (the mean's square: 2 mean / n per element); rewritten non-linearly
    (`s = fs.sqrt(s)`) the access checker refuses it at the func's line (Taichi refuses both
    kernels: mixed loops and statements)."""
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, 8, needs_grad=True)
    loss = fs.field(fs.f32, (), needs_grad=True)

    @fs.func
    def mean(n):
        s = 0.0
        for i in range(n):
            s += x[i]
        s = s / n
        return s

    @fs.func
    def root_of_sum(n):
        s = 0.0
        for i in range(n):
            s += x[i]
        s = fs.sqrt(s)
        return s

    @fs.kernel
    def run(n: fs.i32):
        loss[None] = mean(n) ** 2

    @fs.kernel
    def run_root(n: fs.i32):
        loss[None] = root_of_sum(n) * 3.0

    xs = np.arange(1, 9, dtype=np.float32)
    x.from_numpy(xs)
    run(8)  # forward only: never refused
    with fs.ad.Tape(loss=loss):
        run(8)
    assert loss[None] == pytest.approx(xs.mean() ** 2)
    assert np.allclose(x.grad.to_numpy(), 2 * xs.mean() / 8)
    with pytest.raises(fs.AccessRuleError) as e:
        with fs.ad.Tape(loss=loss):
            run_root(8)
    assert "root_of_sum" in str(e.value) and "test_func_loop_tasks.py" in str(e.value)


# Found by a second sweep (rigid bodies and cloth): the same rule, seen from top-level loops.
def _top_level_loops(kernel, *args):
    return [s.attr.parallel for s in compiled_ir(kernel, *args).body if s.op == Op.FOR]


def test_func_loops_at_the_top_level_are_parallel_tasks():
    fs.init(arch=fs.cpu, cpu_max_num_threads=2)
    n = 10000
    x = fs.field(fs.f32, n)
    y = fs.field(fs.f32, n)
    span = fs.field(fs.i32, 2)

    @fs.func
    def scaled_sum(lo, hi, scale):
        total = 0.0
        for i in range(lo, hi):
            y[i] = x[i] * scale
            total += x[i]
        return total * scale

    @fs.func
    def clear():
        y.fill(0)
        for i in x:
            x[i] = i % 7

    @fs.kernel
    def k(scale: fs.f32) -> fs.f32:
        clear()
        span[0] = 3
        span[1] = n - 5
        return scaled_sum(span[0], span[1] + 2, scale * 2)

    assert _top_level_loops(k, 1.5) == [True, True, True]
    got = k(1.5)
    xs = (np.arange(n) % 7).astype(np.float32)
    assert got == np.float32(xs[3:n - 3].sum() * 3.0)
    want = np.zeros(n, np.float32)
    want[3:n - 3] = xs[3:n - 3] * 3
    np.testing.assert_array_equal(y.to_numpy(), want)


def test_func_loops_stay_serial_where_taichi_cannot_offload_them():
    fs.init(arch=fs.cpu, cpu_max_num_threads=2)
    x = fs.field(fs.i32, 100)

    @fs.func
    def first_at_least(v):
        found = -1
        for i in range(100):
            if x[i] >= v:
                found = i
                break
        return found

    @fs.func
    def early(v):
        for i in range(100):
            if x[i] == v:
                return i
        return -1

    @fs.kernel
    def k(v: fs.i32) -> fs.i32:
        return first_at_least(v) * 1000 + early(v)

    @fs.kernel
    def nested(v: fs.i32) -> fs.i32:
        s = 0
        for j in range(3):
            s += first_at_least(v + j)
        return s

    x.from_numpy(np.arange(100, dtype=np.int32) * 2)
    assert _top_level_loops(k, 1) == []
    assert k(10) == 5 * 1000 + 5 and k(11) == 6 * 1000 - 1
    assert nested(10) == 5 + 6 + 6
