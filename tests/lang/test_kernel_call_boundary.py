"""Hostile values at the kernel-call boundary (fieldsim/lang/ndarray.py, fieldsim/lang/kernel.py):
every array or scalar that does not fit its parameter is refused before the kernel runs, with
the user's data untouched, the kernel and the argument named and the user's call located; the
layouts that are accepted (Fortran order, transposes, empty arrays) read the right elements.
Where Taichi 1.7.4 runs such a call and gives a wrong answer, the test says so."""
import inspect

import numpy as np
import pytest

import fieldsim as fs


@fs.kernel
def _mark_vec3(a: fs.types.ndarray(dtype=fs.math.vec3, ndim=1)):
    for i in a:
        a[i] = fs.math.vec3(7.0, 8.0, 9.0)


@fs.kernel
def _mark_f32(a: fs.types.ndarray(dtype=fs.f32, ndim=2)):
    for i, j in a:
        a[i, j] = i * 10 + j


@fs.kernel
def _sum_f32(a: fs.types.ndarray(dtype=fs.f32, ndim=2)) -> fs.f64:
    s = 0.0
    for i, j in a:
        s += a[i, j] * (i * 10 + j)
    return s


def _refused(kernel, *args, words=(), **kwargs):
    """Call `kernel`, expect a FieldsimTypeError located at this helper's call line."""
    line = inspect.currentframe().f_lineno + 2
    with pytest.raises(fs.FieldsimTypeError) as info:
        kernel(*args, **kwargs)
    err = info.value
    assert err.loc is not None and err.loc.file == __file__ and err.loc.line == line, str(err)
    assert repr(kernel.__name__) in err.message, err.message
    for w in words:
        assert w in err.message, err.message
    return err


@pytest.mark.parametrize("bad, words", [
    (np.zeros((4, 2), np.float32), ["argument a", "element_shape=(3,)", "(2,)"]),
    (np.zeros(4, np.float32), ["argument a", "ndim=1 element_dim=1", "1 dimensions"]),
    (np.zeros((2, 4, 3), np.float32), ["argument a", "3 dimensions"]),
    (np.zeros((4, 3, 1), np.float32), ["argument a", "3 dimensions"]),
])
def test_array_too_short_for_the_element_type_is_refused_untouched(bad, words):
    before = bad.copy()
    _refused(_mark_vec3, bad, words=words)
    np.testing.assert_array_equal(bad, before)


def test_fieldsim_ndarrays_of_another_element_or_rank_are_refused():
    for nd, words in [(fs.ndarray(fs.f32, shape=(4, 3)), ["element shape of ()"]),
                      (fs.Vector.ndarray(2, fs.f32, shape=4), ["element shape of (2,)"]),
                      (fs.Vector.ndarray(3, fs.f32, shape=(2, 2)), ["ndim=1", "2 besides"])]:
        _refused(_mark_vec3, nd, words=words)
        assert not nd.to_numpy().any()


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.bool_, np.float16, np.uint8])
def test_array_of_another_dtype_is_refused_not_converted(dtype):
    a = np.ones((2, 3), dtype)
    _refused(_mark_f32, a, words=["required array has dtype=f32"])
    np.testing.assert_array_equal(a, np.ones((2, 3), dtype))


@pytest.mark.parametrize("dtype", [">f4", np.complex64, object, "datetime64[s]", [("a", "f4")]])
def test_array_dtypes_without_a_fieldsim_type_are_refused(dtype):
    @fs.kernel
    def any_dtype(a: fs.types.ndarray()):
        for i in a:
            a[i] = 1

    a = np.zeros(3, dtype)
    _refused(any_dtype, a, words=["has no fieldsim equivalent"])


def test_strided_and_negative_stride_views_are_refused_untouched():
    base = np.zeros((4, 6), np.float32)
    for view in [base[::2, ::2], base[::-1], base[:, 1:3], np.broadcast_to(np.float32(0), (2, 3))]:
        _refused(_mark_f32, view, words=["Non contiguous"])
    assert not base.any()


def test_fortran_order_and_transposed_arrays_read_and_write_the_right_elements():
    c = np.arange(6, dtype=np.float32).reshape(2, 3)
    i, j = np.indices((2, 3))
    weights = i * 10 + j
    for arr in [np.asfortranarray(c), c.T.copy().T]:
        assert _sum_f32(arr) == pytest.approx(float((c * weights).sum()))
    out = np.zeros((3, 2), np.float32).T  # a (2, 3) Fortran-order view
    _mark_f32(out)
    np.testing.assert_array_equal(out, weights)


