"""A Tape that repeats the previous Tape's launches reuses its verdicts (`checks.tape_memo`):
for any two event sequences, the second judged after the first, every event gets the verdict
(and the message) a fresh `TapeState` gives it; a real Tape that diverges from the last one
is refused where a fresh one is; a training loop's repeated Tapes give analytic gradients."""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fieldsim as fs
from fieldsim.checks import KernelCheck, TapeState
from fieldsim.checks.tape_memo import Remembered, RepeatingTapeState
from fieldsim.errors import FieldsimError

T, N = 6, 4


def _ir(kernel):
    return next(iter(kernel._cache.values())).ir


@pytest.fixture(scope="module")
def prog():
    fs.init(arch=fs.cpu, offline_cache=False)
    x = fs.field(fs.f32, shape=(T, N), needs_grad=True, name="x")
    g = fs.field(fs.f32, shape=N, needs_grad=True, name="g")
    s = fs.field(fs.f32, shape=N, needs_grad=True, name="s")

    @fs.kernel
    def step(t: fs.i32):  # reads row t, writes row t + 1 (out of range for t = T - 1)
        for i in range(N):
            x[t + 1, i] = x[t, i] * x[t, i] * 0.5 + g[i]

    @fs.kernel
    def drift(t: fs.i32):  # a free read of row t (linear, constant factor): not logged
        for i in range(N):
            g[i] += x[t, i] * 0.5

    @fs.kernel
    def clobber(t: fs.i32):  # overwrites row t: refused once a launch read it
        for i in range(N):
            x[t, i] = 1.0

    @fs.kernel
    def scratch():  # overwrites what it reads: accepted inside a unit only
        for i in range(N):
            s[i] = s[i] + g[i]

    for k, args in ((step, (0,)), (clobber, (0,)), (scratch, ()), (drift, (0,))):
        k(*args)
    kernels = {}
    for name, k in (("step", step), ("clobber", clobber), ("scratch", scratch), ("drift", drift)):
        kernels[name] = (_ir(k), KernelCheck(_ir(k)))
    return {"x": x, "g": g, "kernels": kernels}


# one event: ("launch", kernel name, t), ("open",), ("close",) or ("write", row)
_EVENT = st.one_of(
    st.tuples(st.just("launch"), st.sampled_from(["step", "clobber", "scratch", "drift"]),
              st.integers(0, T - 1)),
    st.tuples(st.just("open")), st.tuples(st.just("close")),
    st.tuples(st.just("write"), st.integers(0, T - 1)))


def _run(state, events, prog) -> list:
    """Each event's outcome on `state` ('ok' or the error's class and text), up to the first
    refusal (a Tape stops there); units left open are closed at the end."""
    outcomes, units = [], []
    for ev in events:
        try:
            if ev[0] == "launch":
                ir, check = prog["kernels"][ev[1]]
                values = [] if ev[1] == "scratch" else [ev[2]]
                state.launch(ir, ev[1], check, values)
            elif ev[0] == "open":
                units.append(state.unit("unit", None))
                units[-1].__enter__()
            elif ev[0] == "close":
                if not units:
                    continue
                units.pop().__exit__(None, None, None)
            else:
                state.python_write(prog["x"], (ev[1], 0), None, f"x[{ev[1]}, 0] = ...")
            outcomes.append("ok")
        except FieldsimError as err:
            outcomes.append((type(err).__name__, str(err)))
            break
    while units:
        units.pop().__exit__(None, None, None)
    return outcomes


@settings(max_examples=150, deadline=None)
@given(first=st.lists(_EVENT, max_size=14), shared=st.integers(0, 14),
       rest=st.lists(_EVENT, max_size=8), tweak=st.integers(0, 14), t=st.integers(0, T - 1))
def test_every_event_of_a_second_tape_is_judged_as_a_fresh_tape_judges_it(prog, first, shared,
                                                                             rest, tweak, t):
    second = first[:shared] + rest  # a repeated prefix, then anything
    if tweak < len(second) and second[tweak][0] == "launch":  # the same kernel, another value
        second[tweak] = second[tweak][:2] + (t,)
    memo = Remembered()
    fresh = TapeState(index_ranges=True)
    assert _run(RepeatingTapeState(memo), first, prog) == _run(fresh, first, prog)
    again = RepeatingTapeState(memo)
    assert _run(again, second, prog) == _run(TapeState(index_ranges=True), second, prog)
    # a third Tape repeating the second one exactly: judged without a TapeState while it matches
    third = RepeatingTapeState(memo)
    expected = _run(TapeState(index_ranges=True), second, prog)
    assert _run(third, second, prog) == expected
    if all(o == "ok" for o in expected) and not any(ev[0] == "write" for ev in second):
        assert third.real is None


