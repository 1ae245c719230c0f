"""The Tape's replay of kernels of scalar parameters: their adjoints run on the argument values
the forward launch bound (`LaunchEntry.values`), without binding again. Gradients are checked
against analytic derivatives, for fast-path, keyword and numpy-scalar calls; and the cut-chain
warning (now summarised per specialisation) still fires where it should."""
import warnings

import numpy as np
import pytest

import fieldsim as fs


def _chain(steps):
    """x[t + 1] = x[t] * w + s[t] (w scalar), loss = x[steps]^2; returns fields and kernels."""
    fs.init(arch=fs.cpu, default_fp=fs.f64, offline_cache=False)
    x = fs.field(fs.f64, shape=steps + 1, needs_grad=True)
    s = fs.field(fs.f64, shape=steps, needs_grad=True)
    w = fs.field(fs.f64, shape=(), needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def step(t: fs.i32):
        for _ in range(1):
            x[t + 1] = x[t] * w[None] + s[t]

    @fs.kernel
    def finish(n: fs.i32):
        loss[None] = x[n] ** 2

    return x, s, w, loss, step, finish


def _analytic(x0, w, s):
    """d loss / d (x0, w, s_t) for the chain above."""
    xs = [x0]
    for st in s:
        xs.append(xs[-1] * w + st)
    n = len(s)
    g = 2 * xs[n]  # d loss / d x_n
    gw, gs = 0.0, np.zeros(n)
    for t in reversed(range(n)):
        gw += g * xs[t]
        gs[t] = g
        g *= w
    return g, gw, gs


@pytest.mark.parametrize("call", ["positional", "keyword", "numpy"])
def test_replayed_adjoints_match_the_analytic_gradient(call):
    steps = 7
    x, s, w, loss, step, finish = _chain(steps)
    sv = np.linspace(-0.3, 0.4, steps)
    x[0], w[None] = 0.8, 0.9
    s.from_numpy(sv)
    with fs.ad.Tape(loss=loss) as tape:
        for t in range(steps):
            if call == "positional":
                step(t)
            elif call == "keyword":
                step(t=t)
            else:
                step(np.int32(t))
        finish(steps)
    assert all(e.values is not None for e in tape.entries)  # replayed without binding again
    gx0, gw, gs = _analytic(0.8, 0.9, sv)
    assert x.grad[0] == pytest.approx(gx0, rel=1e-12)
    assert w.grad[None] == pytest.approx(gw, rel=1e-12)
    assert s.grad.to_numpy() == pytest.approx(gs, rel=1e-12)


def test_a_template_kernel_is_still_bound_again_for_its_adjoint():
    fs.init(arch=fs.cpu, default_fp=fs.f64, offline_cache=False)
    a = fs.field(fs.f64, shape=3, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def total(f: fs.template(), k: fs.f64):
        for i in f:
            loss[None] += k * f[i] ** 2

    a.from_numpy(np.array([1.0, -2.0, 0.5]))
    with fs.ad.Tape(loss=loss) as tape:
        total(a, 3.0)
    assert tape.entries[0].values is None
    assert a.grad.to_numpy() == pytest.approx(6.0 * np.array([1.0, -2.0, 0.5]))


def _cut_chain():
    fs.init(arch=fs.cpu, default_fp=fs.f64, offline_cache=False)
    p = fs.field(fs.f64, shape=4, needs_grad=True)
    mid = fs.field(fs.f64, shape=(4, 4))  # no gradient: the chain is cut here
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def copy(t: fs.i32):
        for i in range(4):
            mid[t, i] = p[i] * t

    @fs.kernel
    def use(t: fs.i32):
        for i in range(4):
            loss[None] += mid[t, i] * t

    return p, loss, copy, use


def test_the_cut_chain_warning_fires_for_each_write_read_pair():
    _, loss, copy, use = _cut_chain()
    tape = fs.ad.Tape(loss=loss)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        with tape:
            for t in range(1, 4):
                copy(t)
                use(t)
    cut = [str(r.message) for r in record if "'mid' has no gradient" in str(r.message)]
    assert len(cut) == 3 and all("kernel 'use'" in m for m in cut)  # each copy -> use pair


def test_no_cut_chain_warning_when_nothing_reads_the_field_later():
    _, loss, copy, use = _cut_chain()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with fs.ad.Tape(loss=loss):
            use(1)  # reads mid[1] before anything wrote it from p
            copy(2)  # nothing reads mid[2] later


def test_a_tape_holding_a_recording_is_not_entered_again_until_reset():
    # its backward replayed the first recording's launches too: d loss / dx came out as the sum
    # of both recordings' gradients (6.0 for 3.0), silently; Taichi refuses a second entry
    fs.init(arch=fs.cpu, default_fp=fs.f64, offline_cache=False)
    x = fs.field(fs.f64, shape=(), needs_grad=True)
    c = fs.field(fs.f64, shape=())
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        loss[None] += c[None] * x[None] * x[None]

    x[None], c[None] = 0.5, 2.0
    tape = fs.ad.Tape(loss=loss)
    with tape:
        k()
    assert x.grad[None] == pytest.approx(2 * 2.0 * 0.5, rel=1e-12)
    c[None] = 3.0
    with pytest.raises(RuntimeError, match="already holds the recording") as err:
        with tape:
            k()
    assert "test_tape_replay.py" in str(err.value)
    tape.reset()
    with tape:
        k()
    assert x.grad[None] == pytest.approx(2 * 3.0 * 0.5, rel=1e-12)
