"""fieldsim.ad.rules: every differentiable Op has a VJP and a JVP, and both are right.

Coverage walks `Op`: everything outside NONDIFF, memory ops and control ops needs a rule.
Numerics: for each rule, one straight-line kernel computes s = op(operands), the JVP along a
tangent and the VJP of adj = 1, in the reference interpreter (float64); the JVP must match a
central difference along the tangent and the VJP must satisfy <vjp, tangent> = jvp.
"""
import numpy as np
import pytest
from support.ir_interp import FakeField, run
from support.ir_kit import KB

from fieldsim.ad.rules import RULES
from fieldsim.ir.ir import BINARY, NONDIFF, UNARY, Op
from fieldsim.ir.ir import CONTROL as IR_CONTROL
from fieldsim.lang import types as T

MEMORY = {Op.ALLOCA, Op.LOCAL_LOAD, Op.LOCAL_STORE, Op.LOAD, Op.STORE, Op.ATOMIC,
          Op.STACK_ALLOCA, Op.STACK_PUSH, Op.STACK_POP, Op.STACK_TOP,
          Op.ARRAY_LOAD, Op.ARRAY_STORE}  # (AD reads these scalarised: scalarize_arrays)
# control flow, plus the markers of a func_grad region (its adjoint is the user's code), plus
# real calls (AD refuses kernels that make them)
CONTROL = set(IR_CONTROL) | {Op.BREAK, Op.CONTINUE, Op.RETURN, Op.ASSERT, Op.CUSTOM_ADJ_IN,
                             Op.CUSTOM_ADJ_OUT, Op.CALL}

POINTS = {Op.MOD: (1.7, 0.6), Op.MIN: (0.6, 0.35), Op.MAX: (0.35, 0.6), Op.ATAN2: (-0.4, 0.7),
          Op.POW: (0.6, 1.35), Op.NEG: (-0.3,)}
DEFAULT_POINT = (0.6, 0.35)


def test_every_differentiable_op_has_a_vjp_and_a_jvp():
    need = [op for op in Op if op not in NONDIFF | MEMORY | CONTROL]
    missing = [op.name for op in need if op not in RULES or RULES[op].vjp is None or RULES[op].jvp is None]
    assert not missing, f"ops without a derivative rule: {missing}"


def test_no_rule_for_nondifferentiable_ops():
    assert not (set(RULES) & (NONDIFF | MEMORY | CONTROL))


def _rule_kernel(op, point, tangent):
    """Fields p (operands), out = [s, jvp, vjp_0, vjp_1]; tangent entries may be None."""
    b = KB()
    p, out = FakeField("p", T.f64, (len(point),)), FakeField("out", T.f64, (4,))
    p.arr[:] = point
    with b.serial():
        xs = [b.load(p, [b.i(j)]) for j in range(len(point))]
        s = b.unary(op, xs[0]) if len(xs) == 1 else b.binary(op, *xs)
        jvp = RULES[op].jvp(b, s, [None if t is None else b.c(t) for t in tangent])
        vjp = dict(RULES[op].vjp(b, s, b.c(1.0), lambda v: v))
        for slot, v in enumerate([s, jvp, vjp.get(0), vjp.get(1)]):
            b.store(out, [b.i(slot)], v if v is not None else b.c(0.0))
    return b.kernel(), p, out


def _value_at(k, p, out, values):
    p.arr[:] = values
    run(k)
    return out.arr.copy()


def _tangents(op):
    if op in UNARY:
        return [(0.7,), (None,)]
    return [(0.3, -0.7), (None, 0.5), (0.4, None), (None, None)]


@pytest.mark.parametrize("op", sorted((set(RULES) & (UNARY | BINARY)) - {Op.CAST}), ids=lambda o: o.name)
def test_rule_numerics(op):
    point = np.array(POINTS.get(op, DEFAULT_POINT[:1] if op in UNARY else DEFAULT_POINT))
    for tangent in _tangents(op):
        k, p, out = _rule_kernel(op, point, tangent)
        base = _value_at(k, p, out, point)
        t = np.array([0.0 if v is None else v for v in tangent])
        h = 1e-6
        fd = (_value_at(k, p, out, point + h * t)[0] - _value_at(k, p, out, point - h * t)[0]) / (2 * h)
        assert base[1] == pytest.approx(fd, rel=1e-6, abs=1e-8), f"jvp of {op.name} along {tangent}"
        assert base[2:2 + len(t)] @ t == pytest.approx(fd, rel=1e-6, abs=1e-8), f"vjp of {op.name}"


def test_select_rule_routes_by_the_condition():
    for cond in (0, 1):
        b = KB()
        out = FakeField("out", T.f64, (3,))
        with b.serial():
            s = b.select(b.i(cond), b.c(2.0), b.c(5.0))
            jvp = RULES[Op.SELECT].jvp(b, s, [None, b.c(0.25), b.c(0.75)])
            vjp = dict(RULES[Op.SELECT].vjp(b, s, b.c(1.0), lambda v: v))
            for slot, v in enumerate([jvp, vjp[1], vjp[2]]):
                b.store(out, [b.i(slot)], v)
        run(b.kernel())
        assert list(out.arr) == ([0.25, 1.0, 0.0] if cond else [0.75, 0.0, 1.0])
        assert 0 not in vjp, "the condition gets no adjoint"


@pytest.mark.parametrize("src,dst,passes", [(T.f64, T.f32, True), (T.f32, T.f64, True),
                                            (T.f64, T.i32, False), (T.i32, T.f64, False)])
def test_cast_rule(src, dst, passes):
    b = KB()
    with b.serial():
        x = b.const(1, src)
        s = b.cast(x, dst)
        t = RULES[Op.CAST].jvp(b, s, [b.const(1, src)])
        vjp = RULES[Op.CAST].vjp(b, s, b.const(1, dst), lambda v: v)
    if passes:
        assert t.dtype is dst and [(i, c.dtype) for i, c in vjp] == [(0, src)]
    else:
        assert t is None and vjp == ()
