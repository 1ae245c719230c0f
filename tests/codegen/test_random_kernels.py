"""Random kernels in the loop shapes the code generator rewrites, against plain Python.

Each case (random_kernel_gen.py) is a kernel whose loop has a shape one of the CPU
optimisations takes (whole-row or triangular pair nests with per-row accumulators, SIMD lanes
with masks for data conditions, vectorized inner reductions, `while` loops in lanes) around
random bounded arithmetic, on one or two threads, with loop bounds below, at and past the
vector width. Checks:

- f64 (default_fp f64): `out` and `s` equal the body run serially in float64 Python to 1e-9
  relative to the size of what was summed; the adjoint (`k.grad()` with random output seeds)
  matches float64 central differences of that Python reference along random directions
  (directions where the difference quotient changes with the step, a branch or kink crossed,
  are not used);
- f32: the same forward values to 1e-3 of the size of what was summed (f32 rounding, fast math).

`FS_RANDOM_KERNELS=N` draws N cases per shape and precision (10 by default).
"""
import dataclasses
import os
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from random_kernel_gen import (
    INPUTS,
    INT_SHAPES,
    OUTPUTS,
    SHAPES,
    cases,
    int_cases,
    int_inputs,
    int_reference,
    int_source,
    load,
    load_source,
    reference,
)

import fieldsim as fs

EXAMPLES = int(os.environ.get("FS_RANDOM_KERNELS", "10"))  # per shape and precision
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


_ADDED = re.compile(r"^(\s*)(out\[i\] \+=|out\[[ij]\] -=|s\[None\] \+=|acc \+=|out\[i\] =|"
                    r"out2\[i, j\] \+?=) (.+)$")


def _sizes(case):
    """The case with every added or stored term replaced by its absolute value: its outputs are,
    per element, the size of what was summed (the scale of a reordered sum's rounding)."""
    def absolute(line):
        match = _ADDED.match(line)
        if match is None:
            return line
        indent, target, term = match.groups()
        return f"{indent}{target.replace('-=', '+=')} abs({term})"
    body = "\n".join(absolute(line) for line in case.body.split("\n"))
    return dataclasses.replace(case, body=body)


def _run(case, dtype):
    fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=case.threads,
            default_fp=getattr(fs, dtype))
    module = load(case, dtype)
    inputs = case.inputs()
    if dtype == "f32":  # the reference sees what the fields hold
        inputs = {k: v.astype(np.float32).astype(np.float64) for k, v in inputs.items()}
    for name, values in inputs.items():
        getattr(module, name).from_numpy(values)
    module.k()
    return module, inputs


def _check_forward(case, module, inputs, rtol):
    want = reference(case, inputs)
    size = reference(_sizes(case), inputs)
    for name in OUTPUTS:
        got = getattr(module, name).to_numpy()
        bad = np.abs(got - want[name]) > rtol * (1.0 + np.abs(size[name]) + np.abs(want[name]))
        assert not bad.any(), (f"{case.source('f64')}\n{name} differs at "
                               f"{np.argwhere(bad)[:5].tolist()}: {got[bad]} vs {want[name][bad]}")


def _loss(case, inputs, seeds):
    outputs = reference(case, inputs)
    return float(sum((seeds[name] * outputs[name]).sum() for name in OUTPUTS))


def _directional(case, inputs, seeds, direction):
    """The central difference of the loss along `direction`, or None where it is not stable
    under dividing the step by four (a branch or a kink lies within the step)."""
    quotients = []
    for h in (1e-6, 2.5e-7):
        up = _loss(case, {k: v + h * direction[k] for k, v in inputs.items()}, seeds)
        down = _loss(case, {k: v - h * direction[k] for k, v in inputs.items()}, seeds)
        quotients.append((up - down) / (2 * h))
    coarse, fine = quotients
    return fine if abs(coarse - fine) <= 1e-6 * (1.0 + abs(fine)) else None


def _check_gradient(case, module, inputs):
    rng = np.random.default_rng(case.seed + 1)
    seeds = {name: rng.uniform(-1.0, 1.0, shape) for name, shape in OUTPUTS.items()}
    for name, seed in seeds.items():
        getattr(module, name).grad.from_numpy(seed)
    module.k.grad()
    grads = {name: getattr(module, name).grad.to_numpy() for name in INPUTS}
    checked = 0
    for _ in range(3):
        direction = {name: rng.normal(size=shape) for name, shape in INPUTS.items()}
        fd = _directional(case, inputs, seeds, direction)
        if fd is None:
            continue
        ad = float(sum((grads[k] * direction[k]).sum() for k in INPUTS))
        scale = float(sum(np.abs(grads[k] * direction[k]).sum() for k in INPUTS))
        assert abs(ad - fd) <= 1e-6 * (1.0 + scale), (
            f"{case.source('f64')}\nadjoint {ad} vs central differences {fd}")
        checked += 1
    return checked


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_f64_values_and_adjoints_match_python(shape):
    gradients_checked = []

    @SETTINGS
    @given(cases(shape))
    def f64_case(case):
        module, inputs = _run(case, "f64")
        _check_forward(case, module, inputs, rtol=1e-9)
        gradients_checked.append(_check_gradient(case, module, inputs) > 0)

    f64_case()
    # branches and kinks make some directions unusable, never most of them
    assert sum(gradients_checked) >= 0.7 * len(gradients_checked)


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_f32_values_match_python(shape):
    @SETTINGS
    @given(cases(shape))
    def f32_case(case):
        module, inputs = _run(case, "f32")
        _check_forward(case, module, inputs, rtol=1e-3)

    f32_case()


@pytest.fixture(autouse=True)
def _reset():
    yield
    fs.reset()


@pytest.mark.parametrize("shape", sorted(INT_SHAPES))
def test_i32_values_match_python(shape):
    @SETTINGS
    @given(int_cases(shape))
    def i32_case(case):
        fs.init(arch=fs.cpu, offline_cache=False, cpu_max_num_threads=case.threads)
        module = load_source(int_source(case))
        c = int_inputs(case)
        module.c.from_numpy(c)
        module.k()
        want_iout, want_t = int_reference(case, c)
        np.testing.assert_array_equal(module.iout.to_numpy(), want_iout, err_msg=int_source(case))
        assert int(module.t[None]) == want_t, int_source(case)

    i32_case()
