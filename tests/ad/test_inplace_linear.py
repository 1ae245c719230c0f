"""In-place linear updates (`v[i] *= c`, `x[i] = a * x[i] + b`, `a` carrying no derivative):
accepted by the access rules and differentiated right, by hand (`kernel.grad()`), on a Tape over
several steps, and in forward mode; gradients against float64 central differences. The
in-place updates whose adjoint would need the overwritten value stay refused at their line.
"""
import numpy as np
import pytest

import fieldsim as fs

from .fd import assert_grad_close, central_differences

pytestmark = pytest.mark.fs_init(fp="f64")
N = 5


def _setup():
    x = fs.field(fs.f64, shape=N, needs_grad=True)
    y = fs.field(fs.f64, shape=N, needs_grad=True)
    w = fs.field(fs.f64, shape=N, needs_grad=True)
    plain = fs.field(fs.f64, shape=N)  # a factor without gradient
    flag = fs.field(fs.i32, shape=N)
    v = fs.Vector.field(2, fs.f64, shape=N, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    rng = np.random.default_rng(3)
    init = {"x": rng.uniform(-1, 1, N), "y": rng.uniform(-1, 1, N), "w": rng.uniform(-1, 1, N),
            "v": rng.uniform(-1, 1, (N, 2))}
    init["plain"] = rng.uniform(0.5, 1.5, N)
    plain.from_numpy(init["plain"])
    flag.from_numpy(np.array([1, 0, 1, 1, 0], dtype=np.int32))

    @fs.kernel
    def damp(c: fs.f64):
        for i in range(N):
            v[i] *= c
            x[i] *= c

    @fs.kernel
    def affine(c: fs.f64):
        for i in range(N):
            x[i] = c * plain[i] * x[i] + y[i] * w[i]

    @fs.kernel
    def guarded(a: fs.f64):
        for i in range(N):
            if flag[i] > 0:
                x[i] = x[i] * a - 0.5

    @fs.kernel
    def divided():
        for i in range(N):
            x[i] = (x[i] - y[i]) / plain[i]
            v[i][0] += y[i] * w[i]  # an atomic add to an element updated in place earlier

    @fs.kernel
    def compute_loss():
        for i in range(N):
            loss[None] += fs.sin(x[i]) * x[i] + v[i].norm_sqr() * (1.0 + w[i])

    fields = {"x": x, "y": y, "w": w, "v": v}
    steps = [(damp, (0.9,)), (affine, (0.7,)), (guarded, (1.3,)), (divided, ())]
    return fields, init, steps, compute_loss, loss


def _reset(fields, init, loss):
    for name, f in fields.items():
        f.from_numpy(init[name])
        f.grad.fill(0)
    loss[None] = 0.0
    loss.grad[None] = 0.0


def _reference(fields, init, steps, compute_loss, loss, repeats):
    def evaluate():
        loss[None] = 0.0
        for _ in range(repeats):
            for k, args in steps:
                k(*args)
        compute_loss()
        return loss[None]

    for name, f in fields.items():
        f.from_numpy(init[name])
    params = {name: fields[name] for name in ("y", "w")}

    def from_start():
        for name in ("x", "v"):
            fields[name].from_numpy(init[name])
        return evaluate()

    grads = central_differences(from_start, params, eps=1e-6)
    for name in ("x", "v"):  # the initial state: perturb init, not the field
        base = init[name]
        g = np.zeros(base.shape)
        for flat in range(base.size):
            vals = []
            for h in (1e-6, -1e-6):
                init[name] = base.copy()
                init[name].flat[flat] += h
                vals.append(from_start())
            g.flat[flat] = (vals[0] - vals[1]) / 2e-6
        init[name] = base
        grads[name] = g
    return grads


@pytest.mark.parametrize("repeats", [1, 3])
def test_by_hand_grad_calls(repeats):
    fields, init, steps, compute_loss, loss = _setup()
    expected = _reference(fields, init, steps, compute_loss, loss, repeats)
    _reset(fields, init, loss)
    for _ in range(repeats):
        for k, args in steps:
            k(*args)
    compute_loss()
    loss.grad[None] = 1.0
    compute_loss.grad()
    for _ in range(repeats):
        for k, args in reversed(steps):
            k.grad(*args)
    for name, f in fields.items():
        assert_grad_close(f.grad.to_numpy(), expected[name], "f64", name)


@pytest.mark.parametrize("repeats", [1, 3])
def test_on_a_tape(repeats):
    fields, init, steps, compute_loss, loss = _setup()
    expected = _reference(fields, init, steps, compute_loss, loss, repeats)
    _reset(fields, init, loss)
    with fs.ad.Tape(loss):
        for _ in range(repeats):
            for k, args in steps:
                k(*args)
        compute_loss()
    for name, f in fields.items():
        assert_grad_close(f.grad.to_numpy(), expected[name], "f64", name)


def test_forward_values_unchanged():
    fields, init, steps, _, loss = _setup()
    _reset(fields, init, loss)
    for k, args in steps:
        k(*args)
    x, y, w, v, plain = (init[n].copy() for n in ("x", "y", "w", "v", "plain"))
    x, v = x * 0.9, v * 0.9
    x = 0.7 * plain * x + y * w
    flag = np.array([1, 0, 1, 1, 0]) > 0
    x = np.where(flag, x * 1.3 - 0.5, x)
    x = (x - y) / plain
    v[:, 0] += y * w
    np.testing.assert_allclose(fields["x"].to_numpy(), x, rtol=1e-12)
    np.testing.assert_allclose(fields["v"].to_numpy(), v, rtol=1e-12)


def test_forward_mode_tangent_of_an_in_place_update():
    x = fs.field(fs.f64, shape=N, needs_grad=True)  # needs_grad: also the reverse checker's case
    y = fs.field(fs.f64, shape=N)
    loss = fs.field(fs.f64, shape=())
    x.from_numpy(np.arange(N, dtype=np.float64))
    y.from_numpy(np.ones(N))

    @fs.kernel
    def step(c: fs.f64):
        for i in range(N):
            x[i] = c * x[i] + y[i]

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += x[i] ** 2

    seed = [1.0, 0.0, 2.0, 0.0, 0.0]
    with fs.ad.FwdMode(loss=loss, param=x, seed=seed):
        step(0.5)
        step(0.5)
        total()
    x0 = np.arange(N, dtype=np.float64)
    final = 0.25 * x0 + 1.5
    assert loss[None] == pytest.approx(float(np.sum(final ** 2)))
    assert loss.dual[None] == pytest.approx(float(np.sum(2 * final * 0.25 * np.array(seed))))


def _refused(kernel_text_line, build):
    with pytest.raises(fs.AccessRuleError) as info:
        build()
    text = str(info.value)
    assert kernel_text_line in text and "test_inplace_linear.py" in text
    return text


def test_active_factor_is_refused():
    x = fs.field(fs.f64, shape=N, needs_grad=True)
    w = fs.field(fs.f64, shape=N, needs_grad=True)

    @fs.kernel
    def scale():
        for i in range(N):
            x[i] *= w[i]

    text = _refused("x[i] *= w[i]", lambda: scale.grad())
    assert "Rule 1" in text


def test_nonlinear_other_element_and_old_value_reads_are_refused():
    x = fs.field(fs.f64, shape=N + 1, needs_grad=True)
    y = fs.field(fs.f64, shape=N, needs_grad=True)

    @fs.kernel
    def square():
        for i in range(N):
            x[i] = x[i] ** 2

    @fs.kernel
    def neighbour():
        for i in range(N):
            x[i] = x[i + 1] * 0.5

    @fs.kernel
    def also_read():
        for i in range(N):
            y[i] = x[i] ** 2
            x[i] *= 0.5

    _refused("x[i] = x[i] ** 2", lambda: square.grad())
    _refused("x[i] = x[i + 1] * 0.5", lambda: neighbour.grad())
    _refused("y[i] = x[i] ** 2", lambda: also_read.grad())


def test_tape_refuses_overwriting_a_value_an_earlier_launch_needs():
    x = fs.field(fs.f64, shape=N, needs_grad=True)
    y = fs.field(fs.f64, shape=N, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def square():
        for i in range(N):
            y[i] = x[i] ** 2

    @fs.kernel
    def damp():
        for i in range(N):
            x[i] *= 0.5

    def run():
        with fs.ad.Tape(loss):
            square()
            damp()

    text = _refused("x[i] *= 0.5", run)
    assert "y[i] = x[i] ** 2" in text


def test_in_place_update_of_one_element_from_every_thread_is_refused():
    x = fs.field(fs.f64, shape=N, needs_grad=True)

    @fs.kernel
    def shared():
        for i in range(N):
            x[0] *= 0.5  # a race: no read-modify-write is atomic

    assert "Rule 2" in _refused("x[0] *= 0.5", lambda: shared.grad())
