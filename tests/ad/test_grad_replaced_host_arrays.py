"""A NumPy array passed to a grad_replaced unit but taken by no launch inside it is not
watched between the forward and the user's backward (docs/COMPAT.md, gh-leftovers3): the
backward is arbitrary Python, so nothing tells whether it reads the array, and programs that
reuse such a buffer after the forward (or fill it inside the forward) are valid and run in
Taichi 1.7.4. Watching it (comparing its bytes before the backward) would refuse them."""
import numpy as np

import fieldsim as fs


def _unit_program(reuse_after_forward: bool):
    fs.init(arch=fs.cpu, fast_math=False)
    x = fs.field(fs.f64, shape=4, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    x.from_numpy(np.array([0.5, 1.0, 1.5, 2.0]))

    @fs.kernel
    def square_sum(scale: fs.f64):
        for i in x:
            loss[None] += scale * x[i] ** 2

    @fs.kernel
    def square_sum_grad(scale: fs.f64):
        for i in x:
            x.grad[i] += 2 * scale * x[i] * loss.grad[None]

    @fs.ad.grad_replaced
    def unit(log):
        log[0] = 3.0  # Python bookkeeping the kernels never see
        square_sum(log[0])

    @fs.ad.grad_for(unit)
    def unit_backward(log):  # reads its own scale, not `log`
        square_sum_grad(3.0)

    log = np.zeros(2)
    with fs.ad.Tape(loss=loss):
        unit(log)
        if reuse_after_forward:
            log[:] = -1.0  # the buffer reused for the next step, before the backward
    return x.grad.to_numpy()


def test_an_array_no_launch_takes_may_change_before_the_backward():
    want = 2 * 3.0 * np.array([0.5, 1.0, 1.5, 2.0])  # d/dx of 3 * sum(x^2)
    np.testing.assert_array_equal(_unit_program(False), want)
    np.testing.assert_array_equal(_unit_program(True), want)
