"""One test per "Beyond Taichi's reverse mode" item of API.md.

Each is written so that a naive reverse mode, and Taichi 1.7 itself, fails it: under
FIELDSIM_AS_TAICHI=1 these tests are expected to FAIL (or are skipped where Taichi
segfaults, marked `taichi_crash`). The two exceptions that Taichi passes are marked as
guards in their docstrings. Gradients are checked in f64 against central differences
of the forward, or against exact values.
"""
import warnings

import numpy as np
import pytest

from ._env import AS_TAICHI, fs, init_fs
from .fd import assert_grad_close, check_tape_against_fd

pytestmark = pytest.mark.fs_init(fp="f64")

N = 4


def _fields(*names, n=N):
    return [fs.field(float, shape=n, needs_grad=True, name=name) for name in names]


def _loss():
    return fs.field(float, shape=(), needs_grad=True, name="loss")


# --------------------------------------------------------------- while, break, continue, tan, random


def test_while_loop_with_data_dependent_trip_count():
    x, loss = *_fields("x"), _loss()
    x.from_numpy(np.array([0.3, 0.55, 0.8, 1.1]))  # 8, 5, 4 and 3 trips, away from the exit test

    @fs.kernel
    def grow():
        for i in x:
            s = x[i]
            j = 0
            while s < 4.0:
                s = s * 1.25 + fs.sin(s) * x[i]
                j += 1
            loss[None] += s * s + j

    check_tape_against_fd(fs, {"x": x}, loss, grow)


def test_break_out_of_for_and_while_true():
    x, loss = *_fields("x"), _loss()
    x.from_numpy(np.array([0.3, 0.55, 0.8, 1.1]))  # the for loop breaks after 13, 8, 6, 4 trips

    @fs.kernel
    def broken():
        for i in x:
            s = x[i]
            for j in range(50):
                s = s * 1.1 + x[i] * 0.3
                if s > 3.0:
                    break
            t = s
            k = 0
            while True:
                t = t * 0.9 + fs.sin(x[i] * t) * 0.1
                k += 1
                if k >= 7:
                    break
            loss[None] += s * t

    check_tape_against_fd(fs, {"x": x}, loss, broken)


def test_continue_in_for_and_while():
    x, loss = *_fields("x"), _loss()
    x.from_numpy(np.array([0.3, 0.55, 0.8, 1.1]))

    @fs.kernel
    def skipping():
        for i in x:
            s = 0.0
            j = 0
            while j < 12:
                j += 1
                if j % 4 == 0:
                    continue
                s = s * 0.8 + x[i] * j * 0.1
            for k in range(8):
                if fs.sin(x[i] * k) < 0.0:  # data-dependent
                    continue
                s = s + fs.sin(x[i] * k) * s * 0.1
            loss[None] += s

    check_tape_against_fd(fs, {"x": x}, loss, skipping)


def test_tan():
    x, w, loss = *_fields("x", "w"), _loss()
    xs, ws = np.array([-1.0, -0.3, 0.4, 1.2]), np.array([0.5, 1.5, -0.7, 0.9])
    x.from_numpy(xs)
    w.from_numpy(ws)

    @fs.kernel
    def tangent():
        for i in x:
            loss[None] += fs.tan(x[i]) * w[i] + fs.tan(x[i] * w[i])

    grads = check_tape_against_fd(fs, {"x": x, "w": w}, loss, tangent)
    sec2 = lambda v: 1 / np.cos(v) ** 2
    assert_grad_close(grads["x"], sec2(xs) * ws + sec2(xs * ws) * ws, "f64", "x.grad exact")
    assert_grad_close(grads["w"], np.tan(xs) + sec2(xs * ws) * xs, "f64", "w.grad exact")


