"""`fs.graph`: a fixed sequence of kernel launches over named symbolic arguments."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture
def kernels():
    fs.init(arch=fs.cpu)

    @fs.kernel
    def fill(a: fs.types.ndarray(ndim=1), value: fs.f32):
        for i in a:
            a[i] = value + i

    @fs.kernel
    def axpy(x: fs.types.ndarray(ndim=1), y: fs.types.ndarray(ndim=1), alpha: fs.f32):
        for i in x:
            y[i] += alpha * x[i]

    @fs.kernel
    def scale_rows(m: fs.types.ndarray(dtype=fs.math.vec2, ndim=1), s: fs.types.vector(2, fs.f32)):
        for i in m:
            m[i] = m[i] * s

    return fill, axpy, scale_rows


def test_sequence_runs_in_order_with_bound_names(kernels):
    fill, axpy, _ = kernels
    G = fs.graph
    x = G.Arg(G.ArgKind.NDARRAY, "x", fs.f32, ndim=1)
    y = G.Arg(G.ArgKind.NDARRAY, "y", dtype=fs.f32, ndim=1)
    alpha = G.Arg(G.ArgKind.SCALAR, "alpha", fs.f32)
    builder = G.GraphBuilder()
    builder.dispatch(fill, x, 1.0)
    step = builder.create_sequential()
    step.dispatch(axpy, x, y, alpha)
    for _ in range(3):
        builder.append(step)
    graph = builder.compile()
    a, b = fs.ndarray(fs.f32, 5), fs.ndarray(fs.f32, 5)
    b.from_numpy(np.full(5, 10, np.float32))
    graph.run({"x": a, "y": b, "alpha": 0.5})
    expect_x = 1.0 + np.arange(5)
    np.testing.assert_allclose(a.to_numpy(), expect_x)
    np.testing.assert_allclose(b.to_numpy(), 10 + 3 * 0.5 * expect_x)


def test_vector_elements_and_matrix_arguments(kernels):
    *_, scale_rows = kernels
    G = fs.graph
    m = G.Arg(G.ArgKind.NDARRAY, "m", dtype=fs.math.vec2, ndim=1)
    s = G.Arg(G.ArgKind.MATRIX, "s", fs.types.vector(2, fs.f32))
    builder = G.GraphBuilder()
    builder.dispatch(scale_rows, m, s)
    arr = fs.Vector.ndarray(2, fs.f32, shape=3)
    arr.from_numpy(np.arange(6, dtype=np.float32).reshape(3, 2))
    builder.compile().run({"m": arr, "s": fs.Vector([2.0, -1.0])})
    np.testing.assert_allclose(arr.to_numpy(), np.arange(6).reshape(3, 2) * [2, -1])


def test_wrong_values_are_refused_before_any_kernel_runs(kernels):
    fill, axpy, _ = kernels
    G = fs.graph
    x = G.Arg(G.ArgKind.NDARRAY, "x", fs.f32, ndim=1)
    y = G.Arg(G.ArgKind.NDARRAY, "y", fs.f32, ndim=1)
    builder = G.GraphBuilder()
    builder.dispatch(fill, x, 7.0)
    builder.dispatch(axpy, x, y, 1.0)
    graph = builder.compile()
    a = fs.ndarray(fs.f32, 4)
    with pytest.raises(fs.FieldsimRuntimeError, match="no value for argument.*y"):
        graph.run({"x": a})
    with pytest.raises(fs.FieldsimRuntimeError, match=r"'y'.*ndim 2 \(declared 1\)") as info:
        graph.run({"x": a, "y": fs.ndarray(fs.f32, (2, 2))})
    assert "test_graph.py" in str(info.value)
    with pytest.raises(fs.FieldsimRuntimeError, match=r"'y'.*element dtype i32 \(declared f32\)"):
        graph.run({"x": a, "y": fs.ndarray(fs.i32, 4)})
    np.testing.assert_array_equal(a.to_numpy(), 0)  # nothing ran


def test_bad_dispatches_fail_at_the_dispatch(kernels):
    fill, _, _ = kernels
    G = fs.graph
    x = G.Arg(G.ArgKind.NDARRAY, "x", fs.f32, ndim=1)
    s = G.Arg(G.ArgKind.SCALAR, "s", fs.f32)
    builder = G.GraphBuilder()
    with pytest.raises(fs.FieldsimRuntimeError, match="kernel 'fill': it takes 2 argument"):
        builder.dispatch(fill, x)
    with pytest.raises(fs.FieldsimRuntimeError, match="parameter 'a' is annotated ndarray"):
        builder.dispatch(fill, s, 1.0)
    with pytest.raises(fs.FieldsimRuntimeError, match="SCALAR needs a scalar dtype"):
        G.Arg(G.ArgKind.SCALAR, "v", fs.math.vec2)
    with pytest.raises(fs.FieldsimRuntimeError, match="TEXTURE argument needs ndim"):
        G.Arg(G.ArgKind.TEXTURE, "t")
    with pytest.raises(fs.FieldsimRuntimeError, match="invalid option.*fmt"):
        G.Arg(G.ArgKind.TEXTURE, "t", ndim=2, fmt=fs.Format.r8)
    with pytest.raises(fs.FieldsimRuntimeError, match="invalid option.*ndim"):
        G.Arg(G.ArgKind.SCALAR, "v", fs.f32, ndim=1)


def test_ndarray_argument_element_shape_is_callable_in_kernels():
    fs.init(arch=fs.cpu)

    @fs.func
    def components(q: fs.template()) -> fs.i32:
        n = 0
        if fs.static(q.element_shape() == [2]):
            n = 2
        elif fs.static(q.element_shape() == []):
            n = 1
        return n

    @fs.kernel
    def count(a: fs.types.ndarray(ndim=1)) -> fs.i32:
        return components(a)

    assert count(fs.Vector.ndarray(2, fs.f32, shape=3)) == 2
    assert count(fs.ndarray(fs.f32, 3)) == 1


def test_a_value_only_a_later_kernel_refuses_stops_the_graph_before_any_kernel_runs():
    @fs.kernel
    def bump(a: fs.types.ndarray(dtype=fs.f32, ndim=1)):
        for i in a:
            a[i] += 1

    @fs.kernel
    def add(a: fs.types.ndarray(dtype=fs.f32, ndim=1), b: fs.types.ndarray(dtype=fs.f32, ndim=1),
            s: fs.i32):
        for i in a:
            a[i] += s
            b[i] += s

    sym_a = fs.graph.Arg(fs.graph.ArgKind.NDARRAY, "a", dtype=fs.f32, ndim=1)
    sym_b = fs.graph.Arg(fs.graph.ArgKind.NDARRAY, "b", dtype=None, ndim=1)  # any dtype here
    sym_s = fs.graph.Arg(fs.graph.ArgKind.SCALAR, "s", fs.i32)
    builder = fs.graph.GraphBuilder()
    builder.dispatch(bump, sym_a)
    builder.dispatch(add, sym_a, sym_b, sym_s)
    graph = builder.compile()
    a, b = fs.ndarray(fs.f32, shape=4), fs.ndarray(fs.f32, shape=4)
    for bad, words in [({"s": 2 ** 31}, "out of range for i32"), ({"s": 2.5}, "expects an integer"),
                       ({"s": 1, "b": fs.ndarray(fs.f64, shape=4)}, "dtype=f64")]:
        with pytest.raises(fs.FieldsimTypeError, match=words):
            graph.run({"a": a, "b": b, **bad})
        assert not a.to_numpy().any() and not b.to_numpy().any()  # `bump` never ran
    graph.run({"a": a, "b": b, "s": 3})
    np.testing.assert_array_equal(a.to_numpy(), np.full(4, 4))
    np.testing.assert_array_equal(b.to_numpy(), np.full(4, 3))
