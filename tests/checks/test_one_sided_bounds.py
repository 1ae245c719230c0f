"""A loop index over `range(n)` with `n` loaded from a field is still at least 0: the checker
uses that one-sided bound, so `T[s]` and `T[s + j + 1]` in one thread never meet. Before, it
could not bound `j` and refused such a chain with "later in the same thread"; for taichi-nerfs'
volume renderer (rays packed so that one ray's last `T[s + j + 1]` is the next ray's `T[s]`)
that hid the real collision, which is between threads."""
import pytest

import fieldsim as fs


def _fields():
    fs.init(arch=fs.cpu)
    T = fs.field(fs.f32, shape=16, needs_grad=True)
    x = fs.field(fs.f32, shape=(), needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)
    s = fs.field(fs.i32, shape=())
    n = fs.field(fs.i32, shape=())
    return T, x, loss, s, n


def test_chain_after_its_start_differentiates():
    T, x, loss, s, n = _fields()

    @fs.kernel
    def chain():
        for _ in range(1):  # one thread
            start = s[None]
            T[start] = x[None]
            for j in range(n[None]):
                T[start + j + 1] = x[None] * 0.5 ** (j + 1)

    @fs.kernel
    def total():
        for i in T:
            loss[None] += T[i]

    s[None], n[None], x[None] = 2, 3, 1.5
    with fs.Tape(loss=loss):
        chain()
        total()
    assert loss[None] == pytest.approx(1.5 * (1 + 0.5 + 0.25 + 0.125))
    assert x.grad[None] == pytest.approx(1 + 0.5 + 0.25 + 0.125)  # d/dx of x * sum 0.5^j


def test_packed_rays_are_refused_between_threads():
    T, x, loss, s, n = _fields()
    starts = fs.field(fs.i32, shape=2)

    @fs.kernel
    def rays():
        for r in range(2):
            start = starts[r]
            T[start] = x[None]
            for j in range(n[None]):
                T[start + j + 1] = T[start + j] * 0.5
                loss[None] += T[start + j + 1]

    starts[0], starts[1], n[None] = 0, 3, 3
    rays()
    loss.grad[None] = 1.0
    with pytest.raises(fs.AccessRuleError, match="from another thread") as err:
        rays.grad()
    assert "later in the same thread" not in str(err.value)
