"""The Tape's fast path (`boxes.FastPlan`: one parametric plan per kernel, int-keyed read logs)
judges like the full path: its boxes are those `LaunchBoxes.plan` computes for every argument
value, a violation at launch 5,000 is refused with the same message and file:line as the
validating Tape's full path gives, and what a Tape keeps per launch is not walked by the GC."""
import gc
import itertools

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.checks import KernelCheck, TapeState
from fieldsim.checks.boxes import LaunchBoxes
from fieldsim.errors import AccessRuleError

T, N = 5002, 4


def _ir(kernel):
    return next(iter(kernel._cache.values())).ir


def _line_of(kernel, text):
    import inspect
    lines, first = inspect.getsourcelines(kernel.fn)
    return first + next(k for k, line in enumerate(lines) if text in line)


@pytest.fixture
def prog():
    fs.init(arch=fs.cpu, offline_cache=False)
    x = fs.field(fs.f32, shape=(T + 2, N), needs_grad=True, name="x")
    y = fs.field(fs.f32, shape=(N, 12), needs_grad=True, name="y")
    g = fs.field(fs.f32, shape=N, needs_grad=True, name="g")
    w = fs.field(fs.f32, shape=(12, N, 5), needs_grad=True, name="w")
    loss = fs.field(fs.f32, shape=(), needs_grad=True, name="loss")

    @fs.kernel
    def step(t: fs.i32):
        for i in range(N):
            v = x[t, i] * 0.5  # the read a later overwrite meets
            if i >= 1:  # a guard free of arguments: still one translated plan
                v += g[i]
            x[t + 1, i] = v

    @fs.kernel
    def clobber(t: fs.i32):
        for i in range(N):
            x[t, i] = 1.0

    @fs.kernel
    def column(t: fs.i32):  # translates along the second index
        for i in range(N):
            y[i, t + 1] = y[i, t] * y[i, t]  # squared: a linear read is not logged (free)

    @fs.kernel
    def pair(t: fs.i32, s: fs.i32):  # two forms: t + s and t
        for i in range(N):
            x[t + s + 1, i] = x[t + s, i] * x[t + s, i] + g[i] * y[i, t]

    @fs.kernel
    def cube(t: fs.i32, s: fs.i32):  # translates along two axes: (template, shifts) entries
        for i in range(N):
            w[t + 1, i, s] = w[t, i, s] * w[t, i, s] + 1.0

    @fs.kernel
    def rows(t: fs.i32, s: fs.i32):  # one field read under two forms: merged per values
        for i in range(N):
            x[t + s + 1, i] = x[t + s, i] * x[t, i]

    @fs.kernel
    def bounded(n: fs.i32):  # an argument in a loop bound: judged per argument values
        for i in range(n):
            x[0, i] = g[i]

    @fs.kernel
    def from_start(start: fs.i32, t: fs.i32):  # a guard using an argument: per values too
        for i in range(N):
            if i >= start:
                x[t + 1, i] = x[t, i] * x[t, i]

    for k, args in ((step, (0,)), (clobber, (T,)), (column, (0,)), (pair, (0, 0)),
                    (cube, (0, 0)), (rows, (0, 0)), (bounded, (1,)), (from_start, (0, 0))):
        k(*args)
    return {"x": x, "y": y, "g": g, "loss": loss, "step": step, "clobber": clobber,
            "column": column, "pair": pair, "rows": rows, "bounded": bounded,
            "from_start": from_start, "w": w, "cube": cube}


@pytest.mark.parametrize("name,values", [
    ("step", [(0,), (7,), (4999,)]),
    ("column", [(0,), (5,), (10,)]),
    ("pair", [(0, 0), (3, 2), (9, 1)]),
    ("cube", [(0, 0), (3, 4), (10, 2)]),
    ("clobber", [(2,), (T,)]),
])
def test_the_parametric_plan_gives_the_boxes_plan_computes(prog, name, values):
    check = KernelCheck(_ir(prog[name]))
    boxes = LaunchBoxes(check.accesses)
    plan = boxes.fast
    assert plan is not None
    for vals in values:
        env = dict(enumerate(vals))
        writes, reads = LaunchBoxes(check.accesses).plan(env)
        deltas = plan.deltas(list(vals))
        assert [(t.access, t.box(deltas)) for t in plan.writes] == [(a, b) for a, b, _ in writes]
        assert [(t.access, t.box(deltas)) for t in plan.reads] == [(a, b) for a, b, _ in reads]
        for t in plan.writes + plan.reads:  # the log's bucket: the first one-value axis
            box = t.box(deltas)
            singles = [d for d, c in enumerate(box) if c.lo == c.hi]
            assert t.ax == (singles[0] if singles else -1)
            assert t.key(deltas) == (box[t.ax].lo if singles else None)
            assert all(t.value_at(d, deltas) == box[d].lo for d in singles)


