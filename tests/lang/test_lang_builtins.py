"""fs.random integer range, fs.randn moments, fs.static_assert, fs.block_local."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.mark.parametrize("dt,bits", [(fs.i32, 32), (fs.i64, 64)])
def test_random_int_spans_the_signed_range(dt, bits):
    n = 50_000
    x = fs.field(fs.f64, shape=n)

    @fs.kernel
    def k():
        for i in x:
            x[i] = float(fs.random(dt)) / float(2 ** (bits - 1))  # in [-1, 1)

    k()
    a = x.to_numpy()
    assert a.min() < -0.9 and a.max() > 0.9  # negative draws too
    assert abs(a.mean()) < 0.02  # uniform over [-1, 1): mean 0, second moment 1/3
    assert abs((a ** 2).mean() - 1 / 3) < 0.02


def test_random_u8_is_uniform_over_its_range():
    n = 50_000
    x = fs.field(fs.i32, shape=n)

    @fs.kernel
    def k():
        for i in x:
            x[i] = fs.cast(fs.random(fs.u8), fs.i32)

    k()
    a = x.to_numpy()
    assert a.min() == 0 and a.max() == 255
    assert abs(a.mean() - 127.5) < 2


@pytest.mark.parametrize("dt", [fs.f32, fs.f64])
def test_randn_moments(dt):
    n = 200_000
    x = fs.field(fs.f64, shape=n)

    @fs.kernel
    def k():
        for i in x:
            x[i] = fs.randn(dt)

    k()
    a = x.to_numpy()
    assert np.isfinite(a).all()
    for p, m in enumerate([0.0, 1.0, 0.0, 3.0], start=1):
        assert abs((a ** p).mean() - m) < 0.05


def test_static_assert_passes_and_fails_at_compile_time():
    v = fs.Vector.field(3, fs.f32, shape=())

    @fs.kernel
    def ok():
        fs.static_assert(v.n == 3)
        fs.static_assert(v.dtype == fs.f32, "dtype")

    ok()

    @fs.kernel
    def bad():
        fs.static_assert(v.n == 4, "need a 4-vector")

    with pytest.raises(fs.FieldsimCompilationError, match="need a 4-vector"):
        bad()


def test_static_assert_rejects_a_runtime_condition():
    @fs.kernel
    def bad(a: fs.i32):
        fs.static_assert(a > 0)

    with pytest.raises(fs.FieldsimTypeError, match="non-static condition") as info:
        bad(1)
    assert "test_lang_builtins.py" in str(info.value)


def test_block_local_is_accepted():
    a = fs.field(fs.f32, shape=8)

    @fs.kernel
    def k():
        fs.block_local(a)
        for i in a:
            a[i] = i

    k()
    assert a.to_numpy()[7] == 7


def test_bool_literal_makes_a_runtime_variable():
    x = fs.field(fs.i32, shape=5)

    @fs.kernel
    def any_positive() -> fs.i32:
        found = False
        for i in range(5):
            if x[i] > 0:
                found = True
        return found

    assert any_positive() == 0
    x[3] = 2
    assert any_positive() == 1

    @fs.kernel
    def bad():
        value = False
        fs.static_assert(value, "never")

    with pytest.raises(fs.FieldsimTypeError, match="non-static condition"):
        bad()


def test_stop_grad_blocks_gradients_until_the_end_of_its_loop():
    n = 6
    x = fs.field(fs.f64, shape=n, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        for i in range(n):
            fs.stop_grad(x)
            loss[None] += x[i] ** 3  # counted in the loss, passes no gradient
        for i in range(n):
            loss[None] += x[i] ** 2

    vals = np.linspace(-1.0, 1.5, n)
    x.from_numpy(vals)
    with fs.Tape(loss):
        k()
    assert loss[None] == pytest.approx(float((vals ** 3 + vals ** 2).sum()))
    assert np.allclose(x.grad.to_numpy(), 2 * vals)


def test_static_print_prints_once_while_compiling(capfd):
    @fs.kernel
    def k(a: fs.i32):
        fs.static_print("compiling", 3 * 4)

    k(1)
    k(2)
    assert capfd.readouterr().out == "compiling 12\n"
