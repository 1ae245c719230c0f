"""Taichi-compatible vector/matrix behaviour: list stores, comprehensions, any/all, Matrix.rows/
cols/diag, swizzles, dynamic indexing, normalized(eps) and its gradient, raw/bit builtins, casts,
element-wise ops, and Python-scope matrix values (write-through, element-wise comparisons)."""
import inspect
import math
import operator

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import FieldsimTypeError


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def test_store_lists_and_list_augassign():
    m = fs.Matrix.field(2, 2, fs.i32, shape=3)
    v = fs.Vector.field(2, fs.i32, shape=3)
    avg = fs.Vector.field(2, fs.f32, shape=())

    @fs.kernel
    def k():
        m[1] = [[1, 2], [3, 4]]
        v[1] = [5, 6]
        m[1] += [[1, 2], [3, 4]]
        v[1] += (5, 6)
        avg[None] = [0, 0]
        loc = fs.Vector([7, 7])
        loc = [1, 2]
        v[2] = loc

    avg[None] = [3.0, 4.0]
    k()
    np.testing.assert_array_equal(m.to_numpy()[1], [[2, 4], [6, 8]])
    np.testing.assert_array_equal(v.to_numpy()[1], [10, 12])
    np.testing.assert_array_equal(v.to_numpy()[2], [1, 2])
    np.testing.assert_array_equal(avg.to_numpy(), [0, 0])


def test_comprehensions_rows_cols_diag_any_all():
    out = fs.Matrix.field(3, 3, fs.f32, shape=4)
    flags = fs.field(fs.i32, shape=4)
    a = fs.Matrix.field(2, 2, fs.i32, shape=())

    @fs.kernel
    def k():
        out[0] = fs.Matrix([[r * 3 + c for c in range(3)] for r in range(3)]) + \
            fs.Matrix.identity(int, 3) - fs.Matrix.identity(float, 3)
        x = fs.Vector([1.0, 4.0, 7.0])
        y = fs.Vector([2.0, 5.0, 8.0])
        z = fs.Vector([3.0, 6.0, 9.0])
        out[1] = fs.Matrix.rows([x, y, z])
        out[2] = fs.Matrix.cols([x, y, z])
        out[3] = fs.Matrix.diag(dim=3, val=1.5)
        flags[0] = any(a[None])
        flags[1] = all(a[None])
        flags[2] = a[None].any()
        flags[3] = fs.Vector([e * 2 for e in range(3) if e != 1]).sum()

    a[None] = [[0, 1], [0, 0]]
    k()
    o = out.to_numpy()
    np.testing.assert_array_equal(o[0], np.arange(9).reshape(3, 3))
    rows = np.array([[1, 4, 7], [2, 5, 8], [3, 6, 9]])
    np.testing.assert_array_equal(o[1], rows)
    np.testing.assert_array_equal(o[2], rows.T)
    np.testing.assert_allclose(o[3], np.eye(3) * 1.5)
    assert list(flags.to_numpy()) == [1, 0, 1, 4]


def test_swizzles_fill_and_dynamic_index():
    v = fs.Vector.field(4, fs.i32, shape=2)
    s = fs.field(fs.i32, shape=3)

    @fs.kernel
    def k(j: fs.i32):
        a = fs.Vector([1, 2, 3, 4])
        a.xy = a.yx
        a.w = a.x * 10
        v[0] = a
        v[1].fill(7)
        v[1].zw = [8, 9]
        for i in range(3):
            b = fs.Vector([i, i + 1, i + 2])
            b[j] = 100
            s[i] = b[j] + b[(j + 1) % 3]

    k(1)
    np.testing.assert_array_equal(v.to_numpy(), [[2, 1, 3, 20], [7, 7, 8, 9]])
    np.testing.assert_array_equal(s.to_numpy(), [100 + 2, 100 + 3, 100 + 4])


def test_index_count_errors_name_the_line():
    @fs.kernel
    def row():
        m = fs.Matrix([[1, 2], [3, 4]])
        print(m[0])

    with pytest.raises(fs.FieldsimCompilationError, match="Expected 2 indices, got 1") as e:
        row()
    assert "test_matrix_compat.py" in str(e.value)

    @fs.kernel
    def vec():
        v = fs.Vector([1, 2])
        print(v[0, 0])

    with pytest.raises(fs.FieldsimCompilationError, match="Expected 1 indices, got 2"):
        vec()

    @fs.kernel
    def tr():
        print(fs.Vector([1, 2]).transpose())

    with pytest.raises(fs.FieldsimCompilationError, match="outer_product"):
        tr()


