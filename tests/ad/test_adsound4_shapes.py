"""Shapes the gh-adsound4 soundness check probed beyond the reverse-mode Tape: `stop_grad`'s
scope in both modes, FwdMode over partly written intermediates, in-place vector components of
ndarrays, struct members with matrix values, and ndarray/template arguments that alias.
Every expected value is an analytic derivative."""
import numpy as np
import pytest

from ._env import fs

pytestmark = pytest.mark.fs_init(fp="f64")

XS = np.array([0.43, -0.31, 0.92, 0.27])
N = 4


def test_stop_grad_covers_its_block_only_in_both_modes():
    x = fs.field(fs.f64, shape=N, needs_grad=True, needs_dual=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True, needs_dual=True)

    @fs.kernel
    def k():
        for i in range(N):
            if x[i] > 0.0:
                fs.stop_grad(x)
                loss[None] += x[i] * x[i]
            loss[None] += x[i] * 10.0
        for i in range(N):
            loss[None] += x[i] * x[i] * x[i]

    x.from_numpy(XS)
    with fs.ad.Tape(loss):
        k()
    np.testing.assert_allclose(x.grad.to_numpy(), 10.0 + 3 * XS ** 2, rtol=1e-12)
    v = np.array([0.5, -1.0, 2.0, 0.25])
    with fs.ad.FwdMode(loss=loss, param=x, seed=v.tolist()):
        k()
    assert loss.dual[None] == pytest.approx((10.0 + 3 * XS ** 2) @ v, rel=1e-12)


def test_stop_grad_in_a_func_covers_the_callers_block():
    # a func is inlined into the caller's loop body, so its stop_grad covers that whole body
    # (Taichi 1.7.4 gives the same zeros)
    x = fs.field(fs.f64, shape=N, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.func
    def sq(i):
        fs.stop_grad(x)
        return x[i] * x[i]

    @fs.kernel
    def k():
        for i in range(N):
            loss[None] += sq(i) + x[i] * 2.0

    x.from_numpy(XS)
    with fs.ad.Tape(loss):
        k()
    np.testing.assert_array_equal(x.grad.to_numpy(), np.zeros(N))


def test_fwd_mode_does_not_reuse_a_stale_intermediate_dual():
    x = fs.field(fs.f64, shape=N, needs_dual=True)
    y = fs.field(fs.f64, shape=N, needs_dual=True)
    loss = fs.field(fs.f64, shape=(), needs_dual=True)

    @fs.kernel
    def square_first(m: int):
        for i in range(N):
            if i < m:
                y[i] = x[i] * x[i]

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += y[i] * 3.0

    x.from_numpy(XS)
    with fs.ad.FwdMode(loss=loss, param=x, seed=[1.0] * N):
        square_first(N)
        total()
    assert loss.dual[None] == pytest.approx(6 * XS.sum(), rel=1e-12)
    with fs.ad.FwdMode(loss=loss, param=x, seed=[1.0] * N):
        square_first(1)
        total()
    assert loss.dual[None] == pytest.approx(6 * XS[0], rel=1e-12)


def _vector_ndarray_chain():
    @fs.kernel
    def make(a: fs.types.ndarray(), v: fs.types.ndarray()):
        for i in range(N):
            v[i] = fs.Vector([a[i] * a[i], fs.sin(a[i])])

    @fs.kernel
    def update(v: fs.types.ndarray()):
        for i in range(N):
            v[i][0] *= 3.0
            v[i].y += 1.0

    @fs.kernel
    def reduce(v: fs.types.ndarray(), loss: fs.types.ndarray()):
        for i in range(N):
            loss[None] += v[i][0] * v[i][1]

    a = fs.ndarray(fs.f64, shape=(N,), needs_grad=True)
    a.from_numpy(XS)
    v = fs.Vector.ndarray(2, fs.f64, shape=(N,), needs_grad=True)
    loss = fs.ndarray(fs.f64, shape=(), needs_grad=True)
    return (make, update, reduce), a, v, loss


def test_vector_ndarray_components_updated_in_place():
    want = 3 * (2 * XS * (np.sin(XS) + 1) + XS * XS * np.cos(XS))
    (make, update, reduce), a, v, loss = _vector_ndarray_chain()
    with fs.ad.Tape(loss):
        make(a, v)
        update(v)
        reduce(v, loss)
    np.testing.assert_allclose(a.grad.to_numpy(), want, rtol=1e-12)
    (make, update, reduce), a, v, loss = _vector_ndarray_chain()
    make(a, v)
    update(v)
    reduce(v, loss)
    loss.grad[None] = 1.0
    reduce.grad(v, loss)
    update.grad(v)
    make.grad(a, v)
    np.testing.assert_allclose(a.grad.to_numpy(), want, rtol=1e-12)


def test_struct_matrix_member_updated_in_place():
    st = fs.Struct.field({"m": fs.types.matrix(2, 2, fs.f64), "v": fs.types.vector(2, fs.f64), "s": fs.f64},
                         shape=N, needs_grad=True)
    x = fs.field(fs.f64, shape=N, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def make():
        for i in range(N):
            st[i].m = fs.Matrix([[x[i], 1.0], [0.5, x[i] * x[i]]])
            st[i].v = fs.Vector([fs.cos(x[i]), 2.0])
            st[i].s = x[i]

    @fs.kernel
    def update():
        for i in range(N):
            st[i].v = st[i].v * 2.0
            st[i].m[0, 1] *= 2.0
            st[i].s *= -1.0

    @fs.kernel
    def reduce():
        for i in range(N):
            loss[None] += st[i].m.determinant() + st[i].v.x * st[i].s

    x.from_numpy(XS)
    with fs.ad.Tape(loss):
        make()
        update()
        reduce()
    # loss_i = x^3 - 1 - 2 x cos x
    want = 3 * XS ** 2 - 2 * np.cos(XS) + 2 * XS * np.sin(XS)
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-12)


def test_aliased_arguments_are_refused():
    @fs.kernel
    def square(a: fs.types.ndarray(), b: fs.types.ndarray()):
        for i in range(N):
            b[i] = a[i] * a[i]

    @fs.kernel
    def total(b: fs.types.ndarray(), loss: fs.types.ndarray()):
        for i in range(N):
            loss[None] += b[i]

    p = fs.ndarray(fs.f64, shape=(N,), needs_grad=True)
    p.from_numpy(XS)
    loss = fs.ndarray(fs.f64, shape=(), needs_grad=True)
    with pytest.raises(fs.AccessRuleError, match="square"), fs.ad.Tape(loss):
        square(p, p)
        total(p, loss)

    x = fs.field(fs.f64, shape=N, needs_grad=True)

    @fs.kernel
    def square_t(a: fs.template(), b: fs.template()):
        for i in range(N):
            b[i] = a[i] * a[i]

    x.from_numpy(XS)
    square_t(x, x)
    with pytest.raises(fs.AccessRuleError, match="square_t"):
        square_t.grad(x, x)
