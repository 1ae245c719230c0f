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


SIZES = np.array([5, 4, 3])


def test_global_numpy_array_indexed_with_constants():
    """As in Taichi, a numpy array captured by a kernel is a compile-time constant."""
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=3)

    @fs.func
    def flat(I):
        return (I.x * SIZES[1] + I.y) * SIZES[2] + I.z

    @fs.kernel
    def k():
        for I in fs.grouped(fs.ndrange(*(SIZES - 1))):
            if I.x == 3 and I.y == 2 and I.z == 1:
                out[0] = flat(I)
        out[1] = SIZES[0] * SIZES[2]
        out[2] = int(SIZES.prod())

    k()
    assert out.to_numpy().tolist() == [(3 * 4 + 2) * 3 + 1, 15, 60]


def test_list_of_kernel_values_with_item_assignment_is_a_local_vector():
    """`v = [a, b, c]; v[1] = v[2]` (Taichi: the list's items are variables)."""
    fs.init(arch=fs.cpu)
    src = fs.field(fs.i32, shape=4)
    out = fs.field(fs.i32, shape=(4, 3))
    src.from_numpy(np.array([10, 20, 30, 40], np.int32))

    @fs.kernel
    def k():
        for c in range(4):
            items = [src[(c + j) % 4] for j in range(3)]
            if c % 2 == 0:
                tmp = items[1]
                items[1] = items[2]
                items[2] = tmp
            for j in fs.static(range(3)):
                out[c, j] = items[j]

    k()
    want = [[10, 30, 20], [20, 30, 40], [30, 10, 40], [40, 10, 20]]
    assert out.to_numpy().tolist() == want
