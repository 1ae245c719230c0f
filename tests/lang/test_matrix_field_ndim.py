"""`fs.Matrix.field(n, m, dtype, ..., ndim=1)` makes a field of n-vectors, as Taichi's `ndim`
argument does: a `field_like(x)` helper copies a vector field as `Matrix.field(n=x.n, m=x.m,
ndim=x.ndim)`. The argument was ignored, so the copy held 3x1 matrices and an Adam step mixing
it with the vector field's gradient failed ("shape mismatch: (3, 1) and (3,)")."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def test_ndim_1_is_a_vector_field_like_the_original():
    x = fs.Vector.field(3, dtype=fs.f32, shape=4, needs_grad=True)
    m = fs.Matrix.field(n=x.n, m=x.m, dtype=x.dtype, shape=x.shape, ndim=x.ndim)
    assert (m.ndim, m.n, m.to_numpy().shape) == (1, 3, (4, 3))
    x.fill(2.0)
    x.grad.fill(0.5)

    @fs.kernel
    def adam_like():
        for i in fs.grouped(fs.ndrange(*x.shape)):
            m[i] = fs.math.mix(m[i], x.grad[i], 0.9)
            x[i] -= 0.1 * m[i] / (fs.sqrt(m[i] ** 2) + 1e-8)

    adam_like()
    assert np.allclose(m.to_numpy(), 0.45) and np.allclose(x.to_numpy(), 1.9)


def test_ndim_2_and_none_stay_matrices():
    col = fs.Matrix.field(3, 1, fs.f32, shape=2)
    assert col.ndim == 2 and col[0].to_numpy().shape == (3, 1)
    assert fs.Matrix.field(2, 2, fs.f32, shape=2, ndim=2).ndim == 2


def test_other_ndim_is_refused():
    with pytest.raises(ValueError, match="ndim must be 1"):
        fs.Matrix.field(2, 2, fs.f32, shape=2, ndim=3)
