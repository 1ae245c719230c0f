"""Fields: creation, shapes, dtypes, Python-scope access, numpy transfer, placement, grads."""
import os

import numpy as np
import pytest

import fieldsim as fs

AS_TAICHI = os.environ.get("FIELDSIM_AS_TAICHI") == "1"

DTYPES = [
    (fs.f32, np.float32),
    (fs.f64, np.float64),
    (fs.i32, np.int32),
    (fs.i64, np.int64),
    (fs.u8, np.uint8),
    (fs.u32, np.uint32),
]
DTYPE_IDS = ["f32", "f64", "i32", "i64", "u8", "u32"]


# --------------------------------------------------------------------------- init / reset


def test_reinit_gives_fresh_independent_fields():
    x = fs.field(fs.f32, shape=4)
    x.fill(7.0)
    assert x[2] == 7.0
    fs.init(arch=fs.cpu)
    y = fs.field(fs.f32, shape=4)
    # a field created after re-init starts zeroed, whatever the old runtime held
    np.testing.assert_array_equal(y.to_numpy(), np.zeros(4, np.float32))
    y[1] = 3.0

    @fs.kernel
    def double():
        for i in y:
            y[i] = y[i] * 2.0

    double()
    np.testing.assert_array_equal(y.to_numpy(), [0.0, 6.0, 0.0, 0.0])


@pytest.mark.fieldsim_specific
@pytest.mark.skipif(AS_TAICHI, reason="Taichi 1.7 segfaults on a field from a previous init")
def test_old_field_unusable_after_reinit():
    # fieldsim-specific: Taichi crashes the process; fieldsim must raise a Python exception
    x = fs.field(fs.f32, shape=4)
    x.fill(1.0)
    fs.init(arch=fs.cpu)
    with pytest.raises(Exception):
        x[0] = 2.0
        x.to_numpy()


def test_kernel_defined_before_reinit_still_runs():
    @fs.kernel
    def five() -> fs.i32:
        return 5

    assert five() == 5
    fs.init(arch=fs.cpu)
    assert five() == 5


def test_reset_then_init():
    x = fs.field(fs.i32, shape=3)
    x.fill(4)
    fs.reset()
    fs.init(arch=fs.cpu)
    y = fs.field(fs.i32, shape=3)
    np.testing.assert_array_equal(y.to_numpy(), [0, 0, 0])


def test_sync_is_callable():
    x = fs.field(fs.i32, shape=3)

    @fs.kernel
    def k():
        for i in x:
            x[i] = i + 1

    k()
    fs.sync()
    np.testing.assert_array_equal(x.to_numpy(), [1, 2, 3])


@pytest.mark.parametrize("fp,npfp", [(fs.f32, np.float32), (fs.f64, np.float64)], ids=["f32", "f64"])
def test_default_fp_sets_float_field_and_literals(fp, npfp):
    fs.init(arch=fs.cpu, default_fp=fp)
    a = fs.field(float, shape=2)
    assert a.dtype == fp
    r = fs.field(fs.f64, shape=3)

    @fs.kernel
    def k(n: fs.i32):
        r[0] = 0.1  # a float literal has the default_fp type
        r[1] = n / 3  # int / int gives default_fp
        r[2] = float(n) / 3.0

    k(1)
    out = r.to_numpy()
    assert out[0] == np.float64(npfp(0.1))
    assert out[1] == np.float64(npfp(1.0) / npfp(3.0))
    assert out[2] == np.float64(npfp(1.0) / npfp(3.0))
    if fp == fs.f32:
        assert out[0] != 0.1
    else:
        assert out[0] == 0.1


@pytest.mark.parametrize("ip", [fs.i32, fs.i64], ids=["i32", "i64"])
def test_default_ip_sets_int_field_and_int_args(ip):
    fs.init(arch=fs.cpu, default_ip=ip)
    a = fs.field(int, shape=2)
    assert a.dtype == ip
    out = fs.field(fs.i64, shape=())

    @fs.kernel
    def k(v: int):
        out[None] = v * 2

    k(3)
    assert out[None] == 6
    if ip == fs.i64:
        k(2**40)
        assert out[None] == 2**41
        a[0] = 2**40 + 1
        assert a[0] == 2**40 + 1


