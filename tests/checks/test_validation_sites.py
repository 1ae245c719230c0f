"""`Tape(validation=True)`: which accesses the run-time check watches, and what it undoes.

A launch's element sets are inexact where an `if` guards the access (`boxes.guarded_box`) or an
index depends on data; those accesses must be watched, or a write over read elements would pass
unchecked (a guarded write) and a guarded read that read nothing would be refused. An index
that only adds a kernel argument (`x[t, i]`) is exact at every launch and is not instrumented.
A refused launch is undone from a copy of what it may write (its write boxes' hulls): every
field it writes ends as it was before it.
"""
from __future__ import annotations

import numpy as np
import pytest

import fieldsim as fs

N = 8


@pytest.fixture(autouse=True)
def _fresh():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    yield


def field(name, shape=N):
    return fs.field(float, shape=shape, needs_grad=True, name=name)


def test_guarded_write_over_read_elements_is_refused_and_undone():
    x, y = field("x"), field("y")
    x.from_numpy(np.arange(N, dtype=np.float64))

    @fs.kernel
    def read_x():
        for i in range(N):
            y[i] = x[i] * x[i]  # squared: a linear read is free on the Tape

    @fs.kernel
    def write_upper():
        for i in range(N):
            if i >= 4:
                x[i] = -1.0

    with pytest.raises(fs.AccessRuleError) as info, fs.ad.Tape(validation=True):
        read_x()
        write_upper()
    text = str(info.value)
    assert "Rule 1 (" in text and "element in both: x[4] (and 3 more elements)" in text
    assert "kernel 'write_upper' (launch 2)" in text and "undone" in text
    np.testing.assert_array_equal(x.to_numpy(), np.arange(N))


def test_data_guarded_read_counts_only_the_elements_it_read():
    x, y = field("x"), field("y")
    flag = fs.field(fs.i32, shape=N, name="flag")

    @fs.kernel
    def read_flagged():
        for i in range(N):
            if flag[i] > 0:
                y[i] = x[i] * x[i]

    @fs.kernel
    def write_x():
        for i in range(N):
            x[i] = 1.0

    with fs.ad.Tape(validation=True):  # no flag set: nothing of x was read
        read_flagged()
        write_x()
    flag[3] = 1
    x.fill(0.0)
    with pytest.raises(fs.AccessRuleError) as info, fs.ad.Tape(validation=True):
        read_flagged()
        write_x()
    text = str(info.value)
    assert "element in both: x[3]," in text and "refused before it ran" in text
    np.testing.assert_array_equal(x.to_numpy(), np.zeros(N))


def _step_kernel(dup):
    v, w, z = field("v", (4, N)), field("w", (4, N)), field("z", (4, N))
    idx = fs.field(fs.i32, shape=N, name="idx")
    idx.from_numpy(np.array([0, 1, 2, 3, 4, 5, 6, 6 if dup else 7], dtype=np.int32))

    @fs.kernel
    def step(t: fs.i32):
        for i in range(N):
            v[t + 1, i] = v[t, i] * 2.0
            w[t + 1, idx[i]] = z[t, i]

    return v, w, z, step


def test_argument_indices_are_not_instrumented():
    _, w, _, step = _step_kernel(dup=False)
    with fs.ad.Tape(validation=True):
        step(0)
    (ck,) = step._cache.values()
    assert [(s.field, s.read, s.wclass != 0) for s in ck.validation.sites] == [(w, False, True)]


def test_refused_launch_restores_every_field_it_writes():
    v, w, z, step = _step_kernel(dup=True)
    rng = np.random.default_rng(1)
    for f in (v, w, z):
        f.from_numpy(rng.uniform(size=(4, N)))
    before = [f.to_numpy() for f in (v, w, z)]
    with pytest.raises(fs.AccessRuleError) as info, fs.ad.Tape(validation=True):
        step(2)
    assert "Rule 2 (" in str(info.value) and "w[3, 6]" in str(info.value)
    for f, old in zip((v, w, z), before):
        np.testing.assert_array_equal(f.to_numpy(), old, err_msg=f.ir_name)
