"""Reverse mode through pairwise contact impulses (the shape of DiffTaichi's billiards scene).

A `@fs.func` called from two loops over `j < i` and `j > i` computes, only for close and
approaching pairs, a normalised contact direction, an impulse and a time-of-impact position
correction clamped with `min`, and accumulates both into the next time step with `+=`.
The billiards program asks for `ti.init(flatten_if=True)`, with which Taichi 1.7.4 returns NaN
gradients for this shape (its reverse kernel loads values before they are stored); fieldsim
accepts the option without effect. The gradient is checked in f64 against central differences,
with and without the option.
"""
import warnings

import numpy as np
import pytest

from ._env import fs, init_fs
from .fd import check_tape_against_fd

pytestmark = pytest.mark.fs_init(fp="f64")

N_BALLS, STEPS, DT, RADIUS, ELASTICITY = 3, 60, 0.01, 0.03, 0.8


def _scene():
    x, v, x_inc, imp = (fs.Vector.field(2, float, shape=(STEPS, N_BALLS), needs_grad=True) for _ in range(4))
    x0, v0 = (fs.Vector.field(2, float, shape=(), needs_grad=True) for _ in range(2))
    loss = fs.field(float, shape=(), needs_grad=True)
    return x, v, x_inc, imp, x0, v0, loss


@pytest.mark.parametrize("flatten_if", [False, True])
def test_gradient_through_conditional_contact_impulses_matches_finite_differences(flatten_if):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # fieldsim: flatten_if is accepted without effect
        init_fs("f64", flatten_if=flatten_if)
    x, v, x_inc, imp, x0, v0, loss = _scene()
    rest = np.array([[0.3, 0.51], [0.5, 0.485]])

    @fs.func
    def pair(t, i, j):
        dv = fs.Vector([0.0, 0.0])
        dx = fs.Vector([0.0, 0.0])
        sep = (x[t, i] + DT * v[t, i]) - (x[t, j] + DT * v[t, j])
        d = sep.norm()
        if d < 2 * RADIUS:
            n = sep.normalized()
            closing = n.dot(v[t, i] - v[t, j])
            if closing < 0:
                dv = -(1 + ELASTICITY) * 0.5 * closing * n
                toi = (d - 2 * RADIUS) / fs.min(-1e-3, closing)
                dx = fs.min(toi - DT, 0.0) * dv
        x_inc[t + 1, i] += dx
        imp[t + 1, i] += dv

    @fs.kernel
    def collide(t: fs.i32):
        for i in range(N_BALLS):
            for j in range(i):
                pair(t, i, j)
        for i in range(N_BALLS):
            for j in range(i + 1, N_BALLS):
                pair(t, i, j)

    @fs.kernel
    def advance(t: fs.i32):
        for i in range(N_BALLS):
            v[t, i] = v[t - 1, i] + imp[t, i]
            x[t, i] = x[t - 1, i] + DT * v[t, i] + x_inc[t, i]

    @fs.kernel
    def start():
        x[0, 0] = x0[None]
        v[0, 0] = v0[None]

    @fs.kernel
    def objective():
        loss[None] = (x[STEPS - 1, N_BALLS - 1] - fs.Vector([0.9, 0.45])).norm_sqr()

    def reset():
        imp.fill(0)
        x_inc.fill(0)
        xs = x.to_numpy()
        xs[0, 1:] = rest
        x.from_numpy(xs)

    def run():
        start()
        for t in range(1, STEPS):
            collide(t - 1)
            advance(t)
        objective()

    x0.from_numpy(np.array([0.1, 0.5]))
    v0.from_numpy(np.array([1.0, 0.03]))
    grads = check_tape_against_fd(fs, {"x0": x0, "v0": v0}, loss, run, reset=reset)
    # both contacts happened: the last ball moved, and every input reaches the loss
    assert x.to_numpy()[STEPS - 1, N_BALLS - 1, 0] > rest[1, 0] + 0.05
    assert np.all(np.isfinite(grads["v0"])) and np.all(np.abs(grads["v0"]) > 1e-3)
