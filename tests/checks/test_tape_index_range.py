"""On a Tape, an index that surely runs and is out of its field's range is refused at the
launch, before the kernel runs (it would touch memory outside the field: a stencil reading
`p[i - 1]` at i = 0, a time step `x[t + 1]` past the last step, `x[t, 0]` on an axis of size
1). An access under an `if`, or skipped by `continue`, may be out of range on paper and is
not refused; in-range launches keep their gradients."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu, default_fp=fs.f64)


def test_a_stencil_reading_past_the_edge_is_refused_before_it_runs():
    n = 8
    p = fs.field(float, shape=(3, n), needs_grad=True, name="p")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.kernel
    def step(t: fs.i32):
        for i in range(n):
            p[t, i] = p[t - 1, i - 1] + p[t - 1, i]

    p.from_numpy(np.arange(3 * n, dtype=np.float64).reshape(3, n))
    before = p.to_numpy()
    with pytest.raises(fs.FieldsimIndexError, match=r"kernel 'step' \(t=1\) reads p .*-1\.\.6, "
                       r"outside 0\.\.7"), fs.ad.Tape(loss):
        step(1)
    np.testing.assert_array_equal(p.to_numpy(), before)  # nothing ran


def test_a_time_step_past_the_last_one_is_refused_and_earlier_ones_differentiate():
    steps = 4
    x = fs.field(float, shape=steps, needs_grad=True, name="x")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.kernel
    def advance(t: fs.i32):
        x[t + 1] = 1.5 * x[t] * x[t]

    @fs.kernel
    def total():
        loss[None] += x[steps - 1]

    x[0] = 0.7
    with fs.ad.Tape(loss):
        for t in range(steps - 1):
            advance(t)
        total()
    # x3 = 1.5 x2^2 = 1.5 (1.5 x1^2)^2 = 1.5^3 (1.5 x0^2)^4 ... d x3/d x0 = 8 * 1.5^7 * x0^7
    assert x.grad[0] == pytest.approx(8 * 1.5 ** 7 * 0.7 ** 7, rel=1e-12)
    with pytest.raises(fs.FieldsimIndexError, match=r"\(t=3\) stores to x with index 0 taking "
                       r"4\.\.4, outside 0\.\.3"), fs.ad.Tape(loss):
        for t in range(steps):
            advance(t)


def test_an_axis_of_size_one_indexed_by_the_time_step_is_refused():
    # `root.dense(l, T).dense(i, 1)` gives shape (1, T): `x[t, 0]` is out of range for t > 0
    x = fs.field(float, name="x")
    loss = fs.field(float, name="loss")
    fs.root.dense(fs.l, 16).dense(fs.i, 1).place(x)
    fs.root.place(loss)
    fs.root.lazy_grad()
    assert x.shape == (1, 16)

    @fs.kernel
    def advance(t: fs.i32):
        for i in range(1):
            x[t, i] = x[t - 1, i] + 1.0

    refused = pytest.raises(fs.FieldsimIndexError, match=r"stores to x with index 0 taking 1\.\.1")
    with refused, fs.ad.Tape(loss):
        advance(1)


def test_guarded_and_skipped_accesses_are_not_refused():
    n = 6
    p = fs.field(float, shape=n, needs_grad=True, name="p")
    flag = fs.field(fs.i32, shape=n, name="flag")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.kernel
    def guarded():
        for i in range(n):
            if i > 0:
                loss[None] += p[i - 1] * p[i]

    @fs.kernel
    def data_guarded():
        for i in range(n):
            if flag[i] == 1:  # flag[0] is 0: p[-1] is never read
                loss[None] += p[i - 1]

    @fs.kernel
    def skipped():
        for i in range(n):
            if i == n - 1:
                continue
            loss[None] += p[i + 1]

    p.from_numpy(np.linspace(0.5, 1.5, n))
    flag.from_numpy(np.array([0, 1, 1, 0, 1, 0], dtype=np.int32))
    with fs.ad.Tape(loss):
        guarded()
        data_guarded()
        skipped()
    v = p.to_numpy()
    want = np.zeros(n)
    want[:-1] += v[1:]
    want[1:] += v[:-1]  # d/dp of sum p[i-1] p[i]
    want[[0, 1, 3]] += 1.0  # p[i-1] where flag[i] == 1
    want[1:] += 1.0  # p[i+1] for i < n - 1
    np.testing.assert_allclose(p.grad.to_numpy(), want, rtol=1e-12)


def test_a_users_kernel_grad_is_refused_like_a_tape_launch():
    """`kernel.grad(...)` outside a Tape: the same refusal, before the adjoint runs (the forward
    launch itself is not checked, as in Taichi); in range, the gradient is the analytic one."""
    n = 6
    x = fs.field(float, shape=n, needs_grad=True, name="x")
    y = fs.field(float, shape=n, needs_grad=True, name="y")

    @fs.kernel
    def shift(d: fs.i32):
        for i in range(n - 1):
            y[i] = 3.0 * x[i + d]

    shift(0)
    y.grad.fill(1.0)
    with pytest.raises(fs.FieldsimIndexError, match=r"kernel 'shift' \(d=2\) reads x .*2\.\.6, "
                       r"outside 0\.\.5"):
        shift.grad(2)
    np.testing.assert_array_equal(x.grad.to_numpy(), 0)  # the adjoint did not run
    shift.grad(1)
    np.testing.assert_array_equal(x.grad.to_numpy(), [0, 3, 3, 3, 3, 3])


def test_a_validating_tape_refuses_it_too():
    n = 5
    p = fs.field(float, shape=n, needs_grad=True, name="p")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.kernel
    def edge():
        for i in range(n):
            loss[None] += p[i + 1]

    with pytest.raises(fs.FieldsimIndexError, match=r"reads p .*1\.\.5, outside 0\.\.4"), \
            fs.ad.Tape(loss, validation=True):
        edge()


def test_an_access_in_a_loop_that_runs_no_iteration_is_not_refused():
    # PhyFuzz's two-balls model pairs balls with `for j in range(0, i)` under a static `i`: at
    # i = 0 the loop is empty, and its index's inverted interval once read as -1..0 (refused as
    # outside the field, though nothing runs)
    x = fs.field(float, shape=2, needs_grad=True, name="x")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.kernel
    def pairs(t: fs.i32):
        for i in fs.static(range(2)):
            for j in range(0, i):
                loss[None] += x[j] * x[i] * t

    x[0], x[1] = 3.0, 2.0
    with fs.ad.Tape(loss):
        pairs(2)
    assert loss[None] == 12.0
    np.testing.assert_allclose(x.grad.to_numpy(), [2 * 2.0, 2 * 3.0])  # d(2 x0 x1)
    loss.grad[None] = 1.0
    x.grad.fill(0)
    pairs.grad(1)  # a user's kernel.grad is judged the same way
    np.testing.assert_allclose(x.grad.to_numpy(), [2.0, 3.0])


def test_a_loop_that_does_run_past_the_end_is_still_refused():
    x = fs.field(float, shape=2, needs_grad=True, name="x")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.kernel
    def over():
        for i in fs.static(range(2)):
            for j in range(i, 2):
                loss[None] += x[j + i]

    with pytest.raises(fs.FieldsimIndexError, match=r"reads x with index 0 taking 2\.\.2"), \
            fs.ad.Tape(loss):
        over()


def test_refused_grad_launch_is_caught_as_taichi_debug_bounds_error():
    # Taichi with debug=True raises a TaichiAssertionError (a RuntimeError) for this launch
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, 4, needs_grad=True)
    loss = fs.field(fs.f32, (), needs_grad=True)

    @fs.kernel
    def k(i: fs.i32):
        loss[None] += x[i] ** 2

    with pytest.raises(fs.TaichiAssertionError, match=r"reads x with index 0 taking 4\.\.4") as info:
        k.grad(4)
    assert isinstance(info.value, (IndexError)) and isinstance(info.value, RuntimeError)
