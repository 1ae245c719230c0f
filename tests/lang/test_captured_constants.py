"""Module-level `fs.Vector`/`fs.Matrix` values used inside kernels: captured as constants (with
their dtype), usable in arithmetic, indexing, swizzles and methods; not assignable."""
import numpy as np
import pytest

import fieldsim as fs

GRAVITY = fs.Vector([0.0, -9.8, 0.0])
ROT = fs.Matrix([[0.0, -1.0], [1.0, 0.0]])
STEPS = fs.Vector([3, 5], dt=fs.i64)


def test_global_vector_and_matrix_in_kernel():
    v = fs.Vector.field(3, fs.f32, shape=4)
    out = fs.field(fs.f32, shape=())

    @fs.kernel
    def k():
        for i in v:
            v[i] = GRAVITY * i
        r = ROT @ fs.Vector([1.0, 2.0])
        out[None] = r[0] * 10 + r[1] + GRAVITY.y + GRAVITY.norm_sqr() + STEPS[1]

    k()
    assert np.allclose(v.to_numpy()[3], [0.0, -29.4, 0.0])
    assert out[None] == pytest.approx(-20 + 1 - 9.8 + 9.8 ** 2 + 5, rel=1e-5)


def test_closure_and_attribute_vectors():
    offset = fs.Vector([1.0, 2.0])

    class Params:
        scale = fs.Vector([10.0, 100.0])

    p = Params()
    out = fs.Vector.field(2, fs.f32, shape=())

    @fs.kernel
    def k():
        out[None] = offset * p.scale

    k()
    assert np.allclose(out[None].to_numpy(), [10.0, 200.0])


def test_captured_vector_is_not_assignable():
    @fs.kernel
    def k():
        GRAVITY[0] = 1.0

    with pytest.raises(fs.FieldsimSyntaxError, match="cannot assign"):
        k()
