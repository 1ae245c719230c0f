"""Two index forms Taichi accepts and differentiates correctly that the checker refused:
`x % m` with m a kernel argument lies in 0..m-1 once a launch gives m (so a read
`z[i, (j + 1) % m]` is told apart from a write `z[i, n + j]`), and a rotation of an ndrange's
digit, `z[i, n + (j + k) % n]` over ndrange(., n), stores each element once. Where the
ranges meet, or the rotation repeats an element, the kernel is still refused."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import AccessRuleError

N = 4
X0 = np.array([0.3, -0.8, 0.5, 1.1])


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu, default_fp=fs.f64)


def _fields():
    x = fs.field(float, shape=N, needs_grad=True, name="x")
    z = fs.field(float, shape=(N, 2 * N), needs_grad=True, name="z")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(X0)

    @fs.kernel
    def fill():
        for i, j in fs.ndrange(N, N):
            z[i, j] = x[i] * x[j]

    @fs.kernel
    def total():
        for i, j in fs.ndrange(N, N):
            loss[None] += z[i, N + j]

    return x, z, loss, fill, total


def _want(shift):
    # loss = sum_ij sin(x[i] x[(j + shift) % N]) = sum_ij sin(x_i x_k)  (k runs over all j)
    p = np.outer(X0, X0)
    return np.cos(p) @ X0 + np.cos(p).T @ X0


def test_a_read_modulo_a_kernel_argument_is_told_apart_from_the_write_past_it():
    x, z, loss, fill, total = _fields()

    @fs.kernel
    def step(m: fs.i32):
        for i, j in fs.ndrange(N, N):
            z[i, N + j] = fs.sin(z[i, (j + 1) % m])

    with fs.ad.Tape(loss):
        fill()
        step(N)
        total()
    np.testing.assert_allclose(x.grad.to_numpy(), _want(1), rtol=1e-12)


def test_a_modulo_argument_that_reaches_the_written_columns_is_refused():
    _x, z, loss, fill, total = _fields()

    @fs.kernel
    def step(m: fs.i32):
        for i, j in fs.ndrange(N, N):
            z[i, N + j] = fs.sin(z[i, (j + 1) % m])

    with pytest.raises(AccessRuleError, match="Rule 1"), fs.ad.Tape(loss):
        fill()
        step(N + 2)  # (j + 1) % 6 reaches column 4 = N + 0, written by another thread
        total()


def test_a_store_through_a_rotated_ndrange_digit_differentiates():
    x, z, loss, fill, total = _fields()

    @fs.kernel
    def step(k: fs.i32):
        for i, j in fs.ndrange(N, N):
            z[i, N + (j + k) % N] = fs.sin(z[i, j])

    with fs.ad.Tape(loss):
        fill()
        step(3)
        total()
    np.testing.assert_allclose(x.grad.to_numpy(), _want(0), rtol=1e-12)


def test_a_rotation_modulo_less_than_the_digit_size_is_refused():
    _x, z, loss, fill, total = _fields()

    @fs.kernel
    def step():
        for i, j in fs.ndrange(N, N):
            z[i, N + (j + 1) % (N - 1)] = fs.sin(z[i, j])  # j = 0 and j = 3 store one element

    with pytest.raises(AccessRuleError, match="Rule 2"), fs.ad.Tape(loss):
        fill()
        step()
        total()
