"""An atomic's returned old value used for bookkeeping only, beside a differentiated store
(`slot = ti.atomic_add(cnt[None], 1)`, `order[slot] = i` next to `y[i] = x[i] ** 2`). Taichi runs
such kernels on a Tape; fieldsim refused them ("the old value returned by atomic_add is used;
it cannot be replayed"), though no adjoint value depends on `slot`. They are accepted now, the
adjoint leaving out what the old value reaches; where the old value reaches a differentiated
value (an index or factor of one, a branch around one) the kernel is still refused, located."""
import numpy as np
import pytest

from ._env import fs
from .fd import central_differences

pytestmark = pytest.mark.fs_init(fp="f64")

N = 6
XS = np.array([0.3, -0.7, 1.1, 2.0, -1.4, 0.9])
W = np.array([1.0, -2.0, 0.5, 3.0, 1.5, -0.25])


def _program(variant):
    x = fs.field(fs.f64, shape=N, needs_grad=True)
    y = fs.field(fs.f64, shape=N, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    cnt = fs.field(fs.i32, shape=())
    order = fs.field(fs.i32, shape=N)
    flags = fs.field(fs.i32, shape=N)
    plain = fs.field(fs.f64, shape=N)  # a float field without a gradient
    wts = fs.field(fs.f64, shape=N)
    wts.from_numpy(W)

    @fs.kernel
    def issue():  # the reported shape
        for i in range(N):
            y[i] = x[i] ** 2
            slot = fs.atomic_add(cnt[None], 1)
            order[slot] = i

    @fs.kernel
    def mixed():  # the old value through locals, an int branch, an inner loop, a float copy
        for i in range(N):
            y[i] = fs.sin(x[i]) * x[i]
            slot = fs.atomic_add(cnt[None], 1)
            k = slot * 2
            if slot % 2 == 0:
                flags[slot] = k + 1
            for _ in range(slot % 3):
                flags[slot] += 1
            plain[slot] = x[i] * 3.0
            order[N - 1 - slot] = i

    @fs.kernel
    def searched():  # the old value decides when a loop holding only bookkeeping stops
        for i in range(N):
            slot = fs.atomic_add(cnt[None], 1)
            j = slot
            while j > 0:
                j -= 4
                if j == -1:
                    break
            flags[i] = j
            order[slot] = i
            y[i] = fs.sin(x[i]) * x[i]
            if slot > 2:  # a float copy without a gradient, under the old value's branch
                plain[i] = fs.sin(x[i])

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += wts[i] * y[i]

    kernels = {"issue": issue, "mixed": mixed, "searched": searched}
    return x, loss, cnt, order, flags, plain, kernels[variant], total


def _reset(x, loss, cnt, order, flags):
    x.from_numpy(XS)
    loss[None] = 0.0
    cnt[None] = 0
    order.fill(0)
    flags.fill(0)


def _derivative(variant):
    if variant == "issue":
        return 2 * W * XS
    return W * (np.cos(XS) * XS + np.sin(XS))


def _fd_grad(variant):
    x, loss, cnt, *_, step, total = _program(variant)

    def evaluate():
        loss[None] = 0.0
        cnt[None] = 0
        step()
        total()
        return loss[None]

    x.from_numpy(XS)
    return central_differences(evaluate, {"x": x})["x"]


@pytest.mark.parametrize("variant", ["issue", "mixed", "searched"])
def test_tape_gradient_and_forward_results(variant):
    x, loss, cnt, order, flags, plain, step, total = _program(variant)
    _reset(x, loss, cnt, order, flags)
    step()
    total()
    forward = (cnt[None], order.to_numpy(), flags.to_numpy(), plain.to_numpy())
    _reset(x, loss, cnt, order, flags)
    with fs.ad.Tape(loss=loss):
        step()
        total()
    grad = x.grad.to_numpy()
    np.testing.assert_allclose(grad, _derivative(variant), rtol=1e-12)
    np.testing.assert_allclose(grad, _fd_grad(variant), rtol=1e-6, atol=1e-8)
    # the backward ran no atomic again and changed no bookkeeping
    assert cnt[None] == N == forward[0]
    assert sorted(order.to_numpy()) == list(range(N))
    np.testing.assert_array_equal(order.to_numpy(), forward[1])
    np.testing.assert_array_equal(flags.to_numpy(), forward[2])
    np.testing.assert_array_equal(plain.to_numpy(), forward[3])


@pytest.mark.parametrize("variant", ["issue", "mixed", "searched"])
def test_hand_called_grad(variant):
    x, loss, cnt, order, flags, plain, step, total = _program(variant)
    _reset(x, loss, cnt, order, flags)
    step()
    total()
    before = (order.to_numpy(), flags.to_numpy(), plain.to_numpy())
    loss.grad[None] = 1.0
    total.grad()
    step.grad()
    np.testing.assert_allclose(x.grad.to_numpy(), _fd_grad(variant), rtol=1e-6, atol=1e-8)
    assert cnt[None] == N
    for got, want in zip((order.to_numpy(), flags.to_numpy(), plain.to_numpy()), before):
        np.testing.assert_array_equal(got, want)


def _refused_program(variant):
    x = fs.field(fs.f64, shape=N, needs_grad=True)
    y = fs.field(fs.f64, shape=N, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    cnt = fs.field(fs.i32, shape=())

    @fs.kernel
    def store_index():
        for i in range(N):
            slot = fs.atomic_add(cnt[None], 1)  # refused: store_index
            y[slot] = x[i] ** 2

    @fs.kernel
    def read_index():
        for i in range(N):
            slot = fs.atomic_add(cnt[None], 1)  # refused: read_index
            y[i] = x[slot] ** 2

    @fs.kernel
    def branch():
        for i in range(N):
            slot = fs.atomic_add(cnt[None], 1)  # refused: branch
            if slot < 3:
                y[i] = x[i] ** 2

    @fs.kernel
    def factor():
        for i in range(N):
            slot = fs.atomic_add(cnt[None], 1)  # refused: factor
            y[i] = x[i] ** 2 * slot

    @fs.kernel
    def through_local():
        for i in range(N):
            k = fs.atomic_add(cnt[None], 1)  # refused: through_local
            k = (k + 1) % N
            y[i] = x[k] ** 2

    @fs.kernel
    def loop_exit():  # the loop holds a differentiated update: its trip count is needed
        for i in range(N):
            j = fs.atomic_add(cnt[None], 1)  # refused: loop_exit
            while j > 0:
                j -= 2
                y[i] += x[i] * x[i]

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += y[i]

    kernels = {"store_index": store_index, "read_index": read_index, "branch": branch,
               "factor": factor, "through_local": through_local, "loop_exit": loop_exit}
    x.from_numpy(XS)
    return loss, kernels[variant], total


def _line_of(text):
    with open(__file__) as f:
        lines = [n for n, src in enumerate(f, 1) if src.rstrip().endswith(text)]
    assert len(lines) == 1
    return lines[0]


REFUSED = ["store_index", "read_index", "branch", "factor", "through_local", "loop_exit"]


@pytest.mark.parametrize("variant", REFUSED)
def test_old_value_reaching_a_derivative_is_refused_on_the_tape(variant):
    loss, step, total = _refused_program(variant)
    with pytest.raises(fs.AccessRuleError) as info, fs.ad.Tape(loss=loss):
        step()
        total()
    message = str(info.value)
    line = _line_of(f"# refused: {variant}")
    assert "test_atomic_bookkeeping.py" in message and f"line {line}" in message, message
    assert "cnt" in message


@pytest.mark.parametrize("variant", REFUSED)
def test_old_value_reaching_a_derivative_is_refused_by_hand(variant):
    loss, step, total = _refused_program(variant)
    step()
    total()
    loss.grad[None] = 1.0
    total.grad()
    with pytest.raises(fs.AccessRuleError) as info:
        step.grad()
    assert f"line {_line_of(f'# refused: {variant}')}" in str(info.value)


def test_per_thread_counter_feeding_an_index_is_refused_at_the_atomic():
    # one thread per counter passes the access rules, but the adjoint would need the old
    # value, which the replay (atomics dropped) cannot give back
    x = fs.field(fs.f64, shape=N, needs_grad=True)
    y = fs.field(fs.f64, shape=N, needs_grad=True)
    c = fs.field(fs.i32, shape=N)
    x.from_numpy(XS)

    @fs.kernel
    def shift():
        for i in range(N):
            slot = fs.atomic_add(c[i], 1)  # refused: per-thread
            y[i] = x[(slot + i) % N] ** 2

    shift()
    y.grad.fill(1.0)
    with pytest.raises(fs.FieldsimError) as info:
        shift.grad()
    message = str(info.value)
    assert f"line {_line_of('# refused: per-thread')}" in message
    assert "atomic_add is used where the adjoint needs it" in message


def test_on_a_tape_the_refusal_comes_before_the_launch_changes_anything():
    x = fs.field(fs.f64, shape=N, needs_grad=True)
    y = fs.field(fs.f64, shape=N, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    c = fs.field(fs.i32, shape=N)
    x.from_numpy(XS)

    @fs.kernel
    def shift():
        for i in range(N):
            slot = fs.atomic_add(c[i], 1)  # refused at launch
            y[i] = x[(slot + i) % N] ** 2

    launched = []
    with pytest.raises(fs.FieldsimCompilationError) as info, fs.ad.Tape(loss=loss):
        shift()
        launched.append(True)
    assert f"line {_line_of('# refused at launch')}" in str(info.value)
    assert not launched  # the launch itself raised, not the backward
    np.testing.assert_array_equal(c.to_numpy(), np.zeros(N, np.int32))
    np.testing.assert_array_equal(y.to_numpy(), np.zeros(N))


def test_a_grad_replaced_unit_may_use_an_atomic_old_value():
    # the unit's backward is the user's: its kernels' adjoints are never made, so the launch
    # inside it is not refused (a stream compaction `y[slot] = 2 x[i]`, Taichi runs it)
    x = fs.field(fs.f64, shape=N, needs_grad=True)
    y = fs.field(fs.f64, shape=N, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    cnt = fs.field(fs.i32, shape=())
    x.from_numpy(XS)

    @fs.kernel
    def compact():
        fs.loop_config(serialize=True)  # slot == i
        for i in range(N):
            slot = fs.atomic_add(cnt[None], 1)
            y[slot] = x[i] * 2.0

    @fs.kernel
    def compact_grad():
        for i in range(N):
            x.grad[i] += 2.0 * y.grad[i]

    @fs.ad.grad_replaced
    def forward():
        cnt[None] = 0
        compact()

    @fs.ad.grad_for(forward)
    def backward():
        compact_grad()

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += y[i] ** 2

    with fs.ad.Tape(loss=loss):
        forward()
        total()
    np.testing.assert_allclose(x.grad.to_numpy(), 8.0 * XS)
