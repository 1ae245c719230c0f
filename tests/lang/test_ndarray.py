"""Ndarrays: fs.ndarray / Vector.ndarray / Matrix.ndarray, numpy arrays as kernel arguments
(in place), shapes at launch time, struct-for, element types, and argument errors."""
import numpy as np
import pytest

import fieldsim as fs


def test_numpy_array_is_read_and_written_in_place():
    @fs.kernel
    def affine(a: fs.types.ndarray(), b: fs.types.ndarray(dtype=fs.f32, ndim=1)):
        for i in a:
            b[i] = a[i] * 2.0 + a.shape[0]

    a = np.arange(5, dtype=np.float32)
    b = np.zeros(5, np.float32)
    affine(a, b)
    np.testing.assert_allclose(b, a * 2 + 5)


def test_one_compiled_kernel_serves_every_shape_and_array():
    @fs.kernel
    def total(a: fs.types.ndarray(), out: fs.types.ndarray()):
        for i, j in a:
            out[None] += a[i, j]

    out = np.zeros((), np.float64)
    for shape in [(2, 3), (5, 1), (4, 7)]:
        a = np.random.default_rng(0).random(shape)
        out[...] = 0
        total(a, out)
        assert out[()] == pytest.approx(a.sum())
    assert len(total._cache) == 1  # specialised per dtype/ndim, never per shape
    total(np.ones((2, 2), np.float32), np.zeros((), np.float32))
    assert len(total._cache) == 2  # another dtype: another specialisation


def test_fieldsim_ndarray_python_scope_api():
    x = fs.ndarray(fs.f32, shape=(3, 2))
    assert x.shape == (3, 2)
    assert x.dtype == fs.f32
    x.fill(1.5)
    x[2, 1] = 4.0
    assert x[2, 1] == 4.0
    expected = np.full((3, 2), 1.5, np.float32)
    expected[2, 1] = 4
    np.testing.assert_array_equal(x.to_numpy(), expected)
    x.from_numpy(np.arange(6, dtype=np.float32).reshape(3, 2))
    assert x[1, 0] == 2.0
    with pytest.raises(IndexError):
        x[3, 0]
    s = fs.ndarray(fs.i32, shape=())
    s[None] = 7
    assert s[None] == 7


def test_ndarray_struct_for_grouped_and_shape():
    x = fs.ndarray(fs.i32, shape=(4, 3))

    @fs.kernel
    def fill(x: fs.types.ndarray()):
        for I in fs.grouped(x):
            x[I] = I[0] * 10 + I[1] + x.shape[1] * 100

    fill(x)
    i, j = np.indices((4, 3))
    np.testing.assert_array_equal(x.to_numpy(), i * 10 + j + 300)


def test_vector_and_matrix_ndarrays():
    v = fs.Vector.ndarray(3, fs.f32, shape=4)
    m = fs.Matrix.ndarray(2, 2, fs.f64, shape=(2,))
    assert v.to_numpy().shape == (4, 3) and m.to_numpy().shape == (2, 2, 2)

    @fs.kernel
    def fill(v: fs.types.ndarray(dtype=fs.types.vector(3, fs.f32), ndim=1),
             m: fs.types.ndarray()):
        for i in v:
            v[i] = fs.Vector([1.0, 2.0, 3.0]) * i
            v[i][1] += 0.5
        for k in m:
            m[k] = fs.Matrix([[1.0, 2.0], [3.0, 4.0]]) * (k + 1)

    fill(v, m)
    want = np.arange(4)[:, None] * np.array([1.0, 2.0, 3.0])
    want[:, 1] += 0.5
    np.testing.assert_allclose(v.to_numpy(), want)
    np.testing.assert_allclose(m.to_numpy()[1], [[2, 4], [6, 8]])


def test_numpy_array_with_vector_elements():
    @fs.kernel
    def norms(p: fs.types.ndarray(dtype=fs.types.vector(2, fs.f64), ndim=1),
              out: fs.types.ndarray()):
        for i in p:
            out[i] = p[i].norm()

    p = np.array([[3.0, 4.0], [6.0, 8.0], [0.0, 1.0]])
    out = np.zeros(3)
    norms(p, out)
    np.testing.assert_allclose(out, [5, 10, 1])


def test_ndarray_passed_through_a_func():
    @fs.func
    def bump(a: fs.template(), i):
        a[i] += 1

    @fs.kernel
    def k(a: fs.types.ndarray(ndim=1)):
        for i in a:
            bump(a, i)

    a = fs.ndarray(fs.i32, shape=5)
    k(a)
    k(a)
    np.testing.assert_array_equal(a.to_numpy(), np.full(5, 2))


@fs.kernel
def _first(x: fs.types.ndarray(fs.f32, ndim=1)):
    x[0] = 1