def test_a_guard_free_of_arguments_translates_and_others_are_planned_per_values(prog):
    step = LaunchBoxes(KernelCheck(_ir(prog["step"])).accesses)
    assert step.fast is not None and not step._in_full  # `if i >= 1` on g[i]
    guarded = [t for t in step.fast.reads if t.access.guards]
    assert guarded and all(not c.exact for t in guarded for c in t.base)
    for name in ("from_start", "bounded", "rows"):
        assert LaunchBoxes(KernelCheck(_ir(prog[name])).accesses).fast is None


def _elements(pairs):
    """(field, write?, exact?, element) for every element the boxes cover."""
    return {(id(a.field), a.is_write, all(c.exact for c in box), e) for a, box in pairs
            for e in itertools.product(*(range(c.lo, c.hi + 1, c.step or 1) for c in box))}


def test_boxes_of_a_guarded_template_match_the_full_computation(prog):
    check = KernelCheck(_ir(prog["step"]))
    for t in (0, 3, 100):
        env = {0: t}
        got = LaunchBoxes(check.accesses).of_launch(env, per_access=True)
        assert got == LaunchBoxes(check.accesses)._full(env, per_access=True)
        merged = LaunchBoxes(check.accesses).of_launch(env)
        assert _elements(merged) == _elements(LaunchBoxes(check.accesses)._full(env, False))


def _violation(prog, launches: int, validation: bool) -> str:
    """Launch step(0..launches-1) on a TapeState, then clobber a row an early step read."""
    ir, check = _ir(prog["step"]), KernelCheck(_ir(prog["step"]))
    cir, ccheck = _ir(prog["clobber"]), KernelCheck(_ir(prog["clobber"]))
    st = TapeState(validation=validation)
    for t in range(launches):
        st.launch(ir, "step", check, [t])
    with pytest.raises(AccessRuleError) as err:
        st.launch(cir, "clobber", ccheck, [17])
    assert st.launches == launches  # the refused launch is not counted
    return str(err.value)


def test_a_violation_at_launch_5000_is_refused_as_the_full_path_refuses_it(prog):
    fast = _violation(prog, 5000, validation=False)
    assert fast == _violation(prog, 5000, validation=True)
    assert "kernel 'step' (launch 18, t=17)" in fast and "kernel 'clobber' (launch 5001, t=17)" in fast
    read_line = _line_of(prog["step"], "v = x[t, i] * 0.5")
    write_line = _line_of(prog["clobber"], "x[t, i] = 1.0")
    assert f"test_tape_fast_path.py:{read_line}" in fast
    assert f"test_tape_fast_path.py:{write_line}" in fast
    early = _violation(prog, 20, validation=False)  # the same refusal early in a Tape
    assert early == fast.replace("launch 5001", "launch 21")


def test_a_violation_at_launch_5000_on_a_real_tape_names_the_users_line(prog):
    x, loss, step, clobber = prog["x"], prog["loss"], prog["step"], prog["clobber"]
    x.from_numpy(np.ones((T + 2, N), dtype=np.float32))
    with pytest.raises(fs.AccessRuleError) as err, fs.ad.Tape(loss):
        for t in range(5000):
            step(t)
        clobber(4321)
    text = str(err.value)
    assert "kernel 'step' (launch 4322, t=4321)" in text
    assert f"test_tape_fast_path.py:{_line_of(clobber, 'x[t, i] = 1.0')}" in text
    assert np.all(x.to_numpy()[4321] == 0.0)  # 0.5 ** 4321: the refused clobber never ran


