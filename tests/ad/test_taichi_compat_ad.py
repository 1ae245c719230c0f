"""Taichi's AD API details that Taichi programs rely on (issue #11, autodiff slice).

Gradients are checked against analytic derivatives; refusals against their error class and
message. Covered: `x.grad` / `x.dual` placed by hand (and the error for one never placed), a
Tape leaving the duals alone, `clear_all_gradients(gradient_type)`, FwdMode clearing its seed on
exit, `grad_for` refusing a kernel or a plain function, `no_grad(...).grad`, `Tape.calls` and the
kernels' `autodiff_mode`, `fs.stop_grad`, a struct-for over a 0-D field, and access-rule
refusals being `TaichiAssertionError`s.
"""
import importlib.util

import numpy as np
import pytest

from ._env import AS_TAICHI, fs

pytestmark = [pytest.mark.fs_init(fp="f64"),
              pytest.mark.skipif(AS_TAICHI, reason="fieldsim's error classes and messages")]

N = 5


def _xs():
    return np.linspace(0.2, 1.4, N)


# ---- grad and dual twins placed by hand ------------------------------------------------------
def test_grad_placed_by_hand_receives_the_gradient():
    x, y = fs.field(float), fs.field(float)
    loss = fs.field(float)
    fs.root.dense(fs.i, N).place(x, x.grad, y)
    fs.root.place(loss, loss.grad)

    @fs.kernel
    def k():
        for i in x:
            y[i] = fs.sin(x[i])
            loss[None] += fs.sin(x[i]) * x[i]

    x.from_numpy(_xs())
    with fs.ad.Tape(loss=loss):
        k()
    xs = _xs()
    np.testing.assert_allclose(x.grad.to_numpy(), np.cos(xs) * xs + np.sin(xs), rtol=1e-12)
    assert x.grad.shape == (N,)


def test_a_field_without_grad_still_takes_part_in_a_tape():
    x, loss = fs.field(float), fs.field(float)
    fs.root.dense(fs.i, N).place(x)
    fs.root.place(loss, loss.grad)

    @fs.kernel
    def k():
        for i in x:
            loss[None] += x[i] ** 2

    x.from_numpy(_xs())
    with fs.ad.Tape(loss=loss):
        k()
    assert loss[None] == pytest.approx(float(np.sum(_xs() ** 2)))


def test_an_unplaced_grad_is_refused_with_taichis_words():
    x = fs.field(float, shape=N, name="x")
    y = fs.field(float, shape=(), name="y", needs_grad=True)

    @fs.kernel
    def k():
        y[None] = x.grad[0]

    with pytest.raises(fs.TaichiCompilationError,
                       match="Gradient x.grad has not been placed, check whether `needs_grad=True`"):
        k()
    with pytest.raises(RuntimeError, match="Gradient x.grad has not been placed"):
        x.grad[0]
    assert fs.field(fs.i32, shape=N).grad is None  # integer fields have no gradient


def test_a_grad_placed_by_hand_must_match_its_field():
    x = fs.field(float)
    fs.root.dense(fs.i, N).place(x)
    with pytest.raises(ValueError, match="shape"):
        fs.root.dense(fs.i, N + 1).place(x.grad)


def test_duals_placed_by_hand_and_the_seed_cleared_on_exit():
    a, b = fs.field(float), fs.field(float)
    fs.root.dense(fs.i, N).place(a, b, a.dual, b.dual)

    @fs.kernel
    def square():
        for i in a:
            b[i] = a[i] * a[i]

    a.from_numpy(_xs())
    with fs.ad.FwdMode(loss=b, param=a, seed=[1.0] * N):
        square()
        np.testing.assert_allclose(a.dual.to_numpy(), np.ones(N))
    np.testing.assert_allclose(b.dual.to_numpy(), 2 * _xs(), rtol=1e-12)
    np.testing.assert_array_equal(a.dual.to_numpy(), np.zeros(N))  # Taichi clears the seed
    with fs.ad.FwdMode(loss=b, param=a, seed=[1.0] * N, clear_gradients=False):
        pass
    np.testing.assert_allclose(b.dual.to_numpy(), 2 * _xs(), rtol=1e-12)


def test_a_later_launch_sees_no_leftover_seed():
    """Before the fix the seed stayed in x.dual and a second FwdMode on another parameter,
    with clear_gradients=False, added x's tangent to y's."""
    x = fs.field(float, shape=(), needs_dual=True)
    w = fs.field(float, shape=(), needs_dual=True)
    loss = fs.field(float, shape=(), needs_dual=True)

    @fs.kernel
    def k():
        loss[None] = 3.0 * x[None] + 5.0 * w[None]

    with fs.ad.FwdMode(loss=loss, param=x):
        k()
    assert loss.dual[None] == 3.0
    with fs.ad.FwdMode(loss=loss, param=w, clear_gradients=False):
        k()
    assert loss.dual[None] == 5.0


