"""Values that do not depend on the differentiated field get no derivative, so a singular
point of their own (the norm of a zero vector, sqrt(0), log(0), atan2(0, 0)) puts no NaN or
inf into a JVP or a gradient. Forward mode used to give every float field read a tangent (its
dual, zero): the rule of `v.norm()` then computed dot(v, dv) / |v| = 0 / 0. Expected values are
analytic; the active singular cases keep IEEE's answer (inf / NaN, as Taichi and JAX give)."""
import math

import numpy as np
import pytest

from ._env import fs

pytestmark = [pytest.mark.fs_init(fp="f64"),
              pytest.mark.filterwarnings("ignore:Calling non-taichi function")]

X0 = 0.7


def _fields():
    x = fs.field(fs.f64, shape=(), needs_grad=True)
    c = fs.field(fs.f64, shape=())  # 0: every singular point below
    v = fs.Vector.field(3, fs.f64, shape=())  # the zero vector
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    x[None] = X0
    return x, c, v, loss


def _jvp(kernel, x, loss, *args):
    with fs.ad.FwdMode(loss=loss, param=x):
        kernel(*args)
    return loss.dual[None]


def _grads(kernel, x, loss, *args):
    """(kernel.grad's, a Tape's) d loss / d x."""
    kernel(*args)
    loss.grad[None], x.grad[None] = 1.0, 0.0
    kernel.grad(*args)
    by_grad = x.grad[None]
    with fs.ad.Tape(loss=loss):
        kernel(*args)
    return by_grad, x.grad[None]


# (name, body of loss given x, c, v; d loss / d x at x = X0): each with an inactive singular term
CASES = {
    "norm": (lambda x, c, v: x * v.norm() + x * x, 2 * X0),
    "sqrt": (lambda x, c, v: x * fs.sqrt(c) + x * x, 2 * X0),
    "pow_half": (lambda x, c, v: x * c ** 0.5 + x * x, 2 * X0),
    "atan2": (lambda x, c, v: x * fs.atan2(c, c) + x * x, 2 * X0),
    "exp_log": (lambda x, c, v: x * fs.exp(fs.log(c)) + x + x * x, 1 + 2 * X0),
    "div": (lambda x, c, v: x * (c / (c + 1.0)) + fs.sin(x), math.cos(X0)),
    "normalized_dot": (lambda x, c, v: x * v.dot(v) / fs.max(v.norm(), 1e-12) + x * x, 2 * X0),
}


@pytest.mark.parametrize("name", CASES)
def test_inactive_singular_terms_give_finite_derivatives(name):
    body, expected = CASES[name]
    x, c, v, loss = _fields()

    @fs.kernel
    def k():
        loss[None] = body(x[None], c[None], v[None])

    assert _jvp(k, x, loss) == pytest.approx(expected, rel=1e-12)
    for g in _grads(k, x, loss):
        assert g == pytest.approx(expected, rel=1e-12)


def test_locals_funcs_branches_and_loops():
    x, c, v, loss = _fields()

    @fs.func
    def term(a, q):
        n = 0.0
        n = q.norm()  # the local holds only inactive values: no tangent for it
        return a * fs.sqrt(n) + a * fs.atan2(q[0], q[1])

    @fs.kernel
    def k():
        s = 0.0
        for i in range(3):
            if x[None] > -10.0:
                s += term(x[None], v[None]) + x[None] * x[None] * fs.log(c[None] + 2.0)
            else:
                s += fs.sqrt(c[None])
        loss[None] = s

    assert _jvp(k, x, loss) == pytest.approx(3 * 2 * X0 * math.log(2.0), rel=1e-12)


def test_a_tangent_written_by_one_task_is_read_by_the_next_and_by_the_next_kernel():
    n = 4
    x = fs.field(fs.f64, shape=n)
    y = fs.field(fs.f64, shape=n)
    v = fs.Vector.field(2, fs.f64, shape=n)  # zero vectors
    loss = fs.field(fs.f64, shape=())

    @fs.kernel
    def k1():
        for i in x:
            y[i] = 2.0 * x[i] + v[i].norm()
        for i in y:
            y[i] = y[i] * y[i] + fs.sqrt(v[i].norm())

    @fs.kernel
    def k2():
        for i in y:
            loss[None] += fs.sin(y[i]) + y[i] * v[i].norm()

    xs = np.array([0.1, -0.4, 0.3, 0.25])
    seed = np.array([1.0, -2.0, 0.5, 3.0])
    x.from_numpy(xs)
    with fs.ad.FwdMode(loss=loss, param=x, seed=seed):
        k1()
        k2()
    # loss = sum sin(4 x^2): d/dx = cos(4 x^2) * 8 x
    assert loss.dual[None] == pytest.approx(float(np.cos(4 * xs**2) * 8 * xs @ seed), rel=1e-12)


