"""Divisions sharing a divisor (codegen/shared_divisors.py, `TaskLowering.op_div`): under
fast-math, in a reverse-AD kernel, two or more float divisions by one value in one block
multiply by one reciprocal; a kernel the user wrote and exact mode keep every division.

Checks: which divisions the analysis groups (same block only, floats only, a branch's body a
group of its own); the LLVM IR handed to LLVM has one `fdiv` per group under fast-math and one
per division in exact mode; the results agree with float64 numpy within float32 rounding in
both modes, including divisions in an `if` and in its `else`; reverse AD of a quotient and a
square root (whose rules divide by one value several times) matches the analytic gradient
and float64 central differences.
"""
import re

import numpy as np
import pytest
from support.ir_kit import compiled_ir

import fieldsim as fs
from fieldsim.codegen.shared_divisors import shared_divisors
from fieldsim.ir.ir import Op, walk


def _quotients(fast_math):
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=fast_math)
    n = 64
    a = fs.field(fs.f32, shape=n)
    b = fs.field(fs.f32, shape=n)
    out = fs.Vector.field(4, dtype=fs.f32, shape=n)

    @fs.kernel
    def quotients():
        for i in a:
            d = b[i] * b[i] + 1.0
            out[i][0] = a[i] / d
            out[i][1] = 1.0 / d
            if a[i] > 0:
                out[i][2] = a[i] / d + 3.0 / d
            else:
                out[i][2] = -a[i] / d
            out[i][3] = a[i] / b[i]  # a divisor of its own: stays a division

    rng = np.random.default_rng(3)
    av, bv = rng.normal(size=n).astype(np.float32), rng.normal(size=n).astype(np.float32)
    a.from_numpy(av)
    b.from_numpy(bv)
    quotients()
    return quotients, out.to_numpy(), av.astype(np.float64), bv.astype(np.float64)


def _want(av, bv):
    d = bv * bv + 1.0
    return np.stack([av / d, 1.0 / d, np.where(av > 0, av / d + 3.0 / d, -av / d), av / bv], 1)


def _fdivs(text):
    body = text[text.index("define"):]
    return len(re.findall(r"= fdiv ", body))


@pytest.mark.parametrize("fast_math", [True, False])
def test_values_match_float64(fast_math):
    _, got, av, bv = _quotients(fast_math)
    np.testing.assert_allclose(got, _want(av, bv), rtol=3e-6, atol=1e-6)


def test_a_kernel_the_user_wrote_divides_each_quotient_under_fast_math(llvm_texts):
    # as Taichi's x64 backend does: sharing is for reverse-AD kernels (their quotient rule)
    _quotients(True)
    (text,) = [t for t in llvm_texts if "quotients" in t]
    assert _fdivs(text) == 6


def test_one_division_per_shared_divisor_in_an_adjoint_under_fast_math(llvm_texts):
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=True)
    x = fs.field(fs.f32, shape=8, needs_grad=True)
    y = fs.field(fs.f32, shape=8, needs_grad=True)

    @fs.kernel
    def ratio():
        for i in x:
            y[i] = x[i] / (x[i] * x[i] + 1.0)

    x.from_numpy(np.linspace(-1, 1, 8).astype(np.float32))
    ratio()
    y.grad.fill(1.0)
    ratio.grad()
    (fwd,) = [t for t in llvm_texts if "ratio" in t and ".grad" not in t and "grad" not in t]
    (adj,) = [t for t in llvm_texts if "ratio" in t and "grad" in t]
    assert _fdivs(fwd) == 1
    # d(a/b) = da/b - a*db/b/b: several divisions by b, one reciprocal
    assert _fdivs(adj) == 1
    xv = np.linspace(-1, 1, 8)
    np.testing.assert_allclose(x.grad.to_numpy(), (1 - xv * xv) / (xv * xv + 1) ** 2,
                               rtol=2e-6, atol=1e-7)


def test_exact_mode_keeps_every_division(llvm_texts):
    _quotients(False)
    (text,) = [t for t in llvm_texts if "quotients" in t]
    assert _fdivs(text) == 6


