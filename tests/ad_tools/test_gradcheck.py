"""`fs.ad.gradcheck` and `Tape(grad_check=...)`: Tape gradients against central differences,
narrowed to the first launch whose adjoint disagrees."""
import warnings

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.ad import check as check_mod

from .test_checkpoint import _in_place_sim


def _chain(n=5):
    """Three kernels on a vector field and a 0-D parameter: stretch, pair distances, energy."""
    x = fs.Vector.field(2, float, shape=n, needs_grad=True, name="x")
    k = fs.field(float, shape=(), needs_grad=True, name="k")
    y = fs.Vector.field(2, float, shape=n, needs_grad=True, name="y")
    d = fs.field(float, shape=n - 1, needs_grad=True, name="d")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(np.random.default_rng(1).uniform(-1, 1, (n, 2)))
    k[None] = 1.5

    @fs.kernel
    def stretch():
        for i in x:
            y[i] = k[None] * x[i] + fs.Vector([fs.sin(x[i][0]), fs.cos(x[i][1])])

    @fs.kernel
    def pair():
        for i in d:
            d[i] = (y[i + 1] - y[i]).norm()

    @fs.kernel
    def energy():
        for i in d:
            loss[None] += (d[i] - 1.0) ** 2

    def fn():
        stretch()
        pair()
        energy()
        return loss

    return fn, x, k, loss


@pytest.mark.parametrize("fp", ["f32", "f64"])
def test_gradcheck_passes_on_a_multi_kernel_program(fp):
    fn, x, k, loss = _chain()
    before = {f.ir_name: f.to_numpy() for f in (x, k, loss)}
    report = fs.ad.gradcheck(fn, [x, k])
    assert report.ok and bool(report)
    assert [c.mode for c in report.fields] == ["elements", "elements"]
    assert report.culprit is None
    for f in (x, k, loss):  # the data are exactly as before
        np.testing.assert_array_equal(f.to_numpy(), before[f.ir_name], err_msg=f.ir_name)
    # the gradient fields hold the Tape's gradients
    np.testing.assert_array_equal(x.grad.to_numpy(), report.fields[0].ad)
    # the Tape's gradient against float64 central differences of the same program in numpy; the
    # report's own differences, in f32, carry about ulp(loss) / eps = 5e-4 of rounding noise
    np.testing.assert_allclose(report.fields[0].ad, _chain_gradient_f64(before["x"], 1.5),
                               rtol=1e-4 if fp == "f32" else 1e-8, atol=1e-5 if fp == "f32" else 1e-9)
    np.testing.assert_allclose(report.fields[0].ad, report.fields[0].fd,
                               rtol=1e-2 if fp == "f32" else 1e-6, atol=1e-3 if fp == "f32" else 1e-4)


def _chain_gradient_f64(x0, k, h=1e-6):
    """d loss / d x of `_chain`'s program, by float64 central differences in numpy."""
    def loss(x):
        y = k * x + np.stack([np.sin(x[:, 0]), np.cos(x[:, 1])], 1)
        return ((np.linalg.norm(y[1:] - y[:-1], axis=1) - 1.0) ** 2).sum()
    x0 = x0.astype(np.float64)
    grad = np.zeros_like(x0)
    for idx in np.ndindex(*x0.shape):
        e = np.zeros_like(x0)
        e[idx] = h
        grad[idx] = (loss(x0 + e) - loss(x0 - e)) / (2 * h)
    return grad


def test_large_inputs_are_checked_along_random_directions():
    n = 200
    x = fs.field(float, shape=n, needs_grad=True, name="x")
    y = fs.field(float, shape=n, needs_grad=True, name="y")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(np.linspace(-2, 2, n))

    @fs.kernel
    def smooth():
        for i in range(1, n - 1):
            y[i] = 0.25 * x[i - 1] + 0.5 * x[i] + 0.25 * x[i + 1]

    @fs.kernel
    def total():
        for i in y:
            loss[None] += fs.tanh(y[i]) * y[i]

    def fn():
        smooth()
        total()
        return loss

    report = fs.ad.gradcheck(fn, [x], n_directions=None)
    assert report.ok
    assert report.fields[0].mode == "directions" and report.fields[0].ad.shape == (3,)
    report = fs.ad.gradcheck(fn, [x], n_directions=5)
    assert report.ok and report.fields[0].ad.shape == (5,)


