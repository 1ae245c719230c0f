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


def test_typed_vectors_are_default_typed_in_kernels():
    """Taichi 1.7.4 rebuilds a captured vector from its Python values: an f64 vector holds
    default_fp constants (f32 by default), an i64 one default_ip (i32) constants, an f32 one
    keeps its f32-rounded values under default_fp=f64."""
    fs.init(arch=fs.cpu)
    wide = fs.Vector([48.6, 0.1], fs.f64)
    big = fs.Vector([2**31 - 1, 7], fs.i64)
    out = fs.field(fs.f64, shape=3)
    iout = fs.field(fs.i64, shape=1)

    @fs.kernel
    def k(i: fs.i32):
        out[0] = wide[0]
        out[1] = wide[i] * 1.0
        out[2] = wide.dot(fs.Vector([0.0, 1.0], fs.f64))
        iout[0] = big[0] + 1  # wraps as an i32 sum

    k(1)
    assert out.to_numpy().tolist() == [float(np.float32(48.6)), float(np.float32(0.1)),
                                       float(np.float32(0.1))]
    assert iout[0] == -2**31
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    narrow = fs.Vector([48.6], fs.f32)
    wide = fs.Vector([48.6], fs.f64)
    out = fs.field(fs.f64, shape=2)

    @fs.kernel
    def k64():
        out[0] = narrow[0]
        out[1] = wide[0]

    k64()
    assert out.to_numpy().tolist() == [float(np.float32(48.6)), 48.6]


def test_numpy_array_as_kernel_vector_and_matrix_entries():
    # a D3Q19 LBM (yjhp1016/taichi_LBM3D) builds its moment matrix as `fs.Matrix(M_np)` in a kernel
    m_np = np.array([[1, 2, 3], [4, 5, 6]])
    s_np = np.array([0.5, 0.25, 2.0])
    m = fs.Matrix.field(2, 3, fs.f32, shape=())
    v = fs.Vector.field(3, fs.f32, shape=())
    w = fs.Vector.field(2, fs.f32, shape=())

    @fs.kernel
    def k():
        m[None] = fs.Matrix(m_np)
        v[None] = fs.Vector(s_np)
        w[None] = fs.Matrix(m_np) @ fs.Vector(s_np)

    k()
    assert np.array_equal(m.to_numpy(), m_np)
    assert np.array_equal(v.to_numpy(), s_np)
    assert np.allclose(w.to_numpy(), m_np @ s_np)


def test_writing_into_a_template_matrix_names_the_target_and_the_local_copy():
    # Taichi issue #4331: `A[i, j] = A[i, j] + 1` on a Python-scope matrix passed as a template
    # said only "cannot assign to int64 2"; copying it into a local works
    A = fs.Matrix([[2, 3, 4], [3, 4, 5]])
    out = fs.Matrix.field(2, 3, fs.i32, shape=())

    @fs.kernel
    def direct(A: fs.template()):
        for i in fs.static(range(A.n)):
            A[i, 0] = A[i, 0] + 1

    with pytest.raises(fs.FieldsimSyntaxError, match=r"(?s)line \d+.*'A\[i, 0\]'.*copy the value "
                                                     r"into a local first"):
        direct(A)

    @fs.kernel
    def copied(A: fs.template()):
        B = A
        for i in fs.static(range(A.n)):
            B[i, 0] = B[i, 0] + 1
        out[None] = B

    copied(A)
    assert out[None].to_numpy().tolist() == [[3, 3, 4], [4, 4, 5]]
