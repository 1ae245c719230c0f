"""The reverse-mode scenarios of Taichi's documentation and tests, with their numbers.

Sources: the "Differentiable Programming" page of the Taichi docs (v1.6/1.7), the
docstrings of `ti.ad`, and Taichi's tests/python/test_ad_basics.py and test_customized_grad.py.
All of these pass unchanged against Taichi 1.7.4 (FIELDSIM_AS_TAICHI=1).
"""
import numpy as np
import pytest

from ._env import fs


def test_sin_tape_gives_cos():
    # docs, "Using ti.ad.Tape()": y = sin(x), x.grad[None] == dy/dx == cos(x)
    x = fs.field(dtype=fs.f32, shape=(), needs_grad=True)
    y = fs.field(dtype=fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def compute_y():
        y[None] = fs.sin(x[None])

    for value in (0.0, 0.2, 1.3, -2.5):
        x[None] = value
        with fs.ad.Tape(y):
            compute_y()
        assert y[None] == pytest.approx(np.sin(value), abs=1e-6)
        assert x.grad[None] == pytest.approx(np.cos(value), abs=1e-6)


def _loss_loss2(n=16):
    x = fs.field(dtype=fs.f32, shape=n, needs_grad=True)
    loss = fs.field(dtype=fs.f32, shape=(), needs_grad=True)
    loss2 = fs.field(dtype=fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def func():
        for i in x:
            loss[None] += x[i] ** 2
            loss2[None] += x[i]

    for i in range(n):
        x[i] = i
    return x, loss, loss2, func


def test_loss_loss2_with_tape():
    # docs: the Tape only seeds its own loss, so loss2 contributes nothing: 2 * i
    x, loss, _loss2, func = _loss_loss2()
    with fs.ad.Tape(loss=loss):
        func()
    assert loss[None] == sum(i * i for i in range(16))
    for i in range(16):
        assert x.grad[i] == 2 * i


def test_loss_loss2_with_kernel_grad():
    # docs, "Using kernel.grad()": seed both outputs by hand, then
    # x.grad[i] == d(loss + loss2)/dx[i] == 2 * i + 1
    x, loss, loss2, func = _loss_loss2()
    loss.grad[None] = 1
    loss2.grad[None] = 1
    func()
    func.grad()
    for i in range(16):
        assert x.grad[i] == i * 2 + 1


def test_kernel_grad_with_seeded_outputs():
    # y[i] = x[i]**2 with y.grad seeded to 1 by hand gives x.grad == 2 x. A plain store's
    # adjoint consumes the gradient of the element it stored: y.grad is 0 afterwards.
    n = 5
    x = fs.field(fs.f32, shape=n, needs_grad=True)
    y = fs.field(fs.f32, shape=n, needs_grad=True)

    @fs.kernel
    def square():
        for i in x:
            y[i] = x[i] ** 2

    values = np.array([0.5, -1.0, 2.0, 3.0, -0.25], dtype=np.float32)
    x.from_numpy(values)
    square()
    y.grad.fill(1.0)
    square.grad()
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * values, rtol=1e-6)
    np.testing.assert_array_equal(y.grad.to_numpy(), np.zeros(n, np.float32))


def _customized(n=128):
    # test_customized_grad.py: total += x[i] * mul
    x = fs.field(fs.f32)
    total = fs.field(fs.f32)
    fs.root.dense(fs.i, n).place(x)
    fs.root.place(total)
    fs.root.lazy_grad()

    @fs.kernel
    def func(mul: fs.f32):
        for i in range(n):
            fs.atomic_add(total[None], x[i] * mul)

    return x, total, func


def test_grad_replaced_in_tape():
    # forward(4) runs func(4): d total / d x[i] == 4, and the custom backward
    # (func.grad(4), the true adjoint) reproduces it: x.grad[0] == 4
    x, total, func = _customized()

    @fs.ad.grad_replaced
    def forward(weight):
        func(weight)

    @fs.ad.grad_for(forward)
    def backward(weight):
        func.grad(weight)

    with fs.ad.Tape(loss=total):
        forward(4)
    assert x.grad[0] == 4


def test_grad_replaced_with_kernel_grad_style_call():
    # the same pair driven by hand: seed total.grad, call forward.grad(4)
    x, total, func = _customized()

    @fs.ad.grad_replaced
    def forward(weight):
        func(weight)

    @fs.ad.grad_for(forward)
    def backward(weight):
        func.grad(weight)

    total.grad[None] = 1
    forward(4)
    forward.grad(4)
    assert x.grad[0] == 4


def test_grad_replaced_backward_is_really_used():
    # forward multiplies by 2, but the user's backward claims a factor 4 (func.grad(4)):
    # the Tape must run the user's backward, never the automatic adjoint, so
    # x.grad[0] == 4 (the automatic adjoint would give 2)
    x, total, func = _customized(8)

    @fs.ad.grad_replaced
    def forward():
        func(2.0)

    @fs.ad.grad_for(forward)
    def backward():
        func.grad(4.0)

    with fs.ad.Tape(loss=total):
        forward()
    assert x.grad[0] == 4
    assert total[None] == 0  # x is all zero


def test_grad_replaced_docstring_multiply():
    # the docstring of ti.ad.grad_replaced: y = x * a with a hand-written backward
    # x.grad = y.grad / a (deliberately not the true adjoint, a * y.grad)
    n = 4
    x = fs.field(fs.f32, shape=n, needs_grad=True)
    y = fs.field(fs.f32, shape=n, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def multiply(a: fs.f32):
        for i in x:
            y[i] = x[i] * a

    @fs.kernel
    def multiply_grad(a: fs.f32):
        for i in x:
            x.grad[i] = y.grad[i] / a

    @fs.kernel
    def reduce():
        for i in y:
            loss[None] += y[i]

    @fs.ad.grad_replaced
    def foo(a):
        multiply(a)

    @fs.ad.grad_for(foo)
    def foo_grad(a):
        multiply_grad(a)

    x.fill(1.0)
    with fs.ad.Tape(loss=loss):
        foo(4.0)
        reduce()
    assert loss[None] == 16
    np.testing.assert_array_equal(x.grad.to_numpy(), np.full(n, 0.25, np.float32))


def test_set_loss_grad_last_write_wins():
    # test_ad_basics.py::test_ad_set_loss_grad: three kernels overwrite loss; only the
    # last write (loss = 4 x) reaches the output, so x.grad == 4 (not 1 + 2 + 4)
    x = fs.field(dtype=fs.f32, shape=(), needs_grad=True)
    loss = fs.field(dtype=fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def eval_x(x: fs.template()):
        x[None] = 1.0

    @fs.kernel
    def compute_1(x: fs.template(), loss: fs.template()):
        loss[None] = x[None]

    @fs.kernel
    def compute_2(x: fs.template(), loss: fs.template()):
        loss[None] = 2 * x[None]

    @fs.kernel
    def compute_3(x: fs.template(), loss: fs.template()):
        loss[None] = 4 * x[None]

    eval_x(x)
    with fs.ad.Tape(loss=loss):
        compute_1(x, loss)
        compute_2(x, loss)
        compute_3(x, loss)
    assert loss[None] == 4
    assert x.grad[None] == 4


def test_global_store_forwarding_consumes_intermediate_grads():
    # test_ad_basics.py::test_ad_global_store_forwarding: x.grad == 2*3*4*5 == 120 and
    # every intermediate's gradient was consumed by its store's adjoint
    x, a, b, c, d, e = (fs.field(dtype=fs.f32, shape=(), needs_grad=True) for _ in range(6))

    @fs.kernel
    def func():
        a[None] = x[None]
        b[None] = a[None] * 2
        c[None] = b[None] * 3
        d[None] = c[None] * 4
        e[None] = d[None] * 5

    x[None] = 1
    with fs.ad.Tape(loss=e):
        func()
    assert x.grad[None] == 120.0
    for f in (a, b, c, d):
        assert f.grad[None] == 0.0


def _square_sum(n=4):
    x = fs.field(fs.f32, shape=n, needs_grad=True)
    y = fs.field(fs.f32, shape=n, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def fy():
        for i in x:
            y[i] = x[i] * x[i]

    @fs.kernel
    def fl():
        for i in y:
            loss[None] += y[i]

    x.from_numpy(np.arange(1, n + 1, dtype=np.float32))
    return x, y, loss, fy, fl


def test_tape_zeroes_loss_and_gradients_on_entry():
    x, y, loss, fy, fl = _square_sum()
    loss[None] = 100.0  # Tape sets loss[None] = 0 on entry
    x.grad.fill(7.0)  # and clear_gradients=True (the default) zeroes every gradient
    y.grad.fill(7.0)
    with fs.ad.Tape(loss=loss):
        fy()
        fl()
    assert loss[None] == 1 + 4 + 9 + 16
    np.testing.assert_array_equal(x.grad.to_numpy(), [2, 4, 6, 8])
    assert loss.grad[None] == 1  # the seed


def test_tape_clear_gradients_false_accumulates():
    x, _y, loss, fy, fl = _square_sum()
    with fs.ad.Tape(loss=loss):
        fy()
        fl()
    with fs.ad.Tape(loss=loss, clear_gradients=False):
        fy()
        fl()
    np.testing.assert_array_equal(x.grad.to_numpy(), [4, 8, 12, 16])
    # a second default Tape starts again from zero
    with fs.ad.Tape(loss=loss):
        fy()
        fl()
    np.testing.assert_array_equal(x.grad.to_numpy(), [2, 4, 6, 8])


def test_clear_all_gradients():
    x, y, loss, fy, fl = _square_sum()
    with fs.ad.Tape(loss=loss):
        fy()
        fl()
    y.grad.fill(3.0)
    assert loss.grad[None] == 1
    fs.ad.clear_all_gradients()
    for f in (x, y):
        np.testing.assert_array_equal(f.grad.to_numpy(), np.zeros(4, np.float32))
    assert loss.grad[None] == 0


def test_no_grad_section_is_skipped():
    # the kernel inside a no_grad function runs forward but gets no adjoint
    n = 4
    x = fs.field(fs.f32, shape=n, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def squares():
        for i in x:
            loss[None] += x[i] ** 2

    @fs.kernel
    def linear():
        for i in x:
            loss[None] += 10 * x[i]

    @fs.ad.no_grad
    def extra():
        linear()

    x.from_numpy(np.array([1, 2, 3, 4], np.float32))
    with fs.ad.Tape(loss=loss):
        squares()
        extra()
    assert loss[None] == 30 + 100
    np.testing.assert_array_equal(x.grad.to_numpy(), [2, 4, 6, 8])


def test_lazy_grad_places_gradients():
    # fields declared without shape, placed on the root, gradients from lazy_grad()
    n = 8
    x = fs.field(fs.f32)
    w = fs.field(fs.f32)
    loss = fs.field(fs.f32)
    fs.root.dense(fs.i, n).place(x, w)
    fs.root.place(loss)
    fs.root.lazy_grad()

    @fs.kernel
    def compute():
        for i in x:
            loss[None] += w[i] * fs.sin(x[i])

    xs = np.linspace(-1, 1, n).astype(np.float32)
    ws = np.linspace(0.5, 2, n).astype(np.float32)
    x.from_numpy(xs)
    w.from_numpy(ws)
    with fs.ad.Tape(loss=loss):
        compute()
    np.testing.assert_allclose(x.grad.to_numpy(), ws * np.cos(xs), rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(w.grad.to_numpy(), np.sin(xs), rtol=1e-5, atol=1e-6)


def test_tape_docstring_kernel_with_argument():
    # the docstring of ti.ad.Tape: y[None] += x[I] ** a, differentiated at a = 2
    # (it loops over ti.grouped(x); written here as a 2-D struct-for)
    x = fs.field(fs.f32, shape=(2, 3), needs_grad=True)
    y = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def sum(a: fs.f32):
        for i, j in x:
            y[None] += x[i, j] ** a

    values = np.arange(6, dtype=np.float32).reshape(2, 3) * 0.5
    x.from_numpy(values)
    with fs.ad.Tape(loss=y):
        sum(2)
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * values, rtol=1e-6)


@pytest.mark.fs_init(fp="f64")  # Taichi's grad_check needs an f64 loss
def test_tape_grad_check():
    n = 4
    x = fs.field(float, shape=n, needs_grad=True)
    loss = fs.field(float, shape=(), needs_grad=True)

    @fs.kernel
    def compute():
        for i in x:
            loss[None] += fs.sin(x[i]) * x[i]

    @fs.kernel
    def wrong_adjoint():
        for i in x:
            x.grad[i] += 5.0

    @fs.ad.grad_replaced
    def bad():
        compute()

    @fs.ad.grad_for(bad)
    def bad_grad():
        wrong_adjoint()

    x.from_numpy(np.array([0.1, 0.5, -0.7, 1.2]))
    with fs.ad.Tape(loss=loss, grad_check=[x]):
        compute()
    # a disagreement raises an AssertionError (Taichi asserts; fieldsim's GradcheckError is one)
    with pytest.raises(AssertionError), fs.ad.Tape(loss=loss, grad_check=[x]):
        bad()


def test_tape_loss_must_be_a_0d_field_with_grad():
    x = fs.field(fs.f32, shape=4, needs_grad=True)
    plain = fs.field(fs.f32, shape=())
    refused = (RuntimeError, ValueError, TypeError)  # Taichi raises RuntimeError
    with pytest.raises(refused), fs.ad.Tape(loss=x):
        pass
    with pytest.raises(refused), fs.ad.Tape(loss=plain):
        pass