def test_random_numbers_are_replayed_in_every_evaluation():
    x = fs.field(float, shape=6, needs_grad=True, name="x")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(np.linspace(0.1, 0.6, 6))

    @fs.kernel
    def noisy():
        for i in x:
            loss[None] += (x[i] * (1.0 + fs.random())) ** 2

    def fn():
        noisy()
        return loss

    assert fs.ad.gradcheck(fn, [x]).ok


# ---- planted wrong adjoints --------------------------------------------------------------------------
def _planted_grad_replaced():
    """x -> y = sin(x) -> z = y^2 (a grad_replaced unit whose backward has a sign error) -> loss."""
    x = fs.field(float, shape=4, needs_grad=True, name="x")
    y = fs.field(float, shape=4, needs_grad=True, name="y")
    z = fs.field(float, shape=4, needs_grad=True, name="z")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(np.array([0.3, 1.3, 2.3, 3.3]))

    @fs.kernel
    def wave():
        for i in x:
            y[i] = fs.sin(x[i])

    @fs.kernel
    def square_kernel():
        for i in y:
            z[i] = y[i] * y[i]

    @fs.kernel
    def square_backward():
        for i in y:
            y.grad[i] -= 2 * y[i] * z.grad[i]  # planted: should be +=

    @fs.ad.grad_replaced
    def square():
        square_kernel()

    @fs.ad.grad_for(square)
    def square_grad():
        square_backward()

    @fs.kernel
    def total():
        for i in z:
            loss[None] += z[i] + x[i]

    def fn():
        wave()
        square()
        total()
        return loss

    return fn, x, loss


@pytest.mark.parametrize("fp", ["f32", "f64"])
def test_planted_sign_error_in_grad_replaced_is_found_and_named(fp):
    fn, x, _loss = _planted_grad_replaced()
    before = x.to_numpy()
    with pytest.raises(fs.ad.GradcheckError) as info:
        fs.ad.gradcheck(fn, [x])
    assert isinstance(info.value, AssertionError)
    msg = str(info.value)
    assert "d loss / d x[" in msg
    assert "#1 of the 3 recorded entries" in msg
    assert "grad_replaced function 'square'" in msg and "'square_grad'" in msg
    assert "  y[" in msg and "AD " in msg and "FD " in msg
    report = info.value.report
    assert not report and report.culprit.position == 1
    assert [c.name for c in report.culprit.fields] == ["y"]
    bad = report.culprit.fields[0]
    # y's adjoint got -2 y zbar instead of +2 y zbar on top of its seed
    assert np.all(np.sign(bad.ad - bad.fd) != 0)
    np.testing.assert_array_equal(x.to_numpy(), before)


def test_raise_on_fail_false_returns_a_falsy_report():
    fn, x, _loss = _planted_grad_replaced()
    report = fs.ad.gradcheck(fn, [x], raise_on_fail=False)
    assert not report.ok and not report
    assert "square" in report.message and str(report) == report.message
    assert report.entries_checked == 2  # stopped at the culprit


def test_correct_grad_replaced_unit_passes():
    x = fs.field(float, shape=3, needs_grad=True, name="x")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(np.array([0.5, -1.0, 2.0]))

    @fs.kernel
    def cube():
        for i in x:
            loss[None] += x[i] ** 3

    @fs.ad.grad_replaced
    def forward():
        cube()

    @fs.ad.grad_for(forward)
    def backward():
        cube.grad()

    def fn():
        forward()
        return loss

    assert fs.ad.gradcheck(fn, [x]).ok