# ---- clearing gradients ----------------------------------------------------------------------
def test_a_tape_clears_adjoints_but_not_duals():
    x = fs.field(float, shape=N, needs_grad=True, needs_dual=True)
    loss = fs.field(float, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        for i in x:
            loss[None] += 2.0 * x[i]

    x.grad.fill(7.0)
    x.dual.fill(3.0)
    with fs.ad.Tape(loss=loss):
        k()
    np.testing.assert_array_equal(x.grad.to_numpy(), np.full(N, 2.0))
    np.testing.assert_array_equal(x.dual.to_numpy(), np.full(N, 3.0))


def test_clear_all_gradients_by_gradient_type():
    from fieldsim.lang.enums import SNodeGradType
    x = fs.field(float, shape=N, needs_grad=True, needs_dual=True)
    x.grad.fill(1.0)
    x.dual.fill(2.0)
    fs.ad.clear_all_gradients(gradient_type=SNodeGradType.DUAL)
    assert x.grad.to_numpy().tolist() == [1.0] * N and not x.dual.to_numpy().any()
    x.dual.fill(2.0)
    fs.ad.clear_all_gradients()
    assert not x.grad.to_numpy().any() and x.dual.to_numpy().tolist() == [2.0] * N
    with pytest.raises(fs.FieldsimError, match="gradient_type"):
        fs.ad.clear_all_gradients(gradient_type="primal")


# ---- custom gradients ------------------------------------------------------------------------
def _accumulate():
    x = fs.field(float, shape=N, needs_grad=True)
    total = fs.field(float, shape=(), needs_grad=True)

    @fs.kernel
    def func(mul: float):
        for i in x:
            total[None] += x[i] * mul

    x.from_numpy(_xs())
    return x, total, func


def test_grad_for_refuses_a_kernel_and_keeps_its_adjoint():
    x, total, func = _accumulate()
    with pytest.raises(RuntimeError, match="not a kernel") as info:
        @fs.ad.grad_for(func)
        def backward(mul):
            pass
    assert isinstance(info.value, fs.FieldsimError)
    assert f"{__file__}" in str(info.value)  # names where the backward was written
    with fs.ad.Tape(loss=total):
        func(4.0)
    np.testing.assert_array_equal(x.grad.to_numpy(), np.full(N, 4.0))  # d total/dx = mul


def test_grad_for_refuses_a_plain_function():
    _, _, func = _accumulate()

    def forward(mul):
        func(mul)

    with pytest.raises(RuntimeError, match="must be decorated with @fs.ad.grad_replaced"):
        fs.ad.grad_for(forward)(lambda mul: None)


def test_no_grad_function_has_an_empty_backward():
    x, total, func = _accumulate()

    @fs.ad.no_grad
    def forward(mul):
        func(mul)
        func(mul)

    total.grad[None] = 1.0
    forward(4.0)
    forward.grad(4.0)
    assert not x.grad.to_numpy().any()
    with fs.ad.Tape(loss=total):
        forward(4.0)  # not recorded: no gradient from it
        func(5.0)
    np.testing.assert_array_equal(x.grad.to_numpy(), np.full(N, 5.0))


def test_grad_replaced_method_gets_its_backward():
    x, total, func = _accumulate()

    class Model:
        @fs.ad.grad_replaced
        def forward(self, mul):
            func(mul)
            func(mul)

        @fs.ad.grad_for(forward)
        def backward(self, mul):
            func.grad(mul)

    with fs.ad.Tape(loss=total):
        Model().forward(4.0)
    np.testing.assert_array_equal(x.grad.to_numpy(), np.full(N, 4.0))  # the user's backward


# ---- Tape.calls and autodiff modes -----------------------------------------------------------
def test_tape_calls_and_autodiff_modes():
    from fieldsim.lang.enums import AutodiffMode
    x, total, func = _accumulate()
    with fs.ad.Tape(loss=total, validation=True) as t:
        func(1.0)
        func(2.0)
        assert [args for _, args in t.calls] == [(1.0,), (2.0,)]
        assert t.modes == [AutodiffMode.VALIDATION] * 2
        assert func.autodiff_mode == AutodiffMode.VALIDATION
    assert func.autodiff_mode == AutodiffMode.NONE
    assert func.grad.autodiff_mode == AutodiffMode.REVERSE


def test_autodiff_mode_from_a_second_copy_of_the_enums_compares_equal():
    """A program importing `taichi.lang.enums` under fieldsim loads the module again."""
    from fieldsim.lang import enums
    spec = importlib.util.spec_from_file_location("taichi_lang_enums_copy", enums.__file__)
    copy = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(copy)
    assert copy.AutodiffMode.VALIDATION == enums.AutodiffMode.VALIDATION
    assert copy.AutodiffMode.NONE != enums.AutodiffMode.VALIDATION


# ---- stop_grad -------------------------------------------------------------------------------
def _two_loops(stop_first: bool, stop_top: bool = False):
    x = fs.field(float, shape=N, needs_grad=True)
    loss = fs.field(float, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        if fs.static(stop_top):
            fs.stop_grad(x)
        for i in x:
            if fs.static(stop_first):
                fs.stop_grad(x)
            loss[None] += x[i] ** 2
        for i in x:
            loss[None] += fs.sin(x[i])

    x.from_numpy(_xs())
    return x, loss, k


def test_stop_grad_stops_only_its_own_loop():
    x, loss, k = _two_loops(stop_first=True)
    with fs.ad.Tape(loss=loss):
        k()
    np.testing.assert_allclose(x.grad.to_numpy(), np.cos(_xs()), rtol=1e-12)
    x2, loss2, k2 = _two_loops(stop_first=False)
    with fs.ad.Tape(loss=loss2):
        k2()
    np.testing.assert_allclose(x2.grad.to_numpy(), 2 * _xs() + np.cos(_xs()), rtol=1e-12)


def test_stop_grad_at_the_top_of_a_kernel_stops_every_loop():
    x, loss, k = _two_loops(stop_first=False, stop_top=True)
    with fs.ad.Tape(loss=loss):
        k()
    assert not x.grad.to_numpy().any()


def test_stop_grad_covers_reads_before_it_in_its_block():
    x = fs.field(float, shape=N, needs_grad=True)
    loss = fs.field(float, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        for i in x:
            loss[None] += x[i] ** 2
            fs.stop_grad(x)

    x.from_numpy(_xs())
    with fs.ad.Tape(loss=loss):
        k()
    assert loss[None] == pytest.approx(float(np.sum(_xs() ** 2)), rel=1e-12)
    assert not x.grad.to_numpy().any()


def test_stop_grad_gives_a_zero_tangent_in_forward_mode():
    x, loss, k = _two_loops(stop_first=True)
    v = np.linspace(-1.0, 1.0, N)
    with fs.ad.FwdMode(loss=loss, param=x, seed=v):
        k()
    assert loss.dual[None] == pytest.approx(float(np.dot(np.cos(_xs()), v)), rel=1e-12)


def test_stop_grad_misuse_is_refused():
    x = fs.field(float, shape=N, needs_grad=True)
    with pytest.raises(fs.FieldsimError, match="inside a kernel"):
        fs.stop_grad(x)

    @fs.kernel
    def k():
        fs.stop_grad(3.0)

    with pytest.raises(fs.FieldsimTypeError, match="takes one field"):
        k()


# ---- loops and refusals ----------------------------------------------------------------------
def test_struct_for_over_a_0d_field():
    x, y = fs.field(float), fs.field(float)
    fs.root.place(x, x.grad, y, y.grad)

    @fs.kernel
    def k():
        for i in fs.grouped(x):
            y[i] = fs.exp(x[i]) * 2.0

    x[None] = 0.3
    with fs.ad.Tape(loss=y):
        k()
    assert y[None] == pytest.approx(2 * np.exp(0.3), rel=1e-12)
    assert x.grad[None] == pytest.approx(2 * np.exp(0.3), rel=1e-12)


def test_a_broken_rule_is_a_taichi_assertion_error():
    x = fs.field(float, shape=N, needs_grad=True)
    b = fs.field(float, shape=(), needs_grad=True)
    loss = fs.field(float, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        loss[None] = x[1] * b[None]
        b[None] += 100.0

    with pytest.raises(fs.TaichiAssertionError, match="Rule 1"):
        with fs.ad.Tape(loss=loss, validation=True):
            k()
    assert issubclass(fs.AccessRuleError, fs.FieldsimError)


# ---- plain Python functions called in a kernel (Taichi runs them on its values) -------------
def _helper_cube(v):
    return v * v * v


def test_plain_functions_and_lambdas_are_inlined_and_differentiated():
    pair = [lambda v: fs.sin(v) * 2.0, lambda w: w * w]  # two on one line: told apart
    x = fs.field(float, shape=N, needs_grad=True)
    loss = fs.field(float, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        for i in x:
            loss[None] += pair[0](x[i]) + pair[1](x[i]) + _helper_cube(x[i])

    x.from_numpy(_xs())
    with fs.ad.Tape(loss=loss):
        k()
    xs = _xs()
    assert loss[None] == pytest.approx(float(np.sum(2 * np.sin(xs) + xs ** 2 + xs ** 3)), rel=1e-12)
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * np.cos(xs) + 2 * xs + 3 * xs ** 2, rtol=1e-12)
