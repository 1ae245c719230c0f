"""Bounds of an outermost loop computed from impure statements (lang.task_bounds): a recursive
real func's result, an atomic's old value, a random draw, a func's local variable. Each crosses
into the loop's task through a hidden 0-D field; pure bounds (constants, loads) do not.

Expected values come from plain Python or numpy recomputations.
"""
import numpy as np
from support.ir_kit import compiled_ir

import fieldsim as fs
from fieldsim.ir.ir import Op, walk

vec3 = fs.types.vector(3, fs.i32)


@fs.real_func
def tri(n: fs.i32) -> fs.i32:
    if n <= 0:
        return 0
    return tri(n - 1) + n


@fs.real_func
def halve(v: fs.f64, n: fs.i32) -> fs.f64:
    if n == 0:
        return v
    return halve(v * 0.5, n - 1)


@fs.real_func
def steps(n: fs.i32) -> vec3:
    if n == 0:
        return vec3(0, 0, 0)
    return steps(n - 1) + vec3(1, 2, 3)


def _tri(n):
    return n * (n + 1) // 2


def _hidden_stores(kernel, *args) -> int:
    ir = compiled_ir(kernel, *args)
    return sum(1 for s in walk(ir.body) if s.op == Op.STORE and s.field.role == "hidden")


def test_real_func_results_bound_later_loops():
    out = fs.field(fs.i32, shape=64)
    fout = fs.field(fs.f64, shape=8)

    @fs.kernel
    def run(n: fs.i32, x: fs.f64) -> fs.i32:
        for i in range(tri(n)):  # an int result as a bound
            out[i] = i + tri(2)
        for j in range(fs.cast(halve(x, 2), fs.i32)):  # a float result, cast
            fout[j] = halve(x, 3) + j
        for k in range(steps(n)[1], steps(n)[2]):  # vector entries as (begin, end)
            out[32 + k] = -k
        return tri(n + 1)  # a result at the top level, after the loops

    out.fill(0)
    fout.fill(0)
    n, x = 4, 20.0
    got = run(n, x)
    want = np.zeros(64, np.int32)
    want[:_tri(n)] = np.arange(_tri(n)) + _tri(2)
    want[32 + 2 * n:32 + 3 * n] = -np.arange(2 * n, 3 * n)
    assert np.array_equal(out.to_numpy(), want)
    fwant = np.zeros(8)
    fwant[:int(x / 4)] = x / 8 + np.arange(int(x / 4))
    assert np.array_equal(fout.to_numpy(), fwant)
    assert got == _tri(n + 1)


def test_real_func_results_inside_loops_and_in_kernel_variables():
    out = fs.field(fs.i32, shape=16)
    fout = fs.field(fs.f64, shape=16)
    vout = fs.Vector.field(3, fs.i32, shape=16)

    @fs.kernel
    def run(n: fs.i32):
        m = tri(n)  # a kernel variable: a hidden field already
        for i in range(m):
            out[i] = tri(i)
            fout[i] = halve(1.0 * i, i % 4)
            vout[i] = steps(i % 5)

    run(5)
    i = np.arange(16)
    assert np.array_equal(out.to_numpy(), np.where(i < 15, i * (i + 1) // 2, 0))
    assert np.array_equal(fout.to_numpy(), np.where(i < 15, i / 2.0 ** (i % 4), 0.0))
    want = np.outer(i % 5, [1, 2, 3])
    want[15:] = 0
    assert np.array_equal(vout.to_numpy(), want)


def test_impure_bounds_of_range_and_ndrange():
    c = fs.field(fs.i32, shape=())
    out = fs.field(fs.i32, shape=16)

    @fs.func
    def at_least_one(n):
        r = 0
        if n > 2:
            r = n
        else:
            r = 1
        return r

    @fs.kernel
    def atomic_bound():
        for i in range(fs.atomic_add(c[None], 1)):  # the value before the add
            out[i] += 1

    @fs.kernel
    def func_local_bound():
        for i in range(at_least_one(5)):
            out[i] += 10

    @fs.kernel
    def random_bound():
        for i in range(fs.cast(fs.random() * 0.0, fs.i32) + 2):
            out[i] += 100

    @fs.kernel
    def ndrange_bound():
        for i, j in fs.ndrange((fs.atomic_add(c[None], 0), 6), 2):
            out[i * 2 + j] += 1000

    out.fill(0)
    c[None] = 3
    atomic_bound()
    assert c[None] == 4
    func_local_bound()
    random_bound()
    ndrange_bound()
    want = np.zeros(16, np.int32)
    want[:3] += 1
    want[:5] += 10
    want[:2] += 100
    want[8:12] += 1000
    assert np.array_equal(out.to_numpy(), want)
    assert _hidden_stores(atomic_bound) == 1


def test_pure_bounds_need_no_hidden_field():
    n = fs.field(fs.i32, shape=())
    out = fs.field(fs.i32, shape=16)

    @fs.kernel
    def run(m: fs.i32):
        for i in range(n[None], m * 2):
            out[i] = i

    n[None] = 3
    out.fill(0)
    run(5)
    assert np.array_equal(out.to_numpy()[:10], [0, 0, 0, 3, 4, 5, 6, 7, 8, 9])
    assert _hidden_stores(run, 5) == 0