@pytest.mark.parametrize("fp", ["f32", "f64"])
def test_planted_sign_error_in_func_grad_names_the_kernel_and_the_func(fp):
    x = fs.field(float, shape=4, needs_grad=True, name="x")
    y = fs.field(float, shape=4, needs_grad=True, name="y")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(np.array([0.5, 1.0, 1.5, 2.0]))

    @fs.func
    def cube(a):
        return a * a * a

    @fs.ad.func_grad(cube)
    def cube_grad(a, adj):
        return -3.0 * a * a * adj  # planted sign error

    @fs.kernel
    def double():
        for i in x:
            y[i] = 2.0 * x[i]

    @fs.kernel
    def apply_cube():
        for i in y:
            loss[None] += cube(y[i])

    def fn():
        double()
        apply_cube()
        return loss

    with pytest.raises(fs.ad.GradcheckError) as info:
        fs.ad.gradcheck(fn, [x])
    msg = str(info.value)
    assert "kernel 'apply_cube'()" in msg and "test_gradcheck.py" in msg
    assert "#1 of the 2 recorded entries" in msg
    assert "fs.ad.func_grad" in msg and "'cube'" in msg


def test_a_fault_between_launches_is_reported_as_such():
    # y has no gradient: the Tape's gradient of x is cut (zero) though every launch's own
    # adjoint is right, so the narrowing names no launch.
    x = fs.field(float, shape=3, needs_grad=True, name="x")
    y = fs.field(float, shape=3, name="y")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(np.array([1.0, 2.0, 3.0]))

    @fs.kernel
    def double():
        for i in x:
            y[i] = 2.0 * x[i]

    @fs.kernel
    def total():
        for i in y:
            loss[None] += y[i]

    def fn():
        double()
        total()
        return loss

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = fs.ad.gradcheck(fn, [x], raise_on_fail=False)
    assert not report.ok and report.culprit is None and report.entries_checked == 2
    assert "how they are chained" in report.message


def test_gradcheck_through_a_checkpointed_simulation():
    sim = _in_place_sim()

    def fn():
        sim.run()
        return sim.loss

    report = fs.ad.gradcheck(fn, list(sim.inputs), rtol=1e-5, atol=1e-7)
    assert report.ok, report.message


def test_bad_arguments():
    fn, x, _k, loss = _chain()
    plain = fs.field(float, shape=3, name="plain")
    with pytest.raises(ValueError, match="'plain'"):
        fs.ad.gradcheck(fn, [plain])
    with pytest.raises(TypeError, match="loss field"):
        fs.ad.gradcheck(lambda: None, [x])
    with fs.ad.Tape(loss), pytest.raises(fs.FieldsimError, match="outside a Tape"):
        fs.ad.gradcheck(fn, [x])


# ---- Tape(grad_check=[...]) ------------------------------------------------------------------------
def test_tape_grad_check_replays_the_recorded_launches():
    fn, x, k, loss = _chain()
    before = x.to_numpy()
    with fs.ad.Tape(loss) as tape:
        check_mod.begin_tape_grad_check(tape)  # what Tape.__enter__ does when grad_check is given
        fn()
    after_forward, grads = loss[None], x.grad.to_numpy()
    report = check_mod.tape_grad_check(tape, [x, k])
    assert report.ok
    assert loss[None] == after_forward  # data as the forward left them, grads as the backward
    np.testing.assert_array_equal(x.grad.to_numpy(), grads)
    np.testing.assert_array_equal(x.to_numpy(), before)


def test_tape_grad_check_raises_on_a_planted_error():
    fn, x, loss = _planted_grad_replaced()
    with fs.ad.Tape(loss) as tape:
        check_mod.begin_tape_grad_check(tape)
        fn()
    with pytest.raises(fs.ad.GradcheckError, match="grad_replaced function 'square'"):
        check_mod.tape_grad_check(tape, [x])


