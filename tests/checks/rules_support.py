"""Shared pieces of the user-level access-rule tests (test_user_rules.py, test_property_tape.py).

* `fd`: tests/ad/fd.py (float64 central finite differences through re-running the forward),
  loaded by path because tests/checks is not a package;
* `Bad` / `Good` and the registries `BAD` / `GOOD` that the case modules fill with `@bad(...)` /
  `@good(...)`; a builder runs after `fs.init` and returns its case;
* `refuse(case)`: runs a `Bad` case under a Tape and returns the `AccessRuleError`, asserting
  that the refused launch or write changed no field;
* small constructors (`vec`, `scalar`, `put`) so that case bodies read like user programs.
"""
from __future__ import annotations

import importlib.util
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pytest

import fieldsim as fs


def _load_fd():
    path = Path(__file__).resolve().parents[1] / "ad" / "fd.py"
    spec = importlib.util.spec_from_file_location("fieldsim_tests_ad_fd", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


fd = _load_fd()

N = 6  # elements per 1-D field: few, so that finite differences stay cheap


# ------------------------------------------------------------------------------- fields
def vec(name, n=N, dtype=float, needs_grad=True):
    return fs.field(dtype, shape=n, needs_grad=needs_grad, name=name)


def scalar(name, needs_grad=True):
    return fs.field(float, shape=(), needs_grad=needs_grad, name=name)


def put(f, lo=0.2, hi=1.0, seed=None):
    """Fill `f` with reproducible uniform values in [lo, hi] (integers for int fields)."""
    rng = np.random.default_rng(zlib.crc32(f.ir_name.encode()) if seed is None else seed)
    shape = f.storage_shape
    if f.dtype.is_int:
        f.from_numpy(rng.integers(int(lo), int(hi) + 1, shape).astype(f.dtype.np))
    else:
        f.from_numpy(rng.uniform(lo, hi, shape))
    return f


def x_and_loss(lo=0.2, hi=1.0):
    """An input field x with values in [lo, hi], and a loss."""
    return put(vec("x"), lo, hi), scalar("loss")


def reduce_squares(f, loss):
    """A kernel adding the squares of `f`'s elements to `loss`."""

    @fs.kernel
    def reduce():
        for I in fs.grouped(f):
            loss[None] += f[I] ** 2
    return reduce


def then(*kernels):
    """Launch the kernels in order (a Tape body)."""

    def run():
        for k in kernels:
            k()
    return run


def snapshot(fields) -> list[np.ndarray]:
    return [f.to_numpy().copy() for f in fields]


# -------------------------------------------------------------------------------- cases
@dataclass
class Bad:
    """A program the checker must refuse: `prefix()` is recorded on the Tape without error,
    then `offender()` must raise before it changes any of `fields`."""

    loss: object
    offender: Callable[[], None]
    fields: list
    prefix: Callable[[], None] = lambda: None


@dataclass
class Good:
    """A rule-keeping program: `run()` is the Tape body; `reset()` restores state before each
    forward (outside any Tape). Tape gradients of `inputs` must match finite differences."""

    inputs: dict
    loss: object
    run: Callable[[], None]
    reset: Callable[[], None] | None = None
    expect: dict = field(default_factory=dict)  # {name: analytic gradient}, checked too


@dataclass
class Spec:
    name: str
    build: Callable
    rule: int | None = None
    field: str | None = None
    undecided: bool = False

    def __repr__(self):
        return self.name


BAD: list[Spec] = []
GOOD: list[Spec] = []


def bad(rule: int, field_name: str, undecided: bool = False):
    def register(build):
        BAD.append(Spec(build.__name__, build, rule, field_name, undecided))
        return build
    return register


def good(build):
    GOOD.append(Spec(build.__name__, build))
    return build


def params(specs: list[Spec]):
    return [pytest.param(s, id=s.name) for s in specs]


# ------------------------------------------------------------------------------ running
def refuse(case: Bad) -> fs.AccessRuleError:
    """Record `case` on a Tape; the offender must raise AccessRuleError and leave every field
    as it was just before it (the checker runs before the launch or write)."""
    before = None
    with pytest.raises(fs.AccessRuleError) as info, fs.ad.Tape(loss=case.loss):
        case.prefix()
        before = snapshot(case.fields)
        case.offender()
    assert before is not None, "the prefix itself was refused:\n" + str(info.value)
    for f, old in zip(case.fields, before):
        np.testing.assert_array_equal(f.to_numpy(), old, err_msg=f"{f.ir_name} changed")
    return info.value


def assert_names(err: Exception, rule: int, field_name: str, undecided: bool = False):
    text = str(err)
    assert f"Rule {rule} (" in text, text
    other = 3 - rule
    assert f"Rule {other} (" not in text, text
    assert f"field '{field_name}'" in text, text
    assert ("cannot prove" in text) == undecided, text


def check_good(case: Good):
    """Tape gradients of the inputs against float64 central differences (and `expect`)."""
    grads = fd.check_tape_against_fd(fs, case.inputs, case.loss, case.run, case.reset)
    assert any(np.abs(g).max() > 1e-9 for g in grads.values()), "every gradient is zero"
    for name, want in case.expect.items():
        np.testing.assert_allclose(grads[name], want, rtol=1e-9, atol=1e-12, err_msg=name)
    return grads
