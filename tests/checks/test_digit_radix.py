"""The access checker proves stores indexed by a mixed radix of an ndrange's digits distinct
across threads: taichi-nerfs' tri-plane encoder loops `for i, sn in ti.ndrange(B, 8)` with
`j = sn // 4`, `level = sn % 4` and stores `out[i, j + 2*k + 8*level]` for k < 4 (each element
once). Two gaps made `kernel.grad` refuse it (Rule 2, "may hit ... from another thread"): a
digit of a digit (`(i % 8) // 4`) was opaque, and `j + 8*level == j' + 2 + 8*level'` was not
seen to have no solution. Gradients are checked against the analytic ones; an index that
really collides (`j + level`) is still refused."""
import numpy as np
import pytest

import fieldsim as fs


def _setup(B):
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=(B,), needs_grad=True)
    out = fs.field(fs.f32, shape=(B, 32), needs_grad=True)
    x.from_numpy(np.arange(1, B + 1, dtype=np.float32))
    return x, out


def test_mixed_radix_digit_stores_differentiate():
    B = 3
    x, out = _setup(B)

    @fs.kernel
    def encode(nb: fs.i32):
        for i, sn in fs.ndrange(nb, 8):
            j = sn // 4
            level = sn % 4
            f = x[i] * (sn + 1)
            out[i, j + level * 8] = f
            out[i, j + 2 + level * 8] = f * f
            out[i, j + 4 + level * 8] = 2.0 * f
            out[i, j + 6 + level * 8] = f * f * f

    encode(B)
    xs = np.arange(1, B + 1, dtype=np.float64)
    c = np.arange(1, 9, dtype=np.float64)
    want = np.zeros((B, 32))
    for sn in range(8):
        j, level = sn // 4, sn % 4
        f = xs * c[sn]
        for k, v in enumerate((f, f * f, 2 * f, f ** 3)):
            want[:, j + 2 * k + 8 * level] = v
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-6)

    out.grad.fill(1.0)
    encode.grad(B)
    # d/dx of sum over sn of (c x + c^2 x^2 + 2 c x + c^3 x^3)
    dx = (3 * c.sum() + 2 * (c ** 2).sum() * xs + 3 * (c ** 3).sum() * xs ** 2)
    np.testing.assert_allclose(x.grad.to_numpy(), dx, rtol=1e-6)


def test_colliding_digit_sum_still_refused():
    B = 2
    x, out = _setup(B)

    @fs.kernel
    def clash(nb: fs.i32):
        for i, sn in fs.ndrange(nb, 8):
            out[i, sn // 4 + sn % 4] = x[i] * sn  # (1, 0) and (0, 1) write the same element

    clash(B)
    out.grad.fill(1.0)
    with pytest.raises(fs.AccessRuleError, match="Rule 2"):
        clash.grad(B)
