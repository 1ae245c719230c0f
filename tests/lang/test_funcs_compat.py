"""Taichi's func semantics: typed args and returns, template/ref args by reference, returns
anywhere in a func, kernel return values (unsigned, vectors, matrices, tuples), real_func rules."""
import re
import typing

import numpy as np
import pytest

import fieldsim as fs


def test_declared_return_type_casts():
    @fs.func
    def trunc(a: fs.f32) -> fs.i32:
        return a

    @fs.func
    def widen(a: fs.i32) -> fs.f32:
        return a / 2

    @fs.kernel
    def k(a: fs.f32) -> fs.f32:
        return trunc(a) + widen(3)

    assert k(1.5) == 1.0 + 1.5
    assert k(-2.7) == -2.0 + 1.5


def test_typed_args_are_cast():
    @fs.func
    def half(a: fs.i32) -> fs.f32:
        return a / 2

    @fs.kernel
    def k(x: fs.f32) -> fs.f32:
        return half(x)

    assert k(5.9) == 2.5


def test_scalar_annotation_casts_a_vector_element_wise():
    """As Taichi 1.7.4: `-> fs.i32` on a func returning a vector gives the vector cast to i32."""
    out = fs.Vector.field(2, fs.f32, shape=2)

    @fs.func
    def get(v: fs.i32) -> fs.i32:
        return v * 1.5

    @fs.kernel
    def k(a: fs.f32):
        out[0] = get(fs.Vector([a, 2 * a]))
        get(fs.Vector([a, a]))  # the value may be dropped, too

    k(1.75)
    np.testing.assert_array_equal(out.to_numpy()[0], [1.0, 4.0])  # (1, 3) * 1.5 -> (1, 4)


@pytest.mark.fieldsim_specific  # Taichi: TaichiRuntimeTypeError, an internal exception class
def test_real_func_refuses_a_vector_for_a_scalar_annotation():
    @fs.real_func
    def get(v: fs.f32) -> fs.f32:
        return fs.Vector([v, v])

    @fs.kernel
    def k() -> fs.f32:
        return get(1.0)

    with pytest.raises(fs.FieldsimTypeError, match="annotated f32 but is a vector"):
        k()


def test_template_and_ref_args_are_the_callers_variables():
    @fs.func
    def inc(x: fs.template()):
        x += 1

    @fs.func
    def set7(x: fs.ref(fs.f32)):
        x = 7.0  # noqa: F841 - a ref parameter: the caller's variable is assigned

    @fs.func
    def by_value(x):
        x += 100

    @fs.func
    def vec_by_value(v: fs.types.vector(3, fs.f32)):
        v[0] = 100.0

    @fs.kernel
    def k() -> fs.f32:
        a = 0
        inc(a)
        inc(a)
        b = 5.0
        set7(b)
        c = 1
        by_value(c)
        v = fs.Vector([1.0, 2.0, 3.0])
        vec_by_value(v)
        return a * 1000 + b * 10 + c + v[0] * 0.5

    assert k() == 2000 + 70 + 1 + 0.5


def test_returns_anywhere_in_a_func():
    x = fs.field(fs.i32, shape=())

    @fs.func
    def nested(val: fs.i32) -> fs.i32:
        if x[None] > 10:
            if x[None] > 20:
                return 1
            x[None] += 1
        x[None] += val
        return 0

    @fs.func
    def first_square_above(a: fs.i32) -> fs.i32:
        for i in range(100):
            if i * i > a:
                return i
        return -1

    @fs.func
    def in_while() -> fs.i32:
        i = 1
        while i:
            return 42
        return 0

    @fs.func
    def in_static_for(a: fs.i32) -> fs.i32:
        for j in fs.static(range(4)):
            if a == j:
                return j * 10
        return -5

    @fs.kernel
    def k(a: fs.i32) -> fs.i32:
        r = nested(15) * 1000 + nested(10) * 100 + nested(100) * 10
        return r + first_square_above(a) * 100000 + in_while() * 10000000 + in_static_for(a)

    x[None] = 0
    assert k(10) == 1 * 10 + 4 * 100000 + 42 * 10000000 - 5
    assert x[None] == 26  # 15, then 10 + 1; the third call returned before any change
    x[None] = 0
    assert k(2) == 1 * 10 + 2 * 100000 + 42 * 10000000 + 20


