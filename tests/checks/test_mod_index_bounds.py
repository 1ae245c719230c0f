"""`x % c` of an integer (Python's modulo, c > 0) lies in 0..c-1 whatever x is, so an access
indexed by it is told apart from one outside that range: `y[i + n] = f(y[(i + 1) % n])` reads
the first half of `y` and writes the second, within a kernel and across the Tape's kernels
(Taichi accepts these programs and differentiates them correctly). Where the ranges do meet,
the access is still refused."""
import numpy as np
import pytest

import fieldsim as fs

N = 4
X0 = np.array([0.3, -0.8, 0.5, 1.1])


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu, default_fp=fs.f64)


def _fields():
    x = fs.field(float, shape=N, needs_grad=True, name="x")
    y = fs.field(float, shape=2 * N, needs_grad=True, name="y")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(X0)

    @fs.kernel
    def fill():
        for i in range(N):
            y[i] = x[i] ** 2

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += y[i + N]

    return x, y, loss, fill, total


def test_a_kernel_reading_a_modulo_index_and_writing_past_it_differentiates():
    x, y, loss, fill, total = _fields()

    @fs.kernel
    def step():
        for i in range(N):
            y[i + N] = fs.sin(y[(i + 1) % N]) * x[i]

    with fs.ad.Tape(loss):
        fill()
        step()
        total()
    # loss = sum_i sin(x[i+1]^2) x[i] (indices mod N)
    nxt, prv = np.roll(X0, -1), np.roll(X0, 1)
    want = np.sin(nxt ** 2) + np.cos(X0 ** 2) * 2 * X0 * prv
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-12)
    assert loss[None] == pytest.approx(float(np.sum(np.sin(nxt ** 2) * X0)), rel=1e-12)


def test_a_later_kernel_adding_where_a_modulo_read_never_reached_is_accepted():
    x, y, loss, fill, total = _fields()

    @fs.kernel
    def read():
        for i in range(N):
            y[i + N] = y[(i - 2) % N] * 2.0  # a negative operand: still 0..N-1

    @fs.kernel
    def add():
        for i in range(N):
            y[i + N] += y[(i + 1) % N] * x[i]

    with fs.ad.Tape(loss):
        fill()
        read()
        add()
        total()
    # loss = sum_i 2 x[i-2]^2 + x[i+1]^2 x[i]
    want = 4 * X0 + 2 * X0 * np.roll(X0, 1) + np.roll(X0, -1) ** 2
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-12)


def test_a_modulo_read_that_can_meet_the_write_is_still_refused():
    x, y, loss, fill, total = _fields()

    @fs.kernel
    def step():
        for i in range(N):
            y[i + N] = y[(i + 1) % (2 * N)] * x[i]  # i = 3 reads y[4], which i = 0 writes

    with pytest.raises(fs.AccessRuleError, match="field 'y'"), fs.ad.Tape(loss):
        fill()
        step()
        total()
