"""The launcher's direct path (`launch._Frame.direct`): a program whose tasks always run on the
calling thread in one call is launched without per-task scheduling. Which programs take it,
and that errors, argument values, fields placed later and returns behave as on the general
path."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.lang import runtime

pytestmark = pytest.mark.cpu_backend("the CPU backend's direct-call launch frames")


def _frame(kernel):
    ck = next(iter(kernel._cache.values()))
    return ck.program.frame


def test_small_constant_loops_take_the_direct_path_and_others_do_not():
    fs.init(arch=fs.cpu, cpu_max_num_threads=2, offline_cache=False)
    x = fs.field(fs.f32, shape=16)

    @fs.kernel
    def small():
        for i in range(16):
            x[i] = i

    @fs.kernel
    def by_argument(n: fs.i32):
        for i in range(n):
            x[i] = 2 * i

    @fs.kernel
    def with_while():
        for i in range(4):
            j = 0
            while j < i:
                j += 1
            x[i] = j

    small()
    by_argument(16)
    with_while()
    assert _frame(small).direct is not None
    assert _frame(by_argument).direct is None  # its size is known per launch only
    assert _frame(with_while).direct is None  # Ctrl-C must reach its `while` loop
    assert x.to_numpy()[:4].tolist() == [0, 1, 2, 3]


def test_an_error_in_a_direct_launch_does_not_leak_into_the_next_one():
    fs.init(arch=fs.cpu, debug=True, offline_cache=False)
    y = fs.field(fs.i32, shape=4)

    @fs.kernel
    def put(i: fs.i32, v: fs.i32):
        for _ in range(1):
            y[i] = v

    put(0, 1)
    assert _frame(put).direct is not None
    with pytest.raises(fs.FieldsimIndexError, match="out of range for field"):
        put(7, 5)
    put(2, 9)  # the error words were cleared: this launch runs and reports nothing
    put(3, 4)
    assert y.to_numpy().tolist() == [1, 0, 9, 4]


def test_scalar_values_and_returns_on_the_direct_path():
    fs.init(arch=fs.cpu, offline_cache=False)

    @fs.kernel
    def mix(a: fs.f64, n: fs.i64, u: fs.u64) -> fs.f64:
        return a * n + fs.cast(u >> 60, fs.f64)

    assert mix(0.5, 4, 0) == 2.0
    assert _frame(mix).direct is not None
    # a u64 above 2**63 travels as its bit pattern; the return slot is refilled per launch
    assert mix(1.5, -2, (1 << 64) - 1) == pytest.approx(-3.0 + 15.0)
    assert mix(0.25, 8, 1 << 63) == pytest.approx(2.0 + 8.0)


def test_a_field_placed_after_the_first_launch_is_seen_by_the_next():
    fs.init(arch=fs.cpu, offline_cache=False)
    a = fs.field(fs.f32)
    fs.root.dense(fs.i, 3).place(a)

    @fs.kernel
    def fill(v: fs.f32):
        for i in range(3):
            a[i] = v

    fill(1.0)
    before = runtime.get().stats["launches"]
    b = fs.field(fs.f32, shape=5)  # a new tree: a's storage is unchanged, and must still be used
    fill(2.0)
    b.fill(3.0)
    assert a.to_numpy().tolist() == [2.0, 2.0, 2.0]
    assert runtime.get().stats["launches"] == before + 1
    assert np.all(b.to_numpy() == 3.0)