def test_return_in_a_loop_gradient_matches_finite_differences():
    x = fs.field(fs.f64, shape=4, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.func
    def f(v: fs.f64) -> fs.f64:
        if v > 1.0:
            if v > 2.0:
                return v * v * v
            v = v * 3.0
        return fs.sin(v)

    @fs.kernel
    def run():
        for i in x:
            loss[None] += f(x[i])

    def total(vals):
        x.from_numpy(vals)
        loss[None] = 0.0
        run()
        return loss[None]

    vals = np.array([0.3, 1.4, 2.5, -0.7])
    x.from_numpy(vals)
    with fs.Tape(loss):
        run()
    g = x.grad.to_numpy()
    eps = 1e-6
    for i in range(4):
        d = np.zeros(4)
        d[i] = eps
        fd = (total(vals + d) - total(vals - d)) / (2 * eps)
        assert g[i] == pytest.approx(fd, rel=1e-6, abs=1e-8)
    assert g[2] == pytest.approx(3 * 2.5 ** 2)
    assert g[1] == pytest.approx(3 * np.cos(4.2))


def test_kernel_return_unsigned_vector_matrix_tuple():
    @fs.kernel
    def u() -> fs.u64:
        return fs.u64(2 ** 64 - 1)

    @fs.kernel
    def vec() -> fs.types.vector(2, fs.u64):
        return fs.Vector([fs.u64(2 ** 64 - 1), fs.u64(5)])

    @fs.kernel
    def mat(s: fs.f32) -> fs.types.matrix(2, 2, fs.f32):
        return fs.Matrix([[1.0, 2.0], [3.0, 4.0]]) * s

    @fs.kernel
    def tup(a: fs.i32) -> (fs.i32, fs.f32):
        return a + 1, a * 0.5

    @fs.kernel
    def tup2(a: fs.i32) -> typing.Tuple[fs.f32, fs.types.vector(2, fs.i32)]:  # noqa: UP006 - Taichi's spelling
        return a * 0.25, fs.Vector([a, -a])

    assert u() == 2 ** 64 - 1
    v = vec()
    assert v[0] == 2 ** 64 - 1 and v[1] == 5
    m = mat(2.0)
    assert m[1, 0] == 6.0 and m[0, 1] == 4.0
    assert tup(3) == [4, 1.5]  # a list, as Taichi 1.7.4 returns a tuple annotation's values
    a, b = tup2(4)
    assert a == 1.0 and (b[0], b[1]) == (4, -4)


def test_kernel_return_shape_mismatch_is_an_error():
    @fs.kernel
    def bad() -> fs.types.vector(4, fs.f32):
        return fs.Vector([1.0, 2.0, 3.0])

    with pytest.raises(fs.FieldsimTypeError, match="bad") as info:
        bad()
    assert "test_funcs_compat.py" in str(info.value)


def test_void_returns_and_missing_returns():
    @fs.kernel
    def void():
        return

    @fs.kernel
    def none():
        return None

    void()
    none()

    @fs.kernel
    def missing() -> fs.i32:
        pass

    with pytest.raises(fs.FieldsimSyntaxError, match="does not have a return statement"):
        missing()

    @fs.func
    def f() -> fs.i32:
        pass

    @fs.kernel
    def calls() -> fs.i32:
        return f()

    with pytest.raises(fs.FieldsimCompilationError, match="does not have a return statement"):
        calls()

    @fs.kernel
    def in_loop() -> fs.i32:
        for i in range(3):
            return i

    with pytest.raises(fs.FieldsimCompilationError, match="Return inside non-static if/for"):
        in_loop()


def test_real_func_needs_annotations():
    with pytest.raises(fs.FieldsimSyntaxError, match="must be type annotated") as info:
        @fs.real_func
        def add(a, b: fs.i32) -> fs.i32:
            return a + b
    assert "test_funcs_compat.py" in str(info.value)

    @fs.real_func
    def add2(a: fs.i32, b: fs.i32):
        return a + b

    @fs.kernel
    def k():
        add2(1, 2)

    with pytest.raises(fs.FieldsimCompilationError, match="return value must be annotated"):
        k()


def test_matrix_arg_shape_is_checked():
    @fs.func
    def f(a: fs.types.vector(3, fs.f32)):
        a[0] = 100

    @fs.kernel
    def k():
        x = fs.Vector([3, 4])
        f(x)

    with pytest.raises(fs.FieldsimSyntaxError, match="expected to be a Matrix with n 3, but got 2"):
        k()


def test_return_from_a_loop_gradient_matches_finite_differences():
    x = fs.field(fs.f64, shape=4, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.func
    def f(v: fs.f64) -> fs.f64:
        acc: fs.f64 = 0.0  # f64 all through: the finite differences need it
        for j in range(6):
            acc += v * j
            if acc > 3.0:
                return acc * v  # leaves the loop early: 10 v^2 for v = 0.45
        return acc  # 15 v when the loop runs to the end

    @fs.kernel
    def run():
        for i in x:
            loss[None] += f(x[i])

    def total(vals):
        x.from_numpy(vals)
        loss[None] = 0.0
        run()
        return loss[None]

    vals = np.array([0.1, 0.45, 1.3, -0.7])
    x.from_numpy(vals)
    with fs.Tape(loss):
        run()
    g = x.grad.to_numpy()
    assert g[0] == pytest.approx(15.0) and g[1] == pytest.approx(20 * 0.45)
    eps = 1e-6
    for i in range(4):
        d = np.zeros(4)
        d[i] = eps
        assert g[i] == pytest.approx((total(vals + d) - total(vals - d)) / (2 * eps), rel=1e-6)



@fs.func
def _star(*args):
    return args[0] + args[1]


@fs.func
def _kwonly(a, *, b):
    return a - b


@fs.func
def _starstar(a, **kw):
    return a


@pytest.mark.parametrize("f,named", [(_star, "*args"), (_kwonly, "keyword-only 'b'"),
                                     (_starstar, "**kw")])
def test_func_with_star_or_keyword_only_parameters_is_refused_by_name(f, named):
    # bound by position alone these were misreported: "takes 0 argument(s)", "has no parameter 'b'"
    @fs.kernel
    def k() -> fs.f32:
        return f(1.0, b=2.0) if fs.static(f is _kwonly) else f(1.0, 2.0)

    with pytest.raises(fs.FieldsimSyntaxError, match=f"has the parameter\\(s\\) {re.escape(named)}"):
        k()
