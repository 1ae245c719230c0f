"""A tangent of exactly 0 contributes exactly 0 to a JVP, even through an infinite or NaN slope.

Forward mode's twin of test_zero_adjoint: a JVP's term through an op is `tangent * slope`, and
IEEE's 0 * inf is NaN. Along a direction that does not move an operand (its tangent is exactly
0), that operand contributes 0 by the chain rule, whatever its slope: `x0**2 + sqrt(x1 - 1)` at
(1, 1) along e0 is 2, not NaN. Each case below puts a singular op (sqrt, log, pow, asin, acos,
atan2, a norm, a division by it) at its singular point in x1 and seeds along e0; the expected
values are the analytic directional derivatives. A nonzero tangent through an infinite slope
stays IEEE (inf), as Taichi gives. Taichi 1.7.4 gives NaN for the zero-tangent cases."""
import math

import numpy as np
import pytest

from ._env import AS_TAICHI, fs

pytestmark = [pytest.mark.skipif(AS_TAICHI, reason="Taichi 1.7.4 gives NaN (beyond Taichi)"),
              pytest.mark.filterwarnings("ignore:Calling non-taichi function")]

FP = ["f32", "f64"]
MODES = [pytest.param({}, id="fast"), pytest.param({"fast_math": False}, id="exact")]
X0 = 0.75  # x1 = 1 in every case: each singular op's operand is 0 (or 1 for asin / acos)


def _v(x1):
    return fs.Vector([x1 - 1.0, 2.0 * (x1 - 1.0)])  # the zero vector at x1 = 1


# name -> (loss(x0, x1), d loss / d x0 at (X0, 1))
CASES = {
    "reproducer": (lambda a, b: a ** 2 + fs.sqrt(b - 1.0), 2 * X0),
    "sqrt_in_product": (lambda a, b: fs.sin(a) + a * fs.sqrt(b - 1.0), math.cos(X0)),
    "log_at_0": (lambda a, b: a * a + fs.exp(fs.log(b - 1.0)), 2 * X0),
    "norm_of_zero": (lambda a, b: a * a + a * _v(b).norm(), 2 * X0),
    "x_over_norm": (lambda a, b: a / (1.0 + _v(b).norm()), 1.0),
    "normalized": (lambda a, b: a * a + a * _v(b).normalized(1.0).sum(), 2 * X0),
    "atan2_0_0": (lambda a, b: a * a + fs.atan2(b - 1.0, b - 1.0), 2 * X0),
    "pow_half_at_0": (lambda a, b: a * a + (b - 1.0) ** 0.5, 2 * X0),
    "asin_at_1": (lambda a, b: a * a + fs.asin(b), 2 * X0),
    "acos_at_1": (lambda a, b: fs.cos(a) + a * fs.acos(b), -math.sin(X0)),
}


def _jvp(body, fp, options, seed, x1=1.0):
    dt = getattr(fs, fp)
    fs.init(arch=fs.cpu, default_fp=dt, **options)
    x = fs.field(dt, shape=2, needs_grad=True)
    loss = fs.field(dt, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        loss[None] = body(x[0], x[1])

    x.from_numpy(np.array([X0, x1], dtype=dt.np))
    with fs.ad.FwdMode(loss=loss, param=x, seed=seed):
        k()
    return loss.dual[None]


@pytest.mark.parametrize("options", MODES)
@pytest.mark.parametrize("fp", FP)
@pytest.mark.parametrize("name", CASES)
def test_a_direction_that_does_not_move_a_singular_operand(name, fp, options):
    body, expected = CASES[name]
    got = _jvp(body, fp, options, [1.0, 0.0])
    assert got == pytest.approx(expected, rel=1e-5 if fp == "f32" else 1e-12)


@pytest.mark.parametrize("fp", FP)
def test_a_nonzero_tangent_through_an_infinite_slope_stays_ieee(fp):
    body = CASES["reproducer"][0]
    assert _jvp(body, fp, {}, [0.0, 1.0]) == math.inf  # d sqrt(x1 - 1) / d x1 at 1: inf
    assert _jvp(body, fp, {}, [1.0, 1.0]) == math.inf


@pytest.mark.parametrize("fp", FP)
def test_guarded_terms_away_from_the_singular_point_are_unchanged(fp):
    """At x1 = 1.25 nothing is singular: the guards change no JVP (here along (1, 1))."""
    for name, x1_slope in (("reproducer", 1.0), ("log_at_0", 1.0), ("atan2_0_0", 0.0),
                           ("asin_at_1", None)):
        x1 = 1.25 if x1_slope is not None else 0.6
        slope = x1_slope if x1_slope is not None else 1 / math.sqrt(1 - x1 * x1)
        got = _jvp(CASES[name][0], fp, {}, [1.0, 1.0], x1=x1)
        assert got == pytest.approx(2 * X0 + slope, rel=1e-5), name


def _guards(kernel) -> int:
    """The zero-tangent guards (`select(t == 0, 0, ...)`) in `kernel`'s tangent IR."""
    from support.ir_kit import compiled_ir

    from fieldsim.ad.forward import make_tangent
    from fieldsim.ir.ir import Op, walk
    tan = make_tangent(compiled_ir(kernel))
    zero_tests = {id(s) for s in walk(tan.body) if s.op == Op.EQ}
    return sum(1 for s in walk(tan.body) if s.op == Op.SELECT and id(s.args[0]) in zero_tests)


def test_provably_finite_slopes_get_no_guard():
    """Gravity's 1 / sqrt(|r|^2 + eps^2), a safeguarded divisor, a constant power >= 1: the
    tangent programs keep their code. The singular forms get one guard per active term."""
    fs.init(arch=fs.cpu, default_fp=fs.f32)
    n = 4
    x = fs.Vector.field(2, fs.f32, shape=n, needs_grad=True)
    m = fs.field(fs.f32, shape=n, needs_grad=True)
    out = fs.field(fs.f32, shape=n, needs_grad=True)

    @fs.kernel
    def safe():
        for i in x:
            r = x[i] - x[(i + 1) % n]
            out[i] = 1.0 / fs.sqrt(r.norm_sqr() + 1e-4) + (x[i] / (m[i] + 1e-10))[0]
            out[i] += m[i] ** 3 + fs.log(m[i] * m[i] + 1.0)

    @fs.kernel
    def singular():
        for i in x:
            out[i] = fs.sqrt(m[i]) + x[i][0] / m[i]

    assert _guards(safe) == 0
    assert _guards(singular) == 3  # sqrt's term, and the division's two