def test_default_fp_float_field_default_is_f32():
    a = fs.field(float, shape=2)
    b = fs.field(int, shape=2)
    assert a.dtype == fs.f32
    assert b.dtype == fs.i32


# --------------------------------------------------------------------------- dtypes


@pytest.mark.parametrize("dt,npdt", DTYPES, ids=DTYPE_IDS)
def test_every_dtype_roundtrip_and_kernel(dt, npdt):
    x = fs.field(dt, shape=5)
    assert x.dtype == dt
    vals = np.array([0, 1, 7, 100, 200], dtype=npdt)
    x.from_numpy(vals)
    got = x.to_numpy()
    assert got.dtype == np.dtype(npdt)
    np.testing.assert_array_equal(got, vals)

    @fs.kernel
    def double():
        for i in x:
            x[i] = x[i] * 2

    double()
    if np.issubdtype(npdt, np.integer):
        expect = (vals.astype(np.int64) * 2).astype(npdt)  # wraps for u8: 200*2 -> 144
    else:
        expect = vals * 2
    np.testing.assert_array_equal(x.to_numpy(), expect)
    if dt == fs.u8:
        assert x[4] == 144
    # Python-scope get/set gives a Python (or numpy) scalar of the right kind
    x[1] = 5
    v = x[1]
    assert v == 5
    if np.issubdtype(npdt, np.integer):
        assert isinstance(v, (int, np.integer))
    else:
        assert isinstance(v, (float, np.floating))


def test_python_scope_u8_wraps():
    u = fs.field(fs.u8, shape=2)
    u[0] = 300
    u[1] = -1
    assert u[0] == 44
    assert u[1] == 255


# --------------------------------------------------------------------------- shapes


def test_scalar_field_dims_0_to_4():
    z = fs.field(fs.f32, shape=())
    assert z.shape == ()
    z[None] = 2.5
    assert z[None] == 2.5
    assert z.to_numpy().shape == ()
    assert float(z.to_numpy()) == 2.5
    for ndim in (1, 2, 3, 4):
        shape = (2, 3, 4, 5)[:ndim]
        x = fs.field(fs.f32, shape=shape)
        assert x.shape == shape
        assert x.dtype == fs.f32
        a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
        x.from_numpy(a)
        np.testing.assert_array_equal(x.to_numpy(), a)
        idx = tuple(s - 1 for s in shape)
        assert x[idx] == a[idx]
        x[idx] = -1.0
        a[idx] = -1.0
        np.testing.assert_array_equal(x.to_numpy(), a)
        mid = tuple(1 for _ in shape)
        assert x[mid] == a[mid]
    assert z[None] == 2.5  # untouched by the other fields


def test_field_shape_int_is_1d():
    x = fs.field(fs.i32, shape=7)
    assert x.shape == (7,)


def test_zero_d_field_in_kernel():
    s = fs.field(fs.f32, shape=())
    x = fs.field(fs.f32, shape=10)
    x.from_numpy(np.arange(10, dtype=np.float32))

    @fs.kernel
    def total():
        for i in x:
            s[None] += x[i]

    total()
    assert s[None] == 45.0


def test_vector_field_attributes_and_access():
    v = fs.Vector.field(3, fs.f32, shape=4)
    assert v.shape == (4,)
    assert v.n == 3
    assert v.m == 1
    assert v.dtype == fs.f32
    v[1] = [1.0, 2.0, 3.0]
    v[2] = (4, 5, 6)
    got = v[1]
    assert len(got) == 3
    assert got[0] == 1.0 and got[1] == 2.0 and got[2] == 3.0
    assert list(v[2]) == [4.0, 5.0, 6.0]
    np.testing.assert_array_equal(np.asarray(v[0]), [0.0, 0.0, 0.0])
    a = v.to_numpy()
    assert a.shape == (4, 3)
    np.testing.assert_array_equal(a[2], [4, 5, 6])


def test_matrix_field_attributes_and_access():
    m = fs.Matrix.field(2, 3, fs.f64, shape=(4, 5))
    assert m.shape == (4, 5)
    assert m.n == 2
    assert m.m == 3
    assert m.dtype == fs.f64
    m[1, 2] = [[1, 2, 3], [4, 5, 6]]
    got = m[1, 2]
    assert got[1, 0] == 4.0
    assert got[0, 2] == 3.0
    np.testing.assert_array_equal(np.asarray(got), [[1, 2, 3], [4, 5, 6]])
    a = m.to_numpy()
    assert a.shape == (4, 5, 2, 3)
    np.testing.assert_array_equal(a[1, 2], [[1, 2, 3], [4, 5, 6]])
    assert np.count_nonzero(a) == 6


