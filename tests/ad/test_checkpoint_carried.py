"""`fs.ad.checkpoint` with a value carried between steps outside `state` (gh-ckpt).

Each step bumped a field `p` kept outside `state=[s]` (`p[i] += 0.5` in a kernel, or
`p.from_numpy(p.to_numpy() + 0.5)`, or the same on an ndarray, from Python or in a kernel) and then read it: the backward
recomputed each segment with `p` at its end-of-forward value, and x.grad was [239.8, 150.1]
against central differences [45.79, 19.12], silently. Such a field is now refused at the end of
the checkpoint's forward, naming it, the read and the overwrite, before any gradient is
written; with `p` in the state the gradient is right. Fields that carry nothing between steps
(write-once time-indexed outputs, accumulators never read, scratch written before it is read,
fields only read) are accepted and give the central differences.
"""
import numpy as np
import pytest

import fieldsim as fs

from .fd import central_differences

pytestmark = pytest.mark.fs_init(fp="f64")

N = 2


def _bumped(variant, in_state=False):
    """The reviewed program: (x, loss, run(tape) -> loss value)."""
    x = fs.field(fs.f64, N, needs_grad=True)
    s = fs.field(fs.f64, N, needs_grad=True)
    p = fs.field(fs.f64, N, needs_grad=True)
    t = fs.field(fs.f64, N, needs_grad=True)
    loss = fs.field(fs.f64, (), needs_grad=True)
    arr = fs.ndarray(fs.f64, N, needs_grad=True)

    @fs.kernel
    def init():
        for i in range(N):
            s[i] = x[i]

    @fs.kernel
    def step_a(a: fs.types.ndarray()):
        for i in range(N):
            t[i] = s[i] * a[i] + p[i] * s[i]

    @fs.kernel
    def step_b():
        for i in range(N):
            s[i] = t[i]

    @fs.kernel
    def bump():
        for i in range(N):
            p[i] += 0.5

    @fs.kernel
    def bump_array(b: fs.types.ndarray()):
        for i in range(N):
            b[i] += 0.5

    @fs.kernel
    def fin():
        for i in range(N):
            loss[None] += s[i] ** 2

    def step(k):
        if variant == "kernel":
            bump()
        elif variant == "pyfield":
            p.from_numpy(p.to_numpy() + 0.5)
        elif variant == "ndarray_kernel":
            bump_array(arr)
        else:
            arr.from_numpy(arr.to_numpy() + 0.5)
        step_a(arr)
        step_b()

    state = [s, arr if variant.startswith("ndarray") else p] if in_state else [s]

    def run(tape):
        p.fill(0.1)
        arr.from_numpy(np.array([1.0, 0.5]))
        loss[None] = 0.0
        if tape:
            with fs.ad.Tape(loss):
                init()
                fs.ad.checkpoint(step, 3, 1, state=state)
                fin()
        else:
            init()
            for k in range(3):
                step(k)
            fin()
        return loss[None]

    return x, loss, run


def _check_gradient(x, run, x0):
    x.from_numpy(x0)
    ref = central_differences(lambda: run(False), {"x": x})["x"]
    x.from_numpy(x0)
    run(True)
    np.testing.assert_allclose(x.grad.to_numpy(), ref, rtol=1e-6, atol=1e-9)
    return ref


@pytest.mark.parametrize("variant,reader,writer", [
    ("kernel", "kernel 'step_a'", "kernel 'bump'"),
    ("pyfield", "`p.to_numpy()`", "`p.from_numpy(...)`"),
    ("ndarray", "`arr.to_numpy()`", "`arr.from_numpy(...)`"),
    ("ndarray_kernel", "kernel 'step_a'", "kernel 'bump_array'"),
])
def test_a_value_carried_outside_the_state_is_refused(variant, reader, writer):
    x, _loss, run = _bumped(variant)
    x.from_numpy(np.array([0.3, 0.7]))
    with pytest.raises(fs.AccessRuleError) as err:
        run(True)
    text = str(err.value)
    name = "arr" if variant.startswith("ndarray") else "p"
    assert f"field '{name}' carries values from one step to a later one" in text
    assert reader in text and writer in text
    assert f"add it to state=[s, {name}]" in text
    assert "test_checkpoint_carried.py" in text
    assert not x.grad.to_numpy().any()  # refused before any gradient was written