def test_a_python_scope_write_meets_a_translated_second_index(prog):
    """`y[i, t]` is bucketed by its second index; a later Python-scope write is checked
    against it, and the first launch that read the column is named."""
    ir, check = _ir(prog["column"]), KernelCheck(_ir(prog["column"]))
    for validation in (False, True):
        st = TapeState(validation=validation)
        for t in range(10):
            st.launch(ir, "column", check, [t])
        with pytest.raises(AccessRuleError, match=r"kernel 'column' \(launch 4, t=3\)"):
            st.python_write(prog["y"], (2, 3), None, "y[2, 3] = ...")
        st.python_write(prog["y"], (2, 11), None, "y[2, 11] = ...")  # written, never read: fine


def test_two_translated_axes_name_the_first_reader(prog):
    ir, check = _ir(prog["cube"]), KernelCheck(_ir(prog["cube"]))
    assert {t.kind for t in LaunchBoxes(check.accesses).fast.reads} == {2}
    for validation in (False, True):
        st = TapeState(validation=validation)
        for t, s in itertools.product(range(5), range(5)):
            st.launch(ir, "cube", check, [t, s])
        st.python_write(prog["w"], (5, 1, 4), None, "w[5, 1, 4] = ...")  # written, never read
        with pytest.raises(AccessRuleError, match=r"kernel 'cube' \(launch 14, t=2, s=3\)"):
            st.python_write(prog["w"], (2, 1, 3), None, "w[2, 1, 3] = ...")
        with pytest.raises(AccessRuleError, match=r"kernel 'cube' \(launch 22, t=4, s=1\)"):
            st.launch(ir, "cube", check, [3, 1])  # writes w[4, :, 1], read by launch 22


