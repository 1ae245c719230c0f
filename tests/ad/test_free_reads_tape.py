"""Free reads on a Tape (API.md, "the static checker"): a read whose value reaches only the
values of field writes, affinely with coefficients that carry no derivative (`x[i] += dt *
v[i]`), is not logged on the Tape, so a later launch may update or overwrite its element
(`v[i] *= damping`, `v[i] = a * v[i] + b`, `v[i] = f(y[i])`): that launch's adjoint runs first,
and the read's adjoint (`v.grad[i] += dt * g`) uses no value of `v`. Gradients against float64
central differences, on a Tape and by hand; the neighbours whose adjoint needs the value stay
refused at their line."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import AccessRuleError

from .chain_harness import X0, Chain, N, assert_matches


def _move(p, v, factor=0.1):
    @fs.kernel
    def move():
        for i in range(N):
            p[i] += factor * v[i]
    return move


def _damped(x, v, p, y, c):
    @fs.kernel
    def damp():
        for i in range(N):
            v[i] *= 0.9
    return [_move(p, v), damp]


def _affine(x, v, p, y, c):
    # a factor from a field without gradient, and an offset that carries a derivative
    @fs.kernel
    def move():
        for i in range(N):
            p[i] = p[i] + c[i] * v[i] - 0.2 * v[i]

    @fs.kernel
    def update():
        for i in range(N):
            v[i] = 0.7 * v[i] + fs.sin(y[i])
    return [move, update]


def _overwritten(x, v, p, y, c):
    # the later launch overwrites the element with a value that does not depend on it
    @fs.kernel
    def copy():
        for i in range(N):
            y[i] = v[i] / 3.0 + y[i]

    @fs.kernel
    def reset():
        for i in range(N):
            v[i] = fs.sin(p[i])
    return [copy, reset]


def _cloth_like(x, v, p, y, c):
    # the cloth's update_positions / compute_forces (COMPAT gh-refused2): `v += dt * f`,
    # `x += dt * v`, then the next step stores `f` and damps `v`
    @fs.kernel
    def forces():
        for i in range(N):
            y[i] = -0.3 + 0.1 * c[i]
            v[i] *= 0.95
        for i in range(N):
            y[i] += fs.sin(x[i]) * 0.2

    @fs.kernel
    def positions():
        for i in range(N):
            if i == 0:
                continue
            v[i] += 0.1 * y[i]
            p[i] += 0.1 * v[i]
    return [forces, positions]


SHAPES = [_damped, _affine, _overwritten, _cloth_like]


@pytest.mark.parametrize("make", SHAPES)
@pytest.mark.parametrize("launches", [1, 3])
def test_tape_matches_central_differences(make, launches):
    chain = Chain(make)
    assert_matches(chain.tape_gradient(launches), chain.differences(launches))


@pytest.mark.parametrize("make", SHAPES)
def test_by_hand_matches_central_differences(make):
    chain = Chain(make)
    assert_matches(chain.hand_gradient(2), chain.differences(2))


def test_same_tape_twice_gives_the_same_gradient():
    # the second Tape is checked by the memo (`tape_memo`): the same verdicts, the same values
    chain = Chain(_cloth_like)
    fd = chain.differences(2)
    for _ in range(2):
        assert_matches(chain.tape_gradient(2), fd)


def _nonlinear(x, v, p, y, c):
    @fs.kernel
    def move():
        for i in range(N):
            p[i] += fs.sin(v[i])
    return [move, _damped(x, v, p, y, c)[1]]


def _active_factor(x, v, p, y, c):
    @fs.kernel
    def move():
        for i in range(N):
            p[i] += y[i] * v[i]
    return [move, _damped(x, v, p, y, c)[1]]


def _condition(x, v, p, y, c):
    @fs.kernel
    def move():
        for i in range(N):
            if v[i] > 0.3:
                p[i] += 1.0
    return [move, _damped(x, v, p, y, c)[1]]


def _index(x, v, p, y, c):
    @fs.kernel
    def move():
        for i in range(N):
            p[int(v[i] > 0.5)] += 0.1
    return [move, _damped(x, v, p, y, c)[1]]


def _read_again(x, v, p, y, c):
    # free in `move`, then updated, then read non-linearly, then updated again
    @fs.kernel
    def square():
        for i in range(N):
            y[i] += v[i] * v[i]

    @fs.kernel
    def push():
        for i in range(N):
            v[i] += 0.5
    return [_move(p, v), _damped(x, v, p, y, c)[1], square, push]


def _race_in_kernel(x, v, p, y, c):
    # free on the Tape, but another thread overwrites the element in the same launch
    @fs.kernel
    def move():
        for i in range(N):
            p[i] += 0.1 * v[i]
            v[(i + 1) % N] = 0.0
    return [move]


def _factor_overwritten(x, v, p, y, c):
    # the free read's factor `c[i]` is a value its adjoint uses: overwriting c stays refused
    @fs.kernel
    def move():
        for i in range(N):
            p[i] += c[i] * v[i]

    @fs.kernel
    def recoefficient():
        for i in range(N):
            c[i] = 2.0
    return [move, recoefficient]


@pytest.mark.parametrize("make, line", [
    (_factor_overwritten, "c[i] = 2.0"), (_nonlinear, "v[i] *= 0.9"), (_active_factor, "v[i] *= 0.9"),
    (_condition, "v[i] *= 0.9"), (_index, "v[i] *= 0.9"),
    (_read_again, "v[i] += 0.5"), (_race_in_kernel, "v[(i + 1) % N] = 0.0")])
def test_neighbours_stay_refused(make, line):
    Chain(make).assert_refused_at(line)


def test_validated_tape_frees_the_read_too():
    chain = Chain(_damped)
    assert_matches(chain.tape_gradient(2, validation=True), chain.differences(2))


def test_vector_fields_match_central_differences():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    x0, x, v = (fs.Vector.field(2, float, 3, needs_grad=True) for _ in range(3))
    loss = fs.field(float, (), needs_grad=True)

    @fs.kernel
    def init():
        for i in range(3):
            v[i] = x0[i] * 2.0
            x[i] = x0[i] ** 2

    @fs.kernel
    def move():
        for i in range(3):
            x[i] += 0.1 * v[i]

    @fs.kernel
    def damp():
        for i in range(3):
            v[i] *= 0.9
            v[i][1] -= 0.05

    @fs.kernel
    def final():
        for i in range(3):
            loss[None] += fs.sin(x[i]).sum() + (v[i] ** 2).sum()

    def value(a):
        x0.from_numpy(a)
        loss[None] = 0.0
        init()
        for _ in range(3):
            damp()
            move()
        final()
        return loss[None]

    a0 = np.array([[0.3, -0.2], [0.5, 0.8], [-1.0, 0.25]])
    h = 1e-6
    fd = np.zeros_like(a0)
    for k in range(a0.size):
        e = np.zeros(a0.size)
        e[k] = h
        fd.flat[k] = (value(a0 + e.reshape(a0.shape)) - value(a0 - e.reshape(a0.shape))) / (2 * h)
    x0.from_numpy(a0)
    loss[None] = 0.0
    with fs.ad.Tape(loss):
        init()
        for _ in range(3):
            damp()
            move()
        final()
    np.testing.assert_allclose(x0.grad.to_numpy(), fd, rtol=1e-6, atol=1e-8)


def _accumulator(square: bool):
    # a kernel-scope variable (a hidden 0-D field) updated in a serialized loop, then read into
    # `s`: relaunched on a Tape, `acc = 0.0` overwrites what the first launch read
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    v, s = fs.field(fs.f64, N, needs_grad=True), fs.field(fs.f64, (), needs_grad=True)
    c = fs.field(fs.f64, N)
    c.from_numpy(np.array([0.5, 0.9, 0.3, 0.7]))
    loss = fs.field(fs.f64, (), needs_grad=True)

    @fs.kernel
    def accumulate(a: fs.f64):
        acc = 0.0
        fs.loop_config(serialize=True)
        for i in range(N):
            acc = acc * c[i] + v[i]
        if fs.static(square):
            s[None] += acc * acc * a
        else:
            s[None] += acc * a

    @fs.kernel
    def final():
        loss[None] = s[None] ** 2

    def forward():
        accumulate(0.5)
        accumulate(2.0)
        final()

    def value(vv):
        v.from_numpy(vv)
        s[None] = 0.0
        loss[None] = 0.0
        forward()
        return loss[None]

    return v, s, loss, forward, value, (accumulate, final)


def test_a_relaunched_kernel_scope_accumulator_matches_central_differences():
    v, s, loss, forward, value, (accumulate, final) = _accumulator(False)
    h = 1e-6
    fd = np.array([(value(X0 + h * e) - value(X0 - h * e)) / (2 * h) for e in np.eye(N)])
    v.from_numpy(X0)
    s[None] = 0.0
    with fs.ad.Tape(loss):
        forward()
    np.testing.assert_allclose(v.grad.to_numpy(), fd, rtol=1e-6, atol=1e-8)
    # by hand
    value(X0)
    v.grad.fill(0.0)
    s.grad[None] = 0.0
    loss.grad[None] = 1.0
    final.grad()
    accumulate.grad(2.0)
    accumulate.grad(0.5)
    np.testing.assert_allclose(v.grad.to_numpy(), fd, rtol=1e-6, atol=1e-8)


def test_a_relaunched_accumulator_read_non_linearly_stays_refused():
    v, _, loss, forward, _, _ = _accumulator(True)
    v.from_numpy(X0)
    with pytest.raises(AccessRuleError) as info, fs.ad.Tape(loss):
        forward()
    assert "acc = 0.0" in str(info.value) and "acc * acc * a" in str(info.value)


def test_a_free_read_inside_a_grad_replaced_unit_stays_logged():
    # the user's backward re-runs `step` (recomputing p from v): a later overwrite of v would
    # change what it recomputes, so the unit's free read is logged as any read
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    x, v, p, q = (fs.field(fs.f64, N, needs_grad=True) for _ in range(4))
    loss = fs.field(fs.f64, (), needs_grad=True)

    @fs.kernel
    def init():
        for i in range(N):
            v[i] = x[i] * 1.0

    @fs.kernel
    def step():
        for i in range(N):
            p[i] = 0.1 * v[i]

    @fs.kernel
    def square():
        for i in range(N):
            q[i] += p[i] * p[i]

    @fs.ad.grad_replaced
    def unit():
        step()
        square()

    @fs.ad.grad_for(unit)
    def unit_grad():
        step()
        square.grad()
        step.grad()

    @fs.kernel
    def clobber():
        for i in range(N):
            v[i] = 5.0

    @fs.kernel
    def final():
        for i in range(N):
            loss[None] += q[i]

    x.from_numpy(X0)
    with pytest.raises(AccessRuleError) as info, fs.ad.Tape(loss):
        init()
        unit()
        clobber()
        final()
    assert "v[i] = 5.0" in str(info.value) and "inside `unit`" in str(info.value)
