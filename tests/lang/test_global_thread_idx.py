"""`fs.global_thread_idx()` and the layout axes `fs.il ... fs.jkl`, as Taichi 1.7.4's CPU backend."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.mark.parametrize("threads", [1, 2])
def test_thread_index_is_a_valid_per_thread_slot(threads):
    """On the CPU Taichi gives the worker thread's index: a program may size per-thread scratch
    by the thread count and index it without two running iterations sharing a slot."""
    fs.init(arch=fs.cpu, cpu_max_num_threads=threads)
    scratch = fs.field(fs.i32, shape=threads)
    seen = fs.field(fs.i32, shape=100_000)

    @fs.kernel
    def count():
        for i in seen:
            t = fs.global_thread_idx()
            seen[i] = t
            scratch[t] += 1  # a plain read-modify-write: safe only if no other thread has slot t

    count()
    ids = seen.to_numpy()
    assert ids.min() >= 0 and ids.max() < threads
    assert scratch.to_numpy().sum() == 100_000


def test_thread_index_in_nested_loops_and_with_one_thread_is_zero():
    fs.init(arch=fs.cpu, cpu_max_num_threads=1)
    x = fs.field(fs.i32, shape=256)

    @fs.kernel
    def k() -> fs.i32:
        total = 0
        for i in range(32):
            for j in range(8):
                x[fs.global_thread_idx()] += 1
                total += fs.global_thread_idx()
        return total

    assert k() == 0
    assert x.to_numpy().sum() == 256 and x[0] == 256


@pytest.mark.fieldsim_specific  # Taichi: a TaichiCompilationError wrapping a RuntimeError
def test_thread_index_outside_a_for_loop_is_refused_where_it_is_written():
    fs.init(arch=fs.cpu)

    @fs.kernel
    def in_while(n: fs.i32):
        i = 0
        while i < n:
            i += fs.global_thread_idx() + 1

    with pytest.raises(fs.FieldsimSyntaxError, match="only valid within loops") as info:
        in_while(2)
    assert "test_global_thread_idx.py" in str(info.value) and "in_while" in str(info.value)
    with pytest.raises(fs.FieldsimSyntaxError, match="inside a kernel") as info:
        fs.global_thread_idx()
    assert "test_global_thread_idx.py" in str(info.value)


@pytest.mark.parametrize("outer, inner", [("ijl", "k"), ("ikl", "j"), ("jkl", "i"),
                                          ("il", "jk"), ("jl", "ik"), ("kl", "ij")])
def test_three_and_two_axis_names_lay_out_like_axes(outer, inner):
    """`fs.ijl` is `fs.axes(0, 1, 3)`, ...: a struct-for visits the outer node's cells in
    row-major order, each with all of its inner block's cells."""
    fs.init(arch=fs.cpu, cpu_max_num_threads=1)
    outer_axes = ["ijkl".index(c) for c in outer]
    inner_axes = ["ijkl".index(c) for c in inner]
    f = fs.field(fs.i32)
    fs.root.dense(getattr(fs, outer), 2).dense(getattr(fs, inner), 3).place(f)
    counter = fs.field(fs.i32, shape=())

    @fs.kernel
    def visit():
        fs.loop_config(serialize=True)
        for I in fs.grouped(f):
            f[I] = counter[None]
            counter[None] += 1

    visit()
    expected = np.zeros([2 if a in outer_axes else 3 for a in range(4)], np.int32)
    for n, (ob, ic) in enumerate((ob, ic) for ob in np.ndindex(*[2] * len(outer))
                                 for ic in np.ndindex(*[3] * len(inner))):
        index = [0] * 4
        for a, v in list(zip(outer_axes, ob)) + list(zip(inner_axes, ic)):
            index[a] = v
        expected[tuple(index)] = n
    np.testing.assert_array_equal(f.to_numpy(), expected)