def test_a_legal_launch_late_in_a_tape_looks_at_no_logged_read(prog, monkeypatch):
    """After thousands of launches, a launch whose writes meet no read inspects no log entry
    (per launch, cost independent of the Tape's length), for `x[t, i]` and `y[i, t]` alike."""
    looked = []
    original = TapeState._entry_box
    monkeypatch.setattr(TapeState, "_entry_box",
                        lambda self, key, entry: looked.append(entry) or original(self, key, entry))
    for name, n in (("step", 4000), ("column", 10)):
        ir, check = _ir(prog[name]), KernelCheck(_ir(prog[name]))
        st = TapeState()
        for t in range(n):
            st.launch(ir, name, check, [t])
        assert not looked
        with pytest.raises(AccessRuleError):
            st.launch(ir, name, check, [n // 2])  # writes what launch n // 2 + 2 read
        assert 0 < len(looked) <= 3
        looked.clear()


def test_two_argument_forms_and_per_value_plans_refuse_the_same_launches(prog):
    checks = {n: (_ir(prog[n]), KernelCheck(_ir(prog[n])))
              for n in ("pair", "rows", "from_start", "bounded", "step")}
    seqs = [
        [("pair", [0, 0]), ("pair", [1, 0]), ("pair", [0, 0])],  # pair(0, 0) writes row 1 again
        [("rows", [0, 1]), ("rows", [2, 1]), ("rows", [1, 1])],  # rows(1, 1) writes row 3
        [("from_start", [0, 3]), ("step", [2])],  # step(2) writes row 3, which was read
        [("step", [0]), ("bounded", [3])],  # bounded writes row 0, read by step(0)
        [("step", [1]), ("bounded", [3]), ("pair", [0, 1])],  # legal: rows 1 -> 2, row 0 -> 2
    ]
    for seq in seqs:
        outcomes = []
        for validation in (False, True):
            st, out = TapeState(validation=validation), []
            for name, vals in seq:
                try:
                    st.launch(checks[name][0], name, checks[name][1], vals)
                    out.append(None)
                except AccessRuleError as e:  # who refused whom, on which elements (a merged
                    # box names its first access, the validating path each access)
                    out.append([ln for ln in str(e).splitlines()
                                if ln.startswith(("On this Tape", "  elements in both"))])
                    break
            outcomes.append(out)
        assert outcomes[0] == outcomes[1], seq
        assert len(outcomes[0]) == len(seq)  # each is refused at its last launch, if at all
        assert (outcomes[0][-1] is None) == (seq == seqs[-1])  # only the last one is legal
        assert outcomes[0][-1] is None or len(outcomes[0][-1]) == 2


def test_an_undecided_guarded_overlap_is_refused_without_validation(prog):
    """Two guarded (inexact) boxes that may share elements: the fast path refuses, naming
    the first launch (a validating Tape would decide it element by element at run time)."""
    ir, check = _ir(prog["from_start"]), KernelCheck(_ir(prog["from_start"]))
    st = TapeState()
    st.launch(ir, "from_start", check, [1, 5])  # reads row 5 where i >= 1
    st.launch(ir, "from_start", check, [0, 6])  # writes row 7: nobody read it
    with pytest.raises(AccessRuleError, match=r"kernel 'from_start' \(launch 1, start=1, t=5\)"):
        st.launch(ir, "from_start", check, [2, 4])  # writes row 5 where i >= 2


def test_units_log_their_reads_when_they_end(prog):
    ir, check = _ir(prog["step"]), KernelCheck(_ir(prog["step"]))
    cir, ccheck = _ir(prog["clobber"]), KernelCheck(_ir(prog["clobber"]))
    st = TapeState()
    for t in range(3000):
        with st.unit("advance"):
            st.launch(ir, "step", check, [t])
            st.launch(cir, "clobber", ccheck, [t])  # inside its own unit: not checked
    with pytest.raises(AccessRuleError, match=r"inside `advance`, kernel 'step' \(launch 1001"):
        st.launch(cir, "clobber", ccheck, [500])


def test_what_a_tape_keeps_per_launch_is_not_tracked_by_the_gc(prog):
    """10,000 launches with new argument values leave no objects for the cyclic GC to walk
    (the old path kept an Origin, boxes and a plan per launch: tens per launch)."""
    ir, check = _ir(prog["step"]), KernelCheck(_ir(prog["step"]))
    st = TapeState()
    st.launch(ir, "step", check, [0])
    gc.collect()
    before = len(gc.get_objects())
    for t in itertools.islice(itertools.count(1), 5000):
        st.launch(ir, "step", check, [t])
    gc.collect()
    assert len(gc.get_objects()) - before < 50


def test_a_dropped_tape_state_is_freed_without_the_gc(prog):
    """No reference cycle through the read logs: a finished Tape's checker state goes at once
    (a cycle kept every dropped Tape's logs alive until a full collection)."""
    import weakref
    ir, check = _ir(prog["step"]), KernelCheck(_ir(prog["step"]))
    gc.disable()
    try:
        st = TapeState()
        for t in range(50):
            st.launch(ir, "step", check, [t])
        with pytest.raises(AccessRuleError):
            st.launch(ir, "step", check, [3])  # an Origin made from the logs, then dropped
        ref = weakref.ref(st)
        del st
        assert ref() is None
    finally:
        gc.enable()


def test_reads_of_neighbouring_time_steps_keep_their_buckets(monkeypatch):
    """`v[t] = d * v[t - 1]; x[t] = x[t - 1] + v[t]` reads v at t - 1 and t: two boxes, each in
    its time step's bucket, not one merged box v[t - 1:t + 1] that every later write of the
    Tape would have to look at (DiffTaichi's gradient_explosion.py: 300 us a launch at 500
    launches, growing with the Tape)."""
    fs.init(arch=fs.cpu, offline_cache=False)
    v = fs.field(fs.f32, shape=3000, needs_grad=True)
    x = fs.field(fs.f32, shape=3000, needs_grad=True)
    d = fs.field(fs.f32, shape=(), needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def advance(t: fs.i32):
        v[t] = d[None] * v[t - 1] + 1.0
        x[t] = x[t - 1] + 0.01 * v[t]

    @fs.kernel
    def compute_loss(t: fs.i32):
        loss[None] = x[t]

    looked = []
    original = TapeState._entry_box
    monkeypatch.setattr(TapeState, "_entry_box",
                        lambda self, key, entry: looked.append(entry) or original(self, key, entry))
    n = 2000
    d[None] = 0.99
    with fs.ad.Tape(loss):
        for t in range(1, n):
            advance(t)
        compute_loss(n - 1)
    assert not looked
    # x[n-1] = 0.01 * sum_{k<n} v[k] with v[k] = sum_{m<k} d^m, so
    # dloss/dd = 0.01 * sum_{m=1}^{n-2} m d^(m-1) (n-1-m)
    m = np.arange(1, n - 1, dtype=np.float64)
    want = 0.01 * np.sum(m * 0.99 ** (m - 1) * (n - 1 - m))
    assert d.grad[None] == pytest.approx(want, rel=1e-3)
