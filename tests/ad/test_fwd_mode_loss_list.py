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


def test_components_of_a_vector_field_as_losses():
    # Taichi's way to get a vector output's JVP: one `get_scalar_field(i)` per component
    x = fs.field(fs.f64, shape=2, needs_dual=True)
    y = fs.Vector.field(3, fs.f64, shape=(), needs_dual=True)

    @fs.kernel
    def k():
        y[None][0] = x[0] * x[1]
        y[None][1] = fs.sin(x[0]) + x[1] ** 3
        y[None][2] = 2.0 * x[0]

    a, b = 0.7, -1.3
    x[0], x[1] = a, b
    jac = np.array([[b, a], [np.cos(a), 3 * b * b], [2.0, 0.0]])  # analytic d y / d x
    for seed in ([1.0, 0.0], [0.0, 1.0], [0.5, -2.0]):
        with fs.ad.FwdMode(loss=[y.get_scalar_field(i) for i in range(3)], param=x, seed=seed):
            k()
        np.testing.assert_allclose(y.dual[None].to_numpy(), jac @ np.array(seed), rtol=1e-12)
    # two of the three components: the listed ones get theirs (the dual is the whole field's)
    with fs.ad.FwdMode(loss=[y.get_scalar_field(2), y.get_scalar_field(0)], param=x, seed=[1.0, 1.0]):
        k()
    assert y.dual[None][2] == pytest.approx(2.0) and y.dual[None][0] == pytest.approx(a + b)


def test_a_component_as_param_is_refused_naming_its_field():
    x = fs.Vector.field(2, fs.f64, shape=(), needs_dual=True)
    y = fs.field(fs.f64, shape=(), needs_dual=True)
    mode = fs.ad.FwdMode(loss=y, param=x.get_scalar_field(1), seed=[1.0])
    with pytest.raises(RuntimeError, match=r"one component of a vector/matrix field; give param='x'"), mode:
        pass