@pytest.mark.parametrize("bad, words", [
    (np.zeros((2, 2), np.float32), "required array has ndim=1, array with 2 dimensions"),
    (np.zeros(3, np.int32), "required array has dtype=f32, array with dtype=i32"),
    (np.zeros((3, 2), np.float32)[:, 0], "Non contiguous"),
    ([1.0, 2.0], "list"),
])
def test_argument_errors_name_kernel_argument_and_call_site(bad, words):
    # a TypeError like fieldsim's other argument errors, and a ValueError as in Taichi
    with pytest.raises(fs.FieldsimTypeError) as info:
        _first(bad)
    assert isinstance(info.value, ValueError)
    text = str(info.value)
    assert "'_first'" in text and "argument x" in text and words in text
    assert __file__ in text  # the user's launch line


def test_fortran_order_array_is_written_back():
    @fs.kernel
    def mark(a: fs.types.ndarray()):
        for i, j in a:
            a[i, j] = i * 10 + j

    base = np.zeros((3, 4), np.int32)
    mark(base.T)  # a (4, 3) Fortran-order view of base
    i, j = np.indices((4, 3))
    np.testing.assert_array_equal(base.T, i * 10 + j)


def test_matrix_element_numpy_array_dimension_errors():
    @fs.kernel
    def k(a: fs.types.ndarray(dtype=fs.types.matrix(3, 3, fs.f32), ndim=2)):
        pass

    k(np.zeros((2, 2, 3, 3), np.float32))
    with pytest.raises(ValueError, match=r"required element_shape=\(3, 3\), array with element "
                                         r"shape of \(2, 3\)"):
        k(np.zeros((2, 2, 2, 3), np.float32))
    with pytest.raises(ValueError, match="ndim=2 element_dim=2, array with 3 dimensions"):
        k(np.zeros((2, 2, 3), np.float32))


def test_field_passed_as_ndarray_is_refused():
    f = fs.field(fs.f32, shape=3)
    with pytest.raises(fs.FieldsimTypeError, match="fs.template"):
        _first(f)


def test_element_shape_mismatch_is_refused():
    @fs.kernel
    def k(m: fs.types.ndarray(dtype=fs.types.matrix(2, 2, fs.f32))):
        pass

    with pytest.raises(fs.FieldsimTypeError, match=r"element_shape=\(2, 2\)"):
        k(np.zeros((3, 2, 3), np.float32))
    with pytest.raises(fs.FieldsimTypeError, match="element shape of"):
        k(fs.Vector.ndarray(2, fs.f32, shape=3))


def test_int_ndarray_with_gradient_is_refused():
    with pytest.raises(fs.FieldsimRuntimeError, match="i32 is not supported"):
        fs.ndarray(fs.i32, shape=3, needs_grad=True)


def test_debug_bounds_check_uses_the_launch_shape():
    fs.init(arch=fs.cpu, debug=True)

    @fs.kernel
    def poke(a: fs.types.ndarray(), i: fs.i32):
        a[i] = 1.0

    a = np.zeros(4, np.float32)
    poke(a, 3)
    assert a[3] == 1
    with pytest.raises(fs.FieldsimIndexError, match="out of range for ndarray argument 'a'"):
        poke(a, 4)


def test_ndrange_over_an_ndarray_shape():
    @fs.kernel
    def pairs(a: fs.types.ndarray(dtype=fs.i32, ndim=1), out: fs.types.ndarray()):
        n = a.shape[0]
        for i, j in fs.ndrange(n - 1, (1, n)):
            out[i, j] = a[i] + a[j] * 100

    a = np.arange(5, dtype=np.int32)
    out = np.zeros((5, 5), np.int32)
    pairs(a, out)
    i, j = np.indices((5, 5))
    want = np.where((i < 4) & (j >= 1), i + j * 100, 0)
    np.testing.assert_array_equal(out, want)


def test_matrix_element_type_with_python_float_takes_any_dtype():
    @fs.kernel
    def k(a: fs.types.ndarray(dtype=fs.types.matrix(2, 2, float))):
        for i in a:
            for r, c in fs.ndrange(2, 2):
                a[i][r, c] = r * 2 + c + i * 10

    m = np.zeros((3, 2, 2), np.int32)
    k(m)
    np.testing.assert_array_equal(m[2], [[20, 21], [22, 23]])


def test_numpy_array_reshaped_in_place_is_seen_with_its_new_shape():
    @fs.kernel
    def rows(a: fs.types.ndarray(), out: fs.types.ndarray()):
        for i, j in a:
            out[i] += a[i, j]

    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    out = np.zeros(3, np.float32)
    rows(a, out)
    np.testing.assert_allclose(out[:2], [3, 12])
    a.shape = (3, 2)  # the same object, another shape
    out[:] = 0
    rows(a, out)
    np.testing.assert_allclose(out, [1, 5, 9])


def test_read_only_numpy_array_may_be_read_not_written():
    @fs.kernel
    def copy(src: fs.types.ndarray(), dst: fs.types.ndarray()):
        for i in src:
            dst[i] = src[i]

    src = np.frombuffer(np.arange(4, dtype=np.float32).tobytes(), dtype=np.float32)
    assert not src.flags.writeable
    dst = np.zeros(4, np.float32)
    copy(src, dst)
    np.testing.assert_array_equal(dst, [0, 1, 2, 3])
    with pytest.raises(ValueError, match="argument dst - the kernel writes it but the numpy "
                                         "array is read-only"):
        copy(dst, src)


