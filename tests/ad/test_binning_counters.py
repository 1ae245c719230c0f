"""A kernel that writes only fields without gradients (a neighbour-list build: cell ids,
`slot = ti.atomic_add(count[c], 1)`, `lst[c, slot] = i`) recorded on a Tape between
differentiable kernels, as SPH substeps rebuild their lists. Its adjoint has nothing to
differentiate, yet fieldsim refused it: rule 1 on the counter (read by the atomic, written by
other threads) and then "the old value returned by atomic_add ... cannot be replayed"."""
import numpy as np
import pytest

from ._env import fs

pytestmark = pytest.mark.fs_init(fp="f64")

N, C, M = 7, 3, 8


def _program():
    x = fs.field(fs.f64, shape=N, needs_grad=True, needs_dual=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True, needs_dual=True)
    cnt = fs.field(fs.i32, shape=C)
    lst = fs.field(fs.i32, shape=(C, M))
    cell = fs.field(fs.i32, shape=N)

    @fs.kernel
    def bin():
        for i in range(N):
            c = fs.min(fs.max(fs.cast(x[i] * C, fs.i32), 0), C - 1)
            cell[i] = c
            slot = fs.atomic_add(cnt[c], 1)
            lst[c, slot] = i

    @fs.kernel
    def pairs():
        for i in range(N):
            c = cell[i]
            for k in range(cnt[c]):
                loss[None] += x[i] * x[lst[c, k]]

    return x, loss, cnt, bin, pairs


def _analytic(xs):
    # loss = sum over cells of (sum of the cell's x)^2, so d loss / d x_i = 2 * S_cell(i)
    cells = np.clip((xs * C).astype(int), 0, C - 1)
    sums = np.array([xs[cells == c].sum() for c in range(C)])
    return (sums ** 2).sum(), 2 * sums[cells]


XS = np.array([0.05, 0.9, 0.4, 0.2, 0.55, 0.95, 0.7])


def test_tape_through_a_binning_kernel():
    x, loss, cnt, bin, pairs = _program()
    x.from_numpy(XS)
    with fs.ad.Tape(loss):
        bin()
        pairs()
    want_loss, want_grad = _analytic(XS)
    assert loss[None] == pytest.approx(want_loss, rel=1e-12)
    np.testing.assert_allclose(x.grad.to_numpy(), want_grad, rtol=1e-12)
    # the adjoint did not run the counters' atomics again
    assert cnt.to_numpy().sum() == N


def test_hand_called_grads_and_forward_mode():
    x, loss, cnt, bin, pairs = _program()
    x.from_numpy(XS)
    bin()
    pairs()
    loss.grad[None] = 1.0
    pairs.grad()
    bin.grad()
    _, want_grad = _analytic(XS)
    np.testing.assert_allclose(x.grad.to_numpy(), want_grad, rtol=1e-12)
    assert cnt.to_numpy().sum() == N

    cnt.fill(0)
    loss[None] = 0.0
    seed = [0.5, -1.0, 0.25, 2.0, -0.75, 1.5, 0.125]
    with fs.ad.FwdMode(loss=loss, param=x, seed=seed):
        bin()
        pairs()
    assert loss.dual[None] == pytest.approx(want_grad @ np.array(seed), rel=1e-12)


def test_a_used_atomic_result_that_feeds_a_gradient_is_still_refused():
    x = fs.field(fs.f64, shape=N, needs_grad=True)
    y = fs.field(fs.f64, shape=N, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    cnt = fs.field(fs.i32, shape=())

    @fs.kernel
    def gather():
        for i in range(N):
            slot = fs.atomic_add(cnt[None], 1)
            y[slot] = x[i] * x[i]

    @fs.kernel
    def red():
        for i in range(N):
            loss[None] += y[i]

    with pytest.raises(Exception, match="atomic_add"), fs.ad.Tape(loss):
        gather()
        red()
