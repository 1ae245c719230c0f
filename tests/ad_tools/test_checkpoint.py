"""`fs.ad.checkpoint`: a 40-step ballistic simulation with drag, checkpointed every 8 steps.

The state (x, v) is overwritten in place each step through a scratch double buffer (two launches
per step: `advance`, then `commit`, which would break rule 1 on a plain Tape); a per-step energy
term is accumulated into the loss inside the step. Its gradient must equal a float64 central
difference and the gradient of the same simulation written with time-indexed fields on a plain
Tape, and the forward pass must keep only n_steps / every snapshots of the state.
"""
from types import SimpleNamespace

import numpy as np
import pytest

import fieldsim as fs

N, STEPS, EVERY, DT = 3, 40, 8, 0.05


def _common():
    x0 = fs.Vector.field(2, float, shape=N, needs_grad=True, name="x0")
    v0 = fs.Vector.field(2, float, shape=N, needs_grad=True, name="v0")
    drag = fs.field(float, shape=(), needs_grad=True, name="drag")
    target = fs.Vector.field(2, float, shape=N, name="target")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    rng = np.random.default_rng(7)
    x0.from_numpy(rng.uniform(-1, 1, (N, 2)))
    v0.from_numpy(rng.uniform(1, 3, (N, 2)))
    target.from_numpy(rng.uniform(2, 4, (N, 2)))
    drag[None] = 0.3
    return x0, v0, drag, target, loss


def _in_place_sim():
    """Current state only (x, v), scratch (xn, vn); `run()` returns (loss, CheckpointInfo)."""
    x0, v0, drag, target, loss = _common()
    x = fs.Vector.field(2, float, shape=N, needs_grad=True, name="x")
    v = fs.Vector.field(2, float, shape=N, needs_grad=True, name="v")
    xn = fs.Vector.field(2, float, shape=N, needs_grad=True, name="xn")
    vn = fs.Vector.field(2, float, shape=N, needs_grad=True, name="vn")

    @fs.kernel
    def init():
        for i in x:
            x[i] = x0[i]
            v[i] = v0[i]

    @fs.kernel
    def advance():
        for i in x:
            a = -drag[None] * v[i].norm() * v[i] + fs.Vector([0.0, -9.8])
            vn[i] = v[i] + DT * a
            xn[i] = x[i] + DT * vn[i]
            loss[None] += 0.001 * v[i].norm_sqr()  # accumulated inside the step

    @fs.kernel
    def commit():
        for i in x:
            x[i] = xn[i]
            v[i] = vn[i]

    @fs.kernel
    def final_loss():
        for i in x:
            loss[None] += (x[i] - target[i]).norm_sqr()

    def step(t):
        advance()
        commit()

    def run(every=EVERY):
        init()
        info = fs.ad.checkpoint(step, STEPS, every=every, state=[x, v])
        final_loss()
        return info

    return SimpleNamespace(run=run, loss=loss, inputs=(x0, v0, drag), state=(x, v), init=init,
                           step=step, final_loss=final_loss, advance=advance, commit=commit)


def _time_indexed_sim():
    """The same simulation storing every step: x[t, i], v[t, i] on a plain Tape."""
    x0, v0, drag, target, loss = _common()
    x = fs.Vector.field(2, float, shape=(STEPS + 1, N), needs_grad=True, name="x")
    v = fs.Vector.field(2, float, shape=(STEPS + 1, N), needs_grad=True, name="v")

    @fs.kernel
    def init():
        for i in x0:
            x[0, i] = x0[i]
            v[0, i] = v0[i]

    @fs.kernel
    def advance(t: int):
        for i in x0:
            a = -drag[None] * v[t, i].norm() * v[t, i] + fs.Vector([0.0, -9.8])
            v[t + 1, i] = v[t, i] + DT * a
            x[t + 1, i] = x[t, i] + DT * v[t + 1, i]
            loss[None] += 0.001 * v[t, i].norm_sqr()

    @fs.kernel
    def final_loss():
        for i in x0:
            loss[None] += (x[STEPS, i] - target[i]).norm_sqr()

    def run():
        init()
        for t in range(STEPS):
            advance(t)
        final_loss()

    return SimpleNamespace(run=run, loss=loss, inputs=(x0, v0, drag))


