"""Adjoints of min/max at a tie go to the second operand, as Taichi 1.7.4's do (measured: a
`ti.max(h, 0.0)` at h == 0 gives h no gradient, `ti.math.clamp(x, lo, hi)` at x == lo or hi gives
x its gradient). Off the tie, each operand gets the analytic derivative (1 where it is the
result, else 0)."""
import numpy as np

import fieldsim as fs


def _grads(body, values):
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    x = fs.field(fs.f64, shape=len(values), needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    x.from_numpy(np.asarray(values, dtype=np.float64))

    @fs.kernel
    def k():
        for _ in range(1):
            loss[None] += body(x)

    with fs.Tape(loss=loss):
        k()
    return x.grad.to_numpy()


def test_tie_goes_to_the_second_operand():
    @fs.func
    def body(x: fs.template()):
        return (fs.max(x[0], x[1]) + 10.0 * fs.min(x[2], x[3]) + 100.0 * fs.max(x[4], 0.0)
                + 1000.0 * fs.max(0.0, x[5]))

    g = _grads(body, [0.5, 0.5, -1.0, -1.0, 0.0, 0.0])
    np.testing.assert_array_equal(g, [0.0, 1.0, 0.0, 10.0, 0.0, 1000.0])
    # off the tie: the larger (smaller) operand, whichever side
    g = _grads(body, [0.7, 0.5, -1.0, -2.0, 0.25, -0.5])
    np.testing.assert_array_equal(g, [1.0, 0.0, 0.0, 10.0, 100.0, 0.0])


def test_clamp_at_its_bounds_passes_the_gradient_to_x():
    @fs.func
    def body(x: fs.template()):
        return fs.math.clamp(x[0], 0.5, 1.0) + 10.0 * fs.math.clamp(x[1], 0.0, 0.5) + \
            100.0 * fs.math.clamp(x[2], 0.0, 1.0) + 1000.0 * fs.math.clamp(x[3], 0.0, 1.0)

    g = _grads(body, [0.5, 0.5, 2.0, 0.25])
    np.testing.assert_array_equal(g, [1.0, 10.0, 0.0, 1000.0])


def test_vector_max_tie_goes_to_the_last_entry():
    @fs.func
    def body(x: fs.template()):
        v = fs.Vector([x[0], x[1], x[2]])
        return v.max() + 10.0 * v.min()

    g = _grads(body, [0.5, 0.5, 0.5])
    np.testing.assert_array_equal(g, [0.0, 0.0, 11.0])
