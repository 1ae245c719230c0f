"""fs.ad.torch_function: fieldsim kernels inside torch autograd. Gradients are checked with
torch.autograd.gradcheck (float64 central differences) and against analytic derivatives."""
import numpy as np
import pytest
from support.programs import cube_sum_through_torch

import fieldsim as fs

torch = pytest.importorskip("torch")


@fs.kernel
def _stage(a: fs.types.ndarray(), w: fs.types.ndarray(), b: fs.types.ndarray()):
    for i in a:
        b[i] = fs.sin(a[i]) * w[i] + a[i] * a[i]


@fs.kernel
def _sum_squares(b: fs.types.ndarray(), c: fs.types.ndarray()):
    for i in b:
        c[None] += b[i] * b[i]


@fs.ad.torch_function
def _energy(a, w):
    b = torch.zeros_like(a)
    c = torch.zeros((), dtype=a.dtype)
    _stage(a, w, b)
    _sum_squares(b, c)
    return c, b


def _energy_ref(a, w):
    b = torch.sin(a) * w + a * a
    return (b * b).sum(), b


def _inputs(seed=0, n=5):
    g = torch.Generator().manual_seed(seed)
    a = torch.rand(n, dtype=torch.float64, generator=g, requires_grad=True)
    w = torch.rand(n, dtype=torch.float64, generator=g, requires_grad=True)
    return a, w


def test_gradcheck_float64():
    a, w = _inputs()
    assert torch.autograd.gradcheck(_energy, (a, w))


def test_gradients_match_analytic_through_torch_ops_outside():
    a, w = _inputs(1)
    c, b = _energy(a * 2.0, w)  # a torch op before: torch's autograd chains it
    (c + b.sum()).backward()
    a2, w2 = a.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    cr, br = _energy_ref(a2 * 2.0, w2)
    (cr + br.sum()).backward()
    np.testing.assert_allclose(a.grad.numpy(), a2.grad.numpy(), rtol=1e-12)
    np.testing.assert_allclose(w.grad.numpy(), w2.grad.numpy(), rtol=1e-12)


def test_reentrant_two_calls_then_backwards_in_any_order():
    a1, w1 = _inputs(2)
    a2, w2 = _inputs(3)
    c1, _ = _energy(a1, w1)
    c2, _ = _energy(a2, w2)  # a second forward before the first backward
    c2.backward()
    c1.backward()
    for a, w in ((a1, w1), (a2, w2)):
        ar, wr = a.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
        _energy_ref(ar, wr)[0].backward()
        np.testing.assert_allclose(a.grad.numpy(), ar.grad.numpy(), rtol=1e-12)
        np.testing.assert_allclose(w.grad.numpy(), wr.grad.numpy(), rtol=1e-12)


def test_grad_outputs_are_neither_aliased_nor_zeroed():
    a, w = _inputs(4)
    c, b = _energy(a, w)
    gc = torch.tensor(2.0, dtype=torch.float64)
    gb = torch.linspace(0, 1, 5, dtype=torch.float64)
    kept = (gc.clone(), gb.clone())
    ga, gw = torch.autograd.grad((c, b), (a, w), grad_outputs=(gc, gb))
    assert torch.equal(gc, kept[0]) and torch.equal(gb, kept[1])
    assert ga.data_ptr() not in (gc.data_ptr(), gb.data_ptr())
    ar, wr = a.detach().clone().requires_grad_(), w.detach().clone().requires_grad_()
    ea, ew = torch.autograd.grad(_energy_ref(ar, wr), (ar, wr), grad_outputs=(gc, gb))
    np.testing.assert_allclose(ga.numpy(), ea.numpy(), rtol=1e-12)
    np.testing.assert_allclose(gw.numpy(), ew.numpy(), rtol=1e-12)


def test_backward_refuses_an_input_modified_in_place():
    a, w = _inputs(5)
    c, _ = _energy(a, w)
    with torch.no_grad():
        w.mul_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        c.backward()


def test_an_input_passed_twice_gets_its_gradient_once():
    a, _ = _inputs(6)
    c, _ = _energy(a, a)
    c.backward()
    ar = a.detach().clone().requires_grad_()
    _energy_ref(ar, ar)[0].backward()
    np.testing.assert_allclose(a.grad.numpy(), ar.grad.numpy(), rtol=1e-12)


def test_fields_inside_through_from_torch_and_to_torch():
    f = cube_sum_through_torch().f

    t = torch.linspace(0.5, 2.0, 4, dtype=torch.float64, requires_grad=True)
    assert torch.autograd.gradcheck(f, (t,))
    f(t).backward()
    np.testing.assert_allclose(t.grad.numpy(), 3 * t.detach().numpy() ** 2, rtol=1e-12)
    # a later call overwrites the fields before the first call's backward: still its gradients
    t.grad = None
    first = f(t)
    f(t.detach() * 2)
    first.backward()
    np.testing.assert_allclose(t.grad.numpy(), 3 * t.detach().numpy() ** 2, rtol=1e-12)


def test_overlapping_views_are_refused():
    @fs.ad.torch_function
    def f(a):
        b = torch.zeros((), dtype=a.dtype)
        _sum_squares(a, b)
        _sum_squares(a[1:], b)
        return b

    with pytest.raises(fs.FieldsimError, match="overlap"):
        f(torch.ones(4, dtype=torch.float64, requires_grad=True))


def test_field_parameters_accumulate_their_gradient_across_backwards():
    w = fs.field(fs.f64, shape=3, needs_grad=True)
    w.from_numpy(np.array([0.5, -1.0, 2.0]))

    @fs.kernel
    def weigh(a: fs.types.ndarray(), out: fs.types.ndarray()):
        for i in a:
            out[None] += w[i] * a[i] ** 2

    @fs.ad.torch_function
    def f(a):
        out = torch.zeros((), dtype=a.dtype)
        weigh(a, out)
        return out

    a1 = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64, requires_grad=True)
    a2 = torch.tensor([0.5, 0.0, -1.0], dtype=torch.float64, requires_grad=True)
    f(a1).backward()
    f(a2).backward()
    np.testing.assert_allclose(w.grad.to_numpy(), a1.detach().numpy() ** 2 + a2.detach().numpy() ** 2)
    np.testing.assert_allclose(a1.grad.numpy(), 2 * w.to_numpy() * a1.detach().numpy())