def test_random_is_replayed_exactly():
    # Three draws per thread inside a serial loop; the gradient needs exactly the numbers
    # the forward drew (kept in r for checking): d/dx (sum_k sin(x u_k))^2.
    x, loss = *_fields("x"), _loss()
    r = fs.field(float, shape=(N, 3), name="r")
    xs = np.array([0.3, -0.7, 1.1, 2.0])
    x.from_numpy(xs)

    @fs.kernel
    def noisy():
        for i in x:
            s = 0.0
            for k in range(3):
                u = fs.random(float)
                r[i, k] = u
                s += fs.sin(x[i] * u)
            loss[None] += s * s

    with fs.ad.Tape(loss=loss):
        noisy()
    u = r.to_numpy()
    assert np.all((u >= 0) & (u < 1)) and len(np.unique(u)) == u.size
    s = np.sum(np.sin(xs[:, None] * u), axis=1)
    assert loss[None] == pytest.approx(np.sum(s * s), rel=1e-12)
    expected = 2 * s * np.sum(u * np.cos(xs[:, None] * u), axis=1)
    assert_grad_close(x.grad.to_numpy(), expected, "f64", "x.grad vs the drawn numbers")


def test_unsupported_code_is_refused_at_the_tape_launch():
    # Reading the old value an atomic add returns cannot be replayed by an adjoint (it
    # depends on the order the threads ran in). Whatever fieldsim cannot differentiate must
    # be refused when the kernel is launched on the Tape, before it runs and before the rest
    # of the Tape body, with file:line, not at backward time (Taichi fails at backward).
    x, loss = *_fields("x"), _loss()
    acc = fs.field(float, shape=(), needs_grad=True, name="acc")
    x.fill(0.5)
    reached = []

    @fs.kernel
    def uses_old_value():
        for i in x:
            old = fs.atomic_add(acc[None], x[i])  # the refused line
            loss[None] += old * x[i]

    with pytest.raises(Exception) as info, fs.ad.Tape(loss=loss):
        uses_old_value()
        reached.append("after the launch")
    assert reached == []
    line = _line_of("old = fs.atomic_add(acc[None], x[i])  # the refused line")
    message = str(info.value)
    assert "test_beyond.py" in message and f"line {line}" in message, message


def _line_of(text):
    with open(__file__) as f:
        lines = [n for n, src in enumerate(f, 1) if text in src and "_line_of" not in src]
    assert len(lines) == 1
    return lines[0]


# --------------------------------------------------------------- the AD stack


@pytest.mark.parametrize(
    "stack",
    [
        pytest.param(None, id="default", marks=pytest.mark.taichi_crash),
        pytest.param(8, id="ad_stack_size=8", marks=pytest.mark.taichi_crash),
        pytest.param(4096, id="ad_stack_size=4096"),  # big enough for Taichi: validates the test
    ],
)
def test_dynamic_loops_size_the_stack_from_their_bounds(stack):
    # Trip counts known only at launch (500, and 20 x 25 nested), each carrying locals.
    # Taichi keeps a fixed stack (32 entries by default) and segfaults, or silently
    # returns wrong gradients (33 trips), unless ad_stack_size is raised by hand.
    # fieldsim sizes the stack of a range-bounded loop from its bounds at launch, so even
    # ad_stack_size=8 (which only governs loops without bounds, i.e. while) is fine.
    if stack is not None:
        init_fs("f64", ad_stack_size=stack)
    x, loss = *_fields("x"), _loss()
    x.from_numpy(np.array([0.3, 0.5, 0.7, 0.9]))

    @fs.kernel
    def long_loops(n: fs.i32, m: fs.i32, p: fs.i32):
        for i in x:
            s = x[i]
            t = 0.0
            for j in range(n):
                s = s * 0.995 + 0.01 * fs.sin(s * j * 0.01)
                t = t * 0.9 + s * s * 0.01
            for a in range(m):
                for b in range(p):
                    t = t + 0.001 * fs.cos(t + a * b * 0.001) * x[i]
            loss[None] += s + t

    check_tape_against_fd(fs, {"x": x}, loss, lambda: long_loops(500, 20, 25))


