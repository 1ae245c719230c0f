"""`i_v = [0, 0, 0, 0]` in a kernel, then `i_v[0] = e[i][0]`: as in Taichi 1.7.4 (its
`expr_init` of a list or tuple), the items are variables. fieldsim left a list of Python
constants a compile-time list and refused the store ("cannot assign to int 0"), which stopped a
data-oriented PBD cloth solver from GitHub (index file id 28234944538, `_compute_A`). Items of
mixed types (`[0, 0.5]`) keep each its own type, as Taichi's per-item variables do: a float
stored into the int item is truncated. Expected values are worked out here by hand."""
import numpy as np

import fieldsim as fs

N = 8


def _setup():
    fs.init(arch=fs.cpu, cpu_max_num_threads=1)
    x = fs.field(fs.f32, shape=N)
    e = fs.Vector.field(2, fs.i32, shape=N)
    x.from_numpy((0.25 * np.arange(N)).astype(np.float32))
    e.from_numpy(np.stack([np.arange(N), N - 1 - np.arange(N)], 1).astype(np.int32))
    return x, e, fs.field(fs.f32, shape=(N, 6))


def test_constant_list_items_are_variables():
    x, e, out = _setup()

    @fs.kernel
    def k():
        for i in range(N):
            i_v = [0, 0, 0, 0]
            i_v[0] = e[i][0]
            i_v[1] = e[i][1]
            out[i, 0] = x[i_v[1]] - x[i_v[0]] + i_v[2]
            s = (0.0, 0.0, 0.0)  # a tuple too
            for j in range(3):
                s[0] += x[j] * i
            s[1] += 1.5
            out[i, 1] = s[0] + s[1] + s[2]
            b = [0.0, 0.0]
            if i % 2 == 0:
                b[0] = 1.0
            else:
                b[1] = 2.0
            out[i, 2] = b[0] + 10 * b[1]

    k()
    i = np.arange(N)
    o = out.to_numpy()
    np.testing.assert_allclose(o[:, 0], 0.25 * (N - 1 - i) - 0.25 * i)
    np.testing.assert_allclose(o[:, 1], 0.75 * i + 1.5)
    np.testing.assert_allclose(o[:, 2], np.where(i % 2 == 0, 1.0, 20.0))


def test_mixed_type_items_keep_their_types():
    x, _, out = _setup()

    @fs.kernel
    def k():
        for i in range(N):
            m = [0, 0.5]
            m[0] = x[i] * 10 + 0.7  # the int item: truncated
            m[1] = x[i] * 10 + 0.7
            out[i, 0] = m[0]
            out[i, 1] = m[1]

    k()
    v = (np.float32(0.25) * np.arange(N, dtype=np.float32) * np.float32(10) + np.float32(0.7)).astype(np.float32)
    o = out.to_numpy()
    np.testing.assert_array_equal(o[:, 0], np.trunc(v))
    np.testing.assert_array_equal(o[:, 1], v)


def test_top_level_list_read_in_a_later_loop():
    x, _, out = _setup()

    @fs.kernel
    def k():
        a = [0, 0]
        a[0] = 3
        a[1] += 4
        for i in range(N):
            out[i, 0] = x[i] * a[0] + a[1]

    k()
    np.testing.assert_allclose(out.to_numpy()[:, 0], 0.75 * np.arange(N) + 4)