def test_groups_stay_within_one_block():
    fs.init(arch=fs.cpu, offline_cache=False)
    x = fs.field(fs.f32, shape=8)
    k = fs.field(fs.i32, shape=8)

    @fs.kernel
    def mixed():
        for i in x:
            d = x[i] + 2.0
            y = x[i] / d
            if y > 0:
                x[i] = y / d  # the if's body: one division by d there, no group
            x[i] += 1.0 / d
            k[i] = k[i] // 3 + k[i] // 3  # integer divisions: never grouped

    (task,) = [s for s in compiled_ir(mixed).body if s.op == Op.FOR]
    groups = shared_divisors(task)
    divs = [s for s in walk(task.body) if s.op == Op.DIV and s.dtype.is_float]
    top = [s for s in task.body if s.op == Op.DIV and s.dtype.is_float]
    assert len(top) == 2 and len(divs) == 3
    assert set(groups) == {id(s) for s in top}
    assert set(groups.values()) == {id(top[0])}


def test_gradient_of_shared_divisions_matches_analytic_and_fd():
    fs.init(arch=fs.cpu, offline_cache=False, default_fp=fs.f64)
    n = 16
    x = fs.field(fs.f64, shape=n, needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def potential():
        for i in x:
            s = fs.sqrt(x[i] * x[i] + 0.5)
            loss[None] += (x[i] + 2.0) / s

    def f(v):
        return float(np.sum((v + 2.0) / np.sqrt(v * v + 0.5)))

    xv = np.random.default_rng(8).normal(size=n)
    x.from_numpy(xv)
    with fs.ad.Tape(loss=loss):
        potential()
    s = np.sqrt(xv * xv + 0.5)
    analytic = 1.0 / s - (xv + 2.0) * xv / s ** 3
    np.testing.assert_allclose(x.grad.to_numpy(), analytic, rtol=1e-12)
    h = 1e-6
    fd = np.array([(f(xv + h * e) - f(xv - h * e)) / (2 * h) for e in np.eye(n)])
    np.testing.assert_allclose(x.grad.to_numpy(), fd, rtol=1e-7)


@pytest.mark.parametrize("fast_math", [True, False])
def test_subnormal_divisor_as_documented(fast_math):
    """A subnormal divisor reads as zero on the CPU (denormals-are-zero, as Taichi's x64
    backend: codegen/denormals.py), in both modes: the quotients are +inf and -inf, not the
    finite quotient of IEEE arithmetic, nor NaN."""
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=fast_math)
    d, a = fs.field(fs.f32, shape=1), fs.field(fs.f32, shape=1)
    out = fs.Vector.field(2, dtype=fs.f32, shape=1)

    @fs.kernel
    def two_quotients():
        for i in d:
            di = d[i]  # one divisor statement (two loads of d[i] would be two divisors)
            out[i][0] = a[i] / di
            out[i][1] = -a[i] / di

    a.from_numpy(np.array([1e-30], np.float32))
    d.from_numpy(np.array([1e-40], np.float32))  # subnormal: 1/d is above float32's max
    two_quotients()
    got = out.to_numpy()[0]
    assert np.isfinite(np.float32(1e-30) / np.float32(1e-40))  # IEEE: 1e10
    assert got[0] == np.inf and got[1] == -np.inf


@pytest.mark.parametrize("fast_math", [True, False])
def test_a_value_divided_by_itself_is_exactly_one(fast_math):
    # an MPM plasticity step: `new_sig = sig[d, d]; Jp *= sig[d, d] / new_sig` after an SVD.
    # Under fast-math LLVM reassociated the product of such ratios into chains 1 ulp off 1
    # (52 of 8192 particles); Taichi's fast-math folds x / x to 1, IEEE division gives 1.
    fs.init(arch=fs.cpu, offline_cache=False, fast_math=fast_math)
    n = 8192
    F = fs.Matrix.field(2, 2, fs.f32, n)
    Jp = fs.field(fs.f32, n)
    rng = np.random.default_rng(0)
    F.from_numpy((np.eye(2) + 0.05 * rng.standard_normal((n, 2, 2))).astype(np.float32))

    @fs.kernel
    def plasticity():
        for p in F:
            Jp[p] = 1.0
            U, sig, V = fs.svd(F[p])
            for d in fs.static(range(2)):
                new_sig = sig[d, d]
                Jp[p] *= sig[d, d] / new_sig
                sig[d, d] = new_sig

    plasticity()
    np.testing.assert_array_equal(Jp.to_numpy(), np.ones(n, np.float32))
    fs.init(arch=fs.cpu)