@pytest.mark.fs_init(fp="f64", ad_stack_size=8)
def test_ad_stack_overflow_is_a_clear_error():
    # a while loop has no bound to size the stack from: 100 trips carrying locals overflow
    # ad_stack_size=8. That must raise (naming the kernel and the stack), never crash or
    # return a wrong gradient, and leave the runtime usable.
    x, loss = *_fields("x"), _loss()
    x.fill(0.5)

    @fs.kernel
    def overflowing_while():
        for i in x:
            s = x[i]
            j = 0
            while j < 100:
                s = fs.sin(s) * 0.9 + x[i] * 0.2
                j += 1
            loss[None] += s

    with pytest.raises(RuntimeError) as info, fs.ad.Tape(loss=loss):
        overflowing_while()
    message = str(info.value)
    assert "overflowing_while" in message
    assert "stack" in message.lower()

    @fs.kernel
    def fine():
        for i in x:
            loss[None] += x[i] * x[i]

    with fs.ad.Tape(loss=loss):
        fine()
    np.testing.assert_allclose(x.grad.to_numpy(), np.full(N, 1.0))


# --------------------------------------------------------------- serialized loops, atomic max/min


def test_serialized_loop_carries_a_dependence_through_a_field():
    # y[i] = y[i-1] * a[i] + sin(x[i]) in a serialized top-level loop: the adjoint must
    # visit i in reverse order (Taichi runs it forwards and silently drops most of it)
    n = 8
    a, x = _fields("a", "x", n=n)
    y = fs.field(float, shape=n, needs_grad=True, name="y")
    loss = _loss()
    rng = np.random.default_rng(7)
    a.from_numpy(rng.uniform(0.5, 1.5, n))
    x.from_numpy(rng.uniform(-1.0, 1.0, n))

    @fs.kernel
    def first():
        y[0] = x[0]

    @fs.kernel
    def recur():
        fs.loop_config(serialize=True)
        for i in range(1, n):
            y[i] = y[i - 1] * a[i] + fs.sin(x[i])

    @fs.kernel
    def total():
        for i in y:
            loss[None] += y[i] * y[i]

    def run():
        first()
        recur()
        total()

    grads = check_tape_against_fd(fs, {"a": a, "x": x}, loss, run)
    assert np.all(grads["x"] != 0)


def test_random_in_a_serialized_loop_is_replayed_in_the_reversed_adjoint():
    """The adjoint runs a serialized loop from its end; each iteration draws from its own
    stream, so the replay sees the forward's numbers (the loop index keys the stream)."""
    n = 8
    a, x = _fields("a", "x", n=n)
    y = fs.field(float, shape=n, needs_grad=True, name="y")
    noise = fs.field(float, shape=n, name="noise")
    loss = _loss()
    rng = np.random.default_rng(11)
    a.from_numpy(rng.uniform(0.5, 1.0, n))
    x.from_numpy(rng.uniform(-1.0, 1.0, n))

    @fs.kernel
    def first():
        y[0] = x[0]

    @fs.kernel
    def recur():
        fs.loop_config(serialize=True)
        for i in range(1, n):
            u = fs.random(float)
            noise[i] = u
            y[i] = y[i - 1] * a[i] * (0.5 + u) + fs.sin(x[i] * u)

    @fs.kernel
    def total():
        for i in y:
            loss[None] += y[i] * y[i]

    with fs.ad.Tape(loss=loss):
        first()
        recur()
        total()
    u, av, xv = noise.to_numpy(), a.to_numpy(), x.to_numpy()
    assert len(set(u[1:])) == n - 1 and np.all((u[1:] > 0) & (u[1:] < 1))
    yv = np.zeros(n)  # the recurrence and its adjoint in float64 with the drawn numbers
    yv[0] = xv[0]
    for i in range(1, n):
        yv[i] = yv[i - 1] * av[i] * (0.5 + u[i]) + np.sin(xv[i] * u[i])
    assert loss[None] == pytest.approx(np.sum(yv * yv), rel=1e-12)
    gy, ga, gx = 2 * yv, np.zeros(n), np.zeros(n)
    for i in range(n - 1, 0, -1):
        ga[i] = gy[i] * yv[i - 1] * (0.5 + u[i])
        gx[i] = gy[i] * u[i] * np.cos(xv[i] * u[i])
        gy[i - 1] += gy[i] * av[i] * (0.5 + u[i])
    gx[0] = gy[0]
    assert_grad_close(a.grad.to_numpy(), ga, "f64", "a.grad vs the drawn numbers")
    assert_grad_close(x.grad.to_numpy(), gx, "f64", "x.grad vs the drawn numbers")


