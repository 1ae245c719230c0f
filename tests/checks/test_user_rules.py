"""Issue 4's acceptance tests: the global data access rules, from the user's side.

Kernels are written as a Taichi user writes them (`@fs.kernel`, `with fs.ad.Tape(loss=...)`,
`kernel.grad()`). Refused programs (rules_cases_bad*.py) must raise `fs.AccessRuleError` naming
the rule and the field before the offending launch or write changes anything; rule-keeping
programs (rules_cases_good*.py) must be accepted with Tape gradients equal to float64 central
finite differences. The examples run one Tape step each without a refusal (mpm88, a forward-only
program updating its state in place, runs forward and is refused on a Tape), and a kernel that
breaks the rules but only runs forward is never refused.
"""
import importlib.util
import inspect
import re
from pathlib import Path

import numpy as np
import pytest
import rules_cases_bad  # noqa: F401 - fills BAD
import rules_cases_bad_tape  # noqa: F401 - fills BAD
import rules_cases_good  # noqa: F401 - fills GOOD
import rules_cases_good_state  # noqa: F401 - fills GOOD
from rules_support import BAD, GOOD, N, assert_names, check_good, fd, params, put, refuse, scalar, vec

import fieldsim as fs

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "simulation"


@pytest.fixture(autouse=True)
def fresh_fs():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    yield


def line_of(fn, text: str) -> str:
    """`file:line` of the first line of `fn`'s source containing `text`."""
    lines, start = inspect.getsourcelines(fn)
    hits = [start + k for k, line in enumerate(lines) if text in line]
    assert hits, f"{text!r} not in {fn.__name__}"
    return f"{inspect.getsourcefile(fn)}:{hits[0]}"


# ------------------------------------------------------------------ the documentation's two
def _doc_rule1():
    a, b, loss = vec("a"), put(vec("b")), scalar("loss")

    @fs.kernel
    def rule1():
        for i in range(N):
            a[i] = b[i] * b[i]  # a copy (`a[i] = b[i]`) is linear: accepted
            b[i] += 100

    return a, b, loss, rule1


def _doc_rule2():
    x, loss = put(vec("x")), scalar("loss")

    @fs.kernel
    def rule2():
        for i in range(N):
            loss[None] += x[i] ** 2
            loss[None] *= x[i]

    return x, loss, rule2


def _assert_doc_message(err, rule, field_name, first, second):
    """Rule, field, and both `file:line`s, each on its labelled line of the message."""
    text = str(err)
    assert_names(err, rule, field_name)
    assert re.search(rf"first access:\s+{re.escape(first)}\s", text), text
    assert re.search(rf"offending access:\s+{re.escape(second)}\s", text), text


def test_doc_rule1_is_refused_on_a_tape_before_it_runs():
    a, b, loss, rule1 = _doc_rule1()
    b_before = b.to_numpy()
    with pytest.raises(fs.AccessRuleError) as info, fs.ad.Tape(loss=loss):
        rule1()
    first, second = line_of(_doc_rule1, "a[i] = b[i] * b[i]"), line_of(_doc_rule1, "b[i] += 100")
    _assert_doc_message(info.value, 1, "b", first, second)
    assert "rule1" in str(info.value)
    np.testing.assert_array_equal(b.to_numpy(), b_before)
    np.testing.assert_array_equal(a.to_numpy(), np.zeros(N))


def test_doc_rule1_is_refused_by_kernel_grad():
    a, b, _, rule1 = _doc_rule1()
    rule1()  # forward only: runs
    np.testing.assert_allclose(a.to_numpy(), (b.to_numpy() - 100) ** 2)
    with pytest.raises(fs.AccessRuleError) as info:
        rule1.grad()
    first, second = line_of(_doc_rule1, "a[i] = b[i] * b[i]"), line_of(_doc_rule1, "b[i] += 100")
    _assert_doc_message(info.value, 1, "b", first, second)


def test_doc_rule2_is_refused_on_a_tape_and_by_kernel_grad():
    _, loss, rule2 = _doc_rule2()
    with pytest.raises(fs.AccessRuleError) as info, fs.ad.Tape(loss=loss):
        rule2()
    first = line_of(_doc_rule2, "loss[None] += x[i] ** 2")
    second = line_of(_doc_rule2, "loss[None] *= x[i]")
    _assert_doc_message(info.value, 2, "loss", first, second)
    assert float(loss[None]) == 0.0  # the Tape zeroed it; the kernel never ran
    with pytest.raises(fs.AccessRuleError) as info:
        rule2.grad()
    _assert_doc_message(info.value, 2, "loss", first, second)


# ------------------------------------------------------------------------ refused programs
def test_there_are_enough_cases():
    assert len(BAD) >= 30 and len(GOOD) >= 30
    assert len({s.name for s in BAD}) == len(BAD) and len({s.name for s in GOOD}) == len(GOOD)


@pytest.mark.parametrize("spec", params(BAD))
def test_refused(spec):
    err = refuse(spec.build())
    assert_names(err, spec.rule, spec.field, spec.undecided)


def test_undecided_message_offers_validation():
    spec = next(s for s in BAD if s.name == "gather_then_write")
    text = str(refuse(spec.build()))
    assert "validation=True" in text and "depend on data" in text


# ------------------------------------------------------------------------ accepted programs
@pytest.mark.parametrize("spec", params(GOOD))
def test_accepted_gradient_matches_finite_differences(spec):
    check_good(spec.build())


