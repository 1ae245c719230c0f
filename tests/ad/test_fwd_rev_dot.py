"""Forward and reverse mode agree on every corpus kernel: the dot-product test, in f64.

For each corpus entry (parametrized over `CORPUS`, so a new entry is covered automatically) the
program's outputs are every float field with a gradient: the loss and every other field the case
writes or reads (inputs included, whose own Jacobian block is the identity or, where a kernel
overwrites them, a projection). With random u (one cotangent per output element) and v (one
tangent per input element):

    forward:  u . (J v) = sum over outputs o of  u_o . o.dual, where the duals are the sum of
              one `fs.ad.FwdMode(loss, param=x, seed=v_x)` run per input x (J is linear in v);
    reverse:  (u^T J) . v = sum over inputs x of  x.grad . v_x, after one `fs.ad.Tape()` forward
              and `tape.backward(grads={o: u_o})`.

The two must agree to 1e-9 relative (1e-5 for the entry with explicit f32 fields, tol="f32";
u and v are rounded to each field's dtype so both modes start from the same numbers). Each run starts from the same data (a snapshot of every
field) and the same launch counter, so `fs.random` draws the same numbers in both modes. A
second check per entry seeds every input's dual at once (one FwdMode run, the other inputs'
duals set by hand after entry) and must match the per-input sum: tangents of several inputs
superpose inside one run.
"""
from types import SimpleNamespace

import numpy as np
import pytest

from ._env import AS_TAICHI, fs
from .corpus import CORPUS

if not AS_TAICHI:
    from fieldsim.ad.checkpoint import Snapshot, data_fields
    from fieldsim.lang import runtime

pytestmark = [pytest.mark.fs_init(fp="f64"),
              pytest.mark.skipif(AS_TAICHI, reason="fieldsim internals (snapshots, launch counter)")]

RTOL = 1e-9


def _setup(entry):
    case = entry.build()
    values = entry.values()
    for name, f in case.inputs.items():
        f.from_numpy(values[name])
    if case.reset is not None:
        case.reset()
    case.loss[None] = 0.0
    return case


def _outputs(case):
    """The case's float fields with a gradient (loss first), in creation order."""
    fields = [case.loss]
    for f in data_fields():
        if f.adjoint is not None and f.dtype.is_float and f is not case.loss:
            fields.append(f)
    return fields


class _Start:
    """The data and launch counter at the start; `restore()` goes back to them."""

    def __init__(self):
        self.snap, self.counter = Snapshot(data_fields()), runtime.get().launch_counter

    def restore(self):
        self.snap.restore()
        runtime.get().launch_counter = self.counter


def _random(fields, rng):
    """Standard normal values, rounded to each field's dtype so that both modes see them exactly."""
    return [rng.standard_normal(f.storage_shape).astype(f.dtype.np).astype(np.float64) for f in fields]


def _dot(a, b):
    return float(np.sum(np.asarray(a, dtype=np.float64) * np.asarray(b, dtype=np.float64)))


def _forward_duals(case, start, outputs, x, v_x):
    start.restore()
    with fs.ad.FwdMode(loss=case.loss, param=x, seed=v_x):
        case.run()
        return [o.dual.to_numpy() for o in outputs]  # inside: leaving clears the param's seed


def _jvp_dot(case, start, inputs, v, outputs, u):
    """u . (J v), summing one FwdMode run per input."""
    total = 0.0
    for x, v_x in zip(inputs, v):
        duals = _forward_duals(case, start, outputs, x, v_x)
        total += sum(_dot(u_o, d) for u_o, d in zip(u, duals))
    return total


def _vjp_dot(case, start, inputs, v, outputs, u):
    """(u^T J) . v from one Tape forward and a backward seeded with u."""
    start.restore()
    with fs.ad.Tape() as tape:
        case.run()
    tape.backward(grads=dict(zip(outputs, u)))
    return sum(_dot(x.grad.to_numpy(), v_x) for x, v_x in zip(inputs, v))


def _rtol(entry):
    # an entry with f32 fields (tol="f32") rounds its tangents and adjoints to f32 differently
    return 1e-5 if entry.tol == "f32" else RTOL


def _close(a, b, rtol, what):
    scale = max(abs(a), abs(b), 1e-12)
    assert abs(a - b) <= rtol * scale, f"{what}: forward {a!r} vs reverse {b!r}"