def test_tape_grad_check_option():
    # works with the entry copy (Tape.__enter__ calling begin_tape_grad_check) or without it
    fn, x, k, loss = _chain()
    with fs.ad.Tape(loss, grad_check=[x, k]):
        fn()
    fn, x, loss = _planted_grad_replaced()
    with pytest.raises(fs.ad.GradcheckError, match="square"), fs.ad.Tape(loss, grad_check=[x]):
        fn()


def test_tape_grad_check_prints_taichis_pass_lines(capsys):
    # Taichi's GradChecker prints one "variable i passes grad check" per checked field
    fn, x, k, loss = _chain()
    x0, k0 = x.to_numpy(), k[None]
    with fs.ad.Tape(loss, grad_check=[x, k]):
        fn()
    assert capsys.readouterr().out == "variable 0 passes grad check\nvariable 1 passes grad check\n"
    np.testing.assert_allclose(x.grad.to_numpy(), _chain_gradient_f64(x0, k0), rtol=1e-5, atol=1e-8)


def _accumulator():
    """acc (not the loss) is accumulated with atomics, then read by a later kernel."""
    x = fs.field(float, shape=4, needs_grad=True, name="x")
    acc = fs.field(float, shape=(), needs_grad=True, name="acc")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(np.array([0.1, 0.2, 0.3, 0.4]))

    @fs.kernel
    def gather():
        for i in x:
            acc[None] += x[i]

    @fs.kernel
    def square():
        loss[None] += acc[None] * acc[None]

    def fn():
        gather()
        square()

    return fn, x, loss


def test_tape_grad_check_with_the_entry_copy_handles_accumulators():
    fn, x, loss = _accumulator()
    with fs.ad.Tape(loss) as tape:
        check_mod.begin_tape_grad_check(tape)  # what Tape.__enter__ does when grad_check is given
        fn()
    assert check_mod.tape_grad_check(tape, [x]).ok


def test_tape_grad_check_without_the_entry_copy_refuses_what_it_cannot_replay():
    """A Tape recorded without grad_check kept no entry copy: checking it afterwards replays
    from the final state, which an accumulator read after its atomics makes inexact: refused."""
    fn, x, loss = _accumulator()
    with fs.ad.Tape(loss) as tape:
        fn()
    with pytest.raises(fs.FieldsimError, match="'acc' accumulate with atomics"):
        check_mod.tape_grad_check(tape, [x])


def test_tape_grad_check_replays_random_draws():
    x = fs.field(float, shape=5, needs_grad=True, name="x")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(np.linspace(0.2, 1.0, 5))

    @fs.kernel
    def noisy():
        for i in x:
            loss[None] += fs.sin(x[i] * (1.0 + fs.random()))

    noisy()  # move the launch counter on
    with fs.ad.Tape(loss, grad_check=[x]):
        noisy()
        noisy()


def test_report_names_vector_components():
    x = fs.Vector.field(3, float, shape=2, needs_grad=True, name="x")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(np.ones((2, 3)))

    @fs.kernel
    def total():
        for i in x:
            loss[None] += x[i][2] ** 2

    @fs.ad.grad_replaced
    def wrong():
        total()

    @fs.ad.grad_for(wrong)
    def wrong_grad():
        pass  # forgets the gradient

    def fn():
        wrong()
        return loss

    report = fs.ad.gradcheck(fn, [x], raise_on_fail=False)
    check = report.fields[0]
    assert check.index in ((0, 2), (1, 2)) and check.where() == f"x[{check.index[0]}][2]"
    assert "d loss / d x[" in report.message and "][2]: AD 0, FD 2" in report.message


def test_report_carries_the_forward_loss_value():
    """report.loss is the loss the forward computed at the inputs: (0.1 + 0.2 + 0.3 + 0.4)^2."""
    fn, x, loss = _accumulator()

    def run():
        fn()
        return loss

    assert fs.ad.gradcheck(run, [x]).loss == pytest.approx(1.0, rel=1e-12)
    with fs.ad.Tape(loss) as tape:
        check_mod.begin_tape_grad_check(tape)
        fn()
    assert check_mod.tape_grad_check(tape, [x]).loss == pytest.approx(1.0, rel=1e-12)
