"""Reverse-mode AD over ndarray arguments: kernel.grad(...) and the Tape accumulate into the
ndarrays' `.grad`, checked against analytic derivatives and float64 central differences; the
access-rule checker judges each launch on the arrays it was given."""
import numpy as np
import pytest

import fieldsim as fs

from .fd import central_differences

pytestmark = pytest.mark.fs_init(fp="f64")


@fs.kernel
def _sin_square(x: fs.types.ndarray(), y: fs.types.ndarray()):
    for i in x:
        y[None] += fs.sin(x[i]) * x[i] ** 2


def test_kernel_grad_matches_analytic():
    x = fs.ndarray(fs.f64, shape=6, needs_grad=True)
    y = fs.ndarray(fs.f64, shape=(), needs_grad=True)
    xs = np.linspace(-1.0, 2.0, 6)
    x.from_numpy(xs)
    _sin_square(x, y)
    assert y[None] == pytest.approx(np.sum(np.sin(xs) * xs ** 2))
    y.grad[None] = 1.0
    _sin_square.grad(x, y)
    np.testing.assert_allclose(x.grad.to_numpy(), np.cos(xs) * xs ** 2 + 2 * xs * np.sin(xs))


def test_tape_over_a_chain_matches_central_differences():
    @fs.kernel
    def stage(x: fs.types.ndarray(), h: fs.types.ndarray(), w: fs.f64):
        for i, j in h:
            h[i, j] = fs.tanh(w * x[i] * x[j] + x[j])

    @fs.kernel
    def reduce(h: fs.types.ndarray(), loss: fs.types.ndarray()):
        for i, j in h:
            loss[None] += h[i, j] ** 2 / (1.0 + i)

    n = 4
    x = fs.ndarray(fs.f64, shape=n, needs_grad=True)
    h = fs.ndarray(fs.f64, shape=(n, n), needs_grad=True)
    loss = fs.ndarray(fs.f64, shape=(), needs_grad=True)
    x.from_numpy(np.array([0.3, -0.7, 1.1, 0.2]))

    def evaluate():
        loss[None] = 0.0
        stage(x, h, 0.8)
        reduce(h, loss)
        return loss[None]

    fd = central_differences(evaluate, {"x": x})["x"]
    with fs.ad.Tape(loss=loss):
        stage(x, h, 0.8)
        reduce(h, loss)
    np.testing.assert_allclose(x.grad.to_numpy(), fd, rtol=1e-6, atol=1e-8)


def test_tape_takes_a_one_element_loss_of_shape_1():
    x = fs.ndarray(fs.f64, shape=3, needs_grad=True)
    loss = fs.ndarray(fs.f64, shape=(1,), needs_grad=True)
    x.from_numpy(np.array([1.0, 2.0, 3.0]))

    @fs.kernel
    def cube_sum(x: fs.types.ndarray(), loss: fs.types.ndarray()):
        for i in x:
            loss[0] += x[i] ** 3

    with fs.ad.Tape(loss=loss):
        cube_sum(x, loss)
    assert loss[0] == pytest.approx(36.0)
    np.testing.assert_allclose(x.grad.to_numpy(), 3 * np.array([1.0, 2.0, 3.0]) ** 2)


def test_vector_ndarray_gradients():
    a = fs.Vector.ndarray(2, fs.f64, shape=5, needs_grad=True)
    p = fs.ndarray(fs.f64, shape=(), needs_grad=True)
    av = np.random.default_rng(1).random((5, 2))
    a.from_numpy(av)

    @fs.kernel
    def weighted(a: fs.types.ndarray(), p: fs.types.ndarray()):
        for i in a:
            p[None] += a[i][0] * a[i][1] * 3.0 + a[i].dot(a[i])

    with fs.ad.Tape(loss=p):
        weighted(a, p)
    want = np.stack([3 * av[:, 1] + 2 * av[:, 0], 3 * av[:, 0] + 2 * av[:, 1]], axis=1)
    np.testing.assert_allclose(a.grad.to_numpy(), want)