def test_types_vector_matrix_fields():
    vec3 = fs.types.vector(3, fs.f32)
    mat2 = fs.types.matrix(2, 2, fs.i32)
    v = fs.field(vec3, shape=5)
    m = fs.field(mat2, shape=(2, 2))
    assert v.n == 3 and v.shape == (5,)
    assert m.n == 2 and m.m == 2 and m.shape == (2, 2)
    assert m.to_numpy().dtype == np.int32
    assert v.to_numpy().shape == (5, 3)


# --------------------------------------------------------------------------- numpy transfer


def test_numpy_roundtrip_shapes():
    rng = np.random.default_rng(1)
    cases = [
        (fs.field(fs.f32, shape=6), (6,)),
        (fs.field(fs.f32, shape=(3, 4)), (3, 4)),
        (fs.Vector.field(3, fs.f32, shape=5), (5, 3)),
        (fs.Matrix.field(2, 2, fs.f32, shape=4), (4, 2, 2)),
    ]
    for x, shape in cases:
        a = rng.standard_normal(shape).astype(np.float32)
        x.from_numpy(a)
        b = x.to_numpy()
        assert b.shape == shape
        assert b.dtype == np.float32
        np.testing.assert_array_equal(a, b)
        # to_numpy returns a copy: mutating it leaves the field alone
        b[...] = 0
        np.testing.assert_array_equal(x.to_numpy(), a)


def test_from_numpy_non_contiguous_and_f64_source():
    x = fs.field(fs.f32, shape=(3, 4))
    a = np.arange(12, dtype=np.float64).reshape(4, 3).T  # non-contiguous, f64
    x.from_numpy(a)
    np.testing.assert_array_equal(x.to_numpy(), a.astype(np.float32))


def test_vector_matrix_elements_in_python_scope_match_numpy():
    m = fs.Matrix.field(2, 2, fs.f32, shape=3)
    a = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    m.from_numpy(a)
    for k in range(3):
        np.testing.assert_array_equal(np.asarray(m[k]), a[k])
        assert m[k][1, 0] == a[k, 1, 0]


# --------------------------------------------------------------------------- fill / copy_from


def test_fill_scalar():
    for dt, val in [(fs.f32, 2.5), (fs.i32, -3), (fs.u8, 9)]:
        x = fs.field(dt, shape=(3, 2))
        x.fill(val)
        np.testing.assert_array_equal(x.to_numpy(), np.full((3, 2), val))


def test_fill_vector_and_matrix():
    v = fs.Vector.field(3, fs.f32, shape=4)
    m = fs.Matrix.field(2, 2, fs.f32, shape=2)
    v.fill(1.5)
    m.fill(-2.0)
    np.testing.assert_array_equal(v.to_numpy(), np.full((4, 3), 1.5))
    np.testing.assert_array_equal(m.to_numpy(), np.full((2, 2, 2), -2.0))


def test_copy_from():
    x = fs.field(fs.f32, shape=(4, 3))
    y = fs.field(fs.f32, shape=(4, 3))
    a = np.random.default_rng(2).random((4, 3)).astype(np.float32)
    x.from_numpy(a)
    y.copy_from(x)
    np.testing.assert_array_equal(y.to_numpy(), a)
    # independent storage
    x.fill(0.0)
    np.testing.assert_array_equal(y.to_numpy(), a)


def test_copy_from_vector_field():
    x = fs.Vector.field(2, fs.i32, shape=3)
    y = fs.Vector.field(2, fs.i32, shape=3)
    a = np.arange(6, dtype=np.int32).reshape(3, 2)
    x.from_numpy(a)
    y.copy_from(x)
    np.testing.assert_array_equal(y.to_numpy(), a)


