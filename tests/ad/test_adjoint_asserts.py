"""With `debug=True` an adjoint kernel checks its primal's asserts, as Taichi's adjoints do:
`k.grad(...)` with arguments that break one raises at the assert's line."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import FieldsimAssertionError


def _program():
    fs.init(arch=fs.cpu, debug=True)
    x = fs.field(fs.f32, 4, needs_grad=True)
    loss = fs.field(fs.f32, (), needs_grad=True)

    @fs.kernel
    def k(c: fs.f32):
        for i in x:
            assert x[i] < c, "x too big"
            loss[None] += x[i] ** 2
    x.from_numpy(np.array([1.0, 2.0, 3.0, 4.0], np.float32))
    return x, loss, k


def test_an_adjoint_whose_assert_holds_gives_the_analytic_gradient():
    x, loss, k = _program()
    k(10.0)
    loss.grad[None] = 1.0
    k.grad(10.0)
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * x.to_numpy())


def test_an_adjoint_breaking_its_primals_assert_raises_at_the_assert():
    x, loss, k = _program()
    k(10.0)
    loss.grad[None] = 1.0
    with pytest.raises(FieldsimAssertionError, match="x too big") as info:
        k.grad(3.5)
    assert isinstance(info.value, RuntimeError)
    assert info.value.loc.file == __file__
    assert "assert x[i] < c" in str(info.value)

