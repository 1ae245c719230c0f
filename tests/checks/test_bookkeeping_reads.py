"""A read whose value no adjoint computation uses may be overwritten afterwards: a renderer's
`get_final_image` accumulates `out[i] += tape[i, n[i] - 1]` and, beside it, keeps a running
maximum of an integer counter (`if c > best[None]: best[None] = c`). Taichi differentiates such a
kernel; its gradient only needs the accumulation. Reads that feed an adjoint (an index, a
condition guarding a derivative, a factor) are still protected by Rule 1."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import AccessRuleError

N = 6


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu, default_fp=fs.f64)


def _fields():
    x = fs.field(fs.f64, shape=N, needs_grad=True)
    y = fs.field(fs.f64, shape=N, needs_grad=True)
    cnt = fs.field(fs.i32, shape=N)
    best = fs.field(fs.i32, shape=())
    x.from_numpy(np.linspace(0.5, 1.5, N))
    cnt.from_numpy(np.array([3, 1, 4, 1, 5, 2], dtype=np.int32))
    return x, y, cnt, best


def test_a_running_maximum_beside_a_differentiated_store_is_accepted():
    x, y, cnt, best = _fields()

    @fs.kernel
    def final():
        for i in x:
            c = cnt[i] - 1
            y[i] += x[i] * x[i]
            if c > best[None]:
                best[None] = c

    final()
    assert best[None] == 4
    y.grad.fill(1.0)
    final.grad()
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * x.to_numpy(), rtol=1e-12)


def test_a_counter_read_and_then_bumped_in_a_loop_is_accepted():
    x, y, cnt, best = _fields()

    @fs.kernel
    def march():
        for i in x:
            for s in range(cnt[i]):
                if best[None] < 100:
                    best[None] += 1
                y[i] += x[i]

    march()
    assert best[None] == 16
    y.grad.fill(1.0)
    march.grad()
    np.testing.assert_allclose(x.grad.to_numpy(), cnt.to_numpy().astype(float), rtol=1e-12)


def test_a_counter_guarding_a_derivative_is_still_refused():
    x, y, cnt, best = _fields()

    @fs.kernel
    def guarded():
        for i in x:
            if best[None] < 2:
                y[i] += x[i]
            best[None] += 1

    with pytest.raises(AccessRuleError, match="best"):
        guarded()
        guarded.grad()


def test_a_counter_used_as_an_index_is_still_refused():
    x, y, cnt, best = _fields()

    @fs.kernel
    def indexed():
        for i in range(1):
            for s in range(3):
                y[s] += x[best[None]]
                best[None] = best[None] + 1

    with pytest.raises(AccessRuleError, match="best"):
        indexed()
        indexed.grad()


def test_a_counter_a_debug_assert_reads_is_still_refused():
    """An adjoint checks its primal's asserts again: what an assert reads is needed."""
    fs.init(arch=fs.cpu, default_fp=fs.f64, debug=True)
    x, y, cnt, best = _fields()

    @fs.kernel
    def checked():
        for i in range(1):
            for s in range(3):
                assert best[None] < 10
                y[s] += x[s]
                best[None] = best[None] + 1

    with pytest.raises(AccessRuleError, match="best"):
        checked()
        checked.grad()


def test_a_counter_deciding_only_a_bookkeeping_loops_exit_is_accepted():
    """A `while` loop that holds no derivative work: when it stops changes no adjoint value,
    so the counter it reads may be bumped afterwards (its `break`s were always needed)."""
    x, y, _, best = _fields()

    @fs.kernel
    def scan():
        for i in range(1):
            for s in range(3):
                y[s] += x[s] * x[s]
                j = 0
                while j < best[None]:
                    j += 1
                best[None] = j + 2

    scan()
    assert best[None] == 6
    y.grad.fill(1.0)
    scan.grad()
    xs = x.to_numpy()
    np.testing.assert_allclose(x.grad.to_numpy()[:3], 2 * xs[:3], rtol=1e-12)


def test_a_counter_deciding_a_differentiated_loops_exit_is_still_refused():
    x, y, _, best = _fields()

    @fs.kernel
    def scan():
        for i in range(1):
            for s in range(3):
                j = 0
                while j < best[None]:
                    j += 1
                    y[s] += x[s]
                best[None] = j + 2

    with pytest.raises(AccessRuleError, match="best"):
        scan()
        scan.grad()


def test_a_read_reaching_only_a_field_without_gradient_may_be_overwritten():
    """`plain[i] = sin(x[i])` into a field without a gradient: no adjoint flows into that read,
    so the bookkeeping branch around it may depend on a counter bumped afterwards."""
    x, y, _, best = _fields()
    plain = fs.field(fs.f64, shape=N)

    @fs.kernel
    def side():
        for i in range(1):
            for s in range(3):
                y[s] += x[s] * x[s]
                if best[None] < 2:
                    plain[s] = fs.sin(x[s])
                best[None] += 1

    side()
    assert best[None] == 3
    np.testing.assert_allclose(plain.to_numpy()[:2], np.sin(x.to_numpy()[:2]), rtol=1e-15)
    y.grad.fill(1.0)
    side.grad()
    xs = x.to_numpy()
    np.testing.assert_allclose(x.grad.to_numpy()[:3], 2 * xs[:3], rtol=1e-12)