@pytest.mark.parametrize("variant", ["kernel", "pyfield", "ndarray", "ndarray_kernel"])
def test_with_the_carried_field_in_the_state_the_gradient_is_right(variant):
    x, _loss, run = _bumped(variant, in_state=True)
    ref = _check_gradient(x, run, np.array([0.3, 0.7]))
    np.testing.assert_allclose(ref, [45.7906176, 19.1245824], rtol=1e-6)


def test_fields_that_carry_nothing_between_steps_are_accepted():
    # traj: written once per element, read by the next step; loss: atomically added, never read;
    # f: cleared by a kernel, then accumulated into and read; g: stored and re-read in one
    # kernel; snew: stored, then copied to the state; h: `fill`ed from Python then read; w: only read (a parameter)
    T = 4
    x, s, f, g, h, w, snew = (fs.field(fs.f64, N, needs_grad=True) for _ in range(7))
    traj = fs.field(fs.f64, (T + 1, N), needs_grad=True)
    loss = fs.field(fs.f64, (), needs_grad=True)

    @fs.kernel
    def init():
        for i in range(N):
            s[i] = x[i]
            traj[0, i] = x[i] * 0.5

    @fs.kernel
    def clear():
        for i in range(N):
            f[i] = 0.0

    @fs.kernel
    def forces():
        for i in range(N):
            f[i] += w[i] * s[i]
            f[(i + 1) % N] += 0.1 * s[i] * s[i]

    @fs.kernel
    def advance(k: fs.i32):
        for i in range(N):
            g[i] = f[i] + h[i] * s[i]
            g[i] += traj[k, i]
            snew[i] = s[i] + 0.1 * g[i]
            traj[k + 1, i] = traj[k, i] * 0.9 + 0.2 * snew[i]
            loss[None] += traj[k + 1, i] * snew[i]

    @fs.kernel
    def copy():
        for i in range(N):
            s[i] = snew[i]

    def step(k):
        clear()
        forces()
        h.fill(0.3)
        advance(k)
        copy()

    def run(tape):
        w.from_numpy(np.array([0.7, -0.4]))
        loss[None] = 0.0
        if tape:
            with fs.ad.Tape(loss):
                init()
                fs.ad.checkpoint(step, T, 2, state=[s])
        else:
            init()
            for k in range(T):
                step(k)
        return loss[None]

    ref = _check_gradient(x, run, np.array([0.3, 0.7]))
    assert np.abs(ref).min() > 1e-3


def test_a_field_read_by_a_later_segment_only_before_it_is_overwritten_is_refused():
    # `prev` holds the previous step's s (stored after it is read): carried from step to step
    x = fs.field(fs.f64, N, needs_grad=True)
    s = fs.field(fs.f64, N, needs_grad=True)
    prev = fs.field(fs.f64, N, needs_grad=True)
    loss = fs.field(fs.f64, (), needs_grad=True)

    @fs.kernel
    def init():
        for i in range(N):
            s[i] = x[i]
            prev[i] = x[i]

    @fs.kernel
    def leapfrog():
        for i in range(N):
            nxt = 2.0 * s[i] - 0.5 * prev[i]
            prev[i] = s[i]
            s[i] = nxt
            loss[None] += s[i] * s[i]

    x.from_numpy(np.array([0.3, 0.7]))
    with pytest.raises(fs.AccessRuleError, match=r"field 'prev' carries values"), fs.ad.Tape(loss):
        init()
        fs.ad.checkpoint(lambda k: leapfrog(), 4, 2, state=[s])


