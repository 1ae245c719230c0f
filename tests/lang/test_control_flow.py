"""Control flow in kernels: if/elif/else, while, break/continue, fs.static, loop_config."""
import numpy as np
import pytest

import fieldsim as fs


def test_if_elif_else():
    n = 12
    x = fs.field(fs.i32, shape=n)
    out = fs.field(fs.i32, shape=n)
    vals = np.array([-5, -1, 0, 1, 2, 3, 4, 9, 10, 11, 100, -100], np.int32)
    x.from_numpy(vals)

    @fs.kernel
    def k():
        for i in x:
            v = x[i]
            if v < 0:
                out[i] = -1
            elif v == 0:
                out[i] = 0
            elif v < 10:
                if v % 2 == 0:
                    out[i] = 2
                else:
                    out[i] = 1
            else:
                out[i] = 10

    k()
    expect = np.where(vals < 0, -1, np.where(vals == 0, 0, np.where(vals < 10, np.where(vals % 2 == 0, 2, 1), 10)))
    np.testing.assert_array_equal(out.to_numpy(), expect)


def test_if_on_float_condition_and_ternary():
    x = fs.field(fs.f32, shape=6)
    y = fs.field(fs.f32, shape=6)
    vals = np.array([-1.5, -0.0, 0.25, 3.0, -7.0, 2.0], np.float32)
    x.from_numpy(vals)

    @fs.kernel
    def k():
        for i in x:
            y[i] = x[i] if x[i] > 0 else -2.0 * x[i]

    k()
    np.testing.assert_array_equal(y.to_numpy(), np.where(vals > 0, vals, -2 * vals))


def test_while_with_break_and_continue():
    # Collatz step counts, with a `continue` that skips odd bookkeeping and a `break` guard.
    n = 30
    steps = fs.field(fs.i32, shape=n)
    evens = fs.field(fs.i32, shape=n)

    @fs.kernel
    def k():
        for i in steps:
            v = i + 1
            c = 0
            e = 0
            while True:
                if v == 1:
                    break
                c += 1
                if v % 2 == 1:
                    v = 3 * v + 1
                    continue
                e += 1
                v = v // 2
            steps[i] = c
            evens[i] = e

    k()

    def collatz(v):
        c = e = 0
        while v != 1:
            c += 1
            if v % 2:
                v = 3 * v + 1
            else:
                e += 1
                v //= 2
        return c, e

    ref = np.array([collatz(i + 1) for i in range(n)])
    np.testing.assert_array_equal(steps.to_numpy(), ref[:, 0])
    np.testing.assert_array_equal(evens.to_numpy(), ref[:, 1])


def test_while_condition_loop():
    out = fs.field(fs.i32, shape=10)

    @fs.kernel
    def k():
        for i in out:
            v = i
            bits = 0
            while v > 0:
                bits += v & 1
                v >>= 1
            out[i] = bits

    k()
    np.testing.assert_array_equal(out.to_numpy(), [bin(i).count("1") for i in range(10)])


def test_for_with_break_and_continue_in_inner_loop():
    n = 8
    first = fs.field(fs.i32, shape=n)
    skipsum = fs.field(fs.i32, shape=n)

    @fs.kernel
    def k():
        for i in range(n):
            f = -1
            for j in range(1, 100):
                if j * (i + 1) > 20:
                    f = j
                    break
            first[i] = f
            s = 0
            for j in range(10):
                if j % 3 == i % 3:
                    continue
                s += j
            skipsum[i] = s

    k()
    ref_first = [next(j for j in range(1, 100) if j * (i + 1) > 20) for i in range(n)]
    ref_skip = [sum(j for j in range(10) if j % 3 != i % 3) for i in range(n)]
    np.testing.assert_array_equal(first.to_numpy(), ref_first)
    np.testing.assert_array_equal(skipsum.to_numpy(), ref_skip)


def test_continue_in_parallel_loop():
    x = fs.field(fs.i32, shape=10)

    @fs.kernel
    def k():
        for i in x:
            if i % 3 == 0:
                continue
            x[i] = 1

    k()
    np.testing.assert_array_equal(x.to_numpy(), [0 if i % 3 == 0 else 1 for i in range(10)])


