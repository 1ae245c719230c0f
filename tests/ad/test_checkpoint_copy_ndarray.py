"""`copy_from` with `fs.ndarray`s inside `fs.ad.checkpoint` steps (gh-copynd).

The copy is a launch of the copy kernel now, so the checkpoint records it, recomputes it and
its carried-value check sees its read: `q.copy_from(p)` with `p` an ndarray carried outside
`state` is refused naming `p`; with `p` in the state the gradient matches central differences.
"""
import numpy as np
import pytest

import fieldsim as fs

from .checkpoint_mixing import mixing_kernels, runner
from .fd import central_differences

pytestmark = pytest.mark.fs_init(fp="f64")

N = 3


def _program(q_kind, in_state):
    x = fs.field(fs.f64, N, needs_grad=True)
    s = fs.field(fs.f64, N, needs_grad=True)
    w = fs.field(fs.f64, N, needs_grad=True)
    p = fs.ndarray(fs.f64, N, needs_grad=True)
    q = fs.ndarray(fs.f64, N, needs_grad=True) if q_kind == "ndarray" else \
        fs.field(fs.f64, N, needs_grad=True)
    loss = fs.field(fs.f64, (), needs_grad=True)

    @fs.kernel
    def init(p: fs.types.ndarray()):
        for i in range(N):
            s[i] = x[i]
            p[i] = 0.5 * x[i]

    @fs.kernel
    def set_p(p: fs.types.ndarray(), t: fs.f64):
        for i in range(N):
            p[i] = p[i] * 0.5 + s[i] + 0.3 * t

    @fs.kernel
    def use_nd(a: fs.types.ndarray()):
        for i in range(N):
            w[i] = fs.sin(s[i]) * a[i] + s[i]

    use_field, commit, fin = mixing_kernels(s, w, loss, N)

    def step(t):
        q.copy_from(p)
        (use_nd if q_kind == "ndarray" else use_field)(q)
        commit()
        set_p(p, t)

    state = [s, p] if in_state else [s]

    run = runner(loss, lambda: init(p), step, fin, state)

    x.from_numpy(np.array([0.3, 0.5, 0.7]))
    return x, p, run


@pytest.mark.parametrize("q_kind", ["field", "ndarray"])
def test_with_the_ndarray_in_the_state_the_gradient_is_right(q_kind):
    x, _, run = _program(q_kind, in_state=True)
    ref = central_differences(lambda: run(False), {"x": x})["x"]
    run(True)
    np.testing.assert_allclose(x.grad.to_numpy(), ref, rtol=1e-6, atol=1e-9)


@pytest.mark.parametrize("q_kind", ["field", "ndarray"])
def test_an_ndarray_carried_through_a_copy_is_refused(q_kind):
    x, p, run = _program(q_kind, in_state=False)
    with pytest.raises(fs.AccessRuleError) as err:
        run(True)
    text = str(err.value)
    assert f"'{p.ir_name}' carries values from one step to a later one" in text, text
    assert not x.grad.to_numpy().any()
