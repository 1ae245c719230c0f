"""Errors for a user's mistakes point at the user's line and say what is wrong: a runtime bound
under fs.static(range(...)), `+=` on a Python value a kernel captured, a launch with the wrong
arguments, and a FwdMode block set up wrongly (which leaves every dual as it was)."""
import sys
import traceback

import numpy as np
import pytest

import fieldsim as fs

captured_count = 3


def _line_of(marker):
    with open(__file__) as f:
        return next(i for i, text in enumerate(f, 1) if marker in text and "_line_of" not in text)


def test_static_range_of_a_runtime_bound_names_the_problem():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k(n: fs.i32):
        for i in fs.static(range(n)):  # static-range-line
            x[i] = 1.0

    with pytest.raises(fs.FieldsimSyntaxError) as err:
        k(2)
    assert "compile-time bounds" in str(err.value)
    assert err.value.loc.file == __file__ and err.value.loc.line == _line_of("# static-range-line")
    assert x.to_numpy().tolist() == [0.0] * 4


def test_augmented_assign_to_a_captured_python_value_says_it_is_one():
    fs.init(arch=fs.cpu)

    @fs.kernel
    def k():
        captured_count += 1  # captured-line

    with pytest.raises(fs.FieldsimSyntaxError) as err:
        k()
    text = str(err.value)
    assert "'captured_count'" in text and "Python value" in text and "field" in text
    assert err.value.loc.line == _line_of("# captured-line")
    assert captured_count == 3


def test_launch_error_is_located_at_the_call_with_one_fieldsim_frame():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k(a: fs.f32):
        x[0] = a

    with pytest.raises(fs.FieldsimError) as err:
        k(1.0, 2.0)  # bad-call-line
    assert err.value.loc is not None
    assert err.value.loc.file == __file__ and err.value.loc.line == _line_of("# bad-call-line")
    frames = traceback.extract_tb(err.value.__traceback__)
    inside = [f for f in frames if "/fieldsim/" in f.filename.replace("\\", "/")
              and "/tests/" not in f.filename.replace("\\", "/")]
    assert len(inside) == 1, [f"{f.filename}:{f.lineno}" for f in frames]
    assert x.to_numpy()[0] == 0.0


def test_fwd_mode_set_up_errors_are_located_runtime_errors_that_change_no_dual():
    fs.init(arch=fs.cpu)
    p = fs.field(fs.f32, shape=3)
    loss = fs.field(fs.f32, shape=())
    counts = fs.field(fs.i32, shape=())

    @fs.kernel
    def f():
        for i in p:
            loss[None] += p[i] * p[i]

    p.from_numpy(np.array([1.0, 2.0, 3.0], np.float32))
    with fs.ad.FwdMode(loss=loss, param=p, seed=[1.0, 1.0, 1.0]):
        f()
    before = loss.dual[None]
    assert before == pytest.approx(2.0 * (1.0 + 2.0 + 3.0))

    with pytest.raises(RuntimeError) as err:
        with fs.ad.FwdMode(loss=loss, param=p, seed=[1.0, 1.0]):  # short-seed-line
            f()
    assert "seed has 2 values" in str(err.value)
    assert err.value.loc.line == _line_of("# short-seed-line")
    assert loss.dual[None] == before  # the bad block cleared nothing

    for bad, what in ((counts, "is not a float field"), (np.zeros(3), "must be a field")):
        with pytest.raises(RuntimeError, match=what):
            with fs.ad.FwdMode(loss=bad, param=p, seed=[1.0, 1.0, 1.0]):
                f()
    assert loss.dual[None] == before
    assert sys.exc_info() == (None, None, None)
