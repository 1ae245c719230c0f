"""Central finite differences over fields, from Python scope only.

`central_differences(evaluate, fields)` perturbs every element of every field by +-h,
re-runs `evaluate()` (which must run the whole forward from scratch and return the
loss as a Python float) and returns d loss / d element as float64 arrays shaped like
`field.to_numpy()`. The step actually taken is read back from the field, so rounding
of `x +- h` to the field's dtype does not bias the quotient.
"""
import numpy as np


def step_for(value, dtype, eps=None):
    """A step suited to the field's precision: ~1e-6 relative in f64, ~1e-3 in f32."""
    if eps is None:
        eps = 1e-6 if np.dtype(dtype) == np.float64 else 2e-3
    return eps * max(1.0, abs(float(value)))


def central_differences(evaluate, fields, eps=None):
    """{name: gradient array} for `fields` ({name: field}); restores every field after."""
    grads = {}
    for name, field in fields.items():
        base = field.to_numpy()
        grad = np.zeros(base.shape, dtype=np.float64)
        for flat in range(base.size):
            h = step_for(base.flat[flat], base.dtype, eps)
            plus, x_plus = _evaluate_at(evaluate, field, base, flat, +h)
            minus, x_minus = _evaluate_at(evaluate, field, base, flat, -h)
            grad.flat[flat] = (plus - minus) / (x_plus - x_minus)
        field.from_numpy(base)
        grads[name] = grad
    return grads


def _evaluate_at(evaluate, field, base, flat, h):
    arr = base.copy()
    arr.flat[flat] = arr.flat[flat] + h
    field.from_numpy(arr)
    actual = float(field.to_numpy().flat[flat])
    return float(evaluate()), actual


def tolerances(fp, reference):
    """(rtol, atol) for comparing a gradient computed in `fp` with a float64 reference."""
    # atol relative to the largest gradient component (floored, for all-zero gradients)
    scale = max(1e-3, float(np.max(np.abs(reference)))) if np.size(reference) else 1.0
    if fp == "f64":
        return 1e-6, 1e-7 * scale
    return 2e-3, 1e-3 * scale


def assert_grad_close(actual, expected, fp, what):
    rtol, atol = tolerances(fp, expected)
    np.testing.assert_allclose(
        np.asarray(actual, dtype=np.float64), expected, rtol=rtol, atol=atol, err_msg=what
    )


def forward_loss(loss, run, reset=None):
    """Run the forward from scratch outside any Tape (reset, loss = 0, run); the loss."""
    if reset is not None:
        reset()
    loss[None] = 0.0
    run()
    return float(loss[None])


def check_tape_against_fd(fs, inputs, loss, run, reset=None, fp="f64", eps=None):
    """Tape gradients of `inputs` equal central differences of the forward; returns them."""
    if reset is not None:
        reset()
    with fs.ad.Tape(loss=loss):
        run()
    grads = {name: f.grad.to_numpy().astype(np.float64) for name, f in inputs.items()}
    ref = central_differences(lambda: forward_loss(loss, run, reset), inputs, eps)
    for name in inputs:
        assert_grad_close(grads[name], ref[name], fp, f"{name}.grad vs finite differences")
    return grads
