"""Gradients through today's kernel-semantics changes (u1 flags, vector comparisons,
both-sides conditional expressions, pow(x, 0.5) as sqrt), against float64 central differences."""
import numpy as np
import pytest

import fieldsim as fs

from .fd import assert_grad_close, central_differences

# no entry sits on a branch threshold, so the central differences stay on one side
X0 = np.array([0.7, -0.3, 0.23, 0.9])


def _setup():
    x = fs.field(fs.f64, 4, needs_grad=True)
    side = fs.field(fs.f64, 4, needs_grad=True)
    loss = fs.field(fs.f64, (), needs_grad=True)
    x.from_numpy(X0)
    return x, side, loss


def _check_tape(x, side, loss, run):
    def evaluate():
        side.fill(0)
        loss[None] = 0
        run()
        return loss[None]

    expected = central_differences(evaluate, {"x": x})["x"]
    side.fill(0)
    loss[None] = 0
    with fs.ad.Tape(loss):
        run()
    assert_grad_close(x.grad.to_numpy(), expected, "f64", "d loss / d x")


@pytest.mark.fs_init(fp="f64")
def test_false_flag_set_in_a_loop_steers_a_differentiable_branch():
    x, side, loss = _setup()

    @fs.kernel
    def run():
        for i in x:
            hit = False
            s = 0.0
            for j in range(3):
                if not hit and x[i] * (j + 1) > 0.5:
                    hit = True
                    s = x[i] * (j + 1)
            loss[None] += fs.sin(s) + (2.0 if hit else 1.0) * x[i] + hit * x[i] * x[i]

    _check_tape(x, side, loss, run)


@pytest.mark.fs_init(fp="f64")
def test_conditional_expression_runs_both_sides_on_a_tape():
    x, side, loss = _setup()

    @fs.func
    def tally(i):
        side[i] += x[i] * x[i]
        return x[i] * 3.0

    @fs.kernel
    def pick():
        for i in x:
            loss[None] += tally(i) if x[i] > 0 else -x[i]

    @fs.kernel
    def total():
        for i in x:
            loss[None] += fs.sin(side[i])

    def run():
        pick()
        total()

    _check_tape(x, side, loss, run)
    # the false side's call ran too: side[1] holds x[1]**2 although x[1] < 0
    np.testing.assert_allclose(side.to_numpy(), X0 * X0)


@pytest.mark.fs_init(fp="f64")
def test_vector_comparisons_mask_a_loss():
    x, _, loss = _setup()
    v = fs.Vector.field(3, fs.f64, 4, needs_grad=True)
    v.from_numpy(np.array([[0.4, -0.7, 0.1], [-0.2, -0.3, -0.45], [0.6, 0.3, -0.9], [0.05, 0.8, -0.35]]))

    @fs.kernel
    def run():
        for i in v:
            m = v[i] > 0.0
            loss[None] += (v[i] * m).sum() * x[i] + x[i] * m.sum()
            if (v[i] > 0.2).any():
                loss[None] += v[i].norm_sqr() * x[i]
            if (v[i] > -0.5).all():
                loss[None] += x[i] * x[i]

    def evaluate():
        loss[None] = 0
        run()
        return loss[None]

    expected = central_differences(evaluate, {"x": x, "v": v})
    loss[None] = 0
    with fs.ad.Tape(loss):
        run()
    assert_grad_close(x.grad.to_numpy(), expected["x"], "f64", "d loss / d x")
    assert_grad_close(v.grad.to_numpy(), expected["v"], "f64", "d loss / d v")


@pytest.mark.fs_init(fp="f64")
def test_pow_half_gradient_near_zero_matches_sqrt():
    y = fs.field(fs.f64, (), needs_grad=True)
    out = fs.field(fs.f64, (), needs_grad=True)

    @fs.kernel
    def by_pow():
        out[None] = y[None] ** 0.5

    @fs.kernel
    def by_sqrt():
        out[None] = fs.sqrt(y[None])

    for z in (1e-300, 1e-12, 0.04):
        grads = []
        for run in (by_pow, by_sqrt):
            y[None] = z
            with fs.ad.Tape(out):
                run()
            grads.append(y.grad[None])
        np.testing.assert_allclose(grads, [0.5 / np.sqrt(z)] * 2, rtol=1e-12)
    y[None] = 0.0
    with fs.ad.Tape(out):
        by_pow()
    assert out[None] == 0.0 and y.grad[None] == np.inf


@pytest.mark.fs_init(fp="f64")
def test_forward_mode_through_a_flag_and_pow_half():
    x, _, loss = _setup()

    @fs.kernel
    def run():
        for i in x:
            hit = False
            if x[i] > 0.1:
                hit = True
            loss[None] += fs.select(hit, x[i] ** 0.5, x[i] * x[i])

    seed = np.array([0.3, -0.2, 0.5, 1.0])

    def at(values):
        x.from_numpy(values)
        loss[None] = 0
        run()
        return loss[None]

    h = 1e-6
    expected = (at(X0 + h * seed) - at(X0 - h * seed)) / (2 * h)
    x.from_numpy(X0)
    loss[None] = 0
    with fs.ad.FwdMode(loss=loss, param=x, seed=seed.tolist()):
        run()
    np.testing.assert_allclose(loss.dual[None], expected, rtol=1e-7)