def test_func_parameter_annotated_ndarray_is_checked():
    @fs.func
    def first_to(a: fs.types.ndarray(dtype=fs.types.vector(2, fs.f32), ndim=1), v):
        a[0] = fs.Vector([v, v])

    @fs.kernel
    def k(x: fs.types.ndarray(ndim=1)):
        first_to(x, 7.0)

    good = fs.Vector.ndarray(2, fs.f32, shape=3)
    k(good)
    assert list(good.to_numpy()[0]) == [7.0, 7.0]
    with pytest.raises(fs.FieldsimCompilationError, match=r"func 'first_to': Invalid value for "
                                                          r"argument a - required element_shape"):
        k(fs.Vector.ndarray(3, fs.f32, shape=3))


def test_ndrange_with_an_empty_runtime_axis_runs_nothing():
    @fs.kernel
    def count(b0: fs.i32, e0: fs.i32, b1: fs.i32, e1: fs.i32) -> fs.i32:
        n = 0
        for i, j in fs.ndrange((b0, e0), (b1, e1)):
            n += 1
        return n

    assert count(0, 3, 0, 4) == 12
    assert count(3, 0, 4, 0) == 0  # two empty axes must not make a non-empty product
    assert count(0, 3, 4, 0) == 0


def test_ndarray_classes_are_taichis_by_element_rank():
    # programs test `type(a) is ti.lang._ndarray.ScalarNdarray` (taichi_benchmark's mac utils)
    import fieldsim.lang as lang

    s = fs.ndarray(fs.f32, shape=(3,), needs_grad=True)
    v = fs.Vector.ndarray(2, fs.i32, shape=4)
    m = fs.ndarray(fs.types.matrix(2, 3, fs.f32), shape=2)
    assert type(s) is lang._ndarray.ScalarNdarray and type(s.grad) is fs.ScalarNdarray
    assert type(v) is fs.VectorNdarray and type(m) is fs.MatrixNdarray
    assert all(isinstance(a, fs.Ndarray) for a in (s, v, m))
    # the Taichi-shaped constructors make working arrays
    built = [fs.ScalarNdarray(fs.i32, (4,)), fs.VectorNdarray(2, fs.f32, (3,)),
             fs.MatrixNdarray(2, 2, fs.f32, (2,))]

    @fs.kernel
    def fill(a: fs.types.ndarray(), b: fs.types.ndarray(), c: fs.types.ndarray()):
        for i in a:
            a[i] = i * 3
        for i in b:
            b[i] = [i, -i]
        for i in c:
            c[i] = [[i, 1], [2, i]]

    fill(*built)
    assert built[0].to_numpy().tolist() == [0, 3, 6, 9]
    assert built[1].to_numpy().tolist() == [[0, 0], [1, -1], [2, -2]]
    assert built[2].to_numpy()[1].tolist() == [[1, 1], [2, 1]]


def test_needs_grad_annotation_refuses_a_gradientless_ndarray():
    @fs.kernel
    def cube(a: fs.types.ndarray(dtype=fs.f32, ndim=1, needs_grad=True),
             loss: fs.types.ndarray(dtype=fs.f32, ndim=0)):
        for i in a:
            loss[None] += a[i] ** 3

    plain = fs.ndarray(fs.f32, 3)
    loss = fs.ndarray(fs.f32, ())
    # Taichi refuses it too; accepted, `cube.grad` would leave no gradient anywhere, silently
    with pytest.raises(ValueError, match=r"cube.*argument a.*needs_grad=True.*'plain'"):
        cube(plain, loss)
    with pytest.raises(ValueError, match="needs_grad=True"):
        cube.grad(plain, loss)
    a = fs.ndarray(fs.f32, 3, needs_grad=True)
    a.from_numpy(np.array([1.0, 2.0, -1.0], np.float32))
    loss = fs.ndarray(fs.f32, (), needs_grad=True)
    loss.grad.fill(1.0)
    cube(a, loss)
    cube.grad(a, loss)
    np.testing.assert_allclose(a.grad.to_numpy(), 3 * np.array([1.0, 2.0, -1.0]) ** 2)
    host = np.ones(3, np.float32)  # a NumPy array never carries a gradient: taken, as in Taichi
    cube(host, np.zeros((), np.float32))


def test_bad_ndarray_shape_names_the_ndarray():
    with pytest.raises(ValueError, match=r"ndarray 'velocity': shape \(4, 0\) must be positive"):
        velocity = fs.Vector.ndarray(2, fs.f32, (4, 0))  # noqa: F841
    with pytest.raises(TypeError, match=r"ndarray 'mass': shape \(2.5,\) has 2.5"):
        mass = fs.ndarray(fs.f32, 2.5)  # noqa: F841