def test_argument_values_decide():
    """One kernel, offsets from its arguments: disjoint values accepted, colliding refused."""
    x, loss = put(vec("x")), scalar("loss")
    y = vec("y", 2 * N)

    @fs.kernel
    def place(a: int, b: int):
        for i in range(4):
            y[i + a] = x[i]
            y[i + b] = x[i] * 2.0

    @fs.kernel
    def reduce():
        for i in y:
            loss[None] += y[i] ** 2

    def run():
        place(0, 4)
        reduce()

    grads = fd.check_tape_against_fd(fs, {"x": x}, loss, run)
    np.testing.assert_allclose(grads["x"][:4], 10 * x.to_numpy()[:4])
    with pytest.raises(fs.AccessRuleError, match="Rule 2"), fs.ad.Tape(loss=loss):
        place(2, 4)


def test_manual_kernel_grad_matches_finite_differences():
    x, y, loss = put(vec("x")), vec("y"), scalar("loss")

    @fs.kernel
    def k():
        for i in range(1, N - 1):
            y[i] = x[i - 1] * x[i + 1]

    @fs.kernel
    def reduce():
        for i in y:
            loss[None] += fs.sin(y[i])

    def run():
        k()
        reduce()

    ref = fd.central_differences(lambda: fd.forward_loss(loss, run), {"x": x})["x"]
    loss[None] = 0.0
    run()
    loss.grad[None] = 1.0
    reduce.grad()
    k.grad()
    fd.assert_grad_close(x.grad.to_numpy(), ref, "f64", "x.grad via kernel.grad()")


# ------------------------------------------------------------------------------- examples
def _example(name):
    spec = importlib.util.spec_from_file_location(f"fieldsim_example_{name}", EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_example_ad_gravity_tape_step():
    g = _example("ad_gravity")
    g.setup(6)
    pos, _ = g.initial_state(6)
    energy, grad = g.energy_and_grad(pos)
    ref_energy, ref_grad = g.energy_and_grad_numpy(pos)
    np.testing.assert_allclose(energy, ref_energy, rtol=1e-12)
    np.testing.assert_allclose(grad, ref_grad, rtol=1e-9, atol=1e-12)
    g.kick_drift()  # reads x.grad, updates v and x in place: forward only, never refused


def test_example_wave_tape_step():
    w = _example("wave")
    w.setup(6, 3)
    theta = np.random.default_rng(0).normal(0, 0.3, (4, 4))
    w.initial.from_numpy(theta)
    _, grad = w.loss_and_grad()
    ref = fd.central_differences(w.forward_no_tape, {"initial": w.initial})["initial"]
    fd.assert_grad_close(grad, ref, "f64", "wave: initial.grad")


def _close(ad, fd_value, what):
    assert np.isfinite(ad) and abs(ad) > 1e-9, f"{what}: gradient {ad}"
    assert abs(ad - fd_value) <= 1e-5 * abs(fd_value) + 1e-9, f"{what}: AD {ad} vs FD {fd_value}"


def test_example_billiards_tape_step():
    b = _example("billiards")
    b.setup(False, 200)  # long enough for the cue to reach the target through ball 1
    b.set_params(np.array(b.CUE_V0 + b.CUE_X0))
    _, grad = b.loss_and_grad()
    assert np.isfinite(grad).all()
    _close(*b.fd_check(1, steps_=200), "billiards: d loss / d cue vy")


def test_example_mass_spring_tape_step():
    m = _example("mass_spring")
    _close(*m.fd_check(0, steps_=4), "mass_spring: d loss / d w1[0, 0]")


def test_example_diffmpm_grad_replaced_substep():
    d = _example("diffmpm")
    _close(*d.fd_check(16, n_grid_=16, steps_=8), "diffmpm: d loss / d b[0]")


def test_example_mpm88_runs_forward_and_on_a_tape_without_gradients():
    """mpm88 updates its state in place (`grid_v[i, j] = vel` after reading it, `x[p] += ...`):
    it is a forward-only program, so it runs. None of its fields has a gradient, so its
    kernels' adjoints have nothing to recompute and a Tape over it runs too (as in Taichi);
    with gradients on `grid_v` the same in-place update is refused."""
    m = _example("mpm88")
    m.setup(64, 16)
    m.reset()
    x0 = m.x.to_numpy()
    m.substep()
    assert np.isfinite(m.x.to_numpy()).all() and not np.array_equal(m.x.to_numpy(), x0)
    x1 = m.x.to_numpy()
    with fs.ad.Tape():
        m.substep()
    assert np.isfinite(m.x.to_numpy()).all() and not np.array_equal(m.x.to_numpy(), x1)

    g = fs.field(fs.f32, shape=(4, 4), needs_grad=True)
    m = fs.field(fs.f32, shape=(4, 4), needs_grad=True)

    @fs.kernel
    def grid_op():  # mpm88's momentum-to-velocity step; m's adjoint needs the old g
        for i, j in g:
            g[i, j] = g[i, j] / m[i, j]

    with pytest.raises(fs.AccessRuleError) as info, fs.ad.Tape():
        grid_op()
    assert "Rule 1 (" in str(info.value)


# --------------------------------------------------------------------------- forward only
def test_forward_only_kernels_that_break_the_rules_run():
    x, y, loss = put(vec("x")), vec("y"), scalar("loss")
    base = x.to_numpy()

    @fs.kernel
    def in_place():
        for i in x:
            y[i] = x[i]
            y[i] *= 2.0
            x[i] += 1.0

    @fs.kernel
    def doc_rule2():
        for i in range(N):
            loss[None] += x[i] ** 2
            loss[None] *= 0.5

    in_place()
    np.testing.assert_allclose(y.to_numpy(), 2 * base)
    np.testing.assert_allclose(x.to_numpy(), base + 1)
    loss[None] = 0.0
    doc_rule2()  # serial order is not fixed, but it runs and gives a finite value
    assert np.isfinite(loss[None])
    x.fill(0.0)  # Python-scope writes outside a Tape are never checked
    in_place()
    np.testing.assert_allclose(x.to_numpy(), np.ones(N))
