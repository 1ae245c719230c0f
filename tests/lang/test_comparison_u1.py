"""A comparison or `not` in a kernel is a one-bit `u1`, as in Taichi 1.7.4: `~(a < b)` is the
logical not (it was -1/-2, so `if ~(x < 0):` always ran), `-(a < b)` is the same bit,
`(a < b) + (c < d)` and `(a < b) << 3` wrap to one bit, and mixing one with an `int` gives an
`int` (`(a < b) * 5`). The checks still read the comparisons of a guard."""
import numpy as np

import fieldsim as fs


def test_comparison_is_one_bit():
    fs.init(arch=fs.cpu)
    a = fs.field(fs.i32, shape=2)
    out = fs.field(fs.i32, shape=11)
    a.from_numpy(np.array([1, 3], np.int32))

    @fs.kernel
    def k():
        lt = a[0] < a[1]  # true
        gt = a[0] > a[1]  # false
        out[0] = ~lt
        out[1] = ~gt
        out[2] = -lt
        out[3] = lt + lt
        out[4] = lt * 5
        out[5] = gt - 1
        out[6] = lt << 3
        out[7] = (not a[0]) - 1
        out[8] = ~(not a[0])
        out[9] = (a[0] < a[1] and a[1] < 4) + 1
        out[10] = 0
        if ~(a[0] < a[1]):
            out[10] = 1

    k()
    # one bit: ~1 = 0, ~0 = 1, -1 = 1, 1 + 1 = 0, 1 << 3 = 0; with an int: ordinary arithmetic
    assert out.to_numpy().tolist() == [0, 1, 1, 0, 5, -1, 0, -1, 1, 2, 0]


def test_guarded_access_with_a_comparison_is_still_accepted_on_a_tape():
    fs.init(arch=fs.cpu)
    n = 4
    x = fs.field(fs.f64, shape=n, needs_grad=True)
    y = fs.field(fs.f64, shape=n, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    x.from_numpy(np.arange(1.0, n + 1))

    @fs.kernel
    def k():
        for i in range(n):
            y[i] += 0.5 * x[i]
            if i + 1 < n and i < 0:  # never true: no write to an element read below
                y[i + 1] += 0.5 * x[i]
            loss[None] += y[i]

    with fs.ad.Tape(loss):
        k()
    assert loss[None] == 0.5 * (1 + 2 + 3 + 4)
    np.testing.assert_array_equal(x.grad.to_numpy(), np.full(n, 0.5))


def test_constant_vector_comparisons_are_u1_entries_as_run_time_ones():
    """`ti.Vector([1, 2, 3]) > ti.Vector([0, 5, 1])` of constants gives u1 entries in Taichi,
    so their sum wraps (1 + 0 + 1 = 0 in one bit) exactly as the same comparison of field values."""
    fs.init(arch=fs.cpu)
    a = fs.Vector.field(3, fs.i32, shape=())
    b = fs.Vector.field(3, fs.i32, shape=())
    r = fs.field(fs.i32, shape=5)

    @fs.kernel
    def k():
        r[0] = (fs.Vector([1, 2, 3]) > fs.Vector([0, 5, 1])).sum()
        r[1] = (a[None] > b[None]).sum()
        c = fs.Vector([1, 2, 3]) > fs.Vector([0, 5, 1])
        r[2] = c[0] + c[2]
        r[3] = c[0] + c[1]  # 1 + 0: no wrap
        r[4] = fs.cast(c[0], fs.i32) + fs.cast(c[2], fs.i32)  # widened first: 2

    a[None] = [1, 2, 3]
    b[None] = [0, 5, 1]
    k()
    assert r.to_numpy().tolist() == [0, 0, 0, 1, 2]