def _grads(fields):
    return [f.grad.to_numpy() for f in fields]


def _central_differences(run, loss, inputs, h=1e-6):
    """d loss / d input by central differences of the plain forward (outside any Tape)."""
    out = []
    for f in inputs:
        base = f.to_numpy()
        grad = np.zeros(base.shape)
        for e in range(base.size):
            values = []
            for sign in (1, -1):
                arr = base.copy()
                arr.flat[e] += sign * h
                f.from_numpy(arr)
                loss[None] = 0.0
                run()
                values.append(loss[None])
            grad.flat[e] = (values[0] - values[1]) / (2 * h)
        f.from_numpy(base)
        out.append(grad)
    return out


def test_checkpointed_gradient_equals_finite_differences_and_storing_everything():
    sim = _in_place_sim()
    run, loss, inputs = sim.run, sim.loss, sim.inputs
    with fs.ad.Tape(loss):
        info = run()
    value, ck_grads = loss[None], _grads(inputs)
    assert info.n_snapshots == STEPS // EVERY

    fd = _central_differences(run, loss, inputs)
    for g, ref, f in zip(ck_grads, fd, inputs):
        np.testing.assert_allclose(g, ref, rtol=1e-6, atol=1e-8, err_msg=f.ir_name)

    fs.init(arch=fs.cpu, default_fp=fs.f64)
    full = _time_indexed_sim()
    with fs.ad.Tape(full.loss):
        full.run()
    assert full.loss[None] == pytest.approx(value, rel=1e-12)
    for g, g2, f in zip(ck_grads, _grads(full.inputs), full.inputs):
        np.testing.assert_allclose(g, g2, rtol=1e-10, atol=1e-12, err_msg=f.ir_name)


@pytest.mark.parametrize("every", [1, 3, 8, 40, 64])
def test_any_segment_length_gives_the_same_gradient(every):
    sim = _in_place_sim()
    run, loss, inputs = sim.run, sim.loss, sim.inputs
    with fs.ad.Tape(loss):
        run(every=STEPS)  # one segment: the whole run recomputed once
    reference = _grads(inputs)
    with fs.ad.Tape(loss):
        info = run(every=every)
    assert info.n_snapshots == -(-STEPS // every)
    for g, ref, f in zip(_grads(inputs), reference, inputs):
        np.testing.assert_allclose(g, ref, rtol=1e-12, atol=1e-14, err_msg=f.ir_name)


def test_forward_values_and_state_are_those_of_the_plain_run():
    sim = _in_place_sim()
    run, loss, (x, v) = sim.run, sim.loss, sim.state
    loss[None] = 0.0
    run()  # outside a Tape: a plain loop
    plain = (loss[None], x.to_numpy(), v.to_numpy())
    with fs.ad.Tape(loss):
        run()
    assert loss[None] == plain[0]  # the backward's recomputation leaves no trace
    np.testing.assert_array_equal(x.to_numpy(), plain[1])
    np.testing.assert_array_equal(v.to_numpy(), plain[2])


def test_snapshot_memory_is_n_steps_over_every_states():
    sim = _in_place_sim()
    run, loss, (x, v) = sim.run, sim.loss, sim.state
    with fs.ad.Tape(loss):
        info = run()
    state_bytes = x.to_numpy().nbytes + v.to_numpy().nbytes
    assert info.n_snapshots == STEPS // EVERY == 5
    assert info.snapshot_bytes == 5 * state_bytes
    # backward: the snapshots plus one segment's copies: per step the two buffers written
    # (xn, vn by advance; x, v by commit), the loss, plus the segment's starting state
    segment = EVERY * 2 * state_bytes + state_bytes + (EVERY * 2 + 1) * 8
    assert info.snapshot_bytes < info.peak_backward_bytes <= info.snapshot_bytes + segment
    stored_everything = (STEPS + 1) * state_bytes
    assert info.peak_backward_bytes < stored_everything
    assert info.recomputed_steps == STEPS


def test_random_draws_are_replayed_in_the_recomputation():
    x = fs.field(float, shape=8, needs_grad=True, name="x")
    w = fs.field(float, shape=8, needs_grad=True, name="w")
    tmp = fs.field(float, shape=8, needs_grad=True, name="tmp")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    w.from_numpy(np.linspace(0.5, 1.5, 8))

    @fs.kernel
    def noisy():
        for i in x:
            tmp[i] = x[i] * (1.0 + 0.1 * fs.random()) * w[i]

    @fs.kernel
    def commit():
        for i in x:
            x[i] = tmp[i]

    @fs.kernel
    def total():
        for i in x:
            loss[None] += x[i]

    def step(t):
        noisy()
        commit()

    x.fill(1.0)
    with fs.ad.Tape(loss):
        fs.ad.checkpoint(step, 6, every=4, state=[x])
        total()
    # loss = sum_i prod_t (1 + 0.1 r_ti) w_i, linear in each w_i^6 ... d loss / d w_i = 6 x_i / w_i
    np.testing.assert_allclose(w.grad.to_numpy(), 6 * x.to_numpy() / w.to_numpy(), rtol=1e-12)


def test_save_and_restore_callables_instead_of_state_fields():
    sim = _in_place_sim()
    (x, v), inputs = sim.state, sim.inputs
    with fs.ad.Tape(sim.loss):
        sim.run()
    reference = _grads(inputs)
    saved = []

    def save():
        saved.append((x.to_numpy(), v.to_numpy()))
        return saved[-1]

    def restore(s):
        x.from_numpy(s[0])
        v.from_numpy(s[1])

    with fs.ad.Tape(sim.loss):
        sim.init()
        fs.ad.checkpoint(sim.step, STEPS, every=10, save=save, restore=restore)
        sim.final_loss()
    assert len(saved) == 4
    for g, ref in zip(_grads(inputs), reference):
        np.testing.assert_allclose(g, ref, rtol=1e-12)


def test_outside_a_tape_it_is_a_plain_loop():
    calls = []
    info = fs.ad.checkpoint(calls.append, 5, every=2, state=[])
    assert calls == [0, 1, 2, 3, 4]
    assert info.n_snapshots == 0


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="every"):
        fs.ad.checkpoint(lambda t: None, 4, every=0, state=[])
    with pytest.raises(ValueError, match="state"):
        fs.ad.checkpoint(lambda t: None, 4, every=2)
    with pytest.raises(TypeError, match="state must be a list of fields, got array"):
        fs.ad.checkpoint(lambda t: None, 4, every=2, state=[np.zeros(3)])


