"""A reverse adjoint replays every `fs.random()` draw of its primal, in order, so that each draw
returns the forward's number. What decides whether (or how often) a draw runs, a counter read
in an `if` or a loop bound, is therefore needed by the adjoint even where the draw's value only
feeds bookkeeping: overwriting it afterwards would shift the replayed random stream and give
silently wrong gradients. Gradients are checked against float64 central differences of the
whole Tape computation, each run from a fresh `fs.init` (the same random stream)."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import AccessRuleError

XS = np.array([0.3, 0.7, 1.1, 1.6])


def _program(body_kind):
    x = fs.field(fs.f64, shape=4, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    best = fs.field(fs.i32, shape=())

    @fs.kernel
    def drawn_in_branch():
        for i in range(1):
            for s in range(3):
                if best[None] > 0:
                    r = fs.random()
                    if r > 2.0:
                        best[None] += 10
                best[None] += 1
                loss[None] += x[s] * fs.random()

    @fs.kernel
    def drawn_in_loop():
        for i in range(1):
            for s in range(best[None]):
                fs.random()
            loss[None] += x[1] * fs.random()

    @fs.kernel
    def bump():
        best[None] = 3

    @fs.kernel
    def counter_beside_draws():
        for i in range(1):
            for s in range(3):
                loss[None] += x[s] * fs.random()
                if best[None] < 100:
                    best[None] += 1

    def run():
        if body_kind == "branch":
            drawn_in_branch()
        elif body_kind == "loop":
            drawn_in_loop()
            bump()
        else:
            counter_beside_draws()

    return x, loss, run


def _loss_and_grad(xs, body_kind, grad):
    fs.init(arch=fs.cpu, default_fp=fs.f64, cpu_max_num_threads=1)
    x, loss, run = _program(body_kind)
    x.from_numpy(xs)
    if not grad:
        run()
        return loss[None]
    with fs.ad.Tape(loss):
        run()
    return x.grad.to_numpy()


@pytest.mark.parametrize("body_kind", ["branch", "loop"])
def test_a_counter_deciding_a_draw_is_refused(body_kind):
    with pytest.raises(AccessRuleError, match="best"):
        _loss_and_grad(XS, body_kind, True)


def test_a_counter_beside_draws_is_accepted_with_correct_gradients():
    got = _loss_and_grad(XS, "beside", True)
    eps, fd = 1e-6, np.zeros(len(XS))
    for k in range(len(XS)):
        step = np.eye(len(XS))[k] * eps
        fd[k] = (_loss_and_grad(XS + step, "beside", False)
                 - _loss_and_grad(XS - step, "beside", False)) / (2 * eps)
    assert np.any(fd != 0)
    np.testing.assert_allclose(got, fd, rtol=1e-7, atol=1e-9)
