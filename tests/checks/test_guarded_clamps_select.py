"""Conditions narrow the index forms of clamps and selects, as Taichi's programs use them:
`ti.select(i < 2, i + 2, i - 2)` takes each branch only where its condition holds (so it
stays in 0..3 over range(4), apart from a write to `y[4 + i]`), and under `if i >= n:` the
clamp `ti.max(i, n)` is `i` itself (one element a thread, not any of n..2n-1). Taichi accepts
these kernels and differentiates them correctly, as it does a select of two equal indices
and `y[n + (i ^ 1)]` (xor with a constant permutes the integers); where the ranges still meet, the
kernel is still refused."""
import numpy as np
import pytest
from support.half_fields import X0, N, half_fields

import fieldsim as fs
from fieldsim.errors import AccessRuleError


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu, default_fp=fs.f64)


def test_a_read_through_a_select_swapping_halves_is_apart_from_the_write():
    x, y, loss, fill, total = half_fields()

    @fs.kernel
    def step():
        for i in range(N):
            y[N + i] = fs.sin(y[fs.select(i < 2, i + 2, i - 2)]) * x[i]

    with fs.ad.Tape(loss):
        fill()
        step()
        total()
    # loss = sum_i sin(x[s(i)]^2) x[i], s swapping (0, 2) and (1, 3)
    s = np.roll(X0, 2)
    want = np.sin(s ** 2) + np.cos(X0 ** 2) * 2 * X0 * s
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-12)


def test_a_clamp_an_if_makes_redundant_stores_one_element_a_thread():
    x, y, loss, fill, total = half_fields()

    @fs.kernel
    def step():
        for i in range(2 * N):
            if i >= N:
                y[fs.max(i, N)] = fs.sin(y[fs.min(i - N, N - 1)]) * x[i - N]

    with fs.ad.Tape(loss):
        fill()
        step()
        total()
    want = np.sin(X0 ** 2) + np.cos(X0 ** 2) * 2 * X0 * X0
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-12)


def test_a_select_branch_reaching_the_written_half_is_refused():
    _x, y, loss, fill, total = half_fields()

    @fs.kernel
    def step():
        for i in range(N):
            y[N + i] = y[fs.select(i < 3, i + 2, i - 2)] ** 2  # i = 2 reads y[4]

    with pytest.raises(AccessRuleError, match="Rule 1"), fs.ad.Tape(loss):
        fill()
        step()
        total()


def test_a_clamp_the_if_leaves_active_is_refused():
    x, y, loss, fill, total = half_fields()

    @fs.kernel
    def step():
        for i in range(N):
            if i >= 1:
                y[fs.max(i, 2) + N] = fs.sin(x[i]) * y[i]  # i = 1 and i = 2 store y[6]

    with pytest.raises(AccessRuleError, match="Rule 2"), fs.ad.Tape(loss):
        fill()
        step()
        total()


def test_a_store_through_xor_with_a_constant_swaps_neighbours_once_each():
    x, y, loss, fill, total = half_fields()

    @fs.kernel
    def step():
        for i in range(N):
            y[N + (i ^ 1)] = fs.sin(y[i]) * x[i ^ 1]

    with fs.ad.Tape(loss):
        fill()
        step()
        total()
    # loss = sum_i sin(x[i]^2) x[i ^ 1]
    p = X0[[1, 0, 3, 2]]
    want = np.cos(X0 ** 2) * 2 * X0 * p + np.sin(p ** 2)
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-12)


def test_a_select_of_two_equal_indices_is_that_index():
    x, y, loss, fill, total = half_fields()

    @fs.kernel
    def step():
        for i in range(N):
            y[fs.select(i < 2, N + i, i + N)] = y[i] * x[i]

    with fs.ad.Tape(loss):
        fill()
        step()
        total()
    np.testing.assert_allclose(x.grad.to_numpy(), 3 * X0 ** 2, rtol=1e-12)


def test_xor_indices_that_meet_are_refused():
    _x, y, loss, fill, total = half_fields()

    @fs.kernel
    def pairs():
        for i in range(N):
            y[N + ((i // 2) ^ 1)] = y[i] * 2.0  # i = 0 and i = 1 store one element

    @fs.kernel
    def swap():
        for i in range(N):
            y[i ^ 1] = fs.sin(y[i])  # thread 1 stores what thread 0 reads

    for kernel, rule in ((pairs, "Rule 2"), (swap, "Rule 1")):
        with pytest.raises(AccessRuleError, match=rule), fs.ad.Tape(loss):
            fill()
            kernel()
            total()
