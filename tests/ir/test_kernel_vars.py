"""ir.passes.kernel_vars: a top-level variable that one serial task alone uses is a local.

As a hidden field it kept only the last launch's value, so the adjoint of an earlier launch of
the same kernel read a later launch's value: `kernel.grad()` was silently wrong and a Tape
refused the program (rule 1 on the variable's field), where Taichi recomputes the local.
Gradients are checked against analytic derivatives.
"""
import numpy as np

import fieldsim as fs
from fieldsim.ir.ir import Op, walk


def _square_kernel():
    x = fs.field(fs.f32, shape=4, needs_grad=True)
    out = fs.field(fs.f32, shape=5, needs_grad=True)

    @fs.kernel
    def step(t: fs.i32):
        v = 2 * x[t]
        out[t + 1] += v * v

    x.from_numpy(np.array([0.2, 0.3, 0.9, 0.4], np.float32))
    return x, out, step


def test_grad_of_an_earlier_launch_uses_its_own_variable(arch):
    fs.init(arch=arch)
    x, out, step = _square_kernel()
    step(0)
    step(2)
    out.grad.fill(1.0)
    step.grad(2)
    step.grad(0)
    # d(4 x^2)/dx = 8 x, launched for t = 0 and t = 2 only
    np.testing.assert_allclose(x.grad.to_numpy(), [1.6, 0.0, 7.2, 0.0], rtol=1e-6)


def test_tape_over_repeated_launches_of_a_conditional_vector_variable(arch):
    fs.init(arch=arch)
    x = fs.Vector.field(2, fs.f32, shape=4, needs_grad=True)
    imp = fs.Vector.field(2, fs.f32, shape=5, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def collide(t: fs.i32):
        v = fs.Vector([0.0, 0.0])
        if x[t][1] < 0.5 and x[t][0] > 0.1:
            v = fs.Vector([x[t][0] * x[t][1], -x[t][1]])
        imp[t + 1] += v

    @fs.kernel
    def total():
        for i in range(1, 5):
            loss[None] += imp[i][0] + 3 * imp[i][1] ** 2

    xs = np.array([[0.2, 0.3], [0.6, 0.9], [0.5, 0.4], [0.05, 0.2]], np.float32)
    x.from_numpy(xs)
    with fs.Tape(loss):
        for t in range(4):
            collide(t)
        total()
    want = np.zeros_like(xs)
    for t, (a, b) in enumerate(xs.astype(np.float64)):
        if b < 0.5 and a > 0.1:  # loss term a*b + 3*b^2
            want[t] = [b, a + 6 * b]
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-6)


def test_only_single_serial_task_variables_become_locals(arch):
    fs.init(arch=arch)
    x, _, step = _square_kernel()
    y = fs.field(fs.f32, shape=4)

    @fs.kernel
    def crossing():
        s = 5 * x[1]
        for i in y:
            y[i] = s * i

    step(0)
    crossing()
    np.testing.assert_allclose(y.to_numpy(), [0.0, 1.5, 3.0, 4.5])
    kept = {s.field.ir_name for ck in crossing._cache.values() for s in walk(ck.ir.body)
            if s.op in (Op.LOAD, Op.STORE)}
    assert "crossing.s" in kept
    demoted = {s.field.ir_name for ck in step._cache.values() for s in walk(ck.ir.body)
               if s.op in (Op.LOAD, Op.STORE)}
    assert "step.v" not in demoted


def test_augmented_variables_of_a_loopless_kernel_are_locals_too(arch):
    # `s += ...` on a top-level variable is an atomic on its field; in one serial task there is
    # no other thread: a load, the update and a store of a local (atomic_max's value: the old one)
    fs.init(arch=arch, default_fp=fs.f64)
    x = fs.field(fs.f64, shape=4, needs_grad=True)
    out = fs.field(fs.f64, shape=5, needs_grad=True)

    @fs.kernel
    def step(t: fs.i32):
        s = x[t]
        s += x[t] * 3.0
        m = 0.5
        old = fs.atomic_max(m, x[t])
        out[t + 1] += s * s + old * m

    xs = np.array([0.25, 1.0, 2.0, 3.0])
    x.from_numpy(xs)
    step(0)
    step(2)
    # out[t+1] = 16 x^2 + 0.5 max(0.5, x): 16 * 0.0625 + 0.25 = 1.25 and 64 + 1.0 = 65
    np.testing.assert_allclose(out.to_numpy(), [0.0, 1.25, 0.0, 65.0, 0.0])
    out.grad.fill(1.0)
    step.grad(2)
    step.grad(0)
    # d/dx: 32 x, plus 0.5 where x > 0.5 (the max is x there)
    np.testing.assert_allclose(x.grad.to_numpy(), [8.0, 0.0, 64.5, 0.0])
    kept = {s.field.ir_name for ck in step._cache.values() for s in walk(ck.ir.body)
            if s.op in (Op.LOAD, Op.STORE, Op.ATOMIC)}
    assert not kept & {"step.s", "step.m"}, kept
