"""`fs.real_func` recursion on runtime values: compiled as real calls (lang.real_calls).

Expected values come from plain Python or numpy recomputations of the same recursions.
"""
import math

import numpy as np
import pytest
from support.programs import fibonacci_pairs, static_factorial

import fieldsim as fs


def test_deep_recursion_on_a_runtime_argument():
    @fs.real_func
    def sum_to(n: fs.i32) -> fs.i32:
        if n == 0:
            return 0
        return sum_to(n - 1) + n

    @fs.kernel
    def total(n: fs.i32) -> fs.i32:
        return sum_to(n)

    assert total(100) == 5050
    assert total(10_000) == 10_000 * 10_001 // 2
    assert total(0) == 0


def test_mutual_recursion():
    @fs.real_func
    def is_even(n: fs.i32) -> fs.i32:
        r = 1
        if n > 0:
            r = is_odd(n - 1)
        return r

    @fs.real_func
    def is_odd(n: fs.i32) -> fs.i32:
        r = 0
        if n > 0:
            r = is_even(n - 1)
        return r

    out = fs.field(fs.i32, shape=40)

    @fs.kernel
    def parity():
        for i in range(40):  # calls from a parallel loop
            out[i] = is_even(i * 3) * 10 + is_odd(i)

    parity()
    i = np.arange(40)
    assert np.array_equal(out.to_numpy(), ((i * 3) % 2 == 0) * 10 + (i % 2 == 1))


def test_recursion_reads_a_field():
    @fs.real_func
    def range_sum(f: fs.template(), lo: fs.i32, hi: fs.i32) -> fs.i32:
        if lo == hi:
            return f[lo]
        mid = (lo + hi) // 2
        return range_sum(f, lo, mid) + range_sum(f, mid + 1, hi)

    f = fs.field(fs.i32, shape=100)
    f.from_numpy(np.arange(100, dtype=np.int32) * 3 - 7)

    @fs.kernel
    def get(lo: fs.i32, hi: fs.i32) -> fs.i32:
        return range_sum(f, lo, hi)

    assert get(0, 99) == int((np.arange(100) * 3 - 7).sum())
    assert get(17, 42) == int((np.arange(17, 43) * 3 - 7).sum())


def test_recursion_writes_fields_and_atomics():
    squares = fs.field(fs.i64, shape=64)
    count = fs.field(fs.i32, shape=())

    @fs.real_func
    def fill(n: fs.i32):
        if n >= 0:
            squares[n] = fs.i64(n) * n
            count[None] += 1  # an atomic add
            fill(n - 1)

    @fs.kernel
    def run(n: fs.i32):
        fill(n)

    run(63)
    assert np.array_equal(squares.to_numpy(), np.arange(64, dtype=np.int64) ** 2)
    assert count[None] == 64


def test_recursion_with_a_loop_and_early_returns():
    @fs.real_func
    def first_root_sum(n: fs.i32) -> fs.i32:
        if n <= 1:
            return n
        for k in range(n):
            if k * k >= n:
                return k + first_root_sum(n - k)
        return -1

    def reference(n):
        if n <= 1:
            return n
        for k in range(n):
            if k * k >= n:
                return k + reference(n - k)
        return -1

    @fs.kernel
    def run(n: fs.i32) -> fs.i32:
        return first_root_sum(n)

    for n in (0, 1, 2, 10, 57, 1000):
        assert run(n) == reference(n)


def test_float_and_wide_integer_params_and_returns():
    @fs.real_func
    def power64(x: fs.f64, n: fs.i32) -> fs.f64:
        if n == 0:
            return 1.0
        return x * power64(x, n - 1)

    @fs.real_func
    def power32(x: fs.f32, n: fs.i32) -> fs.f32:
        if n == 0:
            return 1.0
        return x * power32(x, n - 1)

    @fs.real_func
    def fact(n: fs.i64) -> fs.i64:
        if n <= 1:
            return 1
        return n * fact(n - 1)

    @fs.kernel
    def p64(x: fs.f64, n: fs.i32) -> fs.f64:
        return power64(x, n)

    @fs.kernel
    def p32(x: fs.f32, n: fs.i32) -> fs.f32:
        return power32(x, n)

    @fs.kernel
    def f(n: fs.i64) -> fs.i64:
        return fact(n)

    assert p64(1.0001, 5000) == pytest.approx(1.0001 ** 5000, rel=1e-12)
    assert p32(1.5, 20) == pytest.approx(1.5 ** 20, rel=1e-6)
    assert f(20) == math.factorial(20)  # needs all 64 bits


