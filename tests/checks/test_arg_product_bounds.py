"""Loop bounds and indices that multiply two kernel arguments, `range(s * n, (s + 1) * n)`
(PlasticineLab's `set_velocity(s, n_substeps)`, which spreads action s over its substeps), are
known once a launch gives s and n. The checker took such a product for data and refused the
next action's writes to velocities that earlier substeps had read (other elements); Taichi runs
it and its gradient is right. Where the ranges do meet, the write is still refused."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import AccessRuleError

N_SUB = 3
STEPS = 2 * N_SUB
A0 = np.array([0.4, -0.7])


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu, default_fp=fs.f64)


def _program():
    x = fs.field(float, shape=STEPS + 1, needs_grad=True, name="x")
    v = fs.Vector.field(2, float, needs_grad=True, name="v")
    fs.root.dense(fs.i, STEPS).place(v, v.grad)
    a = fs.field(float, shape=2, needs_grad=True, name="a")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.kernel
    def set_v(s: fs.i32, n: fs.i32):
        for j in range(s * n, (s + 1) * n):
            for k in fs.static(range(2)):
                v[j][k] = a[s] * (k + 1) / n

    @fs.kernel
    def advance(f: fs.i32):
        x[f + 1] = x[f] + fs.sin(v[f][0]) * x[f] + v[f][1]

    @fs.kernel
    def total():
        loss[None] = x[STEPS] ** 2

    return x, a, loss, set_v, advance, total


def _loss(a):
    x = 0.5
    for f in range(STEPS):
        s = f // N_SUB
        x = x + np.sin(a[s] / N_SUB) * x + 2 * a[s] / N_SUB
    return x ** 2


def _central(a, h=1e-6):
    g = np.zeros_like(a)
    for i in range(len(a)):
        e = np.zeros_like(a)
        e[i] = h
        g[i] = (_loss(a + e) - _loss(a - e)) / (2 * h)
    return g


@pytest.mark.parametrize("checkpointed", [False, True])
def test_each_action_writes_its_own_substeps_velocities(checkpointed):
    x, a, loss, set_v, advance, total = _program()
    step = advance
    if checkpointed:  # PlasticineLab advances inside a grad_replaced substep
        @fs.ad.grad_replaced
        def step(f):
            advance(f)

        @fs.ad.grad_for(step)
        def step_grad(f):
            advance.grad(f)

    x[0] = 0.5
    a.from_numpy(A0)
    with fs.ad.Tape(loss):
        for s in range(2):
            set_v(s, N_SUB)
            for f in range(s * N_SUB, (s + 1) * N_SUB):
                step(f)
        total()
    assert loss[None] == pytest.approx(_loss(A0), rel=1e-12)
    np.testing.assert_allclose(a.grad.to_numpy(), _central(A0), rtol=1e-7)


def test_a_product_range_over_elements_already_read_is_still_refused():
    x, _a, loss, set_v, advance, _total = _program()
    x[0] = 0.5
    with pytest.raises(AccessRuleError, match="Rule 1"), fs.ad.Tape(loss):
        set_v(0, N_SUB)
        for f in range(N_SUB + 1):  # one substep too many: reads v[N_SUB] before it is set
            advance(f)
        set_v(1, N_SUB)
