"""The simulation examples under fieldsim: quick runs, finite differences, gradcheck, access rules.

Every script in examples/simulation/ runs its `--quick` mode (outputs under tmp_path) and must
meet the statement of examples/simulation/README.md:
* diffmpm, mass_spring: the robot's displacement to the right grows by more than 0.01;
* billiards, wave: the final loss is below 0.2 x the initial loss;
* mpm88: the blocks fall (and match a float64 NumPy MLS-MPM step by step);
* ad_gravity: the AD forces match the NumPy formula, and energy is conserved.
Each optimisation example's Tape gradient of one parameter agrees with a float64 central finite
difference of the same simulation (`fd_check`), and `fs.ad.gradcheck` passes on a small Tape
run of every example that uses a Tape (mpm88, forward only, is refused on a Tape, with the
reason). diffmpm's checkpointed substep (`grad_replaced`/`grad_for`) is accepted by the access
checker, and the same substep without the custom backward is refused (its grid is overwritten
every substep).
"""
import math
import os

import numpy as np
import pytest

import fieldsim as fs


def _quick(load_example, name, tmp_path, *extra):
    m = load_example(name)
    out = tmp_path / name
    r = m.main(["--quick", "--out", str(out)] + list(extra))
    frames = r["frames"]
    assert len(frames) >= 4, name
    for path in frames + [r["gif"]] + ([r["loss_curve"]] if "loss_curve" in r else []):
        assert os.path.getsize(path) > 100, path
    if "losses" in r:
        assert np.all(np.isfinite(r["losses"])), r["losses"]
    return m, r


# ---- quick runs: the README's statements -----------------------------------------------------
@pytest.mark.parametrize("name", ["diffmpm", "mass_spring"])
def test_robot_quick_run_moves_right(load_example, tmp_path, name):
    # README: the robot losses are minus an absolute position; the fair measure is the
    # displacement, which must grow by more than 0.01 (Taichi: diffmpm -0.0005 -> +0.024,
    # mass_spring -0.010 -> +0.092).
    _, r = _quick(load_example, name, tmp_path)
    assert r["final_displacement"] > r["initial_displacement"] + 0.01, r["losses"]


@pytest.mark.parametrize("name", ["billiards", "wave"])
def test_optimisation_quick_run_reduces_loss(load_example, tmp_path, name):
    # README: billiards and wave satisfy final_loss < 0.2 * initial_loss.
    m, r = _quick(load_example, name, tmp_path)
    assert r["final_loss"] < 0.2 * r["initial_loss"], r["losses"]
    if name == "wave":
        assert os.path.getsize(r["comparison"]) > 100
    else:  # the loss is |x_target(T) - goal|^2, as returned
        d = np.asarray(r["target_final"], np.float64) - np.array(m.GOAL)
        assert math.isclose(float(d @ d), r["final_loss"], rel_tol=1e-4)


def test_mpm88_quick_run_falls(load_example, tmp_path):
    m, r = _quick(load_example, "mpm88", tmp_path)
    assert r["finite"]
    pos0, _, _ = m.initial_state(2048, seed=0)  # the quick size, the default seed
    # 100 substeps of 2e-4 s: gravity and the blocks' initial velocities (mean about -0.5 in y)
    # lower the mean height by about 0.01
    assert r["mean_y"] < float(pos0[:, 1].mean()) - 0.005


def test_ad_gravity_quick_run(load_example, tmp_path):
    _, r = _quick(load_example, "ad_gravity", tmp_path)
    assert r["finite"]
    # f32 Tape forces vs the float64 NumPy formula: f32 rounding of 32 pair terms is ~1e-6
    assert r["grad_rel_err"] < 1e-5
    assert math.isclose(r["initial_U"], r["initial_U_numpy"], rel_tol=1e-5)
    # symplectic Euler with the AD forces conserves the total energy (a sign or factor error
    # in the forces would not): 20 steps of dt = 1e-3 drift by ~0.2 %
    e = r["energies"]
    assert abs(e[-1] - e[0]) < 0.01 * abs(e[0]), e


