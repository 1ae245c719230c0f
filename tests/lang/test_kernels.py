"""Kernels: parallel loop forms, arguments, template fields, return values, top-level statements."""
import numpy as np
import pytest

import fieldsim as fs


def test_struct_for_1d():
    x = fs.field(fs.i32, shape=17)

    @fs.kernel
    def k():
        for i in x:
            x[i] = i * i - 3

    k()
    np.testing.assert_array_equal(x.to_numpy(), np.arange(17) ** 2 - 3)


def test_struct_for_2d():
    x = fs.field(fs.f32, shape=(5, 7))

    @fs.kernel
    def k():
        for i, j in x:
            x[i, j] = i * 100 + j

    k()
    ii, jj = np.meshgrid(np.arange(5), np.arange(7), indexing="ij")
    np.testing.assert_array_equal(x.to_numpy(), ii * 100 + jj)


def test_struct_for_3d():
    x = fs.field(fs.i32, shape=(3, 4, 5))

    @fs.kernel
    def k():
        for i, j, l in x:
            x[i, j, l] = i * 10000 + j * 100 + l

    k()
    g = np.indices((3, 4, 5))
    np.testing.assert_array_equal(x.to_numpy(), g[0] * 10000 + g[1] * 100 + g[2])


def test_grouped_struct_for_1d_2d_3d():
    @fs.kernel
    def k(x: fs.template(), s: fs.template()):
        for I in fs.grouped(x):
            x[I] = I.sum()
            s[I] = I[0]

    for shape in [(6,), (3, 4), (2, 3, 4)]:
        x = fs.field(fs.i32, shape=shape)
        s = fs.field(fs.i32, shape=shape)
        k(x, s)
        g = np.indices(shape)
        np.testing.assert_array_equal(x.to_numpy(), g.sum(axis=0))
        np.testing.assert_array_equal(s.to_numpy(), g[0])


def test_grouped_vector_field_loop():
    v = fs.Vector.field(2, fs.f32, shape=(3, 2))

    @fs.kernel
    def k():
        for I in fs.grouped(v):
            v[I] = fs.Vector([I[0], I[1] * 2.0])

    k()
    a = v.to_numpy()
    g = np.indices((3, 2))
    np.testing.assert_array_equal(a[..., 0], g[0])
    np.testing.assert_array_equal(a[..., 1], g[1] * 2)


def test_range_loops():
    x = fs.field(fs.i32, shape=20)

    @fs.kernel
    def k(a: fs.i32, b: fs.i32):
        for i in range(5):
            x[i] = 1
        for i in range(a, b):
            x[i] = i

    k(8, 13)
    expect = np.zeros(20, np.int32)
    expect[:5] = 1
    expect[8:13] = np.arange(8, 13)
    np.testing.assert_array_equal(x.to_numpy(), expect)


def test_range_with_empty_bounds_does_nothing():
    x = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k(a: fs.i32, b: fs.i32):
        for i in range(a, b):
            x[i] = 9

    k(3, 3)
    k(3, 1)
    np.testing.assert_array_equal(x.to_numpy(), [0, 0, 0, 0])


def test_ndrange_forms():
    x = fs.field(fs.i32, shape=(6, 7))
    y = fs.field(fs.i32, shape=(6, 7))

    @fs.kernel
    def k():
        for i, j in fs.ndrange(6, 7):
            x[i, j] = i + 10 * j
        for i, j in fs.ndrange((1, 4), (2, 6)):
            y[i, j] = 1

    k()
    ii, jj = np.meshgrid(np.arange(6), np.arange(7), indexing="ij")
    np.testing.assert_array_equal(x.to_numpy(), ii + 10 * jj)
    expect = np.zeros((6, 7), np.int32)
    expect[1:4, 2:6] = 1
    np.testing.assert_array_equal(y.to_numpy(), expect)


def test_ndrange_grouped_and_mixed():
    x = fs.field(fs.i32, shape=(4, 5))

    @fs.kernel
    def k(n: fs.i32):
        for I in fs.grouped(fs.ndrange((1, n), 5)):
            x[I] = I[0] * I[1]

    k(3)
    expect = np.zeros((4, 5), np.int32)
    for i in range(1, 3):
        for j in range(5):
            expect[i, j] = i * j
    np.testing.assert_array_equal(x.to_numpy(), expect)


