"""`fs.ad.Tape(validation=True)`: the run-time, per-element check of data-dependent accesses.

End to end, through `fs.kernel` and `fs.ad.Tape`: what the static checker cannot decide is
refused without validation; with it, the launch runs instrumented and is accepted when its
data-dependent indices happen not to collide (the gradient then agrees with float64 central
finite differences) and refused, naming the element and leaving the data as it was, when they
do: within a kernel (rule 1, rule 2, between threads or in program order) and across launches.
Also: `grad_replaced` units are checked against what was read before them, and the in-kernel
check runs with the launch's argument values.
"""
from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import numpy as np
import pytest

import fieldsim as fs


def _load_fd():
    path = Path(__file__).resolve().parents[1] / "ad" / "fd.py"
    spec = importlib.util.spec_from_file_location("fieldsim_tests_ad_fd_validation", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fd = _load_fd()
N = 8


@pytest.fixture(autouse=True)
def _fresh():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    yield


def field(name, n=N, dtype=float):
    return fs.field(dtype, shape=n, needs_grad=dtype is float, name=name)


def ints(name, values):
    f = fs.field(fs.i32, shape=len(values), name=name)
    f.from_numpy(np.asarray(values, dtype=np.int32))
    return f


def refused(offender, fields, prefix=None, validation=True, loss=None) -> str:
    """Record `prefix()` then `offender()` on a Tape: the offender must raise AccessRuleError
    and leave `fields` as they were just before it."""
    before = None
    with pytest.raises(fs.AccessRuleError) as info, fs.ad.Tape(loss=loss, validation=validation):
        if prefix is not None:
            prefix()
        before = [f.to_numpy() for f in fields]
        offender()
    assert before is not None, "the prefix itself was refused:\n" + str(info.value)
    for f, old in zip(fields, before):
        np.testing.assert_array_equal(f.to_numpy(), old, err_msg=f"{f.ir_name} changed")
    return str(info.value)


# ------------------------------------------------------------------ undecided, no validation
def test_undecided_is_refused_without_validation_and_says_so():
    x, y = field("x"), field("y")
    idx = ints("idx", np.random.default_rng(0).permutation(N))

    @fs.kernel
    def scatter():
        for i in range(N):
            y[idx[i]] = x[i] * 3.0

    text = refused(scatter, [x, y], validation=False)
    assert "Rule 2 (" in text and "cannot prove" in text and "validation=True" in text
    assert "field 'y'" in text and "y[idx[i]] = x[i] * 3.0" in text


# --------------------------------------------------------------- accepted: gradient vs FD
def _pipeline():
    """x: inputs in [0, N), written at [N, 2N) by `spread` (rule 1 undecided in-kernel), read
    back data-dependently by `mix` (rule 2 undecided on y), whose results `place` scatters to
    [2N, 3N) (an inexact write after inexact reads of x: decided across launches at run time)."""
    rng = np.random.default_rng(1)
    x, y, w, loss = field("x", 3 * N), field("y"), field("w"), fs.field(float, (), needs_grad=True, name="loss")
    x.from_numpy(rng.uniform(0.2, 1.0, 3 * N))
    w.from_numpy(rng.uniform(0.2, 1.0, N))
    idx, jdx, kdx = (ints(n, rng.permutation(N)) for n in ("idx", "jdx", "kdx"))

    @fs.kernel
    def spread():
        for i in range(N):
            v = x[idx[i]]
            x[N + jdx[i]] = fs.sin(v) * w[i]

    @fs.kernel
    def mix():
        for i in range(N):
            y[kdx[i]] = x[N + i] * x[idx[i]]

    @fs.kernel
    def place():
        for i in range(N):
            x[2 * N + jdx[i]] = y[i] * y[i]

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += x[2 * N + i] * w[i] + y[i]

    def run():
        spread()
        mix()
        place()
        total()

    return x, w, loss, run, (spread, mix, place, total)


def test_accepted_when_indices_do_not_collide_and_gradient_matches_fd():
    x, w, loss, run, _ = _pipeline()
    with pytest.raises(fs.AccessRuleError, match="cannot prove"), fs.ad.Tape(loss=loss):
        run()
    with fs.ad.Tape(loss=loss, validation=True):
        run()
    got = {"x": x.grad.to_numpy()[:N], "w": w.grad.to_numpy()}
    full = fd.central_differences(lambda: fd.forward_loss(loss, run), {"x": x, "w": w})
    fd.assert_grad_close(got["x"], full["x"][:N], "f64", "x.grad vs finite differences")
    fd.assert_grad_close(got["w"], full["w"], "f64", "w.grad vs finite differences")
    assert np.abs(got["x"]).max() > 1e-3 and np.abs(got["w"]).max() > 1e-3


def test_instrumented_kernel_is_compiled_once_per_compiled_kernel():
    _, _, loss, run, kernels = _pipeline()

    def made():
        return [ck.validation for k in kernels for ck in k._cache.values()]

    with fs.ad.Tape(loss=loss, validation=True):
        run()
    first = made()
    assert [v is not None for v in first] == [True, True, True, False]  # `total` is exact
    with fs.ad.Tape(loss=loss, validation=True):
        run()
    assert all(a is b for a, b in zip(made(), first))


# ------------------------------------------------------------- refused: in-kernel, rule 1
def _read_then_write(idx_values, jdx_values):
    x = field("x", 2 * N)
    x.from_numpy(np.arange(2 * N, dtype=np.float64))
    idx, jdx = ints("idx", idx_values), ints("jdx", jdx_values)

    @fs.kernel
    def shuffle():
        for i in range(N):
            v = x[idx[i]]
            x[jdx[i]] = v * 2.0

    return x, shuffle


def test_rule1_accepted_when_reads_and_writes_are_disjoint():
    x, shuffle = _read_then_write([0, 1, 2, 3, 3, 2, 1, 0], [8, 9, 10, 11, 12, 13, 14, 15])
    with fs.ad.Tape(validation=True):
        shuffle()
    np.testing.assert_array_equal(x.to_numpy()[N:], 2.0 * np.array([0, 1, 2, 3, 3, 2, 1, 0]))


# (idx, jdx, element, how): N = 8 threads run in index order on one worker
RULE1 = {
    "same thread": ([0, 1, 2, 3, 0, 1, 2, 0], [8, 9, 10, 3, 12, 13, 14, 15], 3, "after"),
    "read, then another thread writes": ([0, 1, 2, 3, 0, 1, 2, 3], [8, 9, 10, 11, 12, 0, 14, 15],
                                         0, "after"),
    "written, then another thread reads": ([0, 1, 2, 3, 0, 1, 5, 3],
                                           [8, 9, 5, 11, 12, 13, 14, 15], 5,
                                           # as observed: on a GPU the reader may come first
                                           r"iterations (2 and 6|6 and 2)"),
}


@pytest.mark.parametrize("case", list(RULE1))
def test_rule1_collision_is_refused_naming_the_element(case):
    idx, jdx, element, how = RULE1[case]
    x, shuffle = _read_then_write(idx, jdx)
    text = refused(shuffle, [x])
    assert "Rule 1 (" in text and "Kernel 'shuffle'" in text and "field 'x'" in text
    assert f"at element x[{element}]" in text and re.search(how, text)
    assert "v = x[idx[i]]" in text and "x[jdx[i]] = v * 2.0" in text
    assert "test_validation.py:" in text and "The launch was undone" in text


# ------------------------------------------------------------- refused: in-kernel, rule 2
def test_rule2_two_plain_stores_to_one_element_refused():
    x, y = field("x"), field("y")
    x.from_numpy(np.linspace(1.0, 2.0, N))
    y.from_numpy(np.full(N, -1.0))
    idx = ints("idx", [0, 1, 2, 3, 4, 5, 6, 6])

    @fs.kernel
    def scatter():
        for i in range(N):
            y[idx[i]] = x[i] * 3.0

    text = refused(scatter, [x, y])
    assert "Rule 2 (" in text and "at element y[6]" in text and "y[idx[i]] = x[i] * 3.0" in text
    idx[7] = 7
    with fs.ad.Tape(validation=True):
        scatter()
    np.testing.assert_allclose(y.to_numpy(), 3.0 * x.to_numpy())


def test_rule2_add_after_another_threads_store_refused():
    x, y = field("x"), field("y")
    jdx, idx = ints("jdx", range(N)), ints("idx", [0, 0, 1, 2, 3, 4, 5, 6])

    @fs.kernel
    def store_then_add():
        for i in range(N):
            y[jdx[i]] = x[i]
            y[idx[i]] += 1.0

    text = refused(store_then_add, [x, y])
    assert "Rule 2 (" in text and "at element y[0]" in text
    assert "different threads" in text and "iterations 0 and 1" in text
    assert "y[jdx[i]] = x[i]" in text and "y[idx[i]] += 1.0" in text
    idx.from_numpy(np.arange(N, dtype=np.int32))  # each thread adds to what it stored: fine
    with fs.ad.Tape(validation=True):
        store_then_add()
    np.testing.assert_allclose(y.to_numpy(), x.to_numpy() + 1.0)


# --------------------------------------------------------------------- across launches
def _gather_scatter():
    x, z = field("x", 2 * N), field("z")
    x.from_numpy(np.arange(2 * N, dtype=np.float64))
    idx, jdx = ints("idx", [0, 2, 4, 6, 0, 2, 4, 6]), ints("jdx", range(N, 2 * N))

    @fs.kernel
    def gather():
        for i in range(N):
            z[i] = x[idx[i]] ** 2  # squared: a linear read is free on the Tape

    @fs.kernel
    def scatter():
        for i in range(N):
            x[jdx[i]] = 1.0

    @fs.kernel
    def clear(lo: fs.i32):
        for i in range(lo, lo + N):
            x[i] = 0.0

    return x, z, jdx, gather, scatter, clear


def test_across_launches_decided_per_element():
    x, _, jdx, gather, scatter, clear = _gather_scatter()
    with fs.ad.Tape(validation=True):
        gather()
        scatter()  # data-dependent write: run instrumented, its elements compared
        clear(N)  # exact write of what nobody read
        x[1] = 5.0  # Python scope: x[1] was not read
    jdx[3] = 4  # now the scatter hits x[4], which gather read
    text = refused(scatter, [x], prefix=gather)
    assert "Rule 1 (" in text and "element in both: x[4]" in text and "undone" in text
    assert "kernel 'gather' (launch 1) reads x" in text and "kernel 'scatter' (launch 2)" in text
    text = refused(lambda: clear(0), [x], prefix=gather)  # exact box: refused before it ran
    assert "element in both: x[0]" in text and "refused before it ran" in text
    text = refused(lambda: x.__setitem__(6, 1.0), [x], prefix=gather)
    assert "element in both: x[6]" in text and "Python-scope" in text


def test_refused_launch_leaves_the_tape_and_the_gradient_right():
    x, y, w = field("x"), field("y"), field("w")
    loss = fs.field(float, (), needs_grad=True, name="loss")
    rng = np.random.default_rng(3)
    x.from_numpy(rng.uniform(0.5, 1.5, N))
    w.from_numpy(rng.uniform(0.5, 1.5, N))
    kdx, dup = ints("kdx", rng.permutation(N)), ints("dup", [0, 1, 2, 3, 4, 5, 6, 6])

    @fs.kernel
    def square():
        for i in range(N):
            y[kdx[i]] = x[i] * x[i]

    @fs.kernel
    def overwrite():
        for i in range(N):
            y[dup[i]] = x[i] * 5.0

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += y[i] * w[i]

    with fs.ad.Tape(loss=loss, validation=True):
        square()
        with pytest.raises(fs.AccessRuleError, match="at element y\\[6\\]"):
            overwrite()
        total()
    expect = fd.central_differences(lambda: fd.forward_loss(loss, lambda: (square(), total())),
                                    {"x": x})["x"]
    fd.assert_grad_close(x.grad.to_numpy(), expect, "f64", "x.grad vs finite differences")


# ------------------------------------------------------------------------- grad_replaced
def test_grad_replaced_unit_writing_what_was_read_before_it_is_refused():
    x, y = field("x"), field("y")
    x.from_numpy(np.arange(N, dtype=np.float64))

    @fs.kernel
    def read_x():
        for i in range(N):
            y[i] = x[i] * x[i]  # squared: a linear read is free on the Tape

    @fs.kernel
    def set_three():
        x[3] = 0.0

    @fs.ad.grad_replaced
    def step():
        set_three()

    @fs.ad.grad_for(step)
    def step_grad():
        pass

    text = refused(step, [x, y], prefix=read_x, validation=False)
    assert "Rule 1 (" in text and "inside `step`, kernel 'set_three'" in text
    assert "x[3]" in text
    with fs.ad.Tape():  # a unit may overwrite what an earlier unit read: its backward is the user's
        step()
        step()


def test_grad_replaced_unit_with_data_dependent_writes_under_validation():
    x, z = field("x", 2 * N), field("z")
    idx, jdx = ints("idx", [0, 1, 2, 3, 0, 1, 2, 3]), ints("jdx", [9, 9, 10, 11, 12, 13, 14, 15])

    @fs.kernel
    def gather():
        for i in range(N):
            z[i] = x[idx[i]] ** 2

    @fs.kernel
    def scatter():
        for i in range(N):
            x[jdx[i]] = 1.0  # x[9] twice: in-kernel rule 2, the unit's own business

    @fs.ad.grad_replaced
    def step():
        scatter()

    @fs.ad.grad_for(step)
    def step_grad():
        pass

    with fs.ad.Tape(validation=True):
        gather()
        step()
    jdx[0] = 2  # now the unit writes x[2], which gather read before it
    text = refused(step, [x], prefix=gather)
    assert "inside `step`, kernel 'scatter'" in text and "element in both: x[2]" in text


# ------------------------------------------------------------- the launch's argument values
def test_in_kernel_check_uses_the_launch_arguments():
    x = field("x", 2 * N)

    @fs.kernel
    def shift(s: fs.i32):
        for i in range(N):
            v = x[i]
            x[i + s] = v * 2.0

    with fs.ad.Tape():
        shift(N)  # reads [0, N), writes [N, 2N): proven apart with s = N
    with pytest.raises(fs.AccessRuleError, match="Rule 1 "), fs.ad.Tape():
        shift(1)


# -------------------------------------------------- exact against a per-element reference
def _expectations(i, j):
    def dup(a):
        return len(set(a.tolist())) < len(a)

    def meet(a, b):
        return bool(set(a.tolist()) & set(b.tolist()))

    return {"rule1": meet(i, j), "rule2": dup(i), "mixed": dup(j) or meet(i, j),
            "tasks": dup(j), "tasks_reversed": dup(j) or meet(i, j), "launches": dup(j) or meet(i, j)}


@pytest.mark.parametrize("seed", range(4))
def test_verdicts_match_a_per_element_reference(seed):
    """Many threads (several workers): the verdict is refused exactly when the rules break."""
    n = 3000
    fs.init(arch=fs.cpu, default_fp=fs.f64, cpu_max_num_threads=4)
    x, y = (fs.field(float, 2 * n, needs_grad=True, name=nm) for nm in "xy")
    idx, jdx = fs.field(fs.i32, n, name="idx"), fs.field(fs.i32, n, name="jdx")

    @fs.kernel
    def rule1():
        for i in range(n):
            v = x[idx[i]]
            x[jdx[i]] += v

    @fs.kernel
    def rule2():
        for i in range(n):
            y[idx[i]] = x[i]

    @fs.kernel
    def mixed():
        for i in range(n):
            y[idx[i]] += x[i]
            y[jdx[i]] = 2.0

    @fs.kernel
    def tasks():
        for i in range(n):
            x[jdx[i]] = 1.0
        for i in range(n):
            y[i] = x[idx[i]]

    @fs.kernel
    def tasks_reversed():
        for i in range(n):
            y[i] = x[idx[i]]
        for i in range(n):
            x[jdx[i]] = 1.0

    @fs.kernel
    def gather():
        for i in range(n):
            y[i] = x[idx[i]] ** 2  # squared: a linear read is free on the Tape

    @fs.kernel
    def scatter():
        for i in range(n):
            x[jdx[i]] = 1.0

    runs = {"rule1": rule1, "rule2": rule2, "mixed": mixed, "tasks": tasks,
            "tasks_reversed": tasks_reversed, "launches": lambda: (gather(), scatter())}
    rng = np.random.default_rng(seed)
    i, j = rng.permutation(n), n + rng.permutation(n)  # seed 0: disjoint
    if seed == 1:
        i = rng.integers(0, n, n)  # repeated reads
    if seed == 2:
        j[rng.integers(n)] = i[rng.integers(n)]  # one write hits a read element
    if seed == 3:
        i, j = rng.integers(0, 2 * n, n), rng.integers(0, 2 * n, n)
    idx.from_numpy(i.astype(np.int32))
    jdx.from_numpy(j.astype(np.int32))
    for name, expected in _expectations(i, j).items():
        try:
            with fs.ad.Tape(validation=True):
                runs[name]()
            got = False
        except fs.AccessRuleError:
            got = True
        assert got == expected, (name, seed)