def test_static_for_unrolling():
    v = fs.Vector.field(4, fs.i32, shape=3)
    out = fs.field(fs.i32, shape=3)

    @fs.kernel
    def k():
        for i in v:
            for c in fs.static(range(4)):
                v[i][c] = i * 10 + c
            s = 0
            for c in fs.static(range(4)):
                s += v[i][c] * (c + 1)
            out[i] = s

    k()
    a = v.to_numpy()
    np.testing.assert_array_equal(a, np.arange(3)[:, None] * 10 + np.arange(4)[None, :])
    np.testing.assert_array_equal(out.to_numpy(), (a * np.arange(1, 5)).sum(axis=1))


def test_static_for_over_python_list_of_fields():
    a = fs.field(fs.f32, shape=4)
    b = fs.field(fs.f32, shape=4)
    c = fs.field(fs.f32, shape=4)
    fields = [a, b, c]

    @fs.kernel
    def k():
        for i in range(4):
            for t in fs.static(range(len(fields))):
                fields[t][i] = (t + 1) * i

    k()
    for t, f in enumerate(fields):
        np.testing.assert_array_equal(f.to_numpy(), (t + 1) * np.arange(4))


def test_static_if_and_template_flag():
    x = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k(flag: fs.template()):
        for i in x:
            if fs.static(flag == 1):
                x[i] = i
            elif fs.static(flag == 2):
                x[i] = -i
            else:
                x[i] = 7

    k(1)
    np.testing.assert_array_equal(x.to_numpy(), [0, 1, 2, 3])
    k(2)
    np.testing.assert_array_equal(x.to_numpy(), [0, -1, -2, -3])
    k(3)
    np.testing.assert_array_equal(x.to_numpy(), [7, 7, 7, 7])


def test_static_if_removes_invalid_branch():
    x = fs.field(fs.i32, shape=3)
    use_vec = False

    @fs.kernel
    def k():
        for i in x:
            if fs.static(use_vec):
                x[i] = x[i].norm()  # never compiled: x holds scalars
            else:
                x[i] = i + 1

    k()
    np.testing.assert_array_equal(x.to_numpy(), [1, 2, 3])


def test_loop_config_serialize_prefix_sum():
    n = 1000
    data = np.random.default_rng(3).integers(0, 10, n).astype(np.int32)
    x = fs.field(fs.i32, shape=n)
    x.from_numpy(data)

    @fs.kernel
    def prefix():
        fs.loop_config(serialize=True)
        for i in range(1, n):
            x[i] += x[i - 1]

    prefix()
    np.testing.assert_array_equal(x.to_numpy(), np.cumsum(data))


def test_loop_config_serialize_dependent_recurrence():
    n = 200
    x = fs.field(fs.f64, shape=n)

    @fs.kernel
    def run():
        x[0] = 1.0
        fs.loop_config(serialize=True)
        for i in range(1, n):
            x[i] = 0.5 * x[i - 1] + 1.0

    run()
    ref = np.empty(n)
    ref[0] = 1.0
    for i in range(1, n):
        ref[i] = 0.5 * ref[i - 1] + 1.0
    np.testing.assert_allclose(x.to_numpy(), ref)


def test_serialized_loop_with_break():
    n = 50
    x = fs.field(fs.i32, shape=n)
    stop = fs.field(fs.i32, shape=())

    @fs.kernel
    def k(limit: fs.i32):
        fs.loop_config(serialize=True)
        for i in range(n):
            if i * i > limit:
                stop[None] = i
                break
            x[i] = 1

    k(90)
    assert stop[None] == 10
    assert x.to_numpy().sum() == 10


def test_early_return_in_scalar_kernel():
    @fs.kernel
    def sign(v: fs.f32) -> fs.i32:
        r = 0
        if v > 0:
            r = 1
        elif v < 0:
            r = -1
        return r

    assert sign(2.5) == 1
    assert sign(-0.1) == -1
    assert sign(0.0) == 0


def test_assert_checked_in_debug_mode():
    fs.init(arch=fs.cpu, debug=True)
    x = fs.field(fs.i32, shape=4)
    x.from_numpy(np.array([0, 1, 2, 5], np.int32))

    @fs.kernel
    def check(limit: fs.i32):
        for i in x:
            assert x[i] < limit, "value too large"

    check(10)  # passes
    with pytest.raises(AssertionError, match="value too large"):
        check(3)
