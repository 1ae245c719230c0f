"""Facts of an enclosing `if` remove zero-adjoint / zero-tangent guards (ad.zero_adjoint).

Inside `if m > 0` a flushing kernel (DAZ: a subnormal compares as 0) has m >= the smallest
normal, so in `x / m` the numerator's slope 1 / m is finite and needs no
`select(t == 0, 0, t * slope)`; the divisor's slope -(x/m) / m can still overflow and keeps its
guard. Only uses inside the branch may assume the fact: the same m used before the `if` keeps
both. Numbers: JVPs and gradients at and around the singular point against the analytic values."""
import math

import numpy as np
import pytest
from support.backends import on_cpu

from ._env import AS_TAICHI, fs

pytestmark = [pytest.mark.skipif(AS_TAICHI, reason="fieldsim's guard placement (IR)"),
              pytest.mark.filterwarnings("ignore:Calling non-taichi function")]

FLUSH = frozenset((32, 64))


def _count(body) -> int:
    from fieldsim.ir.ir import Op, walk
    zero_tests = {id(s) for s in walk(body) if s.op == Op.EQ}
    return sum(1 for s in walk(body) if s.op == Op.SELECT and id(s.args[0]) in zero_tests)


def _guards(kernel, flushing=FLUSH) -> tuple[int, int]:
    """(tangent guards, adjoint guards) of `kernel`, made for a target flushing `flushing`."""
    from support.ir_kit import compiled_ir

    from fieldsim.ad.forward import make_tangent
    from fieldsim.ad.reverse import make_adjoint
    ir = compiled_ir(kernel)
    return (_count(make_tangent(ir, None, flushing).body),
            _count(make_adjoint(ir, False, flushing).body))


def _fields():
    fs.init(arch=fs.cpu, default_fp=fs.f32)
    x, m, out = (fs.field(fs.f32, shape=4, needs_grad=True) for _ in range(3))
    return x, m, out


def _kernel(x, m, out, cond):
    @fs.kernel
    def k():
        for i in x:
            q = m[i]
            if cond(q):
                out[i] = x[i] / q
    return k


# condition -> guards left of `x / m` inside it (numerator's, divisor's), flushing target
CONDITIONS = {
    "gt_0": (lambda q: q > 0, 1),
    "lt_mirrored": (lambda q: 0.0 < q, 1),
    "ne_0": (lambda q: q != 0, 1),
    "negative": (lambda q: q < 0, 1),
    "ge_1e-10": (lambda q: q >= 1e-10, 0),  # m * m >= 1e-20 is normal in f32: both finite
    "abs_gt": (lambda q: fs.abs(q) > 1e-3, 0),
    "and": (lambda q: (q > 1e-3) & (q < 5), 0),
    "ge_0": (lambda q: q >= 0, 2),  # m may be 0
    "gt_minus_1": (lambda q: q > -1, 2),
    "lt_1": (lambda q: q < 1, 2),
}


@pytest.mark.parametrize("name", CONDITIONS)
def test_a_branch_condition_drops_the_guards_it_proves(name):
    cond, left = CONDITIONS[name]
    assert _guards(_kernel(*_fields(), cond)) == (left, left)


def test_without_flushing_m_gt_0_proves_nothing():
    """A subnormal m > 0 gives 1 / m = inf in f32 where the target keeps subnormals."""
    x, m, out = _fields()
    assert _guards(_kernel(x, m, out, lambda q: q > 0), frozenset()) == (2, 2)
    assert _guards(_kernel(x, m, out, lambda q: q > 1e-10), frozenset()) == (0, 0)


def test_only_uses_inside_the_branch_assume_the_fact():
    x, m, out = _fields()
    w = fs.field(fs.f32, shape=4, needs_grad=True)

    @fs.kernel
    def k():
        for i in x:
            q = m[i]
            w[i] = x[i] / q  # the same q before the `if`: both guards
            if q > 0:
                out[i] = x[i] / q + x[i] / (q * q)  # a fact of q says nothing of q * q
            else:
                out[i] = x[i] / q  # the branch not taken: nothing proved

    assert _guards(k) == (7, 7)  # 2 + (1 + 2) + 2