@pytest.mark.parametrize("entry", CORPUS, ids=[e.name for e in CORPUS])
def test_dot_product(entry):
    case = _setup(entry)
    inputs = list(case.inputs.values())
    outputs = _outputs(case)
    start = _Start()
    rng = np.random.default_rng(1234)
    v, u = _random(inputs, rng), _random(outputs, rng)

    fwd = _jvp_dot(case, start, inputs, v, outputs, u)
    rev = _vjp_dot(case, start, inputs, v, outputs, u)
    _close(fwd, rev, _rtol(entry), f"{entry.name}: u.(Jv) vs (u^T J).v")
    assert abs(rev) > 1e-6, f"{entry.name}: a vanishing product checks nothing"

    # loss alone (the usual scalar-output case): u_loss * loss.dual vs loss.grad-seeded reverse
    only_loss = [u[0]] + [np.zeros_like(u_o) for u_o in u[1:]]
    _close(_jvp_dot(case, start, inputs, v, outputs, only_loss),
           _vjp_dot(case, start, inputs, v, outputs, only_loss), _rtol(entry), f"{entry.name}: loss only")


@pytest.mark.parametrize("entry", CORPUS, ids=[e.name for e in CORPUS])
def test_tangents_superpose(entry):
    """All inputs seeded in one FwdMode run give the sum of the per-input runs."""
    case = _setup(entry)
    inputs = list(case.inputs.values())
    outputs = _outputs(case)
    start = _Start()
    v = _random(inputs, np.random.default_rng(99))
    separate = [np.zeros(o.storage_shape) for o in outputs]
    for x, v_x in zip(inputs, v):
        for acc, d in zip(separate, _forward_duals(case, start, outputs, x, v_x)):
            acc += d
    start.restore()
    with fs.ad.FwdMode(loss=case.loss, param=inputs[0], seed=v[0]):
        for x, v_x in zip(inputs[1:], v[1:]):
            x.dual.from_numpy(v_x)
        case.run()
        together = [o.dual.to_numpy() for o in outputs]  # inside: leaving clears the seed
    for o, acc, got in zip(outputs, separate, together):
        rtol = _rtol(entry)
        np.testing.assert_allclose(got, acc, rtol=rtol, atol=rtol * max(1.0, np.abs(acc).max()),
                                   err_msg=f"{entry.name}: {o.ir_name}.dual")


# ---- grad_replaced: forward mode takes the user's JVP or refuses ---------------------------------
def _custom_square():
    """y = x^2 inside a grad_replaced section; loss = sum sin(y) + x."""
    x = fs.field(float, shape=4, needs_grad=True, name="x")
    y = fs.field(float, shape=4, needs_grad=True, needs_dual=True, name="y")  # the JVP writes y.dual
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")

    @fs.kernel
    def sq():
        for i in x:
            y[i] = x[i] * x[i]

    @fs.kernel
    def sq_adjoint():
        for i in x:
            x.grad[i] += 2.0 * x[i] * y.grad[i]

    @fs.kernel
    def sq_tangent():
        for i in x:
            y.dual[i] = 2.0 * x[i] * x.dual[i]

    @fs.kernel
    def total():
        for i in y:
            loss[None] += fs.sin(y[i]) + x[i]

    @fs.ad.grad_replaced
    def square():
        sq()

    @fs.ad.grad_for(square)
    def square_grad():
        sq_adjoint()

    def run():
        square()
        total()

    x.from_numpy(np.array([0.3, -0.7, 1.1, 0.5]))
    return SimpleNamespace(x=x, loss=loss, square=square, sq_tangent=sq_tangent, run=run)


def test_grad_replaced_without_jvp_is_refused():
    c = _custom_square()
    with (pytest.raises(fs.FieldsimError, match="'square'.*no forward-mode rule"),
          fs.ad.FwdMode(loss=c.loss, param=c.x, seed=np.ones(4))):
        c.run()


def test_grad_replaced_with_jvp_agrees_with_its_grad():
    c = _custom_square()
    x, loss, run = c.x, c.loss, c.run
    fs.ad.jvp_for(c.square)(lambda: c.sq_tangent())
    start = _Start()
    rng = np.random.default_rng(5)
    v, u = rng.standard_normal(4), rng.standard_normal()
    with fs.ad.FwdMode(loss=loss, param=x, seed=v):
        run()
    fwd = u * float(loss.dual[None])
    start.restore()
    with fs.ad.Tape() as tape:
        run()
    tape.backward(grads={loss: u})
    rev = _dot(x.grad.to_numpy(), v)
    xs = x.to_numpy()
    exact = u * float(np.sum((np.cos(xs * xs) * 2 * xs + 1) * v))
    _close(fwd, rev, RTOL, "grad_replaced: jvp vs grad")
    _close(fwd, exact, RTOL, "grad_replaced: jvp vs analytic")