def test_read_only_memmap_written_by_a_kernel_is_refused(tmp_path):
    # Taichi 1.7.4 runs the kernel and dies writing the read-only mapping (SIGSEGV)
    path = tmp_path / "a.bin"
    np.arange(6, dtype=np.float32).tofile(path)
    ro = np.memmap(path, dtype=np.float32, mode="r", shape=(2, 3))
    _refused(_mark_f32, ro, words=["read-only"])
    assert _sum_f32(ro) == pytest.approx(float((np.arange(6).reshape(2, 3) * [[0, 1, 2], [10, 11, 12]]).sum()))
    np.testing.assert_array_equal(np.fromfile(path, np.float32), np.arange(6))


def test_read_only_arrays_may_be_read_never_written():
    for make in (np.ascontiguousarray, np.asfortranarray):
        a = make(np.arange(6, dtype=np.float32).reshape(2, 3))
        a.flags.writeable = False
        i, j = np.indices((2, 3))
        # a read-only Fortran-order array used to fail after the launch, copying back
        assert _sum_f32(a) == pytest.approx(float((a * (i * 10 + j)).sum()))
        _refused(_mark_f32, a, words=["read-only"])
        np.testing.assert_array_equal(a, np.arange(6).reshape(2, 3))


@fs.kernel
def _bump_both(a: fs.types.ndarray(dtype=fs.f32, ndim=2), b: fs.types.ndarray(dtype=fs.f32, ndim=2)):
    for i, j in a:
        a[i, j] += 1
    for i, j in b:
        b[i, j] += 10


def test_one_fortran_order_array_given_twice_gets_every_write():
    # Taichi 1.7.4 copies it once per argument: the result is 10 everywhere (the +1 is lost)
    f = np.asfortranarray(np.zeros((2, 3), np.float32))
    _bump_both(f, f)
    np.testing.assert_array_equal(f, np.full((2, 3), 11))


def test_fortran_copy_overlapping_a_written_argument_is_refused():
    # Taichi 1.7.4 runs these and copies the stale transpose back over the kernel's writes
    c = np.zeros((3, 3), np.float32)
    _refused(_bump_both, c, c.T, words=["argument b", "shares memory with argument a"])
    assert not c.any()

    @fs.kernel
    def transpose_plus_one(a: fs.types.ndarray(dtype=fs.f32, ndim=2),
                           b: fs.types.ndarray(dtype=fs.f32, ndim=2)):
        for i, j in a:
            a[i, j] = b[j, i] + 1

    d = np.arange(9, dtype=np.float32).reshape(3, 3)
    _refused(transpose_plus_one, d, d.T, words=["stale values"])
    np.testing.assert_array_equal(d, np.arange(9).reshape(3, 3))
    other = np.arange(9, dtype=np.float32).reshape(3, 3).T  # no shared memory: runs
    transpose_plus_one(d, other)
    np.testing.assert_array_equal(d, other.T + 1)


def test_axis_longer_than_i32_is_refused():
    # Taichi passes the length as an i32 too; fieldsim's kernel read -2147483643 for it
    @fs.kernel
    def length(a: fs.types.ndarray(dtype=fs.u8, ndim=1)) -> fs.i64:
        return a.shape[0]

    try:
        big = np.empty((1 << 31) + 5, np.uint8)  # address space only: never touched
    except MemoryError:
        pytest.skip("no 2 GB of address space")
    _refused(length, big, words=["axis 0 has 2147483653 elements", "2**31 - 1"])
    assert length(big[: (1 << 31) - 1]) == (1 << 31) - 1


def test_empty_arrays_run_nothing():
    @fs.kernel
    def count(a: fs.types.ndarray(dtype=fs.math.vec3, ndim=1)) -> fs.i32:
        n = 0
        for i in a:
            n += 1
        return n

    assert count(np.zeros((0, 3), np.float32)) == 0
    assert _sum_f32(np.zeros((0, 5), np.float32)) == 0
    assert _sum_f32(np.zeros((5, 0), np.float32)) == 0


def test_wrong_argument_counts_are_located_at_the_call_keywords_work():
    a = np.zeros((2, 3), np.float32)
    err = _refused(_mark_f32, words=["takes 1 argument(s)", "missing"])
    assert err.related and err.related[0][1].line < err.loc.line  # where the kernel is defined
    _refused(_mark_f32, a, a, words=["too many"])
    _refused(_mark_f32, a, b=a, words=["unexpected keyword argument 'b'"])
    _mark_f32(a=a)
    np.testing.assert_array_equal(a, np.indices((2, 3))[0] * 10 + np.indices((2, 3))[1])


@fs.kernel
def _plus_one(x: fs.i32) -> fs.i32:
    return x + 1


@fs.kernel
def _halve(x: fs.f32) -> fs.f32:
    return x * 0.5


