"""Reverse AD stores an adjoint's first contribution instead of adding it to a loaded 0
(fieldsim.ad.reverse `_TaskAD.fresh`). Checked: gradients through straight-line code, an `if`
and an inner loop against analytic derivatives, and that a -0.0 contribution never shows as a
-0.0 gradient (0 + -0.0 is +0.0; the stored first contribution must not leak its sign)."""
import numpy as np

import fieldsim as fs


def test_straight_line_if_and_loop_gradients_are_analytic():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    n = 64
    x = fs.field(fs.f64, shape=n, name="x", needs_grad=True)
    loss = fs.field(fs.f64, shape=(), name="loss", needs_grad=True)
    xs = np.linspace(-1.5, 1.5, n)
    x.from_numpy(xs)

    @fs.kernel
    def f():
        for i in x:
            a = x[i] * x[i]          # used twice below: two contributions to a's adjoint
            b = fs.sin(a) + a * 3.0
            if x[i] > 0.0:
                b += a * x[i]        # x^3 on the positive half
            acc = 0.0
            for k in range(3):       # 3 * x in an inner loop
                acc += x[i]
            loss[None] += b + acc

    with fs.ad.Tape(loss=loss):
        f()
    want = np.cos(xs ** 2) * 2 * xs + 6 * xs + np.where(xs > 0, 3 * xs ** 2, 0.0) + 3.0
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-12, atol=1e-12)


def test_negative_zero_contribution_gives_positive_zero_gradient():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    x = fs.field(fs.f64, shape=4, name="x", needs_grad=True)
    y = fs.field(fs.f64, shape=4, name="y", needs_grad=True)

    @fs.kernel
    def f():
        for i in x:
            y[i] = x[i] * -0.0

    f()
    y.grad.fill(1.0)
    f.grad()
    g = x.grad.to_numpy()
    assert np.all(g == 0.0) and not np.any(np.signbit(g))