def test_a_repeated_tape_is_not_judged_again_and_a_divergent_one_is_refused_where_a_fresh_one_is(
        prog):
    memo = Remembered()
    events = [("launch", "step", t) for t in range(T - 1)]
    assert _run(RepeatingTapeState(memo), events, prog) == ["ok"] * (T - 1)
    again = RepeatingTapeState(memo)
    assert _run(again, events, prog) == ["ok"] * (T - 1) and again.real is None
    divergent = events[:3] + [("launch", "clobber", 1)]  # row 1 was read by step(1)
    got = _run(RepeatingTapeState(memo), divergent, prog)
    assert got == _run(TapeState(index_ranges=True), divergent, prog)
    assert got[-1][0] == "AccessRuleError" and "kernel 'step' (launch 2, t=1)" in got[-1][1]
    # the refused launch is not remembered: the same Tape again is refused again
    assert _run(RepeatingTapeState(memo), divergent, prog) == got


def test_the_same_kernel_with_other_argument_values_is_judged_afresh(prog):
    memo = Remembered()
    assert _run(RepeatingTapeState(memo), [("launch", "step", 1), ("launch", "clobber", 0)],
                prog) == ["ok", "ok"]
    got = _run(RepeatingTapeState(memo), [("launch", "step", 0), ("launch", "clobber", 0)], prog)
    assert got[0] == "ok" and got[1][0] == "AccessRuleError"  # step(0) read row 0


def test_a_later_tape_taking_the_sequence_over_does_not_change_what_an_earlier_one_matched(prog):
    memo = Remembered()
    events = [("launch", "step", t) for t in range(3)]
    _run(RepeatingTapeState(memo), events, prog)
    first = RepeatingTapeState(memo)
    _run(first, events[:1], prog)
    _run(RepeatingTapeState(memo), [("launch", "clobber", 5)], prog)  # takes it over, diverges
    # the first goes on from its own copy: step(1) is a repeat; clobber(0) meets step(0)'s read
    assert _run(first, [events[1], ("launch", "clobber", 0)], prog)[-1][0] == "AccessRuleError"


def test_repeated_tapes_give_analytic_gradients_and_a_divergent_tape_is_refused():
    fs.init(arch=fs.cpu, offline_cache=False)
    x = fs.field(fs.f32, shape=(T, N), needs_grad=True)
    w = fs.field(fs.f32, shape=(), needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def step(t: fs.i32):
        for i in range(N):
            x[t + 1, i] = x[t, i] * w[None]

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += x[T - 1, i]

    @fs.kernel
    def clobber(t: fs.i32):
        for i in range(N):
            x[t, i] = 0.0

    x0 = np.arange(1, N + 1, dtype=np.float32)
    for it in range(4):
        wv = 0.5 + 0.1 * it
        w[None] = wv
        x.from_numpy(np.vstack([x0, np.zeros((T - 1, N), np.float32)]))
        with fs.ad.Tape(loss):
            for t in range(T - 1):
                step(t)
            total()
        # loss = sum(x0) w^(T-1): d/dw = (T-1) w^(T-2) sum(x0), d/dx0 = w^(T-1)
        assert w.grad[None] == pytest.approx((T - 1) * wv ** (T - 2) * x0.sum(), rel=1e-5)
        assert np.allclose(x.grad.to_numpy()[0], wv ** (T - 1), rtol=1e-5)
    with pytest.raises(fs.AccessRuleError, match=r"kernel 'step' \(launch 3, t=2\)"):
        with fs.ad.Tape(loss):
            for t in range(3):
                step(t)
            clobber(2)


def test_a_free_read_then_an_overwrite_is_accepted_by_the_memo_as_by_a_fresh_tape(prog):
    # gh-refused2: drift's read of row t is linear with a constant factor, so clobber(t) may
    # overwrite it; step's squared read of row t is logged, so clobber(t) after it is refused
    events = [("launch", "drift", 2), ("launch", "clobber", 2), ("launch", "step", 3),
              ("launch", "clobber", 3)]
    memo = Remembered()
    fresh = _run(TapeState(index_ranges=True), events, prog)
    assert fresh[:3] == ["ok"] * 3 and fresh[3][0] == "AccessRuleError"
    assert _run(RepeatingTapeState(memo), events, prog) == fresh
    assert _run(RepeatingTapeState(memo), events, prog) == fresh
