"""Misused autodiff APIs raise a located FieldsimRuntimeError (a RuntimeError, as Taichi's
`ti.ad` raises), so `except RuntimeError` catches them and the message points at the user's line."""
import pytest

import fieldsim as fs
from fieldsim.errors import FieldsimRuntimeError


def _raised_here(err):
    assert isinstance(err, RuntimeError) and isinstance(err, FieldsimRuntimeError)
    assert err.loc is not None and err.loc.file == __file__, err.loc
    return str(err)


def _fields():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, 4, needs_grad=True)
    loss = fs.field(fs.f32, (), needs_grad=True)

    @fs.kernel
    def total():
        for i in x:
            loss[None] += x[i] * x[i]
    return x, loss, total


def test_func_grad_and_func_replay_of_a_non_func():
    _fields()
    with pytest.raises(RuntimeError) as info:
        fs.ad.func_grad(len)
    assert "needs an @fs.func" in _raised_here(info.value)
    with pytest.raises(RuntimeError) as info:
        fs.ad.func_replay(print)
    assert "needs an @fs.func" in _raised_here(info.value)


def test_clear_all_gradients_with_an_unknown_gradient_type():
    _fields()
    with pytest.raises(RuntimeError) as info:
        fs.ad.clear_all_gradients(gradient_type="hessian")
    assert "SNodeGradType.ADJOINT" in _raised_here(info.value)


def test_a_grad_replaced_section_without_a_backward_on_a_tape():
    x, loss, total = _fields()
    x.fill(2.0)

    @fs.ad.grad_replaced
    def step():
        total()

    with pytest.raises(RuntimeError) as info:
        with fs.ad.Tape(loss):
            step()
    assert "has no backward" in _raised_here(info.value)


def test_a_grad_replaced_section_without_a_forward_rule_in_fwd_mode():
    x, loss, total = _fields()
    x.fill(2.0)

    @fs.ad.grad_replaced
    def step():
        total()

    @fs.ad.grad_for(step)
    def step_grad():
        total.grad()

    with pytest.raises(RuntimeError) as info:
        with fs.ad.FwdMode(loss=loss, param=x, seed=[1.0, 0.0, 0.0, 0.0]):
            step()
    assert "forward-mode rule" in _raised_here(info.value)


@pytest.mark.parametrize("shape, comp, spelled", [((3,), (1,), "v[None][1]"), ((2, 2), (1, 1), "v[None][1, 1]")])
def test_a_component_as_tape_loss_names_the_field_and_the_fix(shape, comp, spelled):
    fs.init(arch=fs.cpu)
    if len(shape) == 2:
        v = fs.Matrix.field(*shape, fs.f32, (), needs_grad=True)
    else:
        v = fs.Vector.field(shape[0], fs.f32, (), needs_grad=True)
    with pytest.raises(FieldsimRuntimeError) as info:
        fs.ad.Tape(loss=v.get_scalar_field(*comp)).__enter__()
    msg = _raised_here(info.value)
    assert "one component of the vector/matrix field 'v'" in msg and f"loss[None] = {spelled}" in msg
    assert "needs_grad" not in msg  # v has its gradient: that advice would mislead
