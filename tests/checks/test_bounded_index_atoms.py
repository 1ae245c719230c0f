"""`x % c` of an integer (Python's modulo, c > 0) lies in 0..c-1 whatever x is, so an access
indexed by it is told apart from one outside that range: `y[i + n] = f(y[(i + 1) % n])` reads
the first half of `y` and writes the second, within a kernel and across the Tape's kernels
(Taichi accepts these programs and differentiates them correctly). Where the ranges do meet,
the access is still refused. The same holds for the clamps of stencils (`ti.max(i - 1, 0)`,
`ti.min(i + 1, n - 1)`), `abs`, `select`, `i & c` and `i >> k` of bounded operands. A store
through a rotation, `y[n + (i + k) % n]` over range(n), never hits one element twice."""
import numpy as np
import pytest
from support.half_fields import X0, N, half_fields

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu, default_fp=fs.f64)


def test_a_kernel_reading_a_modulo_index_and_writing_past_it_differentiates():
    x, y, loss, fill, total = half_fields()

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
    x, y, loss, fill, total = half_fields()

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
    x, y, loss, fill, total = half_fields()

    @fs.kernel
    def step():
        for i in range(N):
            y[i + N] = y[(i + 1) % (2 * N)] * x[i]  # i = 3 reads y[4], which i = 0 writes

    with pytest.raises(fs.AccessRuleError, match="field 'y'"), fs.ad.Tape(loss):
        fill()
        step()
        total()


CLAMPS = [  # (what the kernel reads, the same in Python)
    ("max(i - 1, 0)", lambda i: max(i - 1, 0)),
    ("min(i + 1, N - 1)", lambda i: min(i + 1, N - 1)),
    ("abs(i - 2)", lambda i: abs(i - 2)),
    ("select(i > 1, i - 2, i)", lambda i: i - 2 if i > 1 else i),
    ("i & 1", lambda i: i & 1),
    ("i >> 1", lambda i: i >> 1),
]


@fs.func
def _clamped(i, which: fs.template()):
    if fs.static(which == 0):
        return fs.max(i - 1, 0)
    if fs.static(which == 1):
        return fs.min(i + 1, N - 1)
    if fs.static(which == 2):
        return abs(i - 2)
    if fs.static(which == 3):
        return fs.select(i > 1, i - 2, i)
    if fs.static(which == 4):
        return i & 1
    return i >> 1


@pytest.mark.parametrize("which", range(len(CLAMPS)), ids=[c[0] for c in CLAMPS])
def test_a_clamped_read_below_the_write_differentiates(which):
    x, y, loss, fill, total = half_fields()

    @fs.kernel
    def step(which: fs.template()):
        for i in range(N):
            y[i + N] = y[_clamped(i, which)] * x[i]

    with fs.ad.Tape(loss):
        fill()
        step(which)
        total()
    # loss = sum_i x[r(i)]^2 x[i]
    r = CLAMPS[which][1]
    want = np.array([X0[r(k)] ** 2 + sum(2 * X0[k] * X0[i] for i in range(N) if r(i) == k)
                     for k in range(N)])
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-12)


def test_a_store_through_a_rotation_differentiates():
    x, y, loss, fill, total = half_fields()

    @fs.kernel
    def rotate(m: fs.i32):
        for i in range(N):
            y[N + (i + m) % N] = fs.sin(y[i]) * x[(i + 1) % N]

    with fs.ad.Tape(loss):
        fill()
        rotate(3)
        total()
    # loss = sum_i sin(x[i]^2) x[i+1]
    nxt, prv = np.roll(X0, -1), np.roll(X0, 1)
    want = 2 * X0 * np.cos(X0 ** 2) * nxt + np.sin(prv ** 2)
    np.testing.assert_allclose(x.grad.to_numpy(), want, rtol=1e-12)


def test_a_modulo_store_that_wraps_onto_itself_is_refused():
    x, y, loss, _fill, total = half_fields()

    @fs.kernel
    def fold():
        for i in range(N):
            y[N + (i + 1) % (N - 1)] = x[i]  # i = 0 and i = N - 1 both store y[N + 1]

    with pytest.raises(fs.AccessRuleError, match="field 'y'"), fs.ad.Tape(loss):
        fold()
        total()