@pytest.mark.fieldsim_specific
@pytest.mark.cpu_backend("checks that the CPU backend copies field storage in place")
def test_copy_from_dense_copies_storage_in_place(monkeypatch):
    # an LBM step's f.copy_from(buf) went through to_numpy, astype and from_numpy: three
    # copies into fresh pages, 5x Taichi's time; dense fields now copy array to array
    x = fs.Vector.field(3, fs.f32, shape=(5, 4))
    y = fs.Vector.field(3, fs.f32, shape=(5, 4))
    a = np.random.default_rng(3).random((5, 4, 3)).astype(np.float32)
    x.from_numpy(a)
    data = y.storage.array
    monkeypatch.setattr(type(x.storage), "to_numpy", lambda self: pytest.fail("round trip"))
    y.copy_from(x)
    monkeypatch.undo()
    assert y.storage.array is data
    np.testing.assert_array_equal(y.to_numpy(), a)


def test_copy_from_converts_dtype_as_numpy_astype():
    x = fs.field(fs.f64, shape=4)
    y = fs.field(fs.f32, shape=4)
    z = fs.field(fs.i32, shape=4)
    a = np.array([1e-40, 1.0 / 3.0, -2.75, 1e300])
    x.from_numpy(a)
    y.copy_from(x)
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(y.to_numpy(), a.astype(np.float32))
    x.from_numpy(np.array([2.9, -2.9, 0.5, 7.0]))
    z.copy_from(x)
    np.testing.assert_array_equal(z.to_numpy(), [2, -2, 0, 7])


def test_copy_from_into_sparse_field_writes_every_cell():
    """Taichi 1.7.4's copy_from loops over the whole index range: every block gets written
    (and activated), not only the active ones (checked against Taichi on the CPU)."""
    src = fs.field(fs.f32, shape=8)
    dst = fs.field(fs.f32)
    fs.root.pointer(fs.i, 4).dense(fs.i, 2).place(dst)
    src.from_numpy(np.arange(1, 9, dtype=np.float32))

    @fs.kernel
    def touch():
        dst[5] = 0.0

    touch()
    dst.copy_from(src)
    np.testing.assert_array_equal(dst.to_numpy(), np.arange(1, 9))


# --------------------------------------------------------------------------- placement / grads


def test_root_dense_i_place_two_fields():
    x = fs.field(fs.f32)
    y = fs.field(fs.i32)
    fs.root.dense(fs.i, 8).place(x, y)
    assert x.shape == (8,)
    assert y.shape == (8,)

    @fs.kernel
    def k():
        for i in x:
            x[i] = i * 0.5
            y[i] = i * i

    k()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(8) * 0.5)
    np.testing.assert_array_equal(y.to_numpy(), np.arange(8) ** 2)


def test_root_dense_ij_place():
    z = fs.field(fs.i32)
    fs.root.dense(fs.ij, (3, 4)).place(z)
    assert z.shape == (3, 4)

    @fs.kernel
    def k():
        for i, j in z:
            z[i, j] = 10 * i + j

    k()
    ii, jj = np.meshgrid(np.arange(3), np.arange(4), indexing="ij")
    np.testing.assert_array_equal(z.to_numpy(), 10 * ii + jj)


def test_root_place_scalar_0d():
    total = fs.field(fs.f32)
    fs.root.place(total)
    assert total.shape == ()
    total[None] = 4.0

    @fs.kernel
    def k():
        total[None] = total[None] * 3.0

    k()
    assert total[None] == 12.0


def test_root_dense_vector_field():
    v = fs.Vector.field(3, fs.f32)
    fs.root.dense(fs.i, 5).place(v)
    assert v.shape == (5,)
    v[4] = [1, 2, 3]
    assert v.to_numpy().shape == (5, 3)
    assert list(v[4]) == [1.0, 2.0, 3.0]


def test_lazy_grad_creates_grad():
    x = fs.field(fs.f32)
    y = fs.field(fs.f32)
    fs.root.dense(fs.i, 4).place(x, y)
    fs.root.lazy_grad()
    assert x.grad is not None and y.grad is not None
    assert x.grad.shape == (4,)
    np.testing.assert_array_equal(x.grad.to_numpy(), np.zeros(4))
    x.grad[1] = 2.0
    assert x.grad[1] == 2.0
    assert x[1] == 0.0
    assert y.grad[1] == 0.0


def test_needs_grad_same_shape():
    for shape in [(), (5,), (3, 4)]:
        x = fs.field(fs.f32, shape=shape, needs_grad=True)
        assert x.grad.shape == shape
        assert x.grad.dtype == fs.f32
        np.testing.assert_array_equal(x.grad.to_numpy(), np.zeros(shape))


