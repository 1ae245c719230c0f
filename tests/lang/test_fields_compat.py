"""Taichi-compatible layout and field access: SNode axis order and merged axes, offsets, explicit
gradient placement, write-through element access, ndrange edge cases, 0-D struct-for, fill in
kernels."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.lang.enums import SNodeGradType


# --------------------------------------------------------------------------- SNode layout
def test_axis_order_follows_axis_index_not_call_order():
    h = fs.field(fs.i32)
    fs.root.dense(fs.l, 3).dense(fs.i, 5).place(h)
    assert h.shape == (5, 3)

    @fs.kernel
    def fill():
        for a, b in h:
            h[a, b] = a * 10 + b

    fill()
    expect = np.arange(5)[:, None] * 10 + np.arange(3)[None, :]
    np.testing.assert_array_equal(h.to_numpy(), expect)


def test_repeated_axis_is_one_axis_of_the_product():
    x = fs.field(fs.i32)
    fs.root.dense(fs.i, 4).dense(fs.i, 8).place(x)
    assert x.shape == (32,)

    @fs.kernel
    def fill():
        for i in x:
            x[i] = i * 3

    fill()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(32) * 3)


def test_nested_2d_blocks_shape_and_values():
    x = fs.field(fs.i32)
    fs.root.dense(fs.ij, 2).dense(fs.ij, (3, 4)).place(x)
    assert x.shape == (6, 8)

    @fs.kernel
    def fill():
        for i, j in x:
            x[i, j] = i + 100 * j

    fill()
    assert x[5, 7] == 5 + 700


def test_snode_tree_api():
    x = fs.field(fs.f32, name="xs")
    blk = fs.root.dense(fs.i, 4)
    leaf = blk.dense(fs.j, 2)
    leaf.place(x)
    assert blk.shape == (4,) and leaf.shape == (4, 2)
    assert x.snode._name == "xs" and x._name == "xs"
    assert x.snode.parent() is leaf and x.snode.parent(2) is blk
    assert x.parent() is leaf
    assert leaf in blk.get_children()
    assert x.snode in leaf.get_children()


def test_root_place_gives_0d_field_and_0d_struct_for_runs_once():
    s = fs.field(fs.i32)
    fs.root.place(s)
    assert s.shape == ()

    @fs.kernel
    def bump():
        for I in fs.grouped(s):
            s[I] += 5

    bump()
    assert s[None] == 5


def test_grouped_empty_ndrange_runs_once():
    s = fs.field(fs.i32, shape=())

    @fs.kernel
    def bump():
        for I in fs.grouped(fs.ndrange()):
            s[I] += 1

    bump()
    bump()
    assert s[None] == 2


# --------------------------------------------------------------------------- offsets
def test_offset_kernel_and_python_scope_agree():
    a = fs.field(fs.i32, shape=(4, 3), offset=(-2, 10))

    @fs.kernel
    def fill():
        for i, j in a:
            a[i, j] = i * 100 + j

    fill()
    for i in range(-2, 2):
        for j in range(10, 13):
            assert a[i, j] == i * 100 + j
    # to_numpy is the plain array: element [0, 0] is the cell at the offset
    assert a.to_numpy()[0, 0] == -2 * 100 + 10
    with pytest.raises(IndexError, match=r"\[-2, 2\)"):
        a[2, 10]
    with pytest.raises(IndexError):
        a[-3, 10] = 1


def test_offset_on_placement_and_vector_field():
    v = fs.Vector.field(2, fs.f32, shape=5, offset=7)
    b = fs.field(fs.f32)
    fs.root.dense(fs.i, 5).place(b, offset=(7,))

    @fs.kernel
    def go():
        for i in v:
            v[i] = fs.Vector([i, 2 * i])
            b[i] = v[i][1] + 1

    go()
    assert v[11][1] == 22
    assert b[7] == 15
    np.testing.assert_array_equal(b.to_numpy(), 2 * np.arange(7, 12) + 1)


def test_offset_gradient_field_shares_offset():
    x = fs.field(fs.f64, shape=4, offset=-1, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    x.from_numpy(np.array([1.0, 2.0, 3.0, 4.0]))

    @fs.kernel
    def f():
        for i in x:
            loss[None] += x[i] ** 3

    with fs.ad.Tape(loss=loss):
        f()
    # d/dx sum x^3 = 3 x^2, at storage order
    np.testing.assert_allclose(x.grad.to_numpy(), 3 * np.array([1.0, 2.0, 3.0, 4.0]) ** 2)
    assert x.grad[-1] == pytest.approx(3.0)


def test_offset_errors():
    with pytest.raises(fs.FieldsimCompilationError, match="dimensionality of shape and offset"):
        fs.field(fs.f32, shape=3, offset=(1, 2))
    with pytest.raises(fs.FieldsimCompilationError, match="shape cannot be None when offset"):
        fs.Vector.field(2, fs.f32, offset=(3,))


# --------------------------------------------------------------------------- gradient placement
def test_explicit_grad_placement():
    x = fs.field(fs.f64)
    loss = fs.field(fs.f64)
    fs.root.dense(fs.i, 3).place(x, x.grad)
    fs.root.place(loss, loss.grad)
    assert x.grad.shape == (3,)
    x.from_numpy(np.array([0.5, 1.0, 2.0]))

    @fs.kernel
    def f():
        for i in x:
            loss[None] += fs.sin(x[i])

    with fs.ad.Tape(loss=loss):
        f()
    np.testing.assert_allclose(x.grad.to_numpy(), np.cos([0.5, 1.0, 2.0]))


def test_grad_of_a_field_without_needs_grad_exists_unplaced_and_may_be_placed_later():
    x = fs.field(fs.f32, shape=4)
    assert x.adjoint is None and x.grad.shape is None  # as in Taichi: x.grad exists, unplaced
    y = fs.field(fs.f32)
    fs.root.dense(fs.i, 4).place(y)
    fs.root.dense(fs.i, 4).place(y.grad)
    assert y.adjoint is y.grad and y.grad.shape == (4,)
    with pytest.raises(fs.FieldsimError, match="got None"):
        fs.root.dense(fs.i, 4).place(None)


def test_grad_types_and_lazy_dual():
    x = fs.field(fs.f32, shape=(), needs_grad=True, needs_dual=True)
    assert x.snode.ptr.get_snode_grad_type() == SNodeGradType.PRIMAL
    assert x.grad.snode.ptr.get_snode_grad_type() == SNodeGradType.ADJOINT
    assert x.dual.snode.ptr.get_snode_grad_type() == SNodeGradType.DUAL
    y = fs.field(fs.f32, shape=3)
    fs.root.lazy_dual()
    assert y.dual is not None and y.dual.shape == (3,)


def test_snode_ptr_tells_which_fields_have_gradients():
    """`field.snode.ptr.has_adjoint()`: how libraries (stannum's Tin) find the fields that take
    gradients; True for a field with `needs_grad` or a placed `.grad`, False for the others and
    for the gradient field itself, as in Taichi."""
    a = fs.field(fs.f32, shape=3, needs_grad=True)
    b = fs.field(fs.f32, shape=3)
    c = fs.Vector.field(2, fs.f32, shape=3, needs_grad=True)
    d = fs.field(fs.f32, shape=3, needs_grad=True, needs_dual=True)
    e = fs.field(fs.f32)
    fb = fs.FieldsBuilder()
    fb.dense(fs.i, 4).place(e, e.grad)
    fb.finalize()
    got = {n: (f.snode.ptr.has_adjoint(), f.snode.ptr.has_dual(), f.snode.ptr.is_primal())
           for n, f in dict(a=a, b=b, c=c, d=d, e=e, a_grad=a.grad).items()}
    assert got == {"a": (True, False, True), "b": (False, False, True), "c": (True, False, True),
                   "d": (True, True, True), "e": (True, False, True),
                   "a_grad": (False, False, False)}


def test_int_field_with_needs_grad_is_refused():
    with pytest.raises(RuntimeError, match="needs_grad=True"):
        fs.field(fs.i32, shape=2, needs_grad=True)


def test_tape_keeps_duals_and_fwdmode_keeps_grads():
    x = fs.field(fs.f32, shape=(), needs_grad=True, needs_dual=True)
    y = fs.field(fs.f32, shape=(), needs_grad=True, needs_dual=True)
    x[None] = 3.0

    @fs.kernel
    def f():
        y[None] += x[None] ** 2

    with fs.ad.Tape(loss=y):
        f()
    with fs.ad.FwdMode(loss=y, param=x):
        f()
    assert x.grad[None] == pytest.approx(6.0)  # FwdMode did not clear the adjoint
    with fs.ad.Tape(loss=y):
        f()
    assert y.dual[None] == pytest.approx(6.0)  # the Tape did not clear the dual


# --------------------------------------------------------------------------- Python-scope access
def test_element_item_assignment_writes_through():
    v = fs.Vector.field(3, fs.f32, shape=4)
    m = fs.Matrix.field(2, 2, fs.i32, shape=())
    v[2][1] = 5.0
    m[None][1, 0] = 7
    assert v[2][1] == 5.0 and v.to_numpy()[2, 1] == 5.0
    assert m[None][1, 0] == 7 and m.to_numpy()[1, 0] == 7
    assert v.to_numpy().sum() == 5.0


def test_numpy_integer_indices():
    x = fs.field(fs.i32, shape=(3, 4))
    x[np.int64(2), np.int32(3)] = 9
    assert x[np.int32(2), np.int64(3)] == 9
    m = fs.Matrix.field(2, 2, fs.i32, shape=2)
    assert m[np.int32(0)][np.int32(1), np.int32(1)] == 0


def test_index_errors_name_the_field():
    x = fs.field(fs.i32, shape=(2, 2), name="grid")
    with pytest.raises(TypeError, match="grid.*slicing"):
        x[0, :]
    with pytest.raises(AssertionError, match="grid"):
        x[0] = 1
    with pytest.raises(NotImplementedError, match="grid"):
        for _ in x:
            pass
    with pytest.raises(TypeError, match="grid"):
        x.copy_from(np.zeros((2, 2)))


def test_to_numpy_keep_dims_and_dtype_and_from_numpy_column():
    v = fs.Vector.field(2, fs.f32, shape=3)
    v.from_numpy(np.arange(6, dtype=np.float64).reshape(3, 2, 1))  # n x 1 columns accepted
    assert v.to_numpy(keep_dims=True).shape == (3, 2, 1)
    out = v.to_numpy(dtype=np.int64)
    assert out.dtype == np.int64
    np.testing.assert_array_equal(out, np.arange(6).reshape(3, 2))


def test_fill_inside_kernel():
    s = fs.field(fs.i32, shape=(3, 2))
    m = fs.Matrix.field(2, 3, fs.f32, shape=4)

    @fs.kernel
    def k(a: fs.i32, b: fs.f32):
        s.fill(a)
        m.fill(b)

    k(4, 1.5)
    np.testing.assert_array_equal(s.to_numpy(), np.full((3, 2), 4))
    np.testing.assert_array_equal(m.to_numpy(), np.full((4, 2, 3), 1.5, np.float32))


# --------------------------------------------------------------------------- ndrange
def test_ndrange_begin_after_end_runs_nothing():
    @fs.kernel
    def count(i1: fs.i32, i2: fs.i32, j1: fs.i32, j2: fs.i32) -> fs.i32:
        n = 0
        for i, j in fs.ndrange((i1, i2), (j1, j2)):
            n += 1
        return n

    assert count(0, 4, 0, 5) == 20
    assert count(0, 4, 5, 0) == 0
    assert count(4, 0, 5, 0) == 0  # two negative sizes must not multiply to a positive count


def test_ndrange_runtime_bounds_from_fields():
    a = fs.field(fs.i32, shape=())
    out = fs.field(fs.i32, shape=(4, 4))
    a[None] = 3

    @fs.kernel
    def go():
        for i, j in fs.ndrange(a[None], 2):
            out[i, j] = 1

    go()
    assert out.to_numpy().sum() == 6


def test_ndrange_bad_arguments():
    @fs.kernel
    def three():
        for i in fs.ndrange((1, 2, 3)):
            pass

    @fs.kernel
    def floats():
        for i in fs.ndrange((1.5, 4)):
            pass

    @fs.kernel
    def too_few_names():
        for i in fs.ndrange(2, 2):
            pass

    with pytest.raises(fs.FieldsimSyntaxError, match="begin, end"):
        three()
    with pytest.raises(fs.FieldsimTypeError, match="integer"):
        floats()
    with pytest.raises(fs.FieldsimSyntaxError, match="number of the loop variables"):
        too_few_names()
    assert list(fs.ndrange((np.int64(1), np.int32(3)))) == [(1,), (2,)]


# --------------------------------------------------------------------------- component fields
def test_get_scalar_field_places_and_shares_data():
    v = fs.Vector.field(3, fs.i32)
    comps = [v.get_scalar_field(c) for c in range(3)]
    for c in comps:
        fs.root.dense(fs.i, 6).place(c)
    assert v.shape == (6,)

    @fs.kernel
    def go():
        for i in comps[1]:
            comps[1][i] = i * 2
            fs.atomic_add(comps[2][i], 7)
            v[i][0] = comps[1][i] + 1

    go()
    np.testing.assert_array_equal(v.to_numpy()[:, 1], np.arange(6) * 2)
    np.testing.assert_array_equal(comps[0].to_numpy(), np.arange(6) * 2 + 1)
    assert comps[2][5] == 7
    comps[2].fill(-1)
    assert v[3][2] == -1


def test_get_scalar_field_of_matrix_python_scope_and_errors():
    m = fs.Matrix.field(2, 3, fs.f32, shape=4)
    c = m.get_scalar_field(1, 2)
    c[3] = 2.5
    assert m[3][1, 2] == 2.5 and m.to_numpy().sum() == 2.5
    with pytest.raises(IndexError):
        m.get_scalar_field(2, 0)
    w = fs.Vector.field(2, fs.f32)
    fs.root.dense(fs.i, 4).place(w.get_scalar_field(0))
    with pytest.raises(fs.FieldsimError, match="one shape"):
        fs.root.dense(fs.i, 5).place(w.get_scalar_field(1))


def test_python_scope_grouped_uses_offset_and_vector_index():
    a = fs.field(fs.i32, shape=(2, 3), offset=(5, -1))
    seen = []
    for I in fs.grouped(a):
        a[I] = I[0] * 10 + I[1]
        seen.append(tuple(I))
    assert seen[0] == (5, -1) and seen[-1] == (6, 1) and len(seen) == 6
    assert a[6, 0] == 60 and a[[5, 1]] == 51


def test_debug_bounds_error_on_offset_field_explains_the_index():
    fs.init(arch=fs.cpu, debug=True)
    a = fs.field(fs.i32, shape=4, offset=10, name="shifted")

    @fs.kernel
    def put(i: fs.i32):
        a[i] = 1

    put(13)
    assert a[13] == 1
    with pytest.raises(IndexError, match="shifted.*offset"):
        put(14)


def test_needs_grad_field_placed_with_its_grad_explicitly():
    x = fs.field(fs.f32, needs_grad=True)
    fs.root.dense(fs.i, 3).place(x, x.grad)
    assert x.grad.shape == (3,)
    y = fs.field(fs.f32)
    fs.root.dense(fs.i, 2).place(y)
    with pytest.raises(fs.FieldsimError, match="already placed"):
        fs.root.dense(fs.i, 2).place(y)


def test_adjoint_checkbit_after_a_validating_tape():
    x = fs.field(fs.f32)
    y = fs.field(fs.f32)
    fs.root.place(x, x.grad, y)
    assert not x.snode.ptr.has_adjoint_checkbit()

    @fs.kernel
    def k():
        x[None] = 1.0

    with fs.ad.Tape(loss=x, validation=True):
        k()
    assert x.snode.ptr.has_adjoint_checkbit()
    assert not y.snode.ptr.has_adjoint_checkbit()


def test_matrix_type_field_constructor():
    vec3i = fs.types.vector(3, fs.i32)
    x = vec3i.field()
    fs.root.dense(fs.i, 4).place(x)
    m = fs.types.matrix(2, 2, fs.f32).field(shape=(3,), offset=1)
    assert x.shape == (4,) and x.n == 3 and x.dtype == fs.i32
    m[3] = [[1, 2], [3, 4]]
    assert m.to_numpy()[2, 1, 0] == 3


def test_offset_stencil_gradient_matches_finite_differences():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    n = 6
    x = fs.field(float, shape=n, offset=-3, needs_grad=True)
    y = fs.field(float, shape=n - 2, offset=-2, needs_grad=True)
    loss = fs.field(float, shape=(), needs_grad=True)

    @fs.kernel
    def stencil():
        for i in y:
            y[i] = x[i - 1] * x[i + 1]

    @fs.kernel
    def reduce():
        for i in y:
            loss[None] += y[i] ** 2

    x0 = np.linspace(0.3, 1.7, n)
    x.from_numpy(x0)
    with fs.ad.Tape(loss=loss, validation=True):
        stencil()
        reduce()

    def f(v):
        return ((v[:-2] * v[2:]) ** 2).sum()

    h = 1e-6
    fd = np.array([(f(x0 + e) - f(x0 - e)) / (2 * h) for e in np.eye(n) * h])
    np.testing.assert_allclose(x.grad.to_numpy(), fd, rtol=1e-6)


def test_lazy_grad_on_a_node_covers_its_subtree_only():
    a, b = fs.field(fs.f32), fs.field(fs.f32)
    blk = fs.root.dense(fs.i, 3)
    blk.place(a)
    fs.root.dense(fs.i, 3).place(b)
    blk.lazy_grad()
    assert a.adjoint is not None and a.grad.shape == (3,)
    assert b.adjoint is None and b.grad.shape is None  # x.grad exists, unplaced, as in Taichi


def test_storing_a_float_beyond_f32_is_inf_without_a_numpy_warning():
    import warnings
    fs.init(arch=fs.cpu)
    f = fs.field(fs.f32, shape=2)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "overflow encountered in cast" leaked before
        f[0] = 1e300
        f[1] = -1e39
    assert f.to_numpy().tolist() == [float("inf"), -float("inf")]


def test_python_scope_index_out_of_range_is_also_an_assertion_error():
    # Taichi (debug=True) raises AssertionError here; fieldsim always checks, with IndexError
    fs.init(arch=fs.cpu)
    x = fs.field(fs.i32, 4, offset=-1)
    for bad in (lambda: x[3], lambda: x.__setitem__(-2, 1)):
        with pytest.raises(AssertionError, match=r"field 'x': index -?\d is out of range \[-1, 3\)"):
            bad()
        with pytest.raises(IndexError):
            bad()