def test_atomic_max_and_min_have_winner_only_adjoints():
    x = fs.field(float, shape=6, needs_grad=True, name="x")
    hi = fs.field(float, shape=(), needs_grad=True, name="hi")
    lo = fs.field(float, shape=(), needs_grad=True, name="lo")
    loss = _loss()
    x.from_numpy(np.array([0.4, -0.3, 1.7, 0.9, -1.2, 0.1]))

    @fs.kernel
    def extremes():
        for i in x:
            fs.atomic_max(hi[None], x[i] * 2.0)
            fs.atomic_min(lo[None], x[i])

    @fs.kernel
    def combine():
        loss[None] = 3.0 * hi[None] + lo[None]

    def reset():
        hi[None] = -100.0
        lo[None] = 100.0

    def run():
        extremes()
        combine()

    grads = check_tape_against_fd(fs, {"x": x}, loss, run, reset=reset)
    np.testing.assert_allclose(grads["x"], [0, 0, 6.0, 0, 1.0, 0], atol=1e-9)


def test_atomic_max_old_value_loses_its_gradient_where_a_new_value_wins():
    """m = max(m, x) per element: where x wins, m's old value no longer reaches the loss."""
    m = fs.field(float, shape=3, needs_grad=True, name="m")
    x = fs.field(float, shape=3, needs_grad=True, name="x")
    loss = _loss()

    @fs.kernel
    def raise_to():
        for i in x:
            fs.atomic_max(m[i], x[i])

    @fs.kernel
    def total():
        for i in m:
            loss[None] += (i + 1.0) * m[i]

    def reset():
        m.from_numpy(np.array([1.5, 1.5, -0.5]))

    def run():
        raise_to()
        total()

    x.from_numpy(np.array([1.0, 2.0, 0.25]))
    reset()
    with fs.ad.Tape(loss=loss):
        run()
    np.testing.assert_allclose(m.grad.to_numpy(), [1.0, 0.0, 0.0], atol=1e-12)
    np.testing.assert_allclose(x.grad.to_numpy(), [0.0, 2.0, 3.0], atol=1e-12)
    grads = check_tape_against_fd(fs, {"x": x}, loss, run, reset=reset)
    np.testing.assert_allclose(grads["x"], [0.0, 2.0, 3.0], atol=1e-9)


# --------------------------------------------------------------- fields without needs_grad


def test_field_without_needs_grad_mid_chain_is_reported():
    x, loss = *_fields("x"), _loss()
    mid = fs.field(float, shape=N, name="mid")  # no needs_grad: the chain x -> mid -> loss breaks
    x.fill(0.5)

    @fs.kernel
    def to_mid():
        for i in x:
            mid[i] = x[i] * 2.0

    @fs.kernel
    def from_mid():
        for i in mid:
            loss[None] += mid[i] * mid[i]

    def differentiate():
        with fs.ad.Tape(loss=loss):
            to_mid()
            from_mid()

    with pytest.warns(UserWarning, match="mid"):
        differentiate()


def test_leaf_fields_without_needs_grad_are_not_reported():
    """Guard (Taichi passes it too): constant inputs and index fields are fine."""
    x, loss = *_fields("x"), _loss()
    coef = fs.field(float, shape=N, name="coef")
    where = fs.field(fs.i32, shape=N, name="where")
    x.fill(0.5)
    coef.fill(3.0)
    where.from_numpy(np.array([3, 2, 1, 0], dtype=np.int32))

    @fs.kernel
    def weighted():
        for i in x:
            loss[None] += coef[i] * x[where[i]] ** 2

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with fs.ad.Tape(loss=loss):
            weighted()
    noise = [w for w in caught if "coef" in str(w.message) or "where" in str(w.message)]
    assert not noise, [str(w.message) for w in noise]
    np.testing.assert_allclose(x.grad.to_numpy(), np.full(N, 3.0))


