"""Every corpus kernel, in f32 and f64: Tape gradients against float64 finite differences.

For each entry the Tape's gradients for every input are compared with central finite
differences of the forward run at `default_fp=f64` (computed once per entry and cached,
in the f64 case on the same fields and kernels), and with the entry's analytic gradient
when it has one. The loss the Tape's forward computed is checked too.
"""
import numpy as np
import pytest

from ._env import AS_TAICHI, fs, init_fs
from .corpus import CORPUS
from .fd import assert_grad_close, central_differences

FPS = ["f64", "f32"]  # f64 first: its finite differences are reused by f32

_REFERENCE = {}  # entry name -> (loss, {input: finite-difference gradient})


def _entries():
    for e in CORPUS:
        marks = []
        if AS_TAICHI and e.beyond:
            marks.append(pytest.mark.xfail(reason=e.beyond, strict=True))
        if e.taichi_crash:
            marks.append(pytest.mark.taichi_crash)
        yield pytest.param(e, id=e.name, marks=marks)


def _init(entry, fp):
    init_fs(fp, **(entry.taichi_opts if AS_TAICHI else {}))


def _setup(entry):
    """Build the entry's case and store its seeded input values."""
    case = entry.build()
    values = entry.values()
    for name, f in case.inputs.items():
        f.from_numpy(values[name].astype(f.to_numpy().dtype))
    return case


def _stored(case):
    return {name: f.to_numpy().astype(np.float64) for name, f in case.inputs.items()}


def _forward(case):
    """The whole forward from scratch, outside any Tape; returns the loss."""
    if case.reset is not None:
        case.reset()
    case.loss[None] = 0.0
    case.run()
    return float(case.loss[None])


def _reference(entry, case, fp):
    if entry.name not in _REFERENCE:
        if fp != "f64":
            _init(entry, "f64")
            case = _setup(entry)
        loss = _forward(case)
        grads = central_differences(lambda: _forward(case), case.inputs, entry.fd_eps)
        _REFERENCE[entry.name] = (loss, grads)
    return _REFERENCE[entry.name]


def test_corpus_is_large_enough():
    assert len(CORPUS) >= 45
    assert len({e.name for e in CORPUS}) == len(CORPUS)


@pytest.mark.parametrize("fp", FPS)
@pytest.mark.parametrize("entry", list(_entries()))
def test_gradient(entry, fp):
    if AS_TAICHI and entry.taichi_opts:
        _init(entry, fp)
    case = _setup(entry)
    if case.reset is not None:
        case.reset()
    with fs.ad.Tape(loss=case.loss):
        case.run()
    loss = float(case.loss[None])
    grads = {name: f.grad.to_numpy().astype(np.float64) for name, f in case.inputs.items()}
    tol = entry.tol or fp

    if entry.analytic is not None:
        expected = entry.analytic(_stored(case), case)
        for name in case.inputs:
            assert_grad_close(grads[name], expected[name], tol, f"{entry.name}: {name}.grad vs analytic")

    if entry.fd:
        ref_loss, ref = _reference(entry, case, fp)
        rtol = 1e-9 if tol == "f64" else 1e-3
        np.testing.assert_allclose(loss, ref_loss, rtol=rtol, atol=rtol, err_msg=f"{entry.name}: loss")
        for name, grad in grads.items():
            assert_grad_close(grad, ref[name], tol, f"{entry.name}: {name}.grad vs finite differences")
