"""fs.ad.jax_function: fieldsim kernels inside JAX (custom_vjp), checked with
jax.test_util.check_grads (float64 finite differences) and against analytic derivatives."""
import numpy as np
import pytest

import fieldsim as fs

jax = pytest.importorskip("jax")
jnp = jax.numpy


@pytest.fixture(autouse=True)
def x64():
    jax.config.update("jax_enable_x64", True)
    yield
    jax.config.update("jax_enable_x64", False)


@fs.kernel
def _stage(a: fs.types.ndarray(), w: fs.types.ndarray(), c: fs.types.ndarray()):
    for i in a:
        c[None] += (fs.sin(a[i]) * w[i] + a[i] * a[i]) ** 2


def _sim(a, w):
    c = np.zeros((), a.dtype)
    _stage(a, w, c)
    return c


def _ref(a, w):
    return ((jnp.sin(a) * w + a * a) ** 2).sum()


energy = fs.ad.jax_function(_sim, out_shapes=lambda a, w: jax.ShapeDtypeStruct((), a.dtype))


def test_check_grads_float64():
    from jax.test_util import check_grads
    a = jnp.linspace(0.1, 1.0, 5)
    w = jnp.linspace(-1.0, 0.5, 5)
    check_grads(energy, (a, w), order=1, modes=["rev"])


def test_grad_under_jit_matches_analytic():
    a = jnp.linspace(-0.5, 1.0, 6)
    w = jnp.cos(a)
    got = jax.jit(jax.grad(energy, argnums=(0, 1)))(a, w)
    want = jax.grad(_ref, argnums=(0, 1))(a, w)
    for g, e in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(e), rtol=1e-12)
    assert float(energy(a, w)) == pytest.approx(float(_ref(a, w)), rel=1e-12)


def test_two_forwards_before_their_backwards():
    a1, a2 = jnp.linspace(0, 1, 4), jnp.linspace(1, 2, 4)
    w = jnp.ones(4)
    _, vjp1 = jax.vjp(energy, a1, w)
    _, vjp2 = jax.vjp(energy, a2, w)
    g2, g1 = vjp2(1.0)[0], vjp1(1.0)[0]
    np.testing.assert_allclose(np.asarray(g1), np.asarray(jax.grad(_ref)(a1, w)), rtol=1e-12)
    np.testing.assert_allclose(np.asarray(g2), np.asarray(jax.grad(_ref)(a2, w)), rtol=1e-12)


def test_missing_out_shapes_is_a_clear_error():
    with pytest.raises(fs.FieldsimError, match="out_shapes"):
        fs.ad.jax_function(_sim)


def test_vmap_runs_once_per_batch_element():
    batch = jnp.arange(6.0).reshape(2, 3) / 4.0
    w = jnp.ones(3)
    got = jax.vmap(jax.grad(energy), in_axes=(0, None))(batch, w)
    want = jax.vmap(jax.grad(_ref), in_axes=(0, None))(batch, w)
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)
