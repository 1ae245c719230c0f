"""`fs.ad.jacobian` (reverse and forward mode), `jacobian_fd`, `plot_jacobian`.

Two independent environments in one kernel (as in Warp's Jacobian example): each is a particle
on a damped spring to its own anchor, with its own stiffness, integrated for a few steps. Each
output depends only on its own environment's inputs, so the Jacobian is block-diagonal.
"""
import importlib

import numpy as np
import pytest

import fieldsim as fs

ENVS, STEPS, DT = 2, 6, 0.1


def _springs():
    v0 = fs.Vector.field(2, float, shape=ENVS, needs_grad=True, name="v0")
    k = fs.field(float, shape=ENVS, needs_grad=True, name="k")
    anchor = fs.Vector.field(2, float, shape=ENVS, name="anchor")
    x = fs.Vector.field(2, float, shape=(STEPS + 1, ENVS), needs_grad=True, name="x")
    v = fs.Vector.field(2, float, shape=(STEPS + 1, ENVS), needs_grad=True, name="v")
    x_out = fs.Vector.field(2, float, shape=ENVS, needs_grad=True, name="x_out")
    speed = fs.field(float, shape=ENVS, needs_grad=True, name="speed")
    v0.from_numpy(np.array([[0.5, -0.2], [-0.3, 0.8]]))
    k.from_numpy(np.array([2.0, 5.0]))
    anchor.from_numpy(np.array([[1.0, 0.0], [0.0, 1.0]]))

    @fs.kernel
    def init():
        for e in range(ENVS):
            x[0, e] = fs.Vector([0.0, 0.0])
            v[0, e] = v0[e]

    @fs.kernel
    def advance(t: int):
        for e in range(ENVS):
            d = x[t, e] - anchor[e]
            f = -k[e] * (d.norm() - 0.5) * d.normalized() - 0.1 * v[t, e]
            v[t + 1, e] = v[t, e] + DT * f
            x[t + 1, e] = x[t, e] + DT * v[t + 1, e]

    @fs.kernel
    def outputs():
        for e in range(ENVS):
            x_out[e] = x[STEPS, e]
            speed[e] = v[STEPS, e].norm()

    def fn():
        init()
        for t in range(STEPS):
            advance(t)
        outputs()

    return fn, [v0, k], [x_out, speed]


def _env_of_columns():
    return np.array([0, 0, 1, 1, 0, 1])  # v0[0].xy, v0[1].xy, k[0], k[1]


def _env_of_rows():
    return np.array([0, 0, 1, 1, 0, 1])  # x_out[0].xy, x_out[1].xy, speed[0], speed[1]


def test_reverse_and_forward_match_finite_differences_and_are_block_diagonal(tmp_path):
    fn, inputs, outputs = _springs()
    before = [f.to_numpy() for f in inputs]
    J_rev = fs.ad.jacobian(fn, inputs, outputs, mode="reverse")
    J_fwd = fs.ad.jacobian(fn, inputs, outputs, mode="forward")
    J_fd = fs.ad.jacobian_fd(fn, inputs, outputs)
    assert J_rev.shape == J_fwd.shape == J_fd.shape == (6, 6)
    np.testing.assert_allclose(J_rev, J_fd, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(J_fwd, J_rev, rtol=1e-12, atol=1e-14)
    cross = _env_of_rows()[:, None] != _env_of_columns()[None, :]
    assert np.all(J_rev[cross] == 0) and np.all(J_fwd[cross] == 0)
    assert np.count_nonzero(J_rev[~cross]) == np.count_nonzero(~cross)
    for f, b in zip(inputs, before):  # inputs untouched
        np.testing.assert_array_equal(f.to_numpy(), b)

    path = fs.ad.plot_jacobian(J_rev, str(tmp_path / "J.png"), title="two springs",
                               inputs=inputs, outputs=outputs)
    with open(path, "rb") as fh:
        assert fh.read(8) == b"\x89PNG\r\n\x1a\n"


def test_auto_picks_the_mode_with_fewer_runs(monkeypatch):
    jac = importlib.import_module("fieldsim.ad.jacobian")  # the package attribute is the function
    fn, inputs, outputs = _springs()
    used = []
    real_fwd, real_rev = jac._forward, jac._reverse
    monkeypatch.setattr(jac, "_forward", lambda *a: (used.append("forward"), real_fwd(*a))[1])
    monkeypatch.setattr(jac, "_reverse", lambda *a: (used.append("reverse"), real_rev(*a))[1])
    fs.ad.jacobian(fn, inputs[1:], outputs)  # 2 inputs, 6 outputs: forward
    fs.ad.jacobian(fn, inputs, outputs[1:])  # 6 inputs, 2 outputs: reverse
    assert used == ["forward", "reverse"]


def test_single_output_row_equals_the_tape_gradient():
    fn, inputs, outputs = _springs()
    J = fs.ad.jacobian(fn, inputs, [outputs[1]], mode="reverse")
    speed = outputs[1]
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.kernel
    def first_speed():
        loss[None] += speed[0]

    with fs.ad.Tape(loss):
        fn()
        first_speed()
    np.testing.assert_allclose(J[0], np.concatenate([f.grad.to_numpy().ravel() for f in inputs]),
                               rtol=1e-12)


def test_reverse_mode_needs_gradients():
    fn, inputs, outputs = _springs()
    plain = fs.field(float, shape=2, name="plain")
    with pytest.raises(ValueError, match="'plain'"):
        fs.ad.jacobian(fn, [plain], outputs, mode="reverse")
    with pytest.raises(ValueError, match="mode"):
        fs.ad.jacobian(fn, inputs, outputs, mode="sideways")


def test_fields_outside_the_program_state_are_named():
    fn, inputs, outputs = _springs()
    with pytest.raises(fs.FieldsimError, match="'v0.grad' is not in this copy of the program state"):
        fs.ad.jacobian_fd(fn, [inputs[0].grad], outputs)  # a gradient twin is not perturbed
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    with pytest.raises(RuntimeError, match="'v0' belongs to an earlier fs.init"):
        fs.ad.jacobian_fd(fn, [inputs[0]], outputs)