def test_jacobian_through_a_checkpointed_run_forward_and_reverse():
    # reverse: one recorded run, the checkpoint's backward re-run once per output row;
    # forward: FwdMode runs the steps as a plain loop, tangents flowing through in place
    sim = _in_place_sim()
    _x0, v0, drag = sim.inputs
    x, _v = sim.state
    J_rev = fs.ad.jacobian(sim.run, [v0, drag], [x], mode="reverse")
    J_fwd = fs.ad.jacobian(sim.run, [v0, drag], [x], mode="forward")
    J_fd = fs.ad.jacobian_fd(sim.run, [v0, drag], [x])
    np.testing.assert_allclose(J_rev, J_fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(J_fwd, J_rev, rtol=1e-10, atol=1e-12)
    # particle i's final position depends on its own v0 only
    block = np.kron(np.eye(N), np.ones((2, 2)))
    assert np.all(J_rev[:, : 2 * N][block == 0] == 0)


def test_a_step_may_call_a_grad_replaced_unit():
    sim = _in_place_sim()
    with fs.ad.Tape(sim.loss):
        sim.run()
    reference = _grads(sim.inputs)
    advance, commit = sim.advance, sim.commit

    @fs.ad.grad_replaced
    def commit_unit():
        commit()

    @fs.ad.grad_for(commit_unit)
    def commit_unit_grad():
        commit.grad()

    def step(t):
        advance()
        commit_unit()

    with fs.ad.Tape(sim.loss):
        sim.init()
        info = fs.ad.checkpoint(step, STEPS, every=EVERY, state=list(sim.state))
        sim.final_loss()
    assert info.n_snapshots == STEPS // EVERY
    for g, ref in zip(_grads(sim.inputs), reference):
        np.testing.assert_allclose(g, ref, rtol=1e-12)