def test_scalar_arguments_are_never_wrapped_or_truncated():
    # Taichi 1.7.4 wraps 2**31 to -2147483648 (returns -2147483647) and 2**40 + 5 to 5
    _refused(_plus_one, 2 ** 31, words=["argument 'x'", "out of range for i32"])
    _refused(_plus_one, 2 ** 40 + 5, words=["out of range"])
    _refused(_plus_one, -2 ** 31 - 1, words=["out of range"])
    _refused(_plus_one, 2.5, words=["expects an integer (i32), got 2.5"])  # Taichi refuses too
    _refused(_plus_one, np.float32(3.5), words=["got 3.5"])
    for bad in ("3", None, np.array([1, 2]), 1j):
        _refused(_plus_one, bad, words=["argument 'x'"])
    _refused(_halve, "1.0", words=["expects a f32 scalar, got str"])
    assert _plus_one(True) == 2  # a bool is an int, as in Taichi
    assert _plus_one(2 ** 31 - 1 - 1) == 2 ** 31 - 1
    assert _halve(3) == 1.5 and _halve(np.float64(5.0)) == 2.5


def test_vector_argument_entries_are_checked_and_located():
    @fs.kernel
    def dot(v: fs.types.vector(3, fs.i32)) -> fs.i32:
        return v.sum()

    _refused(dot, [1, 2], words=["argument 'v'", "shape (3,)"])
    _refused(dot, [1, 2, 2 ** 31], words=["out of range for i32"])
    _refused(dot, ["a", "b", "c"], words=["argument 'v'"])
    assert dot([1, 2, 3]) == 6


def test_template_arguments_of_the_wrong_kind_and_dtype():
    @fs.kernel
    def total(x: fs.template()) -> fs.f32:
        s = 0.0
        for i in x:
            s += x[i] * 0.5
        return s

    ints, floats = fs.field(fs.i32, shape=4), fs.field(fs.f32, shape=4)
    ints.fill(3)
    floats.fill(3)
    assert total(ints) == 6.0 and total(floats) == 6.0  # one specialisation per field dtype
    for bad in (np.ones(4, np.float32), 3):
        with pytest.raises(fs.FieldsimSyntaxError, match="cannot iterate over"):
            total(bad)

    @fs.kernel
    def read(x: fs.template(), n: fs.i32) -> fs.f32:
        s = 0.0
        for i in range(n):
            s += x[i]
        return s

    @fs.kernel
    def write(x: fs.template()):
        for i in range(3):
            x[i] = 1.0

    # Taichi 1.7.4: "unhashable type: 'numpy.ndarray'" from its template cache
    a = np.zeros(3, np.float32)
    for kernel, args in ((read, (a, 3)), (write, (a,))):
        with pytest.raises(fs.FieldsimError, match=r"compile-time Python value.*fs.types.ndarray\(\)"):
            kernel(*args)
    assert not a.any()


def test_integer_vector_entries_take_whole_numbers_only():
    @fs.kernel
    def total(a: fs.types.vector(2, fs.i32)) -> fs.i32:
        return a.sum()

    # Taichi 1.7.4 refuses any float here; fieldsim, as for a scalar, only fractional ones
    _refused(total, [1.7, 2.2], words=["integer entries"])
    _refused(total, np.array([1.0, np.nan]), words=["integer entries"])
    assert total([1.0, 2.0]) == 3 and total(np.array([4, 5], np.int64)) == 9


def test_struct_member_of_another_shape_is_refused_not_shifted():
    @fs.dataclass
    class P:
        x: fs.math.vec2
        m: fs.f32
        k: fs.i32

    @fs.kernel
    def code(p: P) -> fs.f32:
        return p.x[0] + p.x[1] * 10 + p.m * 100 + p.k * 1000

    # Taichi 1.7.4 keeps the first two entries; fieldsim shifted the third into `m`, `m` into `k`
    with pytest.raises(TypeError, match=r"member 'x': a vector\(2, f32\) cannot hold a value of shape \(3,\)"):
        P(x=fs.Vector([1, 2, 3]), m=3, k=4)
    _refused(code, {"x": [1, 2, 3], "m": 3, "k": 4}, words=["argument 'p'", "member 'x'"])
    assert code(P(x=fs.math.vec2(1, 2), m=3, k=4.7)) == 4321  # an int member truncates, as Taichi


def test_torch_tensors_that_would_read_the_wrong_values_are_refused():
    torch = pytest.importorskip("torch")

    @fs.kernel
    def total(a: fs.types.ndarray()) -> fs.f64:
        s = 0.0
        for i in a:
            s += a[i]
        return s

    z = torch.tensor([1 + 2j, 3 - 4j], dtype=torch.complex64)
    _refused(total, z.conj().imag, words=["neg bit"])  # every other float of z, negated lazily
    if hasattr(torch.Tensor, "_neg_view"):  # a lazily negated view: its memory holds +1s
        _refused(total, torch.ones(4)._neg_view(), words=["neg bit"])
    _refused(total, torch.ones(1).expand(4), words=["not C-contiguous"])
    _refused(total, torch.ones(4, dtype=torch.bfloat16), words=["bfloat16"])
    _refused(total, torch.ones(4).to_sparse(), words=["sparse"])
    assert total(torch.arange(4.0)) == 6.0