def test_matrix_argument_is_flattened():
    vec3 = fs.types.vector(3, fs.f32)

    @fs.real_func
    def doubled_sum(v: vec3, n: fs.i32) -> fs.f32:
        if n == 0:
            return v[0] + v[1] + v[2]
        return doubled_sum(v * 2.0, n - 1)

    @fs.kernel
    def run(a: fs.f32, n: fs.i32) -> fs.f32:
        return doubled_sum(vec3(a, 2.0 * a, -0.5), n)

    assert run(1.5, 6) == pytest.approx((1.5 + 3.0 - 0.5) * 2 ** 6)


def test_calls_from_a_parallel_loop_with_field_writes():
    out = fs.field(fs.f32, shape=32)

    @fs.real_func
    def fib(n: fs.i32) -> fs.i32:
        r = n
        if n >= 2:
            r = fib(n - 1) + fib(n - 2)
        return r

    @fs.kernel
    def run():
        for i in out:
            out[i] += fib(i % 16)

    run()
    run()
    fibs = [0, 1]
    while len(fibs) < 16:
        fibs.append(fibs[-1] + fibs[-2])
    assert np.array_equal(out.to_numpy(), 2 * np.array([fibs[i % 16] for i in range(32)], np.float32))


def test_a_kernel_level_call_can_bound_a_later_loop():
    out = fs.field(fs.i32, shape=64)

    @fs.real_func
    def tri(n: fs.i32) -> fs.i32:
        if n == 0:
            return 0
        return tri(n - 1) + n

    @fs.kernel
    def run(n: fs.i32):
        for i in range(tri(n)):  # the call runs in a task before the loop's
            out[i] = i + tri(3)

    run(4)
    want = np.zeros(64, np.int32)
    want[:10] = np.arange(10) + 6
    assert np.array_equal(out.to_numpy(), want)


def test_reverse_and_forward_ad_refuse_a_real_call():
    x = fs.field(fs.f32, shape=(), needs_grad=True, needs_dual=True)
    y = fs.field(fs.f32, shape=(), needs_grad=True, needs_dual=True)

    @fs.real_func
    def pw(v: fs.f32, n: fs.i32) -> fs.f32:
        if n == 0:
            return 1.0
        return v * pw(v, n - 1)

    @fs.kernel
    def k(n: fs.i32):
        y[None] = pw(x[None], n)

    x[None] = 2.0
    k(3)
    assert y[None] == 8.0
    with pytest.raises(fs.FieldsimCompilationError,
                       match=r"kernel 'k' calls real function 'pw'.*reverse-mode AD") as err:
        k.grad(3)
    assert "test_real_func_calls.py" in str(err.value)
    with pytest.raises(fs.FieldsimCompilationError, match=r"real function 'pw'.*forward-mode AD"), \
            fs.ad.FwdMode(loss=y, param=x):
        k(3)


def test_matrix_and_tuple_returns_are_flattened():
    vec2 = fs.types.vector(2, fs.f32)
    mat2 = fs.types.matrix(2, 2, fs.f64)

    @fs.real_func
    def halves(v: vec2, n: fs.i32) -> vec2:
        if n == 0:
            return v
        return halves(v * 0.5, n - 1)

    @fs.real_func
    def mat_power(a: mat2, n: fs.i32) -> mat2:
        r = fs.Matrix.identity(fs.f64, 2)
        if n > 0:
            r = a @ mat_power(a, n - 1)
        return r

    out = fs.Matrix.field(2, 2, fs.f64, shape=())

    @fs.kernel
    def run_halves(n: fs.i32) -> vec2:
        return halves(vec2(1.0, 2.0), n)

    @fs.kernel
    def run_power(n: fs.i32):
        for _ in range(1):  # a call inside a task's loop
            out[None] = mat_power(fs.Matrix([[1.0, 1.0], [1.0, 0.0]], fs.f64), n)

    assert np.allclose(run_halves(3).to_numpy(), [0.125, 0.25])
    run_power(30)
    want = np.linalg.matrix_power(np.array([[1, 1], [1, 0]], np.int64), 30).astype(np.float64)
    assert np.array_equal(out.to_numpy(), want)
    fibs = [0, 1]
    while len(fibs) <= 90:
        fibs.append(fibs[-1] + fibs[-2])
    assert fibonacci_pairs().run_fib(90) == fibs[90]


