"""The Tape's per-argument launch plan (`boxes.LaunchBoxes`, translated template boxes) covers
exactly the elements the full per-access computation gives, and the fast (non-validating) Tape
path gives the same verdicts as before: an overwrite of a read element is refused, a time-stepped
program is not, whatever order the argument values come in."""
import itertools

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.checks import KernelCheck, TapeState
from fieldsim.checks.boxes import LaunchBoxes
from fieldsim.errors import AccessRuleError

T, N = 6, 5


def _elements(box):
    return set(itertools.product(*(range(c.lo, c.hi + 1, c.step) if c.step else [c.lo]
                                   for c in box)))


def _cover(pairs):
    return {(id(a.field), a.is_write, e) for a, box in pairs for e in _elements(box)}


def _program():
    fs.init(arch=fs.cpu, offline_cache=False)
    x = fs.field(fs.f32, shape=(T + 2, N), needs_grad=True)
    w = fs.field(fs.f32, shape=(N, 4), needs_grad=True)
    idx = fs.field(fs.i32, shape=N)

    @fs.kernel
    def step(t: fs.i32, s: fs.i32):
        for i in range(N):
            acc = 0.0
            for k in fs.static(range(4)):  # unrolled: w[i, 0..3] merge into one box
                acc += w[i, k] * x[t, i]
            x[t + 1, i] = acc + x[t, idx[i]] + x[t, s]

    step(0, 1)
    ir = next(iter(step._cache.values())).ir
    return step, ir, x


@pytest.mark.parametrize("t,s", [(0, 0), (1, 3), (4, 4), (5, 0)])
def test_translated_plan_covers_what_the_full_computation_does(t, s):
    _, ir, _ = _program()
    check = KernelCheck(ir)
    env = {0: t, 1: s}
    fast = LaunchBoxes(check.accesses)
    assert fast._templates  # the argument-shifted accesses took the template path
    full = LaunchBoxes(check.accesses)._full(env, per_access=False)
    assert _cover(fast.of_launch(env)) == _cover(full)
    assert _cover(fast.of_launch(env, per_access=True)) == _cover(
        LaunchBoxes(check.accesses)._full(env, per_access=True))
    writes, reads = fast.plan(env)
    assert _cover([(a, b) for a, b, _ in writes + reads]) == _cover(full)
    # the write is row t + 1, every column; reads stay in row t
    rows = {e[0] for a, b, _ in writes for e in _elements(b)}
    assert rows == {t + 1}


def test_fast_path_refuses_an_overwrite_of_a_read_row_in_any_order():
    _, ir, _ = _program()
    check = KernelCheck(ir)
    for order in ([0, 1, 2], [2, 1, 0]):
        st = TapeState()
        for t in order:  # reading row t, writing row t + 1: only the ascending order is legal
            if order == [0, 1, 2] or t == order[0]:
                st.launch(ir, "step", check, [t, 0])
            else:
                with pytest.raises(AccessRuleError, match="Rule 1"):
                    st.launch(ir, "step", check, [t, 0])
                break


def test_repeated_argument_values_on_a_new_tape_are_judged_again():
    step, _, x = _program()
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += x[T, i]

    for _ in range(2):  # the second Tape reuses the cached plans: verdicts must not change
        with fs.ad.Tape(loss=loss):
            for t in range(T):
                step(t, 0)
            total()
        with pytest.raises(AccessRuleError):
            with fs.ad.Tape(loss=loss):
                step(1, 0)
                step(0, 0)  # writes row 1, which the first launch read
    assert np.isfinite(x.grad.to_numpy()).all()