# ---- mpm88 against a float64 NumPy implementation ---------------------------------------------
def _mpm88_numpy_substep(m, x, v, C, J):
    """One MLS-MPM substep of mpm88.py, written with NumPy (float64)."""
    g = m.n_grid
    Xp = x * m.inv_dx
    base = (Xp - 0.5).astype(np.int64)
    fx = Xp - base
    w = [0.5 * (1.5 - fx) ** 2, 0.75 - (fx - 1.0) ** 2, 0.5 * (fx - 0.5) ** 2]
    pressure = -m.DT * 4.0 * m.inv_dx ** 2 * m.p_vol * m.BULK * (J - 1.0)
    affine = pressure[:, None, None] * np.eye(2) + m.p_mass * C
    grid_v, grid_m = np.zeros((g, g, 2)), np.zeros((g, g))
    for i in range(3):
        for j in range(3):
            dpos = (np.array([i, j]) - fx) * m.dx
            weight = w[i][:, 0] * w[j][:, 1]
            cell = (base[:, 0] + i, base[:, 1] + j)
            mom = m.p_mass * v + np.einsum("pab,pb->pa", affine, dpos)
            np.add.at(grid_v, cell, weight[:, None] * mom)
            np.add.at(grid_m, cell, weight * m.p_mass)
    has = grid_m > 0
    vel = np.where(has[..., None], grid_v / np.where(has, grid_m, 1.0)[..., None], 0.0)
    vel[..., 1] -= m.DT * m.GRAVITY
    ii, jj = np.meshgrid(np.arange(g), np.arange(g), indexing="ij")
    vx, vy = vel[..., 0], vel[..., 1]
    vx[(ii < m.BOUND) & (vx < 0)] = 0.0
    vx[(ii > g - m.BOUND) & (vx > 0)] = 0.0
    vy[(jj < m.BOUND) & (vy < 0)] = 0.0
    vy[(jj > g - m.BOUND) & (vy > 0)] = 0.0
    grid_v = np.where(has[..., None], vel, grid_v)
    new_v, new_C = np.zeros_like(v), np.zeros_like(C)
    for i in range(3):
        for j in range(3):
            dpos = (np.array([i, j]) - fx) * m.dx
            weight = w[i][:, 0] * w[j][:, 1]
            g_v = grid_v[base[:, 0] + i, base[:, 1] + j]
            new_v += weight[:, None] * g_v
            new_C += 4.0 * m.inv_dx ** 2 * weight[:, None, None] * np.einsum("pa,pb->pab", g_v, dpos)
    return x + m.DT * new_v, new_v, new_C, J * (1.0 + m.DT * np.trace(new_C, axis1=1, axis2=2))


def test_mpm88_matches_numpy_reference(load_example):
    m = load_example("mpm88")
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    m.setup(1024, 32)
    m.reset()
    x, v = m.x.to_numpy(), m.v.to_numpy()
    C, J = np.zeros((1024, 2, 2)), np.ones(1024)
    for _ in range(20):
        m.substep()
        x, v, C, J = _mpm88_numpy_substep(m, x, v, C, J)
    # both float64; only the order of the atomic adds differs (~1e-16 relative per step)
    np.testing.assert_allclose(m.x.to_numpy(), x, rtol=0, atol=1e-12)
    np.testing.assert_allclose(m.v.to_numpy(), v, rtol=0, atol=1e-10)
    np.testing.assert_allclose(m.J.to_numpy(), J, rtol=0, atol=1e-10)
    assert np.abs(v - m.initial_state(1024)[1]).max() > 1e-3  # the state did move


# ---- float64 central finite differences of the whole simulation -------------------------------
# fd_check(param_index, eps) -> (ad, fd), in float64. The central difference's truncation error is
# eps^2 |L'''| / 6 and its rounding error about 1e-16 |L| / eps: both below 1e-6 of the
# gradient here (measured under Taichi and fieldsim: 1e-12 to 2e-6). A wrong adjoint (a missing
# or misweighted term) is off by far more, so rtol = 1e-5 (1e-4 for billiards: its stiff contact
# makes L''' large, measured 2e-6 at eps = 1e-6) leaves margin and still fails on real errors.
@pytest.mark.parametrize("name, index, eps, rtol", [
    ("diffmpm", 5, 1e-4, 1e-5),        # W[1, 1]
    ("mass_spring", 500, 1e-4, 1e-5),  # a weight of the output layer w2
    ("billiards", 0, 1e-6, 1e-4),      # the cue's x speed
    ("wave", 37, 1e-4, 1e-5),          # an interior cell of the initial displacement
])
def test_fd_check(load_example, name, index, eps, rtol):
    m = load_example(name)
    ad, fd = m.fd_check(index, eps)
    assert abs(fd) > 1e-7, (name, fd)  # the parameter does matter: the check is not vacuous
    assert abs(ad - fd) <= rtol * abs(fd), (name, ad, fd)


# ---- fs.ad.gradcheck on a small Tape run of each example -----------------------------------------
def _gradcheck(fn, inputs, loss, reset=None, eps=None):
    """gradcheck with tolerances scaled to the gradient: rtol 1e-5 and atol 1e-6 x max|grad|.
    In float64 (eps 1e-6, or 1e-4 where given) the finite differences agree with a correct
    adjoint to ~1e-7 relative (gradcheck also allows for the loss's rounding); the default
    atol=1e-4 would pass anything for losses whose gradients are ~1e-6, as diffmpm's are.
    `reset()` zeroes the example's += accumulators (outside the Tape, as the example does)."""
    if reset:
        reset()
    with fs.ad.Tape(loss=loss):
        fn()
    scale = max(float(np.abs(f.grad.to_numpy()).max()) for f in inputs)
    assert scale > 0
    if reset:
        reset()
    report = fs.ad.gradcheck(fn, inputs, eps=eps, rtol=1e-5, atol=1e-6 * scale, loss=loss)
    assert report.ok and report.culprit is None
    for c in report.fields:  # the tolerance is far below the gradients being compared
        assert np.abs(c.ad).max() > 100 * 1e-6 * scale, c.name
    return report


