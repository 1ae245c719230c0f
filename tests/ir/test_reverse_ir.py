"""Reverse-mode AD on hand-built IR: adjoint gradients vs central differences, in float64.

Every kernel is built with `KB` (an IRBuilder giving each statement its own line), offloaded by
hand (prologue + tasks), run forward and adjoint in the reference interpreter, and compared
with finite differences of a random weighted sum of all outputs (every gradient field is
checked, including the initial values of fields that get overwritten). Each adjoint is
verified, and run again with shuffled parallel iterations.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.ir_kit import KB, GradCase, adjoint, check_grads, field

from fieldsim.ad.reverse import make_adjoint
from fieldsim.ad.stack import CapacityFormula
from fieldsim.errors import ADStackOverflowError, FieldsimCompilationError
from fieldsim.ir.ir import CustomGradInfo, Op, walk
from fieldsim.ir.printer import print_kernel
from fieldsim.lang import types as T

RNG = np.random.default_rng(1234)

UNARY = [Op.NEG, Op.SQRT, Op.SIN, Op.COS, Op.TAN, Op.ASIN, Op.ACOS, Op.ATAN, Op.TANH, Op.EXP,
         Op.LOG]
BINARY = [Op.ADD, Op.SUB, Op.MUL, Op.DIV, Op.POW, Op.ATAN2, Op.MIN, Op.MAX, Op.MOD]


# ---- straight-line math, one rule at a time -------------------------------------------------------

@pytest.mark.parametrize("op", UNARY, ids=lambda o: o.name)
def test_unary_rule(op):
    b = KB()
    x, y = field("x", rng=RNG), field("y")
    with b.parallel(4) as i:
        v = b.load(x, [i])
        b.store(y, [i], b.mul(b.f1(op, v), v))
    check_grads(b.kernel(), [x, y])


def test_abs_rule_both_signs():
    b = KB()
    x, y = field("x", values=[-0.7, -0.3, 0.4, 0.9]), field("y")
    with b.parallel(4) as i:
        b.store(y, [i], b.f1(Op.ABS, b.load(x, [i])))
    check_grads(b.kernel(), [x, y])


@pytest.mark.parametrize("op", BINARY, ids=lambda o: o.name)
def test_binary_rule(op):
    b = KB()
    x = field("x", values=[0.3, 1.7, 0.9, 1.2])
    w = field("w", values=[0.8, 0.6, 1.4, 0.5])
    y = field("y")
    with b.parallel(4) as i:
        b.store(y, [i], b.binary(op, b.load(x, [i]), b.load(w, [i])))
    check_grads(b.kernel(), [x, w, y])


def test_pow_at_zero_base_has_finite_exponent_gradient():
    b = KB()
    x, e, y = field("x", values=[0.0, 0.0, 2.0, 3.0]), field("e", values=[2.0, 3.0, 2.0, 0.5]), field("y")
    with b.parallel(4) as i:
        b.store(y, [i], b.binary(Op.POW, b.load(x, [i]), b.load(e, [i])))
    case = GradCase(b.kernel(), [x, e, y], outputs=["y"])
    g = case.ad_grads()
    w = case.weights["y"]
    assert np.isfinite(g["e"]).all()
    np.testing.assert_allclose(g["e"], w * [0, 0, 4 * np.log(2), 3 ** 0.5 * np.log(3)], rtol=1e-12)
    np.testing.assert_allclose(g["x"], w * [0, 0, 4, 0.5 * 3 ** -0.5], rtol=1e-12)


def test_cast_float_to_float_and_int():
    """f64 -> f32 -> f64 passes the gradient (analytic: rounding makes FD useless);
    float -> int -> float passes none."""
    b = KB()
    x, y = field("x", values=[0.31, 0.72, 1.5, 2.25]), field("y")
    with b.parallel(4) as i:
        v = b.load(x, [i])
        v32 = b.cast(v, T.f32)
        sq = b.cast(b.mul(v32, v32), T.f64)
        stepped = b.cast(b.cast(b.mul(v, b.c(10.0)), T.i32), T.f64)
        b.store(y, [i], b.add(sq, b.mul(stepped, v)))
    case = GradCase(b.kernel(), [x, y], outputs=["y"])
    g = case.ad_grads()
    xs = x.arr.astype(np.float32)
    want = case.weights["y"] * (2 * xs.astype(np.float64) + np.floor(x.arr * 10))
    np.testing.assert_allclose(g["x"], want, rtol=1e-6)


def test_select_routes_to_the_chosen_branch():
    b = KB()
    x, y = field("x", values=[0.2, 0.7, 0.4, 0.9]), field("y")
    with b.parallel(4) as i:
        v = b.load(x, [i])
        c = b.binary(Op.GT, v, b.c(0.5))
        b.store(y, [i], b.select(c, b.mul(v, v), b.f1(Op.SIN, v)))
    check_grads(b.kernel(), [x, y])


# ---- branches and locals ---------------------------------------------------------------------------

def test_if_on_data_with_values_in_branches():
    b = KB()
    x, w, y = field("x", values=[0.2, 0.7, 0.4, 0.9]), field("w", rng=RNG), field("y")
    with b.parallel(4) as i:
        v, wi = b.load(x, [i]), b.load(w, [i])
        var = b.alloca(T.f64)
        br = b.if_(b.binary(Op.GT, v, b.c(0.5)))
        with b.into(br.blocks[0]):
            t = b.mul(v, v)
            b.local_store(var, b.mul(t, wi))
        with b.into(br.blocks[1]):
            b.local_store(var, b.f1(Op.EXP, b.mul(v, wi)))
        b.store(y, [i], b.mul(b.ld(var), v))
    check_grads(b.kernel(), [x, w, y])


def test_local_loaded_inside_if_uses_a_backup():
    """A LOCAL_LOAD under an IF (no loop) is spilled to a plain alloca, not a stack."""
    b = KB()
    x, y = field("x", values=[0.2, 0.7, 0.4, 0.9]), field("y")
    with b.parallel(4) as i:
        v = b.load(x, [i])
        s = b.alloca(T.f64)
        b.local_store(s, v)
        with b.if_then(b.binary(Op.GT, v, b.c(0.5))):
            a = b.ld(s)
            b.local_store(s, b.mul(a, b.f1(Op.SIN, a)))
        b.store(y, [i], b.mul(b.ld(s), b.ld(s)))
    k = b.kernel()
    check_grads(k, [x, y])
    assert not any(s.op == Op.STACK_ALLOCA for s in walk(make_adjoint(k).body))


def test_top_level_local_reassigned():
    b = KB()
    x, y = field("x", (1,), rng=RNG), field("y", (1,))
    with b.serial():
        s = b.alloca(T.f64)
        b.local_store(s, b.load(x, [b.i(0)]))
        b.local_store(s, b.mul(b.ld(s), b.ld(s)))
        b.local_store(s, b.f1(Op.SIN, b.ld(s)))
        b.store(y, [b.i(0)], b.add(b.ld(s), b.ld(s)))
    check_grads(b.kernel(), [x, y])


# ---- inner loops: the AD stack -----------------------------------------------------------------------

def carried_loop_kernel(b, x, a, y):
    """y[i] = s after `s = s * a[i] + x[k % 4]` for k in range(n), n an argument."""
    n = b.arg(T.i32, "n")
    with b.parallel(4) as i:
        ai = b.load(a, [i])
        s = b.alloca(T.f64)
        with b.loop_for(0, n) as k:
            xk = b.load(x, [b.binary(Op.MOD, k, b.i(4))])
            b.local_store(s, b.add(b.mul(b.ld(s), ai), xk))
        b.store(y, [i], b.ld(s))
    return b.kernel()


@pytest.mark.parametrize("n", [1, 7, 200])
def test_inner_for_with_carried_local(n):
    b = KB()
    x, a, y = field("x", rng=RNG), field("a", rng=RNG, lo=0.9, hi=1.0), field("y")
    k = carried_loop_kernel(b, x, a, y)
    case, _ = check_grads(k, [x, a, y], [n], rtol=1e-5)
    caps = case.adj.meta["stack_capacities"]
    assert len(caps) == 1 and caps[0].evaluate([n], 9999) == n
    assert case.last.stack_peak == {0: n}


def test_nested_loops_stack_capacity_is_a_product():
    b = KB()
    x, w, y = field("x", rng=RNG), field("w", rng=RNG), field("y")
    m = b.arg(T.i32, "m")
    with b.parallel(4) as i:
        s = b.alloca(T.f64)
        b.local_store(s, b.load(x, [i]))
        with b.loop_for(0, 3) as j:
            xj = b.load(x, [j])
            with b.loop_for(b.i(1), m) as kk:
                wk = b.load(w, [b.binary(Op.MOD, kk, b.i(4))])
                cur = b.ld(s)
                b.local_store(s, b.add(b.mul(b.f1(Op.SIN, cur), wk), b.mul(cur, xj)))
        b.store(y, [i], b.ld(s))
    case, _ = check_grads(b.kernel(), [x, w, y], [5])
    assert [f.evaluate([5], 0) for f in case.adj.meta["stack_capacities"]] == [12]
    assert case.last.stack_peak == {0: 12}


def test_while_loop_with_counter_and_break():
    """`while s < 4: s = s * a[i] + w[j % 4]; j += 1` (frontend form: break first)."""
    b = KB()
    x, a, w, y = field("x", rng=RNG), field("a", rng=RNG, lo=1.1, hi=1.3), field("w", rng=RNG), field("y")
    with b.parallel(4) as i:
        s, j = b.alloca(T.f64), b.alloca(T.i32)
        b.local_store(s, b.load(x, [i]))
        lp = b.loop()
        with b.into(lp.body):
            with b.if_then(b.unary(Op.NOT, b.binary(Op.LT, b.ld(s), b.c(4.0)))):
                b.emit(Op.BREAK)
            wj = b.load(w, [b.binary(Op.MOD, b.ld(j), b.i(4))])
            b.local_store(s, b.add(b.mul(b.ld(s), b.load(a, [i])), wj))
            b.local_store(j, b.add(b.ld(j), b.i(1)))
        b.store(y, [i], b.ld(s))
    case, _ = check_grads(b.kernel(), [x, a, w, y])
    caps = case.adj.meta["stack_capacities"]
    assert caps and all(c.evaluate([], 77) == 77 for c in caps)  # trip count unknown: default


def test_while_loop_inside_for_spills_its_trip_count():
    b = KB()
    x, y = field("x", rng=RNG), field("y")
    with b.parallel(4) as i:
        s = b.alloca(T.f64)
        b.local_store(s, b.load(x, [i]))
        with b.loop_for(0, 3):
            lp = b.loop()
            with b.into(lp.body):
                cur = b.ld(s)
                b.local_store(s, b.mul(cur, b.add(cur, b.c(1.0))))
                with b.if_then(b.binary(Op.GT, b.ld(s), b.c(2.0))):
                    b.emit(Op.BREAK)
            b.local_store(s, b.mul(b.ld(s), b.c(0.3)))
        b.store(y, [i], b.ld(s))
    case, _ = check_grads(b.kernel(), [x, y])
    assert any(s.op == Op.STACK_ALLOCA and s.attr.name.startswith("a while loop's trip count")
               for s in walk(case.adj.body))


def test_continue_in_inner_for():
    b = KB()
    x, w, y = field("x", values=[0.2, 0.7, 0.4, 0.9]), field("w", rng=RNG), field("y")
    with b.parallel(4) as i:
        s = b.alloca(T.f64)
        wi = b.load(w, [i])
        with b.loop_for(0, 6) as k:
            xk = b.load(x, [b.binary(Op.MOD, k, b.i(4))])
            with b.if_then(b.binary(Op.LT, xk, b.c(0.5))):
                b.emit(Op.CONTINUE)
            b.local_store(s, b.add(b.mul(b.ld(s), b.c(1.1)), b.mul(xk, wi)))
        b.store(y, [i], b.ld(s))
    check_grads(b.kernel(), [x, w, y])


def test_break_in_inner_for():
    b = KB()
    x, y = field("x", values=[0.5, 0.7, 0.4, 0.9]), field("y")
    with b.parallel(4) as i:
        s = b.alloca(T.f64)
        b.local_store(s, b.load(x, [i]))
        with b.loop_for(0, 10) as k:
            with b.if_then(b.binary(Op.GT, b.ld(s), b.c(3.05))):
                b.emit(Op.BREAK)
            xk = b.load(x, [b.binary(Op.MOD, k, b.i(4))])
            b.local_store(s, b.add(b.mul(b.ld(s), b.c(1.2)), xk))
        b.store(y, [i], b.ld(s))
    check_grads(b.kernel(), [x, y])


def test_data_dependent_trip_count_uses_the_default_and_overflow_raises():
    b = KB()
    x, y = field("x", rng=RNG), field("y")
    cnt = field("cnt", dtype=T.i32, values=[3, 5, 0, 8])
    with b.parallel(4) as i:
        s = b.alloca(T.f64)
        b.local_store(s, b.c(1.0))
        with b.loop_for(b.i(0), b.load(cnt, [i])):
            cur = b.ld(s)
            b.local_store(s, b.mul(cur, b.f1(Op.SIN, b.add(cur, b.load(x, [i])))))
        b.store(y, [i], b.ld(s))
    k = b.kernel()
    case, _ = check_grads(k, [x, y, cnt])
    assert case.adj.meta["stack_capacities"][0].evaluate([], 8) == 8
    with pytest.raises(ADStackOverflowError) as err:
        case.ad_grads(ad_stack_size=7)
    assert err.value.loc.line == case.adj.meta["stack_capacities"][0].loc.line


# ---- global memory -------------------------------------------------------------------------------------

def test_scatter_and_gather_atomics():
    b = KB()
    x, w = field("x", rng=RNG), field("w", rng=RNG)
    idx = field("idx", dtype=T.i32, values=[2, 0, 2, 1])
    acc, out, sub = field("acc", (3,)), field("out"), field("sub", (3,))
    with b.parallel(4) as i:
        xi, wi, j = b.load(x, [i]), b.load(w, [i]), b.load(idx, [i])
        b.atomic("add", acc, [j], b.mul(xi, wi))
        b.atomic("sub", sub, [j], b.mul(xi, xi))
        b.store(out, [i], b.mul(b.load(x, [j]), wi))
    check_grads(b.kernel(), [x, w, idx, acc, out, sub])


def test_store_then_load_of_the_same_element():
    b = KB()
    x, tmp, y = field("x", rng=RNG), field("tmp"), field("y")
    with b.parallel(4) as i:
        b.store(tmp, [i], b.mul(b.load(x, [i]), b.c(2.0)))
        u = b.load(tmp, [i])
        b.store(y, [i], b.mul(u, u))
    check_grads(b.kernel(), [x, tmp, y])


def test_serialized_loop_with_a_dependence_through_a_field():
    """y[i] = y[i-1] * a[i] + x[i], i = 1..n-1, run in order; reversed in the adjoint."""
    b = KB()
    x, a = field("x", (6,), rng=RNG), field("a", (6,), rng=RNG, lo=0.5, hi=1.5)
    y = field("y", (6,), rng=RNG)
    with b.serial_for(1, 6) as i:
        prev = b.load(y, [b.sub(i, b.i(1))])
        b.store(y, [i], b.add(b.mul(prev, b.load(a, [i])), b.load(x, [i])))
    check_grads(b.kernel(), [x, a, y])


def test_atomic_max_gives_the_gradient_to_the_winner_only():
    b = KB()
    x = field("x", values=[0.3, 0.9, 0.5, 0.1])
    m, loss = field("m", (), values=-1e9), field("loss", ())
    with b.parallel(4) as i:
        b.atomic("max", m, [], b.mul(b.load(x, [i]), b.c(2.0)))
    with b.serial():
        mv = b.load(m, [])
        b.store(loss, [], b.mul(mv, mv))
    case = GradCase(b.kernel(), [x, m, loss], outputs=["loss"])
    g = case.ad_grads()
    want = np.zeros(4)
    want[1] = case.weights["loss"] * 2 * 1.8 * 2
    np.testing.assert_allclose(g["x"], want, rtol=1e-12)
    np.testing.assert_allclose(case.fd_grads()["x"], want, rtol=1e-5)


def test_prologue_load_gets_its_gradient():
    """A LOAD at kernel top level (offload's prologue) used inside a task."""
    b = KB()
    p, x, y = field("p", (), values=1.3), field("x", rng=RNG), field("y")
    pv = b.load(p, [])
    sq = b.mul(pv, pv)
    with b.parallel(4) as i:
        b.store(y, [i], b.mul(b.load(x, [i]), sq))
    check_grads(b.kernel(), [p, x, y])


def test_atomic_whose_old_value_is_used_is_refused():
    b = KB()
    cnt, x = field("cnt", (), dtype=T.i32), field("x")
    with b.parallel(4):
        old = b.atomic("add", cnt, [], b.i(1))
        b.store(x, [old], b.c(1.0))
    with pytest.raises(FieldsimCompilationError, match="atomic_add") as err:
        make_adjoint(b.kernel())
    assert err.value.loc is not None and err.value.loc.line == old.loc.line


# ---- func_grad regions ------------------------------------------------------------------------------

def custom_grad_region(b, x, scale):
    """out = floor(x) * x with a user adjoint (adj * scale * x, adj * x): not the true derivative."""
    out = b.alloca(T.f64)
    region = b.emit(Op.CUSTOM_GRAD, None, (x,), blocks=[[], []])
    with b.into(region.blocks[0]):
        b.local_store(out, b.mul(b.f1(Op.FLOOR, x), x))
    region.attr = CustomGradInfo("stepish", (out,))
    with b.into(region.blocks[1]):
        g = b.emit(Op.CUSTOM_ADJ_IN, T.f64, attr=0)
        b.emit(Op.CUSTOM_ADJ_OUT, None, (b.mul(b.mul(g, b.c(scale)), x),))
    return b.ld(out)


@pytest.mark.parametrize("in_loop", [False, True])
def test_func_grad_region_uses_the_user_adjoint(in_loop):
    b = KB()
    x, y = field("x", values=[1.2, 2.5, 0.4, 3.7]), field("y")
    with b.parallel(4) as i:
        xi = b.load(x, [i])
        if not in_loop:
            b.store(y, [i], custom_grad_region(b, xi, 3.0))
        else:
            s = b.alloca(T.f64)
            b.local_store(s, xi)
            with b.loop_for(0, 2):
                b.local_store(s, custom_grad_region(b, b.ld(s), 3.0))
            b.store(y, [i], b.ld(s))
    case = GradCase(b.kernel(), [x, y], outputs=["y"])
    g = case.ad_grads()["x"]
    w, xv = case.weights["y"], x.arr
    if not in_loop:
        np.testing.assert_allclose(g, w * 3.0 * xv, rtol=1e-12)
    else:  # s1 = floor(x) x, y = floor(s1) s1: user chain 3 s1 * 3 x
        s1 = np.floor(xv) * xv
        np.testing.assert_allclose(g, w * 3.0 * s1 * 3.0 * xv, rtol=1e-12)


# ---- tasks, random numbers, multi-dimensional loops -----------------------------------------------------

def test_serial_task_after_a_parallel_task():
    b = KB()
    x, c = field("x", rng=RNG), field("c", rng=RNG)
    y, loss = field("y"), field("loss", ())
    with b.parallel(4) as i:
        b.store(y, [i], b.binary(Op.POW, b.load(x, [i]), b.c(3.0)))
    with b.serial():
        s = b.alloca(T.f64)
        with b.loop_for(0, 4) as j:
            b.local_store(s, b.add(b.ld(s), b.mul(b.load(y, [j]), b.load(c, [j]))))
        b.store(loss, [], b.ld(s))
    case, _ = check_grads(b.kernel(), [x, c, y, loss])
    tasks = [s.op for s in case.adj.body if s.blocks]
    assert tasks == [Op.SERIAL, Op.FOR]


def test_random_numbers_are_replayed():
    b = KB()
    x, y = field("x", rng=RNG), field("y")
    with b.parallel(4) as i:
        xi = b.load(x, [i])
        s = b.alloca(T.f64)
        b.local_store(s, b.mul(xi, b.emit(Op.RAND, T.f64)))
        with b.loop_for(0, 3):
            r = b.emit(Op.RAND, T.f64)
            b.local_store(s, b.add(b.ld(s), b.mul(b.mul(xi, r), b.ld(s))))
        b.store(y, [i], b.ld(s))
    k = b.kernel()
    case, _ = check_grads(k, [x, y])
    rands = [s for s in walk(case.adj.body) if s.op == Op.RAND]  # replayed, never called again
    assert len(rands) == len([s for s in walk(k.body) if s.op == Op.RAND])


def test_linearised_2d_parallel_loop():
    b = KB()
    x, w, y = field("x", (2, 3), rng=RNG), field("w", (3,), rng=RNG), field("y", (2, 3))
    with b.parallel(6) as t:
        i, j = b.binary(Op.FLOORDIV, t, b.i(3)), b.binary(Op.MOD, t, b.i(3))
        xij = b.load(x, [i, j])
        b.store(y, [i, j], b.add(b.mul(xij, b.load(w, [j])), b.mul(xij, xij)))
    check_grads(b.kernel(), [x, w, y])


def test_locations_are_inherited():
    b = KB()
    x, a, y = field("x", rng=RNG), field("a", rng=RNG), field("y")
    k = carried_loop_kernel(b, x, a, y)
    adj = adjoint(k)
    lines = {s.loc.line for s in walk(k.body)}
    assert {s.loc.line for s in walk(adj.body)} <= lines


def test_input_is_untouched():
    b = KB()
    x, a, y = field("x", rng=RNG), field("a", rng=RNG), field("y")
    k = carried_loop_kernel(b, x, a, y)
    before = print_kernel(k)
    make_adjoint(k)
    assert print_kernel(k) == before


# ---- random programs -------------------------------------------------------------------------------

class _DiffGen:
    """Random differentiable programs over a float local `s`, bounded with tanh/sin. Branch and
    exit conditions read only integers and the inputs x (kept away from the thresholds), so
    central differences never cross a discontinuity."""

    def __init__(self, data, b, x):
        self.data, self.b, self.x = data, b, x
        self.ints = []  # available i32 values: loop indices

    def draw(self, strategy):
        return self.data.draw(strategy)

    def xval(self):
        b = self.b
        if self.ints and self.draw(st.booleans()):
            return b.load(self.x, [b.binary(Op.MOD, self.draw(st.sampled_from(self.ints)), b.i(4))])
        return b.load(self.x, [b.i(self.draw(st.integers(0, 3)))])

    def block(self, s, depth, in_loop):
        kinds = ["update", "update", "rand", "if", "local_if"] + ["for", "loop"] * (depth < 2)
        kinds += ["exit_if"] * in_loop
        for _ in range(self.draw(st.integers(1, 3))):
            getattr(self, "gen_" + self.draw(st.sampled_from(kinds)))(s, depth, in_loop)

    def gen_update(self, s, depth, in_loop):
        b, cur, xv = self.b, self.b.ld(s), self.xval()
        form = self.draw(st.integers(0, 3))
        if form == 0:
            new = b.f1(Op.TANH, b.add(b.mul(cur, xv), b.c(0.3)))
        elif form == 1:
            new = b.add(b.mul(cur, b.c(0.8)), b.f1(Op.SIN, b.mul(xv, cur)))
        elif form == 2:
            new = b.binary(Op.MAX, b.mul(cur, xv), b.f1(Op.COS, cur))
        else:
            new = b.div(cur, b.add(b.c(1.0), b.mul(xv, xv)))
        b.local_store(s, new)

    def gen_rand(self, s, depth, in_loop):
        b = self.b
        b.local_store(s, b.mul(b.ld(s), b.add(b.c(0.6), b.mul(b.c(0.5), b.emit(Op.RAND, T.f64)))))

    def cond(self):
        b = self.b
        if self.ints and self.draw(st.booleans()):
            k = self.draw(st.sampled_from(self.ints))
            return b.binary(Op.EQ, b.binary(Op.MOD, k, b.i(2)), b.i(self.draw(st.integers(0, 1))))
        return b.binary(Op.GT, self.xval(), b.c(0.5))

    def gen_if(self, s, depth, in_loop):
        node = self.b.if_(self.cond())
        for blk in node.blocks:
            with self.b.into(blk):
                self.block(s, depth + 1, in_loop)

    def gen_local_if(self, s, depth, in_loop):
        """A second local, loaded under an IF (a backup or a stack, by loop depth)."""
        b = self.b
        t = b.alloca(T.f64)
        b.local_store(t, b.mul(b.ld(s), self.xval()))
        with b.if_then(self.cond()):
            tv = b.ld(t)
            b.local_store(s, b.add(b.ld(s), b.f1(Op.SIN, b.mul(tv, tv))))

    def gen_for(self, s, depth, in_loop):
        with self.b.loop_for(0, self.draw(st.integers(0, 3))) as k:
            self.ints.append(k)
            self.block(s, depth + 1, True)
            self.ints.pop()

    def gen_loop(self, s, depth, in_loop):
        b = self.b
        count = b.alloca(T.i32)
        lp = b.loop()
        with b.into(lp.body):
            b.local_store(count, b.add(b.ld(count), b.i(1)))
            with b.if_then(b.binary(Op.GT, b.ld(count), b.i(self.draw(st.integers(1, 3))))):
                b.emit(Op.BREAK)
            self.ints.append(b.ld(count))
            self.block(s, depth + 1, True)
            self.ints.pop()

    def gen_exit_if(self, s, depth, in_loop):
        with self.b.if_then(self.cond()):
            self.b.emit(self.draw(st.sampled_from([Op.BREAK, Op.CONTINUE])))


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_programs_match_finite_differences(data):
    b = KB()
    x, y = field("x", values=[0.21, 0.37, 0.66, 0.83]), field("y", (3,))
    with b.parallel(3) as i:
        s = b.alloca(T.f64)
        b.local_store(s, b.add(b.load(x, [i]), b.c(0.1)))
        _DiffGen(data, b, x).block(s, 0, False)
        b.store(y, [i], b.ld(s))
    check_grads(b.kernel(), [x, y], rtol=1e-5, atol=1e-7)


# ---- stack capacity formulas ------------------------------------------------------------------------

def test_capacity_formula_evaluates_launch_time_bounds():
    b = KB()
    n, m = b.arg(T.i32), b.arg(T.i32)
    with b.serial():
        inner_end = b.binary(Op.DIV, b.sub(b.mul(n, b.i(3)), m), b.i(2))  # C division
        loops = [b.for_(b.i(2), n), b.for_(m, inner_end), b.for_(b.i(0), b.load(field("c", (), T.i32), []))]
    f = CapacityFormula.for_site(loops)
    assert [t.known for t in f.terms[0]] == [True, True, False]
    assert f.evaluate([5, -2], 10) == 3 * 10 * 10  # (5-2) * ((15+2)//2 - (-2)) * default
    assert f.evaluate([1, 4], 10) == 0  # an empty loop: nothing is pushed
    assert f.evaluate([-3, 0], 7) == 0  # (-9 - 0) / 2 truncates toward zero: -4 < 0
    assert f.loc == loops[2].loc  # the loop whose trip count is unknown
    two_sites = CapacityFormula(f.terms + ((f.terms[0][0],),))
    assert two_sites.evaluate([5, -2], 10) == 300 + 3


def test_adjoints_in_their_own_block_are_ssa_and_nested_ones_use_a_slot():
    # v gets contributions from its own block (v*v, v*w) and from inside an `if` (v*3): the
    # first are summed as SSA values, the nested one needs an ALLOCA; both reach x.grad
    b = KB()
    x, w, y = field("x", values=[0.2, 0.7, 0.4, 0.9]), field("w", rng=RNG), field("y")
    with b.parallel(4) as i:
        v, wi = b.load(x, [i]), b.load(w, [i])
        br = b.if_(b.binary(Op.GT, v, b.c(0.5)))
        with b.into(br.blocks[0]):
            b.store(y, [i], b.mul(v, b.c(3.0)))
        b.atomic("add", y, [i], b.add(b.mul(v, v), b.mul(v, wi)))
    k = b.kernel()
    check_grads(k, [x, w, y])
    straight = KB()
    xs, ws, ys = field("x"), field("w"), field("y")
    with straight.parallel(4) as i:
        v, wi = straight.load(xs, [i]), straight.load(ws, [i])
        straight.store(ys, [i], straight.add(straight.mul(v, v), straight.mul(v, wi)))
    allocas = [s for s in walk(adjoint(straight.kernel()).body) if s.op == Op.ALLOCA]
    assert allocas == []  # every contribution in the value's own block: no slot at all
    nested = [s for s in walk(adjoint(k).body) if s.op == Op.ALLOCA]
    assert len(nested) == 1  # v's, for the contribution from inside the `if`


# ---- golden adjoint IR (a regression test; the numeric tests above are the correctness tests) ------

def golden_sin_times_x():
    b = KB("sinx")
    x, y = field("x"), field("y")
    with b.parallel(4) as i:
        v = b.load(x, [i])
        b.store(y, [i], b.mul(b.f1(Op.SIN, v), v))
    return b.kernel()


def golden_carried_loop():
    b = KB("carry")
    return carried_loop_kernel(b, field("x"), field("a"), field("y"))


def golden_recurrence():
    b = KB("recur")
    x, a, y = field("x", (6,)), field("a", (6,)), field("y", (6,))
    with b.serial_for(1, 6) as i:
        prev = b.load(y, [b.sub(i, b.i(1))])
        b.store(y, [i], b.add(b.mul(prev, b.load(a, [i])), b.load(x, [i])))
    return b.kernel()


GOLDEN = {
    "golden_sin_times_x": """\
kernel sinx.grad():
  %0 = const.i32 0
  %1 = const.i32 4
  %2 = for.i32 parallel %0, %1 {
    %3 = const.f64 0.0
    %4 = load.f64 x[%2]
    %5 = sin.f64 %4
    %6 = load.f64 y.grad[%2]
    store y.grad[%2], %3
    %7 = mul.f64 %6, %4
    %8 = mul.f64 %6, %5
    %9 = cos.f64 %4
    %10 = mul.f64 %7, %9
    %11 = add.f64 %8, %10
    %12 = atomic_add.f64 x.grad[%2], %11
  }
""",
    "golden_carried_loop": """\
kernel carry.grad(n: i32):
  %0 = const.i32 0
  %1 = const.i32 4
  %2 = for.i32 parallel %0, %1 {
    %3 = const.f64 0.0
    %4 = alloca.f64
    %5 = stack_alloca.f64 a local variable (line 12)#0
    %6 = alloca.f64
    %7 = arg.i32 arg0
    %8 = load.f64 a[%2]
    %9 = alloca.f64
    %10 = const.i32 0
    %11 = for.i32 %10, %7 {
      %12 = const.i32 4
      %13 = mod.i32 %11, %12
      %14 = load.f64 x[%13]
      %15 = local_load.f64 %9
      stack_push %5, %15
      %16 = mul.f64 %15, %8
      %17 = add.f64 %16, %14
      local_store %9, %17
    }
    %18 = load.f64 y.grad[%2]
    store y.grad[%2], %3
    local_store %4, %18
    %19 = add.i32 %10, %7
    %20 = const.i32 1
    %21 = sub.i32 %19, %20
    %22 = for.i32 %10, %7 {
      %23 = sub.i32 %21, %22
      %24 = local_load.f64 %4
      local_store %4, %3
      %25 = stack_top.f64 %5
      %26 = mul.f64 %24, %8
      %27 = mul.f64 %24, %25
      %28 = local_load.f64 %6
      %29 = add.f64 %28, %27
      local_store %6, %29
      %30 = local_load.f64 %4
      %31 = add.f64 %30, %26
      local_store %4, %31
      stack_pop %5
      %32 = const.i32 4
      %33 = mod.i32 %23, %32
      %34 = atomic_add.f64 x.grad[%33], %24
    }
    local_store %4, %3
    %35 = local_load.f64 %6
    %36 = atomic_add.f64 a.grad[%2], %35
  }
""",
    "golden_recurrence": """\
kernel recur.grad():
  %0 = const.i32 1
  %1 = const.i32 6
  %2 = for.i32 serialize reverse %0, %1 {
    %3 = const.f64 0.0
    %4 = const.i32 1
    %5 = sub.i32 %2, %4
    %6 = load.f64 y[%5]
    %7 = load.f64 a[%2]
    %8 = load.f64 y.grad[%2]
    store y.grad[%2], %3
    %9 = atomic_add.f64 x.grad[%2], %8
    %10 = mul.f64 %8, %7
    %11 = mul.f64 %8, %6
    %12 = atomic_add.f64 a.grad[%2], %11
    %13 = atomic_add.f64 y.grad[%5], %10
  }
""",
}


@pytest.mark.parametrize("name", sorted(GOLDEN))
def test_golden_adjoint_ir(name):
    adj = adjoint(globals()[name]())
    assert print_kernel(adj) + "\n" == GOLDEN[name]



def test_long_pure_chain_in_an_inner_loop_is_recomputed_without_recursion():
    b = KB()
    x, y = field("x", (1,), rng=RNG), field("y", (1,))
    with b.parallel(1) as i:
        s = b.alloca(T.f64)
        b.local_store(s, b.load(x, [i]))
        with b.loop_for(0, 2):
            v = b.ld(s)
            for _ in range(800):  # 1600 statements deep: past Python's recursion limit
                v = b.add(b.mul(v, b.c(0.999)), b.c(0.0001))
            b.local_store(s, b.f1(Op.SIN, v))
        b.store(y, [i], b.ld(s))
    check_grads(b.kernel(), [x, y], shuffle=False)
