"""`fs.ad.FwdMode(loss=[l1, l2], ...)`: Taichi's FwdMode takes a list of loss fields and fills
each one's dual in the same pass; fieldsim refused the list ("loss must be a field")."""
import numpy as np
import pytest

from ._env import fs

pytestmark = pytest.mark.fs_init(fp="f64")


def test_two_losses_get_their_own_jvp():
    n = 4
    x = fs.field(fs.f64, shape=n, needs_dual=True)
    l1 = fs.field(fs.f64, shape=(), needs_dual=True)
    l2 = fs.field(fs.f64, shape=(), needs_dual=True)

    @fs.kernel
    def k():
        for i in range(n):
            l1[None] += fs.cos(x[i]) * (i + 1)
            l2[None] += x[i] * x[i] * x[(i + 1) % n]

    xs = np.array([0.3, -0.7, 1.1, 0.5])
    v = np.array([0.25, -1.0, 0.5, 2.0])
    x.from_numpy(xs)
    with fs.ad.FwdMode(loss=[l1, l2], param=x, seed=v.tolist()):
        k()
    # analytic gradients: d l1/dx_i = -(i+1) sin x_i;  d l2/dx_i = 2 x_i x_{i+1} + x_{i-1}^2
    g1 = -np.arange(1, n + 1) * np.sin(xs)
    g2 = 2 * xs * np.roll(xs, -1) + np.roll(xs, 1) ** 2
    assert l1.dual[None] == pytest.approx(g1 @ v, rel=1e-12)
    assert l2.dual[None] == pytest.approx(g2 @ v, rel=1e-12)


def test_loss_list_entries_must_be_fields():
    x = fs.field(fs.f64, shape=(), needs_dual=True)
    l1 = fs.field(fs.f64, shape=(), needs_dual=True)
    with pytest.raises(RuntimeError, match="loss must be a field"), fs.ad.FwdMode(loss=[l1, 3.0], param=x):
        pass