# --------------------------------------------------------------- Tape life cycle


def test_tape_whose_body_raised_runs_no_backward():
    x, loss = *_fields("x"), _loss()
    x.fill(2.0)
    adjoint_launches = []

    @fs.kernel
    def square():
        for i in x:
            loss[None] += x[i] * x[i]

    @fs.ad.grad_replaced
    def forward():
        square()

    @fs.ad.grad_for(forward)
    def backward():
        adjoint_launches.append("square")
        square.grad()

    with pytest.raises(ValueError, match="the body failed"), fs.ad.Tape(loss=loss):
        forward()
        raise ValueError("the body failed")
    assert adjoint_launches == []
    np.testing.assert_array_equal(x.grad.to_numpy(), np.zeros(N))

    # the runtime is not left recording: a later Tape works normally
    with fs.ad.Tape(loss=loss):
        forward()
    assert adjoint_launches == ["square"]
    np.testing.assert_allclose(x.grad.to_numpy(), np.full(N, 4.0))


def test_kernel_mixing_parallel_loops_and_top_level_statements():
    x, y, loss = *_fields("x", "y"), _loss()
    s = fs.field(float, shape=(), needs_grad=True, name="s")
    x.from_numpy(np.array([0.3, -0.8, 1.2, 0.5]))

    @fs.kernel
    def mixed():
        s[None] = fs.sin(x[0]) * 2.0  # top level, before the loops
        c = x[1] * x[1]  # a top-level local read by the loop
        for i in x:
            y[i] = s[None] * x[i] + c
        loss[None] += c * x[2]  # top level, between the loops
        for i in y:
            loss[None] += y[i] * y[i]
        loss[None] += fs.exp(x[3])  # top level, after them

    check_tape_against_fd(fs, {"x": x}, loss, mixed)


def test_tape_without_loss_backward_grads_and_zero():
    # Warp-style: record y = A x (and a loss) once, then pull one-hot seeds through y:
    # row r of the Jacobian dy/dx is A[r], and dy_r/dA is x placed in row r.
    m, k = 3, 4
    A = fs.field(float, shape=(m, k), needs_grad=True, name="A")
    x = fs.field(float, shape=k, needs_grad=True, name="x")
    y = fs.field(float, shape=m, needs_grad=True, name="y")
    loss = _loss()
    rng = np.random.default_rng(3)
    As, xs = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, k)
    A.from_numpy(As)
    x.from_numpy(xs)
    loss[None] = 0.0  # a Tape without loss does not reset anything

    @fs.kernel
    def matvec():
        for i in y:
            acc = 0.0
            for j in range(k):
                acc += A[i, j] * x[j]
            y[i] = acc

    @fs.kernel
    def energy():
        for i in y:
            loss[None] += y[i] * y[i]

    with fs.ad.Tape() as tape:
        matvec()
        energy()
    ys = As @ xs
    np.testing.assert_allclose(y.to_numpy(), ys, rtol=1e-12)

    tape.backward(loss)
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * As.T @ ys, rtol=1e-12)
    np.testing.assert_allclose(A.grad.to_numpy(), 2 * np.outer(ys, xs), rtol=1e-12)
    tape.zero()
    for f in (A, x, y, loss):
        assert not np.any(f.grad.to_numpy()), f"{f.grad} after tape.zero()"

    for r in range(m):
        seed = np.zeros(m)
        seed[r] = 1.0
        tape.backward(grads={y: seed})
        np.testing.assert_allclose(x.grad.to_numpy(), As[r], rtol=1e-12)
        expected_A = np.zeros((m, k))
        expected_A[r] = xs
        np.testing.assert_allclose(A.grad.to_numpy(), expected_A, rtol=1e-12)
        tape.zero()
        assert not np.any(x.grad.to_numpy())