def test_a_dual_set_by_hand_in_the_block_is_a_tangent():
    x = fs.field(fs.f64, shape=())
    w = fs.field(fs.f64, shape=())
    loss = fs.field(fs.f64, shape=())

    @fs.kernel
    def k():
        loss[None] = x[None] * x[None] + 3.0 * w[None]

    x[None], w[None] = 0.5, 1.0
    with fs.ad.FwdMode(loss=loss, param=x):
        k()  # w's dual read as zero here, before it is set
        w.dual[None] = 2.0
        k()
    assert loss.dual[None] == pytest.approx(2 * 0.5 + 3.0 * 2.0, rel=1e-12)


def test_duals_kept_by_clear_gradients_false_are_tangents():
    x = fs.field(fs.f64, shape=(), needs_dual=True)
    w = fs.field(fs.f64, shape=(), needs_dual=True)
    loss = fs.field(fs.f64, shape=(), needs_dual=True)

    @fs.kernel
    def k():
        loss[None] = x[None] * w[None]

    x[None], w[None] = 0.5, 4.0
    w.dual[None] = 1.0
    with fs.ad.FwdMode(loss=loss, param=x, clear_gradients=False):
        k()
    assert loss.dual[None] == pytest.approx(4.0 + 0.5, rel=1e-12)


def test_active_singular_points_keep_ieee_values():
    x, c, _v, loss = _fields()

    @fs.kernel
    def k_sqrt():
        loss[None] = fs.sqrt(x[None] + c[None] - X0)  # d sqrt / dx at 0: inf, honestly

    @fs.kernel
    def k_select():
        loss[None] = fs.select(x[None] > 5.0, fs.sqrt(x[None] - 1.0), 0.0)

    assert _jvp(k_sqrt, x, loss) == math.inf
    assert all(g == math.inf for g in _grads(k_sqrt, x, loss))
    assert _jvp(k_select, x, loss) == 0.0  # the tangent takes the branch taken
    # the adjoint routes 0 into sqrt(x - 1) at x - 1 < 0; a zero adjoint contributes 0 through
    # its NaN slope (ad.zero_adjoint; Taichi 1.7.4 gives NaN)
    assert all(g == 0.0 for g in _grads(k_select, x, loss))


def test_each_block_and_each_entry_of_one_block_has_its_own_live_fields():
    x = fs.field(fs.f64, shape=())
    w = fs.field(fs.f64, shape=())
    loss = fs.field(fs.f64, shape=())

    @fs.kernel
    def k():
        loss[None] = x[None] * x[None] + fs.sqrt(w[None])

    x[None], w[None] = 0.5, 4.0
    with fs.ad.FwdMode(loss=loss, param=x):
        k()
    assert loss.dual[None] == pytest.approx(1.0, rel=1e-12)
    block = fs.ad.FwdMode(loss=loss, param=w)
    for _ in range(2):  # the kernel's program for {x} must not be taken for {w}
        with block:
            k()
            k()
        assert loss.dual[None] == pytest.approx(0.25, rel=1e-12)


def test_a_dual_read_as_data_has_no_tangent():
    x = fs.field(fs.f64, shape=(), needs_dual=True)
    loss = fs.field(fs.f64, shape=(), needs_dual=True)

    @fs.kernel
    def k():
        d = 0.0
        d = x.dual[None] - 1.0  # 0 at the seed 1: a value, not a tangent
        loss[None] = x[None] * x[None] + fs.sqrt(d)

    x[None] = 0.5
    with fs.ad.FwdMode(loss=loss, param=x):
        k()
    assert loss.dual[None] == pytest.approx(1.0, rel=1e-12)


def test_a_dual_written_by_a_no_grad_launch_in_the_block_is_a_tangent():
    # the launch runs the primal program, which stores into w.dual: w's tangent is live after
    x = fs.field(fs.f64, shape=())
    w = fs.field(fs.f64, shape=())
    loss = fs.field(fs.f64, shape=())

    @fs.kernel
    def k():
        loss[None] = x[None] * x[None] + 3.0 * w[None]

    @fs.kernel
    def set_w_dual(v: fs.f64):
        w.dual[None] = v

    @fs.ad.no_grad
    def set_plainly(v):
        set_w_dual(v)

    x[None], w[None] = 0.5, 1.0
    with fs.ad.FwdMode(loss=loss, param=x):
        k()  # w's dual read as zero here, before it is set
        set_plainly(2.0)
        k()
    assert loss.dual[None] == pytest.approx(2 * 0.5 + 3.0 * 2.0, rel=1e-12)