def test_numpy_inputs_mix_with_differentiable_ndarrays():
    w = np.array([2.0, -1.0, 0.5])  # a plain numpy array: no gradient, read in place
    x = fs.ndarray(fs.f64, shape=3, needs_grad=True)
    y = fs.ndarray(fs.f64, shape=(), needs_grad=True)
    x.from_numpy(np.array([1.0, 2.0, 3.0]))

    @fs.kernel
    def dot(w: fs.types.ndarray(), x: fs.types.ndarray(), y: fs.types.ndarray()):
        for i in x:
            y[None] += w[i] * x[i] * x[i]

    with fs.ad.Tape(loss=y):
        dot(w, x, y)
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * w * np.array([1.0, 2.0, 3.0]))


def test_needs_grad_false_argument_keeps_its_gradient_untouched():
    @fs.kernel
    def k(x: fs.types.ndarray(needs_grad=False), y: fs.types.ndarray()):
        for i in x:
            y[None] += x[i] * x[i]

    x = fs.ndarray(fs.f64, shape=3, needs_grad=True)
    y = fs.ndarray(fs.f64, shape=(), needs_grad=True)
    x.fill(2.0)
    k(x, y)
    y.grad[None] = 1.0
    k.grad(x, y)
    np.testing.assert_array_equal(x.grad.to_numpy(), np.zeros(3))


def test_differentiating_through_a_grad_read_is_refused():
    @fs.kernel
    def k(x: fs.types.ndarray(), y: fs.types.ndarray()):
        for i in x:
            y[None] += x.grad[i]

    x = fs.ndarray(fs.f64, shape=3, needs_grad=True)
    y = fs.ndarray(fs.f64, shape=(), needs_grad=True)
    x.grad.fill(2.0)
    k(x, y)
    assert y[None] == 6.0
    with pytest.raises(fs.FieldsimRuntimeError, match="grad tensor"):
        k.grad(x, y)


def test_checker_names_the_ndarray_argument():
    @fs.kernel
    def overwrite(x: fs.types.ndarray(), y: fs.types.ndarray()):
        for i in x:
            y[i] = x[i]
            y[i] = y[i] * y[i]

    x = fs.ndarray(fs.f64, shape=3, needs_grad=True)
    y = fs.ndarray(fs.f64, shape=3, needs_grad=True)
    overwrite(x, y)
    with pytest.raises(fs.AccessRuleError, match=y.ir_name):
        overwrite.grad(x, y)


def test_tape_judges_each_launch_on_its_own_arrays():
    @fs.kernel
    def square(src: fs.types.ndarray(), dst: fs.types.ndarray()):
        for i in src:
            dst[i] = src[i] * src[i]

    @fs.kernel
    def total(a: fs.types.ndarray(), loss: fs.types.ndarray()):
        for i in a:
            loss[None] += a[i]

    a, b, c = (fs.ndarray(fs.f64, shape=3, needs_grad=True) for _ in range(3))
    loss = fs.ndarray(fs.f64, shape=(), needs_grad=True)
    a.from_numpy(np.array([1.0, 2.0, 3.0]))
    # the same kernel on different arrays: b then c, no array is overwritten
    with fs.ad.Tape(loss=loss):
        square(a, b)
        square(b, c)
        total(c, loss)
    np.testing.assert_allclose(a.grad.to_numpy(), 4 * np.array([1.0, 2.0, 3.0]) ** 3)
    # overwriting b after a kernel read it non-linearly breaks the Tape's rule (as for a
    # field); after `total`'s linear read alone it would not (gh-refused2: a free read)
    with pytest.raises(fs.AccessRuleError), fs.ad.Tape(loss=loss):
        square(a, b)
        square(b, c)
        square(c, b)


def test_ndarray_gradients_accumulate_across_tapes_as_in_taichi():
    x = fs.ndarray(fs.f64, shape=2, needs_grad=True)
    loss = fs.ndarray(fs.f64, shape=(), needs_grad=True)
    x.from_numpy(np.array([1.0, -2.0]))

    @fs.kernel
    def squares(x: fs.types.ndarray(), loss: fs.types.ndarray()):
        for i in x:
            loss[None] += x[i] * x[i]

    for _ in range(2):
        with fs.ad.Tape(loss=loss):
            squares(x, loss)
    assert loss[None] == 5.0  # the loss itself is reset by each Tape
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * (2 * np.array([1.0, -2.0])))
    x.grad.fill(0)
    with fs.ad.Tape(loss=loss):
        squares(x, loss)
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * np.array([1.0, -2.0]))
