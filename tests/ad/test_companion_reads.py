"""Companion reads of an updated element (`p[i] += v[i] * dt; v[i] += a[i] * dt`): a read whose
value only reaches field writes linearly, with coefficients that carry no derivative, before a
store or atomic add of the same element in the same iteration. Gradients against float64
central differences, by hand and on a Tape; the nonlinear neighbours stay refused at their line."""
import numpy as np
import pytest

import fieldsim as fs

from .chain_harness import Chain, N, assert_matches


def _projectile(x, v, p, y, c):
    @fs.kernel
    def step():
        for i in range(N):
            p[i] += v[i] * 0.1
            v[i] += x[i] * 0.2
    return step


def _copy_then_damp(x, v, p, y, c):
    @fs.kernel
    def step():
        for i in range(N):
            y[i] = 1.5 * v[i] + p[i]
            fs.atomic_add(p[i], -v[i] / 4.0)
            v[i] *= 0.9
    return step


def _docs_copy(x, v, p, y, c):
    # the docs' Rule 1 example with a copy: `a[i] = b[i]; b[i] += 100`
    @fs.kernel
    def step():
        for i in range(N):
            y[i] = v[i]
            v[i] += 100.0 * x[i]
    return step


def _scaled_subtract(x, v, p, y, c):
    @fs.kernel
    def step():
        for i in range(N):
            s = v[i]
            v[i] -= 0.1 * s
    return step


def _copy_in_branch(x, v, p, y, c):
    @fs.kernel
    def step():
        for i in range(N):
            if i % 2 == 0:
                y[i] = v[i] * 2.0
            v[i] = fs.sin(x[i])
    return step


def _serial_inner_loop(x, v, p, y, c):
    @fs.kernel
    def step():
        for i in range(N):
            for k in range(3):
                p[i] += v[i] * 0.2
                v[i] *= 0.5
    return step


def _store_then_scale(x, v, p, y, c):
    # a store, then an in-place linear update of the same element (Rule 2 lets it follow)
    @fs.kernel
    def step():
        for i in range(N):
            y[i] = v[i] * 3.0 + p[i]
            y[i] *= 0.5
            y[i] += x[i]
    return step


SHAPES = [_projectile, _copy_then_damp, _docs_copy, _scaled_subtract, _copy_in_branch,
          _serial_inner_loop, _store_then_scale]


@pytest.mark.parametrize("make", SHAPES)
@pytest.mark.parametrize("launches", [1, 3])
def test_tape_matches_central_differences(make, launches):
    chain = Chain(make, y_from_x=False)
    assert_matches(chain.tape_gradient(launches), chain.differences(launches))


@pytest.mark.parametrize("make", SHAPES)
def test_by_hand_matches_central_differences(make):
    chain = Chain(make, y_from_x=False)
    assert_matches(chain.hand_gradient(1), chain.differences(1))


def _nonlinear(x, v, p, y, c):
    @fs.kernel
    def step():
        for i in range(N):
            p[i] += fs.sin(v[i])
            v[i] += x[i] * 0.2
    return step


def _active_factor(x, v, p, y, c):
    @fs.kernel
    def step():
        for i in range(N):
            p[i] += v[i] * x[i]
            v[i] *= 0.9
    return step


def _other_element(x, v, p, y, c):
    @fs.kernel
    def step():
        for i in range(N):
            p[i] += v[(i + 1) % N] * 0.1
            v[i] *= 0.9
    return step


def _through_condition(x, v, p, y, c):
    @fs.kernel
    def step():
        for i in range(N):
            if v[i] > 0.3:
                p[i] += 1.0
            v[i] *= 0.9
    return step


def _every_thread_adds(x, v, p, y, c):
    # the read's element is added to by every thread: its adjoint could run before another
    # thread's add reads the gradient (Rule 2 on the update)
    @fs.kernel
    def step():
        for i in range(N):
            y[i] = v[0] * 0.5
            v[0] += x[i]
    return step


def _neighbour_adds(x, v, p, y, c):
    # thread i - 1 adds to the element thread i read
    @fs.kernel
    def step():
        for i in range(N):
            y[i] = v[i] * 0.5
            v[i] += x[i]
            v[(i + 1) % N] += 1.0
    return step


def _store_then_active_scale(x, v, p, y, c):
    @fs.kernel
    def step():
        for i in range(N):
            y[i] = v[i] * 3.0
            y[i] *= x[i]
    return step


@pytest.mark.parametrize("make, line", [
    (_every_thread_adds, "v[0] += x[i]"), (_neighbour_adds, "v[(i + 1) % N] += 1.0"),
    (_store_then_active_scale, "y[i] *= x[i]"),
    (_nonlinear, "p[i] += fs.sin(v[i])"), (_active_factor, "p[i] += v[i] * x[i]"),
    (_other_element, "p[i] += v[(i + 1) % N] * 0.1"), (_through_condition, "if v[i] > 0.3:")])
def test_neighbours_stay_refused(make, line):
    Chain(make, y_from_x=False).assert_refused_at(line)


def test_vector_fields_through_a_func_match_central_differences():
    # `x[i] += A @ v[i] * dt` in a func, a whole-vector update, then one component's update
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    x0, x, v = (fs.Vector.field(2, float, 3, needs_grad=True) for _ in range(3))
    loss = fs.field(float, (), needs_grad=True)
    a = fs.Matrix([[0.5, 0.1], [-0.2, 0.3]])

    @fs.func
    def drift(i):
        x[i] += a @ v[i] * 0.1

    @fs.kernel
    def init():
        for i in range(3):
            v[i] = x0[i] * 2.0
            x[i] = x0[i] ** 2

    @fs.kernel
    def step():
        for i in range(3):
            drift(i)
            v[i] = 0.9 * v[i] + fs.Vector([0.0, -0.1])
            v[i][0] *= 0.5

    @fs.kernel
    def final():
        for i in range(3):
            loss[None] += fs.sin(x[i]).sum() + (v[i] ** 2).sum()

    def forward():
        init()
        for _ in range(3):
            step()
        final()

    def value(start):
        x0.from_numpy(start)
        loss[None] = 0.0
        forward()
        return loss[None]

    start, h = np.array([[0.3, -0.2], [0.7, 0.1], [-0.4, 0.5]]), 1e-6
    fd = np.zeros_like(start)
    for k in np.ndindex(start.shape):
        e = np.zeros_like(start)
        e[k] = h
        fd[k] = (value(start + e) - value(start - e)) / (2 * h)
    x0.from_numpy(start)
    loss[None] = 0.0
    with fs.ad.Tape(loss):
        forward()
    np.testing.assert_allclose(x0.grad.to_numpy(), fd, rtol=1e-6, atol=1e-8)