def test_needs_grad_vector_field():
    v = fs.Vector.field(3, fs.f64, shape=6, needs_grad=True)
    assert v.grad.shape == (6,)
    assert v.grad.n == 3
    assert v.grad.to_numpy().shape == (6, 3)


def test_grad_written_in_kernel():
    x = fs.field(fs.f32, shape=4, needs_grad=True)

    @fs.kernel
    def k():
        for i in x:
            x.grad[i] = i + 0.5

    k()
    np.testing.assert_array_equal(x.grad.to_numpy(), np.arange(4) + 0.5)
    np.testing.assert_array_equal(x.to_numpy(), np.zeros(4))


# --------------------------------------------------------------------------- Python-scope errors


@pytest.mark.fieldsim_specific
@pytest.mark.skipif(AS_TAICHI, reason="Taichi 1.7 does not bounds-check Python-scope access")
def test_python_scope_out_of_range_set_raises_with_name():
    # fieldsim-specific: Taichi silently ignores the out-of-range write
    x = fs.field(fs.f32, shape=4, name="myfield")
    x.fill(1.0)
    with pytest.raises(IndexError, match="myfield"):
        x[4] = 2.0
    np.testing.assert_array_equal(x.to_numpy(), np.ones(4))


@pytest.mark.fieldsim_specific
@pytest.mark.skipif(AS_TAICHI, reason="Taichi 1.7 does not bounds-check Python-scope access")
def test_python_scope_out_of_range_get_raises_with_name():
    # fieldsim-specific
    x = fs.field(fs.i32, shape=(2, 3), name="myfield")
    with pytest.raises(IndexError, match="myfield"):
        x[1, 3]
    with pytest.raises(IndexError, match="myfield"):
        x[2, 0]


@pytest.mark.fieldsim_specific
def test_python_scope_wrong_index_count_raises():
    # fieldsim-specific message; Taichi raises AssertionError, fieldsim IndexError naming the field
    x = fs.field(fs.f32, shape=4, name="myfield")
    with pytest.raises(IndexError, match="myfield"):
        x[1, 2]


def test_from_numpy_wrong_shape_raises_value_error_data_unchanged():
    x = fs.field(fs.f32, shape=4, name="myfield")
    x.fill(3.0)
    with pytest.raises(ValueError):
        x.from_numpy(np.zeros(5, np.float32))
    with pytest.raises(ValueError):
        x.from_numpy(np.zeros((4, 1), np.float32))
    np.testing.assert_array_equal(x.to_numpy(), np.full(4, 3.0))


@pytest.mark.fieldsim_specific
def test_from_numpy_wrong_shape_message_names_field():
    # fieldsim-specific: Taichi's message does not contain the field's name
    x = fs.field(fs.f32, shape=4, name="myfield")
    with pytest.raises(ValueError, match="myfield"):
        x.from_numpy(np.zeros(5, np.float32))


@pytest.mark.fieldsim_specific
def test_vector_from_numpy_wrong_inner_shape():
    # fieldsim-specific: Taichi 1.7 accepts an (N, 2) array for a 3-vector field without error
    v = fs.Vector.field(3, fs.f32, shape=4, name="vfield")
    v.fill(1.0)
    with pytest.raises(ValueError):
        v.from_numpy(np.zeros((4, 2), np.float32))
    np.testing.assert_array_equal(v.to_numpy(), np.ones((4, 3)))


def test_python_scope_float_into_int_field_raises_type_error():
    # Taichi 1.7 raises TypeError for `int_field[i] = 2.7` (it refuses rather than truncating).
    x = fs.field(fs.i32, shape=4)
    x[0] = 5
    with pytest.raises(TypeError):
        x[0] = 2.7
    assert x[0] == 5


def test_from_numpy_float_array_into_int_field():
    # Taichi 1.7 casts (truncation toward zero, with a precision warning). fieldsim may do the
    # same or refuse with TypeError; if it refuses, the data must be unchanged.
    x = fs.field(fs.i32, shape=4)
    x.fill(9)
    a = np.array([1.5, 2.5, -3.7, 4.9])
    try:
        x.from_numpy(a)
    except TypeError:
        np.testing.assert_array_equal(x.to_numpy(), np.full(4, 9))
    else:
        np.testing.assert_array_equal(x.to_numpy(), [1, 2, -3, 4])