def test_nested_serial_inner_loops():
    n, m = 8, 6
    a = fs.field(fs.f32, shape=(n, m))
    row = fs.field(fs.f32, shape=n)
    data = np.random.default_rng(0).random((n, m)).astype(np.float32)
    a.from_numpy(data)

    @fs.kernel
    def k():
        for i in range(n):
            s = 0.0
            for j in range(m):
                for t in range(2):
                    s += a[i, j] * 0.5
            row[i] = s

    k()
    np.testing.assert_allclose(row.to_numpy(), data.sum(axis=1), rtol=1e-5)


def test_inner_loop_with_dynamic_bounds():
    out = fs.field(fs.i32, shape=10)

    @fs.kernel
    def k():
        for i in out:
            s = 0
            for j in range(i):
                s += j
            out[i] = s

    k()
    np.testing.assert_array_equal(out.to_numpy(), [i * (i - 1) // 2 for i in range(10)])


def test_scalar_args_of_each_kind():
    r = fs.field(fs.f64, shape=4)

    @fs.kernel
    def k(a: fs.i32, b: fs.f32, c: int, d: float):
        r[0] = a
        r[1] = b
        r[2] = c
        r[3] = d

    k(-3, 0.25, 7, 1.5)
    np.testing.assert_array_equal(r.to_numpy(), [-3, 0.25, 7, 1.5])
    k(2, 0.1, -1, 0.1)
    out = r.to_numpy()
    assert out[0] == 2 and out[2] == -1
    assert out[1] == np.float64(np.float32(0.1))  # f32 argument
    assert out[3] == np.float64(np.float32(0.1))  # float = default_fp (f32)


def test_float_arg_is_f64_under_default_fp_f64():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    r = fs.field(fs.f64, shape=())

    @fs.kernel
    def k(d: float):
        r[None] = d

    k(0.1)
    assert r[None] == 0.1


def test_int_arg_accepts_numpy_scalar():
    r = fs.field(fs.i32, shape=())

    @fs.kernel
    def k(a: fs.i32):
        r[None] = a + 1

    k(np.int32(41))
    assert r[None] == 42
    k(np.int64(9))
    assert r[None] == 10


def test_template_field_args():
    a = fs.field(fs.f32, shape=5)
    b = fs.field(fs.f32, shape=(2, 3))

    @fs.kernel
    def scale(x: fs.template(), s: fs.f32):
        for I in fs.grouped(x):
            x[I] = (x[I] + 1.0) * s

    scale(a, 2.0)
    scale(b, 3.0)
    scale(a, 0.5)
    np.testing.assert_array_equal(a.to_numpy(), np.full(5, 1.5))
    np.testing.assert_array_equal(b.to_numpy(), np.full((2, 3), 3.0))


def test_template_two_field_args_copy():
    src = fs.field(fs.i32, shape=6)
    dst = fs.field(fs.i32, shape=6)
    other = fs.field(fs.i32, shape=6)
    src.from_numpy(np.arange(6, dtype=np.int32))

    @fs.kernel
    def copy(a: fs.template(), b: fs.template()):
        for i in a:
            b[i] = a[i] * 2

    copy(src, dst)
    copy(dst, other)
    np.testing.assert_array_equal(dst.to_numpy(), np.arange(6) * 2)
    np.testing.assert_array_equal(other.to_numpy(), np.arange(6) * 4)


def test_template_scalar_constant():
    x = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k(c: fs.template()):
        for i in x:
            x[i] = c * i

    k(3)
    np.testing.assert_array_equal(x.to_numpy(), [0, 3, 6, 9])
    k(5)
    np.testing.assert_array_equal(x.to_numpy(), [0, 5, 10, 15])


def test_return_f32_and_i32():
    x = fs.field(fs.f32, shape=10)
    x.from_numpy(np.arange(10, dtype=np.float32) * 0.5)

    @fs.kernel
    def total() -> fs.f32:
        s = 0.0
        for i in range(10):
            s += x[i]
        return s

    @fs.kernel
    def count(t: fs.f32) -> fs.i32:
        c = 0
        for i in range(10):
            if x[i] > t:
                c += 1
        return c

    assert total() == pytest.approx(22.5)
    assert count(2.0) == 5
    assert isinstance(count(2.0), int)


def test_return_value_is_cast_to_annotation():
    @fs.kernel
    def trunc(f: fs.f32) -> fs.i32:
        return f

    @fs.kernel
    def half(n: fs.i32) -> fs.f64:
        return n / 2

    assert trunc(2.7) == 2
    assert trunc(-2.7) == -2
    assert half(5) == 2.5
    assert isinstance(half(5), float)


def test_return_with_parallel_reduction():
    x = fs.field(fs.i32, shape=1000)
    x.from_numpy(np.arange(1000, dtype=np.int32))
    acc = fs.field(fs.i32, shape=())

    @fs.kernel
    def total() -> fs.i32:
        for i in x:
            acc[None] += x[i]
        return acc[None]

    assert total() == 499500


def test_top_level_statements_between_loops():
    n = 16
    x = fs.field(fs.f32, shape=n)
    y = fs.field(fs.f32, shape=n)
    s = fs.field(fs.f32, shape=())

    @fs.kernel
    def k(scale: fs.f32):
        for i in x:
            x[i] = i
        s[None] = 0.0
        offset = scale * 2.0  # a top-level local used by a later loop
        for i in x:
            s[None] += x[i]
        mean = s[None] / n
        for i in y:
            y[i] = x[i] - mean + offset

    k(1.5)
    a = np.arange(n, dtype=np.float32)
    np.testing.assert_allclose(y.to_numpy(), a - a.mean() + 3.0, rtol=1e-6)
    assert s[None] == a.sum()


def test_second_loop_sees_first_loop_writes():
    n = 64
    x = fs.field(fs.i32, shape=n)
    y = fs.field(fs.i32, shape=n)

    @fs.kernel
    def k():
        for i in x:
            x[i] = i + 1
        for i in y:
            y[i] = x[(i + 1) % n] + x[(i + n - 1) % n]

    k()
    a = np.arange(n) + 1
    np.testing.assert_array_equal(y.to_numpy(), np.roll(a, -1) + np.roll(a, 1))


def test_kernel_launch_repeated_accumulates():
    x = fs.field(fs.i32, shape=8)

    @fs.kernel
    def inc(d: fs.i32):
        for i in x:
            x[i] += d + i

    for _ in range(3):
        inc(1)
    np.testing.assert_array_equal(x.to_numpy(), 3 * (np.arange(8) + 1))


def test_local_variable_scoping_and_reassignment():
    x = fs.field(fs.f32, shape=5)

    @fs.kernel
    def k():
        for i in x:
            a = 1.0
            if i % 2 == 0:
                a = 2.0
            b = a * i
            b += 0.5
            x[i] = b

    k()
    np.testing.assert_array_equal(x.to_numpy(), [0.5, 1.5, 4.5, 3.5, 8.5])


def test_vector_field_in_struct_for_and_python_reads():
    v = fs.Vector.field(3, fs.f32, shape=4)
    out = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        for i in v:
            v[i] = fs.Vector([i, i + 1.0, i * 2.0])
        for i in v:
            out[i] = v[i][0] + v[i].y + v[i][2]

    k()
    a = np.arange(4)
    np.testing.assert_array_equal(out.to_numpy(), a + a + 1 + 2 * a)
    np.testing.assert_array_equal(v.to_numpy()[:, 1], a + 1)


SCALE = 3.0  # a Python global read by a kernel (captured when the kernel is compiled)


def test_dynamic_local_index_builtins_and_serial_while():
    r = fs.field(fs.f32, shape=8)

    @fs.kernel
    def k(a: fs.f32, b: fs.f32):
        v = fs.Vector([1.0, 2.0, 3.0])
        s = 0.0
        for j in range(3):
            s += v[j] * j  # runtime index into a local vector
        r[0] = s
        r[1] = abs(a) + max(a, b) + min(a, b)  # Python builtins map to fs.abs/max/min
        n = 0
        while n < 5:  # a top-level (serial) while loop
            n += 2
        r[2] = n
        v += fs.Vector([1.0, 1.0, 1.0])
        v *= 2.0
        r[3] = v.sum()
        r[4] = float(a < b) * 0.5
        r[5] = SCALE * 2.0
        m = fs.Matrix([[1.0, 2.0], [3.0, 4.0]])
        t = 0.0
        for i in range(2):
            for j in range(2):
                t += m[i, j] * (i + 1)  # runtime indices into a local matrix
        r[6] = t

    k(-1.5, 2.5)
    np.testing.assert_array_equal(r.to_numpy(), [8.0, 2.5, 6.0, 18.0, 0.5, 6.0, 17.0, 0.0])