def test_a_recursive_struct_return_is_refused_clearly():
    pair = fs.types.struct(a=fs.f32, b=fs.i32)

    @fs.real_func
    def count(n: fs.i32) -> pair:
        r = pair(a=0.0, b=0)
        if n > 0:
            r = count(n - 1)
            r.b += 1
        return r

    @fs.kernel
    def run(n: fs.i32) -> fs.i32:
        return count(n).b

    with pytest.raises(fs.FieldsimCompilationError, match=r"real function 'count'.*not structs"):
        run(3)


def test_non_recursive_and_static_recursion_still_inline():
    fact = static_factorial()

    @fs.real_func
    def twice(v: fs.f32) -> fs.f32:
        return 2 * v

    @fs.kernel
    def k(a: fs.f32) -> fs.f32:
        return fact(5) + twice(a) + twice(a)

    assert k(1.25) == 125.0
    assert _ir(k, 1.25).funcs == []


def test_deep_recursion_on_constants_becomes_a_real_call():
    @fs.real_func
    def sum_to(n: fs.i32) -> fs.i32:
        if n == 0:
            return 0
        return sum_to(n - 1) + n

    @fs.kernel
    def shallow() -> fs.i32:
        return sum_to(10)  # inlined and folded, as before

    @fs.kernel
    def deep() -> fs.i32:
        return sum_to(1000)  # too deep to inline: a real call

    assert shallow() == 55
    assert deep() == 500500
    assert _ir(shallow).funcs == []
    assert [f.name for f in _ir(deep).funcs] == ["sum_to"]


def test_deep_static_recursion_through_templates_is_still_refused():
    fact = static_factorial()

    @fs.kernel
    def k() -> fs.i32:
        return fact(100)

    with pytest.raises(fs.FieldsimSyntaxError, match="too deeply"):
        k()



def _ir(kernel, *args):
    templates, key, _, dtypes, ret = kernel.bind(args, {})
    return kernel.compiled(templates, key, dtypes, ret).ir


def test_recursive_real_func_taking_ndarrays():
    # codegen failed with a KeyError (the array's shape values were the kernel's own);
    # Taichi 1.7.4 gives the same rows
    @fs.real_func
    def fill_rows(a: fs.types.ndarray(dtype=fs.f32, ndim=2), n: fs.i32) -> fs.i32:
        if n > 0:
            for j in range(a.shape[1]):
                a[n - 1, j] = n * 10 + j
            fill_rows(a, n - 1)
        return n

    @fs.real_func
    def dot_tail(v: fs.types.ndarray(dtype=fs.math.vec3, ndim=1),
                 w: fs.types.ndarray(dtype=fs.f64, ndim=1), i: fs.i32) -> fs.f64:
        s = 0.0
        if i < v.shape[0]:
            s = v[i].sum() * w[i] + dot_tail(v, w, i + 1)
        return s

    @fs.kernel
    def k(a: fs.types.ndarray(dtype=fs.f32, ndim=2), v: fs.types.ndarray(dtype=fs.math.vec3, ndim=1),
          w: fs.types.ndarray(dtype=fs.f64, ndim=1)) -> fs.f64:
        fill_rows(a, a.shape[0])
        return dot_tail(v, w, 0)

    rng = np.random.default_rng(0)
    v, w = rng.random((7, 3)).astype(np.float32), rng.random(7)
    for a in (np.zeros((3, 2), np.float32), np.asfortranarray(np.zeros((4, 5), np.float32))):
        got = k(a, v, w)
        i, j = np.indices(a.shape)
        np.testing.assert_array_equal(a, (i + 1) * 10 + j)  # Fortran order: copied back
        assert got == pytest.approx(float((v.astype(np.float64).sum(1) * w).sum()), rel=1e-6)