# --------------------------------------------------------------- Python-scope writes on the Tape
#
# First principles: the Tape differentiates the loss with respect to the state the fields
# held when the Tape was entered. A write made inside the Tape, from a kernel or from
# Python scope (x[i] = v, x.fill, x.from_numpy), replaces the element's value with a
# constant: nothing recorded before it can reach the loss through that element any more.
# Its adjoint therefore consumes (zeroes) the element's gradient, exactly as a kernel's
# plain store does, and earlier kernels that wrote or read it get nothing back through it.


def _square_into_y():
    x, y, loss = *_fields("x", "y"), _loss()
    x.from_numpy(np.array([0.5, 1.0, 1.5, 2.0]))

    @fs.kernel
    def square():
        for i in x:
            y[i] = x[i] * x[i]

    @fs.kernel
    def weigh():
        for i in y:
            loss[None] += y[i] * x[i]  # loss = sum y x: a direct path to x, and one via y

    return x, y, loss, square, weigh


def test_python_scope_write_on_tape_cuts_the_path_through_that_element():
    x, y, loss, square, weigh = _square_into_y()
    with fs.ad.Tape(loss=loss):
        square()
        y[1] = 3.0  # recorded: y[1] no longer depends on x[1]
        weigh()
    xs = np.array([0.5, 1.0, 1.5, 2.0])
    ys = xs**2
    ys[1] = 3.0
    assert loss[None] == pytest.approx(np.sum(ys * xs), rel=1e-12)
    expected = ys + 2 * xs * xs  # direct path + the path through y[i] = x[i]^2 ...
    expected[1] = ys[1]  # ... which the write cut for element 1 (Taichi: 3 + 2 * 1 * 1)
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-12)
    np.testing.assert_array_equal(y.grad.to_numpy(), np.zeros(N))


def test_fill_on_tape_is_differentiated():
    x, y, loss, square, weigh = _square_into_y()
    with fs.ad.Tape(loss=loss):
        square()
        y.fill(3.0)  # every y[i] is now the constant 3: only the direct path is left
        weigh()
    assert loss[None] == pytest.approx(3.0 * (0.5 + 1.0 + 1.5 + 2.0), rel=1e-12)
    np.testing.assert_allclose(x.grad.to_numpy(), np.full(N, 3.0), rtol=1e-12)


def test_from_numpy_on_tape_is_differentiated():
    """Guard (Taichi passes it): from_numpy is a recorded store.

    x's value at Tape entry is overwritten before any use, so the loss does not depend
    on it: x.grad == 0, while w.grad is computed with the new values of x.
    """
    x, w, loss = *_fields("x", "w"), _loss()
    x.from_numpy(np.array([9.0, 9.0, 9.0, 9.0]))
    w.from_numpy(np.array([1.0, 2.0, 3.0, 4.0]))
    new = np.array([0.5, -1.0, 1.5, 2.0])

    @fs.kernel
    def use():
        for i in x:
            loss[None] += w[i] * x[i] * x[i]

    with fs.ad.Tape(loss=loss):
        x.from_numpy(new)
        use()
    assert loss[None] == pytest.approx(np.sum(np.array([1, 2, 3, 4]) * new**2), rel=1e-12)
    np.testing.assert_allclose(w.grad.to_numpy(), new**2, rtol=1e-12)
    np.testing.assert_array_equal(x.grad.to_numpy(), np.zeros(N))


@pytest.mark.skipif(not AS_TAICHI, reason="documents Taichi's behaviour only")
def test_taichi_reference_python_scope_write_is_not_differentiated():
    """Taichi 1.7 records Python-scope writes but gives them no adjoint (what fieldsim fixes)."""
    x, y, loss, square, weigh = _square_into_y()
    with fs.ad.Tape(loss=loss):
        square()
        y[1] = 3.0
        weigh()
    assert x.grad[1] == pytest.approx(3.0 + 2.0)
