"""Exact mode adds `acc[0] += x[i]` in the loop's order, as Taichi 1.7.4 does on one thread.

A probe from a data-oriented rigid-body sweep gave `acc[0]` (a 1-D field, constant index)
an ulp or more from Taichi's with `fast_math=False` on one thread: fieldsim's task-wide
reduction summed the loop into a register from zero and added the total once, while Taichi's
thread-local pass only takes 0-D destinations (`s[None]`) and adds into `acc[0]` element by
element. Checks, on one thread with `fast_math=False`: a constant-index element of a 1-D field
gets the bits of float32 additions in loop order onto its start value; a 0-D field and a 0-D
vector field get a per-worker total added once (Taichi's thread-local sum, measured); an
integer sum is exact either way; with fast math the float sums still agree to rounding.
"""
import numpy as np

import fieldsim as fs

N = 100
START = np.float32(1000.3)


def _data():
    return (np.float32(0.1) + np.arange(N, dtype=np.float32) * np.float32(0.0371)).astype(np.float32)


def _in_order(x):
    s = START
    for v in x:
        s = np.float32(s + v)
    return s


def _total_once(x):
    t = np.float32(0)
    for v in x:
        t = np.float32(t + v)
    return np.float32(START + t)


def _run(fast_math):
    fs.init(arch=fs.cpu, cpu_max_num_threads=1, fast_math=fast_math, offline_cache=False)
    x = fs.field(fs.f32, N)
    acc = fs.field(fs.f32, 4)
    s0 = fs.field(fs.f32, ())
    v0 = fs.Vector.field(2, fs.f32, ())
    n = fs.field(fs.i32, 2)

    @fs.kernel
    def reduce():
        for i in x:
            acc[1] += x[i]
            s0[None] += x[i]
            v0[None] += fs.Vector([x[i], 1.0])
            n[0] += i

    x.from_numpy(_data())
    acc[1], s0[None], v0[None], n[0] = START, START, [START, 0], 7
    reduce()
    return acc[1], s0[None], v0[None][0], n[0]


def test_exact_mode_adds_into_an_element_in_loop_order():
    x = _data()
    assert _in_order(x) != _total_once(x)  # the data tells the two orders apart
    a, s, v, n = _run(False)
    assert np.float32(a) == _in_order(x)
    assert np.float32(s) == _total_once(x)
    assert np.float32(v) == _total_once(x)
    assert n == 7 + N * (N - 1) // 2


def test_fast_math_sums_agree_to_rounding():
    x = _data()
    a, s, v, n = _run(True)
    for got in (a, s, v):
        assert abs(got - float(_in_order(x))) < 1e-3
    assert n == 7 + N * (N - 1) // 2
