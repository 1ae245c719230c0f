"""A loop at the top level of a func called at the kernel's top level is a parallel task, as
in Taichi (an offloaded range_for there); fieldsim ran it serially on one thread (a loop over a
whole field in a `@ti.func` helper used one CPU thread, or one GPU thread). The func's locals
and arguments then live in hidden kernel variables, which every task reads. Expected values are
numpy's."""
import numpy as np
from support.ir_kit import compiled_ir

import fieldsim as fs
from fieldsim.ir.ir import Op


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