def test_runtime_index_out_of_range_is_an_assertion_in_debug():
    fs.init(arch=fs.cpu, debug=True)

    @fs.kernel
    def k(i: fs.i32) -> fs.i32:
        x = fs.Vector([1, 0])
        x[i] = 42
        return x[i]

    assert k(1) == 42
    with pytest.raises(AssertionError, match="Out of bound access"):
        k(2)


def test_normalized_eps_matches_taichi_and_its_gradient():
    fs.init(arch=fs.cpu, default_fp=fs.f64)  # the literals below are f64 too
    eps = 0.5
    x = fs.Vector.field(3, fs.f64, shape=(), needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    w = np.array([0.3, -1.2, 2.0])

    @fs.kernel
    def f():
        n = x[None].normalized(eps)
        m = fs.Vector.normalized(x[None], eps)  # called on the class, as Taichi allows
        loss[None] = n.dot(fs.Vector([0.3, -1.2, 2.0])) + 0.0 * m.sum()

    x0 = np.array([1.0, 2.0, -2.0])
    x.from_numpy(x0)
    with fs.Tape(loss):
        f()
    # Taichi 1.7.4: v / (|v| + eps)
    r = np.linalg.norm(x0)
    assert loss[None] == pytest.approx(w @ x0 / (r + eps), rel=1e-12)
    # d/dx (w.x / (|x| + eps)) = w / (r + eps) - (w.x) x / (r (r + eps)^2)
    expected = w / (r + eps) - (w @ x0) * x0 / (r * (r + eps) ** 2)
    np.testing.assert_allclose(x.grad.to_numpy(), expected, rtol=1e-10)
    py = fs.Vector(list(x0)).normalized(eps).to_numpy()
    np.testing.assert_allclose(py, x0 / (r + eps))


def test_raw_div_mod_and_shifts():
    out = fs.field(fs.i32, shape=8)
    fo = fs.field(fs.f32, shape=2)
    uo = fs.field(fs.u32, shape=1)

    @fs.kernel
    def k(a: fs.i32, b: fs.i32, u: fs.u32):
        out[0] = fs.raw_div(a, b)
        out[1] = fs.raw_mod(a, b)
        out[2] = a // b
        out[3] = a % b
        out[4] = fs.bit_sar(a, 1)
        out[5] = fs.bit_shr(a, 28)
        out[6] = fs.bit_shl(a, 2)
        out[7] = fs.bit_cast(fs.bit_cast(a, fs.f32), fs.i32)
        fo[0] = fs.raw_mod(-7.5, 2.0)
        fo[1] = fs.bit_cast(1065353216, fs.f32)
        uo[0] = fs.bit_sar(u, 1)

    k(-7, 2, 0x80000000)
    assert list(out.to_numpy()) == [-3, -1, -4, 1, -4, (-7 & 0xFFFFFFFF) >> 28, -28, -7]
    assert fo[0] == pytest.approx(math.fmod(-7.5, 2.0))
    assert fo[1] == 1.0
    assert uo[0] == 0xC0000000  # arithmetic shift whatever the signedness
    assert fs.raw_div(-7, 2) == -4 and fs.raw_mod(-7, 2) == -1  # Taichi folds Python ints so
    assert fs.bit_cast(1.0, fs.i32) == 1065353216


def test_elementwise_not_abs_and_casts_on_matrices():
    y = fs.Matrix.field(2, 2, fs.i32, shape=())
    out = fs.Matrix.field(2, 2, fs.i32, shape=3)
    f = fs.Matrix.field(2, 2, fs.f32, shape=())

    @fs.kernel
    def k():
        out[0] = not y[None]
        out[1] = abs(y[None])
        out[2] = fs.Matrix([[1.7, -2.7], [3.2, 0.0]], fs.i32)
        f[None] = fs.cast(y[None], fs.f32) / 2

    y[None] = [[0, -3], [5, 0]]
    k()
    o = out.to_numpy()
    np.testing.assert_array_equal(o[0], [[1, 0], [0, 1]])
    np.testing.assert_array_equal(o[1], [[0, 3], [5, 0]])
    np.testing.assert_array_equal(o[2], [[1, -2], [3, 0]])
    np.testing.assert_allclose(f.to_numpy(), [[0, -1.5], [2.5, 0]])


def test_python_scope_values_write_through_and_compare_elementwise():
    m = fs.Matrix.field(2, 2, fs.i32, shape=4)
    v = fs.Vector.field(3, fs.f32, shape=())
    m[1][0, 1] = 5
    v[None].y = 2.5
    v[None][2] = -1.0
    assert m[1][0, 1] == 5 and m.to_numpy()[1, 0, 1] == 5
    np.testing.assert_allclose(v.to_numpy(), [0, 2.5, -1])
    a = fs.Matrix([[1, 2], [3, 4]])
    b = fs.Matrix([[1, 0], [3, 0]])
    assert (a == b).to_list() == [[1, 0], [1, 0]]
    assert [list(r) for r in (a == b)] == [[1, 0], [1, 0]]
    for op in (operator.floordiv, operator.mod, operator.lshift, operator.and_, operator.xor):
        np.testing.assert_array_equal(op(a, fs.Matrix([[2, 1], [1, 3]])).to_numpy(),
                                      op(np.array([[1, 2], [3, 4]]), np.array([[2, 1], [1, 3]])))
    assert fs.Matrix.diag(2, 3.0).to_list() == [[3, 0], [0, 3]]
    assert fs.Matrix.cols([[1, 2], [3, 4]]).to_list() == [[1, 3], [2, 4]]
    with pytest.raises(fs.FieldsimTypeError, match="square matrix"):
        fs.Matrix([[1, 2], [3, 4], [5, 6]]).trace()


def test_python_scope_matrix_in_kernel_and_operator_functions():
    g = fs.Vector([3, 4])
    gm = fs.Matrix([[1, 2], [3, 4]])
    out = fs.Vector.field(2, fs.i32, shape=3)

    @fs.kernel
    def k():
        out[0] = operator.add(g, fs.Vector([1, 1]))
        out[1] = gm @ g
        out[2] = g @ gm  # a vector on the left is a row

    k()
    np.testing.assert_array_equal(out.to_numpy(), [[4, 5], [11, 25], [15, 22]])


def test_inverse_4x4_and_norm_inv():
    a = fs.Matrix.field(4, 4, fs.f64, shape=())
    r = fs.field(fs.f64, shape=())
    M = np.array([[4.0, 1, 0, 2], [1, 5, 1, 0], [0, 1, 6, 1], [2, 0, 1, 7]])

    @fs.kernel
    def k():
        a[None] = a[None].inverse()
        r[None] = fs.Vector([3.0, 4.0]).norm_inv()

    a.from_numpy(M)
    k()
    np.testing.assert_allclose(a.to_numpy(), np.linalg.inv(M), rtol=1e-12)
    assert r[None] == pytest.approx(0.2)


def test_types_predicates_and_quant_error():
    assert fs.types.is_integral(fs.u8) and not fs.types.is_integral(fs.f32)
    assert fs.types.is_real(fs.f64) and not fs.types.is_real(fs.i64)
    assert fs.types.quant.int(5, True).bits == 5  # supported now: a bad width is the error
    with pytest.raises(fs.FieldsimTypeError, match="quant") as e:
        fs.types.quant.int(0, True)
    assert "test_matrix_compat.py" in str(e.value)
    fs.init(arch=fs.cpu, fast_math=False)
    from fieldsim.lang import runtime
    assert runtime.get().fast_math is False


def test_types_is_tensor_and_utils():
    # eric2003/ModernTaichi codes/grammar/typeinfo/01: ti.types.is_tensor(ti.types.f32)
    assert fs.types.is_tensor(fs.f32) is False and fs.types.is_tensor(fs.i32) is False
    with pytest.raises(TypeError, match="is_tensor"):
        fs.types.is_tensor(fs.types.vector(3, fs.f32))
    assert fs.types.utils.is_real(fs.f16) and fs.types.uint1 is fs.u1


def test_vector_and_matrix_field_ndim_is_the_elements():
    # as Taichi's MatrixField.ndim (eric2003/ModernTaichi field/vector/05 printed 1 for a
    # 2-D vector field; fieldsim printed 2)
    fs.init(arch=fs.cpu)
    assert fs.Vector.field(2, fs.f32, shape=(4, 3)).ndim == 1
    assert fs.Matrix.field(2, 2, fs.f32, shape=(5,)).ndim == 2
    assert fs.Vector.field(3, fs.f32, shape=()).ndim == 1
    assert fs.field(fs.f32, shape=(4, 3)).ndim == 2  # Taichi's scalar fields have no ndim


def test_matrix_unpacks_into_rows_and_type_field():
    vec2 = fs.types.vector(2, fs.i32)
    rows = vec2.field(shape=2)
    s = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        r0, r1 = fs.Matrix([[1, 2], [3, 4]])
        rows[0] = r0
        rows[1] = r1

    @fs.kernel
    def bad():
        s[0], s[1], s[2], s[3] = fs.Matrix([[1, 2], [3, 4]])

    k()
    assert rows.to_numpy().tolist() == [[1, 2], [3, 4]]
    with pytest.raises(fs.FieldsimCompilationError, match="unpack"):
        bad()


def test_numpy_scalars_combine_with_vectors():
    scalar = np.cos(0.0)
    vec = fs.Vector([1, 2])
    assert isinstance(scalar + vec, fs.Vector) and isinstance(vec * np.float32(2), fs.Vector)
    assert (scalar / vec).to_list() == [1.0, 0.5]
    out = fs.Vector.field(2, fs.f32, shape=())

    @fs.kernel
    def k():
        out[None] = scalar / vec

    k()
    assert out.to_numpy().tolist() == [1.0, 0.5]


def test_static_loop_over_python_vectors_keeps_float_values():
    out = fs.Vector.field(2, fs.f32, shape=())
    offsets = [fs.Vector([0.5, 0.25]), fs.Vector([1.5, -0.75])]

    @fs.kernel
    def k():
        acc = fs.Vector([0.0, 0.0])
        for off in fs.static(offsets):
            acc += off
        out[None] = acc

    k()
    np.testing.assert_allclose(out.to_numpy(), [2.0, -0.5])


def test_floor_ceil_with_a_dtype():
    r = fs.field(fs.i32, shape=3)

    @fs.kernel
    def k(x: fs.f32):
        r[0] = fs.floor(x, fs.i32)
        r[1] = fs.ceil(x, dtype=fs.i32)
        r[2] = fs.floor(fs.Vector([x, -x]), fs.i32)[1]

    k(2.5)
    assert r.to_numpy().tolist() == [2, 3, -3]
    assert fs.floor(-2.5, fs.i32) == -3


def test_write_through_of_a_stale_copy_changes_one_entry():
    x = fs.Vector.field(2, fs.i32, shape=2)
    v = x[0]
    x[0] = [9, 9]
    v[1] = 5
    v.x = 4
    assert x[0].to_list() == [4, 5]
    w = x[1]
    x[1] = [7, 7]
    w.y = 1
    assert x[1].to_list() == [7, 1]


def test_gradient_through_runtime_components_of_a_matrix_field():
    m = fs.Matrix.field(2, 2, fs.f32, shape=3, needs_grad=True)
    n = fs.Matrix.field(2, 2, fs.f32, shape=3, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def f():
        for i in range(3):
            for j, k in fs.ndrange(2, 2):
                m[i][j, k] = (j + 1) * (k + 2) * n[i][j, k]
                loss[None] += m[i][j, k]

    n.from_numpy(np.random.default_rng(0).random((3, 2, 2)).astype(np.float32))
    with fs.Tape(loss):
        f()
    # d loss / d n[i][j, k] = (j + 1) * (k + 2)
    expected = np.broadcast_to(np.array([[2.0, 3.0], [4.0, 6.0]]), (3, 2, 2))
    np.testing.assert_allclose(n.grad.to_numpy(), expected)


def test_constant_component_out_of_range_is_a_compile_error():
    x = fs.Vector.field(3, fs.f32, shape=2)

    @fs.kernel
    def k():
        x[0][0] = x[1][3]

    with pytest.raises(fs.FieldsimCompilationError, match="out of range") as e:
        k()
    assert "test_matrix_compat.py" in str(e.value)


def test_static_slices_of_vectors_and_matrices():
    out = fs.Vector.field(2, fs.f32, shape=4)
    sub = fs.Matrix.field(2, 2, fs.f32, shape=())
    mf = fs.Matrix.field(3, 3, fs.f32, shape=())
    M = np.array([[1.0, 2, 0], [3, 4, 0], [5, 6, 7]])

    @fs.kernel
    def k():
        m = mf[None]
        out[0] = m[0, :2]
        out[1] = m[1:, 1]
        sub[None] = m[1:, :2]
        out[2] = fs.Vector([1.0, 2.0, 3.0, 4.0])[::2]
        out[3] = mf[None][2, 1:]

    mf.from_numpy(M)
    k()
    np.testing.assert_array_equal(out.to_numpy(), [M[0, :2], M[1:, 1], [1, 3], M[2, 1:]])
    np.testing.assert_array_equal(sub.to_numpy(), M[1:, :2])


def test_augmented_assignment_on_swizzles_and_runtime_indices():
    o = fs.Vector.field(3, fs.f32, shape=3)

    @fs.kernel
    def k():
        v = fs.Vector([1.0, 2.0, 3.0])
        v.xy += 1
        v.zx *= fs.Vector([2.0, 3.0])
        o[0] = v
        for i in range(3):
            w = fs.Vector.zero(fs.f32, 3)
            w[i] += i * 1.5
            fs.atomic_add(w[(i + 1) % 3], 1.0)
            o[1] += w
        o[2].yz += [5.0, 6.0]
        for e in fs.static(v):
            o[2].x += e

    k()
    np.testing.assert_allclose(o.to_numpy(), [[6, 3, 6], [1, 2.5, 4], [15, 5, 6]])


def test_matrix_of_a_flat_list_is_a_vector_in_kernels():
    o = fs.Vector.field(3, fs.f32, shape=2)

    @fs.kernel
    def k():
        x = fs.Matrix([3, 4, 5])
        x[0] = 20
        o[0] = x
        o[1] = fs.Vector(x, fs.f32) / 2

    k()
    np.testing.assert_allclose(o.to_numpy(), [[20, 4, 5], [10, 2, 2.5]])


def test_matrix_of_a_flat_list_is_a_vector_in_python_scope():
    # Taichi 1.7.4's Python-scope Matrix of a flat list is 1-D: shape (2,), a vector product
    # (fieldsim made a 2x1 column, so to_numpy() and `A @ m` came out (2, 1))
    m = fs.Matrix([1.0, 2.0])
    assert m.to_numpy().shape == (2,) and (m.n, m.m) == (2, 1)
    assert (fs.Matrix([[1.0, 2.0], [3.0, 4.0]]) @ m).to_numpy().tolist() == [5.0, 11.0]
    o = fs.Vector.field(2, fs.f32, shape=())
    o[None] = m
    assert o[None].to_list() == [1.0, 2.0]


@pytest.mark.parametrize("kind", ["Vector", "Matrix"])
@pytest.mark.parametrize("arg", [3, 2.5, np.float32(1.0), np.array(5.0)])
def test_a_lone_number_is_not_a_vector(kind, arg):
    # `ti.Vector(3, dt=ti.f32)` declared a field before Taichi 1.0; Taichi 1.7.4 refuses a lone
    # number (fieldsim made the 1-vector [3.], which failed far away)
    with pytest.raises(fs.FieldsimTypeError, match=f"a {kind} is made from an array-like") as info:
        getattr(fs, kind)(arg, dt=fs.f32)
    assert "test_matrix_compat.py" in str(info.value)


def test_python_scope_raw_and_bit_builtins_on_vectors():
    assert fs.raw_div(fs.Vector([-7, 7]), 2).to_list() == [-3.5, 3.5]  # as Taichi 1.7.4
    assert fs.raw_mod(fs.Vector([-7.5, 7.5]), 2.0).to_list() == [-1.5, 1.5]
    assert fs.bit_shr(fs.Vector([-1, 8]), 1).to_list() == [0x7FFFFFFF, 4]
    assert fs.bit_sar(-8, 1) == -4 and fs.bit_shl(3, 2) == 12


def test_atomic_on_a_literal_is_a_clear_error():
    @fs.kernel
    def k():
        y = fs.Vector([1, 2, 3])
        print(fs.atomic_min([3, 2, 1], y))

    with pytest.raises(fs.FieldsimSyntaxError, match="non-writable target.*atomic_min"):
        k()


def test_python_scope_cast_keeps_vectors():
    v = fs.cast(fs.Vector([1.5, -2.7]), fs.i32)
    assert isinstance(v, fs.Vector) and v.to_list() == [1, -2]
    assert fs.Matrix([[1.5, 2.5]]).cast(fs.i32).to_list() == [[1, 2]]


def test_python_scope_abs_keeps_integers():
    assert fs.abs(-3) == 3 and isinstance(fs.abs(-3), int)
    assert fs.abs(fs.Vector([-1, 2])).to_list() == [1, 2]
    assert fs.abs(-2.5) == 2.5


def test_matrix_constructors_take_keyword_arguments():
    # Taichi's parameter names: identity(dt, n), diag(dim, val), zero/one(dt, n, m), unit(n, i, dt)
    r = fs.Matrix.field(2, 2, fs.f32, shape=())
    u = fs.Vector.field(3, fs.i32, shape=())
    z = fs.Matrix.field(2, 3, fs.f32, shape=())

    @fs.kernel
    def k():
        r[None] = fs.Matrix.identity(dt=fs.f32, n=2) * 3 + fs.Matrix.diag(val=1.0, dim=2)
        u[None] = fs.Vector.unit(3, i=1) + fs.Vector.zero(n=3, dt=fs.i32)
        z[None] = fs.Matrix.zero(fs.f32, 2, m=3) + 2 * fs.Matrix.one(n=2, m=3, dt=fs.f32)

    k()
    np.testing.assert_array_equal(r.to_numpy(), 4 * np.eye(2))
    np.testing.assert_array_equal(u.to_numpy(), [0, 1, 0])
    np.testing.assert_array_equal(z.to_numpy(), np.full((2, 3), 2.0))

    @fs.kernel
    def bad():
        r[None] = fs.Matrix.identity(fs.f32, n=2, m=3)

    with pytest.raises(fs.FieldsimTypeError, match="identity"):
        bad()


def test_matrix_constant_without_its_dtype_is_refused_by_name():
    # GeoTaichi's getDeterminant writes `ti.Matrix.zero(ndim - 1, mdim - 1)`, leaving out the
    # dtype; Taichi refuses it ("Invalid data type 2"), fieldsim failed on an internal attribute
    @fs.kernel
    def zero() -> float:
        m = fs.Matrix.zero(2, 2)
        return m[0, 0]

    with pytest.raises(fs.FieldsimTypeError, match=r"Matrix.zero: 2 is not a data type") as e:
        zero()
    assert "test_matrix_compat.py" in str(e.value) and "Matrix.zero(2, 2)" in str(e.value)

    @fs.kernel
    def eye() -> float:
        return fs.Matrix.identity(3, 3).sum()

    with pytest.raises(fs.FieldsimTypeError, match=r"Matrix.identity: 3 is not a data type"):
        eye()

    @fs.kernel
    def good() -> float:
        return fs.Matrix.zero(float, 2, 2).sum() + fs.Matrix.identity(int, 3).sum() + \
            fs.Vector.unit(3, 1).sum() + fs.Vector.one(fs.f64, 2).sum()

    assert good() == 6.0


def test_pre_1_0_matrix_field_spelling_is_named_at_its_line():
    # `ti.Matrix(2, 2, dt=ti.f32, shape=...)` (course code from 2020) bound the column count to
    # `dt`: Python's "multiple values for argument 'dt'" named neither the form nor the way out
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(FieldsimTypeError, match=r"pre-1.0 spelling.*Matrix.field\(n, m") as info:
        fs.Matrix(2, 2, dt=fs.f32, shape=(4, 4))
    assert info.value.loc.line == line and info.value.loc.file == __file__
    with pytest.raises(FieldsimTypeError, match="pre-1.0 spelling"):
        fs.Matrix(3, 3, fs.f32)
    with pytest.raises(FieldsimTypeError, match=r"pre-1.0 spelling.*Vector.field\(n, dtype"):
        fs.Vector(2, fs.f32, 8)
    assert fs.Vector([1, 2], fs.f32).to_numpy().dtype == np.float32
    assert fs.Vector([[1, 2]], fs.i32).to_numpy().shape == (1, 2)  # rows: a matrix, as in Taichi
    # the value forms keep their positional and keyword dtype
    assert fs.Matrix([[1, 2], [3, 4]], fs.f32).dtype == fs.f32
    assert fs.Matrix([[1, 2], [3, 4]], dt=fs.i32).to_numpy().dtype == np.int32