def test_a_numpy_array_a_kernel_bumps_is_refused_not_a_crash():
    # a NumPy array written by a kernel inside the checkpoint raised an internal TypeError (the
    # forward's collector did not number its launches for the host-array bookkeeping)
    x = fs.field(fs.f64, N, needs_grad=True)
    s = fs.field(fs.f64, N, needs_grad=True)
    loss = fs.field(fs.f64, (), needs_grad=True)
    gains = np.array([0.1, 0.2])

    @fs.kernel
    def init():
        for i in range(N):
            s[i] = x[i]

    @fs.kernel
    def scale(a: fs.types.ndarray()):
        for i in range(N):
            a[i] += 0.5
            s[i] = s[i] * a[i]

    x.from_numpy(np.array([0.3, 0.7]))
    with pytest.raises(fs.AccessRuleError) as err, fs.ad.Tape(loss):
        init()
        fs.ad.checkpoint(lambda k: scale(gains), 3, 1, state=[s])
    text = str(err.value)
    assert "field 'a' carries values" in text and "kernel 'scale'" in text
    assert "pass an fs.ndarray instead of the NumPy array 'a'" in text


def test_a_numpy_array_a_kernel_overwrites_each_step_is_accepted():
    # the same array fully stored before it is read in every step carries nothing
    x = fs.field(fs.f64, N, needs_grad=True)
    s = fs.field(fs.f64, N, needs_grad=True)
    nxt = fs.field(fs.f64, N, needs_grad=True)
    loss = fs.field(fs.f64, (), needs_grad=True)
    gains = np.zeros(N)

    @fs.kernel
    def init():
        for i in range(N):
            s[i] = x[i]

    @fs.kernel
    def scale(a: fs.types.ndarray(), k: fs.i32):
        for i in range(N):
            a[i] = 1.0 + 0.1 * k
            nxt[i] = s[i] * a[i] + 0.2 * s[i] * s[i]

    @fs.kernel
    def advance():
        for i in range(N):
            s[i] = nxt[i]

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += s[i]

    def run(tape):
        loss[None] = 0.0
        if tape:
            with fs.ad.Tape(loss):
                init()
                fs.ad.checkpoint(lambda k: (scale(gains, k), advance()), 3, 2, state=[s])
                total()
        else:
            init()
            for k in range(3):
                scale(gains, k)
                advance()
            total()
        return loss[None]

    _check_gradient(x, run, np.array([0.3, 0.7]))


def _logged_run(log_in_step, in_state):
    """x[i] *= a each step (through y), loss += sum x^2 (atomic), and a print of the loss: in the step or
    after the checkpoint call. (a.grad, loss) from a Tape."""
    n, steps = 3, 6
    x = fs.field(fs.f64, n, needs_grad=True)
    a = fs.field(fs.f64, (), needs_grad=True)
    loss = fs.field(fs.f64, (), needs_grad=True)
    y = fs.field(fs.f64, n, needs_grad=True)

    @fs.kernel
    def advance():
        for i in x:
            y[i] = x[i] * a[None]

    @fs.kernel
    def copy_back():
        for i in x:
            x[i] = y[i]

    @fs.kernel
    def accumulate():
        for i in x:
            loss[None] += x[i] ** 2

    seen = []

    def step(t):
        advance()
        copy_back()
        accumulate()
        if log_in_step:
            seen.append(loss[None])

    x.fill(1.0)
    a[None] = 0.9
    with fs.ad.Tape(loss):
        fs.ad.checkpoint(step, steps, 2, state=[x, loss] if in_state else [x])
    seen.append(loss[None])
    return a.grad[None], n, steps, seen


def test_a_python_read_that_only_logs_is_refused_with_advice_and_fine_outside_or_in_the_state():
    """A Python-scope read in a step is taken as used (fieldsim cannot follow a print's value),
    so the error says how to log: after the call, or with the field in the state."""
    with pytest.raises(fs.AccessRuleError) as info:
        _logged_run(log_in_step=True, in_state=False)
    assert "Python-scope read only reports the value" in str(info.value)
    for log_in_step, in_state in ((False, False), (True, True)):
        grad, n, steps, seen = _logged_run(log_in_step, in_state)
        # loss = n * sum_{t=1..steps} a^(2t): d/da = n * sum 2t a^(2t-1)
        expected = n * sum(2 * t * 0.9 ** (2 * t - 1) for t in range(1, steps + 1))
        assert grad == pytest.approx(expected, rel=1e-12)
        assert seen[-1] == pytest.approx(n * sum(0.9 ** (2 * t) for t in range(1, steps + 1)))