def _run(forward, loss):
    def fn():
        forward()
        return loss
    return fn


def test_gradcheck_wave(load_example):
    m = load_example("wave")
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    m.setup(8, 6)
    m.initial.from_numpy(np.random.default_rng(0).normal(0, 0.3, (6, 6)))
    report = _gradcheck(_run(m.forward, m.loss), [m.initial], m.loss)
    assert report.fields[0].mode == "elements"  # all 36 cells


def test_gradcheck_billiards(load_example):
    m = load_example("billiards")
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    m.setup(False, 200)  # 3 balls; the cue strikes ball 1, which strikes the target by t = 200
    m.set_params(np.array(m.CUE_V0 + m.CUE_X0))
    _gradcheck(_run(m.forward, m.loss), [m.init_v, m.init_x], m.loss, reset=m.clear_impulse)


def test_gradcheck_mass_spring(load_example):
    m = load_example("mass_spring")
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    m.setup(30)
    m.set_params(m.initial_params(0))
    report = _gradcheck(_run(m.forward, m.loss), [m.w1, m.b1, m.w2, m.b2], m.loss,
                        reset=m.clear_accumulators)
    assert [c.mode for c in report.fields] == ["directions", "elements", "directions", "elements"]


def test_gradcheck_ad_gravity(load_example):
    m = load_example("ad_gravity")
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    m.setup(8)
    m.x.from_numpy(m.initial_state(8)[0].astype(np.float64))
    _gradcheck(_run(m.compute_U, m.U), [m.x], m.U)


def _diffmpm(load_example, steps=32):
    m = load_example("diffmpm")
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    m.setup(64, steps)
    m.set_params(*m.initial_params(0))
    return m


def test_gradcheck_diffmpm_accepts_checkpointed_substep(load_example):
    # the Tape records `advance` (grad_replaced) once per substep; the checker accepts it and
    # its grad_for backward (recompute the grid, then the adjoints) matches finite differences
    m = _diffmpm(load_example)
    _gradcheck(_run(m.forward, m.loss), [m.weights, m.bias], m.loss, eps=1e-4)


def test_gradcheck_catches_a_wrong_custom_backward(load_example):
    # the same substep with a backward that does not recompute the grid: the adjoints then use
    # the last substep's grid, and gradcheck must refuse it (so the check above can fail)
    m = _diffmpm(load_example, steps=8)

    @fs.ad.grad_replaced
    def advance(s):
        m.clear_grid()
        m.p2g(s)
        m.grid_op()
        m.g2p(s)

    @fs.ad.grad_for(advance)
    def advance_grad(s):
        m.g2p.grad(s)
        m.grid_op.grad()
        m.p2g.grad(s)

    def fn():
        m.init_state()
        for s in range(m.steps):
            m.compute_actuation(s)
            advance(s)
        m.compute_loss()
        return m.loss

    with pytest.raises(fs.ad.GradcheckError) as info:
        fs.ad.gradcheck(fn, [m.weights, m.bias], eps=1e-4, rtol=1e-3, atol=0)
    culprit = info.value.report.culprit  # narrowed to the custom backward
    assert culprit is not None and "'advance'" in culprit.title and "advance_grad" in culprit.title


def test_diffmpm_substep_without_checkpointing_is_refused(load_example):
    # diffmpm's kernels launched straight on the Tape, without grad_replaced: the second
    # substep's clear_grid overwrites grid_v_in, which grid_op read in the first substep
    m = _diffmpm(load_example, steps=4)
    with pytest.raises(fs.AccessRuleError) as info, fs.ad.Tape(loss=m.loss):
        m.init_state()
        for s in range(2):
            m.compute_actuation(s)
            m.clear_grid()
            m.p2g(s)
            m.grid_op()
            m.g2p(s)
        m.compute_loss()
    msg = str(info.value)
    assert "Rule 1" in msg
    assert "'grid_v_in'" in msg
    assert "'clear_grid'" in msg and "'grid_op'" in msg
    assert "diffmpm.py" in msg
    assert "grad_replaced" in msg  # the advice: checkpoint the step


def test_mpm88_is_forward_only_and_the_tape_says_why(load_example):
    # mpm88 is not differentiable as written (as in Taichi): update_grid normalises grid_v in
    # place. The examples above are the differentiable ones; on a Tape this one is refused
    # before it runs, naming the kernel, the field and both lines, instead of giving wrong
    # gradients.
    m = load_example("mpm88")
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    m.setup(256, 32)
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    fs.root.lazy_grad()
    m.reset()
    with pytest.raises(fs.AccessRuleError) as info, fs.ad.Tape(loss=loss):
        m.substep()
    msg = str(info.value)
    assert "'update_grid'" in msg and "'grid_v'" in msg and "mpm88.py" in msg
