"""`fs.ad.func_grad` and `fs.ad.func_replay` end to end (Warp's custom function adjoints).

func_grad: the adjoint func gets the func's inputs and its result's adjoint and returns one
adjoint per input; reverse AD uses it in place of differentiating the body, forward mode and
plain launches use the body. func_replay: what the adjoint recomputes in place of the func's
body (e.g. a func with a side effect, such as claiming a slot with an atomic counter); without
a func_grad, the gradient flows through the replay code.
"""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _f64():
    fs.init(arch=fs.cpu, default_fp=fs.f64)


def test_safe_sqrt_from_warps_documentation():
    """sqrt's derivative is infinite at 0; the custom adjoint makes it 0 there."""
    x = fs.field(float, shape=4, needs_grad=True, name="x")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.func
    def safe_sqrt(a):
        return fs.sqrt(a)

    @fs.ad.func_grad(safe_sqrt)
    def safe_sqrt_grad(a, adj_ret):
        g = 0.0
        if a > 0.0:
            g = adj_ret * 0.5 / fs.sqrt(a)
        return g

    @fs.func
    def plain_sqrt(a):
        return fs.sqrt(a)

    @fs.kernel
    def total_safe():
        for i in x:
            loss[None] += 3.0 * safe_sqrt(x[i])

    @fs.kernel
    def total_plain():
        for i in x:
            loss[None] += 3.0 * plain_sqrt(x[i])

    vals = np.array([0.0, 0.25, 1.0, 4.0])
    x.from_numpy(vals)
    with fs.ad.Tape(loss):
        total_safe()
    assert loss[None] == pytest.approx(3.0 * np.sqrt(vals).sum())
    np.testing.assert_allclose(x.grad.to_numpy(), [0.0, 3.0, 1.5, 0.75], rtol=1e-12)

    with fs.ad.Tape(loss):
        total_plain()
    assert np.isinf(x.grad.to_numpy()[0])  # what the custom adjoint avoids


def test_func_grad_with_two_inputs_in_a_carried_loop():
    """A straight-through clamp inside a dynamic loop whose local carries the value."""
    x = fs.field(float, shape=3, needs_grad=True, name="x")
    s = fs.field(float, shape=(), needs_grad=True, name="s")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.func
    def clamp_scale(a, k):
        return fs.min(fs.max(a * k, -1.0), 1.0)

    @fs.ad.func_grad(clamp_scale)
    def clamp_scale_grad(a, k, adj):
        return adj * k, adj * a  # straight through: the clamp passes the gradient unchanged

    @fs.kernel
    def run(n: fs.i32):
        for i in x:
            v = x[i]
            for _ in range(n):
                v = clamp_scale(v, s[None])
            loss[None] += v

    x.from_numpy(np.array([0.3, -0.8, 2.0]))
    s[None] = 1.5
    with fs.ad.Tape(loss):
        run(2)
    # straight-through on v -> clamp(k * clamp(k * x)): d/dx = k^2, d/dk = sum over the two
    # applications of adj * (value fed in): x * k (outer, adj 1) + x * k (inner, adj k)
    xs, k = x.to_numpy(), 1.5
    np.testing.assert_allclose(x.grad.to_numpy(), np.full(3, k * k), rtol=1e-12)
    inner = np.clip(xs * k, -1, 1)
    np.testing.assert_allclose(s.grad[None], np.sum(inner + k * xs), rtol=1e-12)


def test_forward_mode_differentiates_the_body_not_the_custom_adjoint():
    x = fs.field(float, shape=3, needs_grad=True, needs_dual=True, name="x")
    loss = fs.field(float, shape=(), needs_grad=True, needs_dual=True, name="loss")

    @fs.func
    def cube(a):
        return a * a * a

    @fs.ad.func_grad(cube)
    def cube_grad(a, adj):
        return 3.0 * a * a * adj

    @fs.kernel
    def total():
        for i in x:
            loss[None] += cube(x[i])

    xs = np.array([0.5, -1.0, 2.0])
    x.from_numpy(xs)
    with fs.ad.FwdMode(loss=loss, param=x, seed=[1.0, 1.0, 1.0]):
        total()
    assert loss.dual[None] == pytest.approx(np.sum(3 * xs**2), rel=1e-12)


def _slot_program(with_replay):
    n = 6
    x = fs.field(float, shape=n, needs_grad=True, name="x")
    y = fs.field(float, shape=n, needs_grad=True, name="y")
    w = fs.field(float, shape=n, name="w")
    count = fs.field(fs.i32, shape=(), name="count")
    slot = fs.field(fs.i32, shape=n, name="slot")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.func
    def claim(i):
        k = fs.atomic_add(count[None], 1)  # a side effect the adjoint must not repeat
        slot[i] = k
        return k

    if with_replay:
        @fs.ad.func_replay(claim)
        def claim_again(i):
            return slot[i]  # the slot the forward pass claimed

    @fs.kernel
    def compact():
        for i in x:
            k = claim(i)
            y[k] += x[i] * x[i]

    @fs.kernel
    def weigh():
        for k in y:
            loss[None] += w[k] * y[k]

    x.from_numpy(np.linspace(-1.0, 1.5, n))
    w.from_numpy(np.arange(1.0, n + 1.0))
    return x, w, slot, loss, compact, weigh


def test_func_replay_recomputes_a_side_effect_from_what_the_forward_pass_stored():
    x, w, slot, loss, compact, weigh = _slot_program(with_replay=True)
    with fs.ad.Tape(loss):
        compact()
        weigh()
    k = slot.to_numpy()
    assert sorted(k) == list(range(6))  # each thread claimed one distinct slot
    xs = x.to_numpy()
    assert loss[None] == pytest.approx(np.sum(w.to_numpy()[k] * xs**2), rel=1e-12)
    np.testing.assert_allclose(x.grad.to_numpy(), w.to_numpy()[k] * 2 * xs, rtol=1e-12)


def test_without_func_replay_the_used_atomic_is_refused():
    """Replaying the counter would read its final value: the Tape and kernel.grad() refuse it
    (rule 1), and the message points to func_replay."""
    *_, loss, compact, _weigh = _slot_program(with_replay=False)
    with pytest.raises(fs.AccessRuleError, match=r"Rule 1[\s\S]*'count'[\s\S]*func_replay"), \
            fs.ad.Tape(loss):
        compact()
    compact()
    with pytest.raises(fs.AccessRuleError, match="'count'"):
        compact.grad()


def test_func_replay_must_return_what_the_func_returns():
    x = fs.field(float, shape=2, needs_grad=True, name="x")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.func
    def pair(a):
        return a, 2.0 * a

    @fs.ad.func_replay(pair)
    def pair_again(a):
        return a

    @fs.kernel
    def total():
        for i in x:
            u, v = pair(x[i])
            loss[None] += u + v

    with pytest.raises(fs.FieldsimTypeError, match="func_replay of 'pair' returned 1 value"):
        total()
