"""fs.random integer range, fs.randn moments, bool-literal variables, fs.static_print."""
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


def test_static_print_prints_once_while_compiling(capfd):
    @fs.kernel
    def k(a: fs.i32):
        fs.static_print("compiling", 3 * 4)

    k(1)
    k(2)
    assert capfd.readouterr().out == "compiling 12\n"


def test_static_print_of_kernel_values_prints_taichis_expr_placeholder(capfd):
    x = fs.field(fs.f32, 4)

    @fs.kernel
    def k(n: fs.i32):
        v = fs.Vector([n, 2])
        fs.static_print(n, v, x[0] + n, x.dtype, x.shape, 3.5)

    k(1)
    assert capfd.readouterr().out == "<ti.Expr> <ti.Expr> <ti.Expr> f32 (4,) 3.5\n"


def test_static_print_of_fields_prints_their_kind_not_values(capfd):
    # Taichi prints a field's kind while compiling; an ndarray parameter has no values yet
    x = fs.field(fs.f32, 3)
    v = fs.Vector.field(2, fs.f32, 3)
    m = fs.Matrix.field(2, 3, fs.f32, 3)
    s = fs.types.struct(p=fs.f32).field(shape=2)

    @fs.kernel
    def k(nd: fs.types.ndarray()):
        fs.static_print(x, v, m, s, nd)

    k(fs.ndarray(fs.f32, 3))
    assert capfd.readouterr().out == ("<ti.field> <2x1 ti.Matrix.field> <2x3 ti.Matrix.field> "
                                      "<ti.StructField> <ti.ndarray>\n")