def test_python_and_of_named_conditions():
    """mass_spring's sticky ground: `falling = v < -1e-4`, `if falling and below:` divides by v.
    An `and` over an integer's truth is left alone: through casts (n = 2 cast to u1 is 0), its
    select's two tests of n need not agree, so nothing is assumed there (conservative)."""
    x, m, out = _fields()
    n = fs.field(fs.i32, shape=4)

    @fs.kernel
    def ground():
        for i in x:
            v = m[i]
            falling = v < -1e-4
            below = x[i] < 0.1
            if falling and below:
                out[i] = fs.max((0.1 - x[i]) / v, 0.0)

    @fs.kernel
    def integer_truth():
        for i in x:
            v = m[i]
            if n[i] and v < -1e-4:
                out[i] = x[i] / v

    assert _guards(ground) == (0, 0)
    assert _guards(integer_truth) == (2, 2)

    @fs.kernel
    def either():
        for i in x:
            v = m[i]
            if v < -1e-4 or x[i] > 0:
                out[i] = x[i] / v

    assert _guards(either) == (2, 2)


def _jvp_and_grad(cond, m0, x0, seed_x):
    """`out = x / m` inside `if cond(m)`; loss = out + x: (JVP along (seed_x, 1 - seed_x),
    (d/dx, d/dm)) in f64."""
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    x, m = fs.field(fs.f64, shape=(), needs_grad=True), fs.field(fs.f64, shape=(), needs_grad=True)
    out = fs.field(fs.f64, shape=(), needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        out[None] = 0.0
        if cond(m[None]):
            out[None] = x[None] / m[None]
        loss[None] = x[None] * x[None] + out[None]

    x[None], m[None] = x0, m0
    with fs.ad.FwdMode(loss=loss, param=x, seed=[seed_x]):
        k()
    jvp = loss.dual[None]
    with fs.ad.Tape(loss=loss):
        k()
    return jvp, x.grad[None], m.grad[None]


@pytest.mark.parametrize("m0", [0.0, -0.5, 1e-300, 0.25, 1e-310])
def test_jvps_and_gradients_at_and_near_the_singular_point(m0):
    """1e-310, an f64 subnormal (an element write keeps it): the kernel reads it as 0 (DAZ), so
    `m > 0` is false, which is what lets the guards take m > 0 as m >= the smallest normal."""
    from fieldsim.ir.subnormals import FLUSHING_MACHINE
    if m0 == 1e-310 and not FLUSHING_MACHINE:
        pytest.skip("the CPU backend flushes subnormals on x86-64 only")
    x0 = 0.75
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    if m0 == 1e-310 and not on_cpu():
        pytest.skip("f64 subnormals are read as 0 by the x64 CPU backend; CUDA keeps them")
    taken = m0 >= 1e-300
    jvp, gx, gm = _jvp_and_grad(lambda q: q > 0, m0, x0, 1.0)
    assert jvp == pytest.approx(2 * x0 + (1 / m0 if taken else 0.0), rel=1e-12)
    assert gx == pytest.approx(2 * x0 + (1 / m0 if taken else 0.0), rel=1e-12)
    if m0 != 1e-300:  # -x / m^2 overflows there: a nonzero adjoint through it is IEEE (-inf)
        assert gm == pytest.approx(-x0 / m0 ** 2 if taken else 0.0, rel=1e-12)
    assert math.isfinite(jvp) and math.isfinite(gx)


def test_the_kept_divisor_guard_still_saves_a_zero_tangent():
    """Along x only, at m = 1e-200 (taken): the divisor's term is 0 * -(x/m)/m = 0 * -inf."""
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    v = fs.field(fs.f64, shape=2, needs_grad=True)  # (x, m)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        loss[None] = 0.0
        if v[1] > 0:
            loss[None] = v[0] / v[1]

    v.from_numpy(np.array([0.75, 1e-200]))
    with fs.ad.FwdMode(loss=loss, param=v, seed=[1.0, 0.0]):
        k()
    assert loss.dual[None] == pytest.approx(1e200, rel=1e-12)
