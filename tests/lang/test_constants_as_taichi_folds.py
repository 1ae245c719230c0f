"""Constants as Taichi 1.7.4's x64 CPU backend folds them (gh-regress6, compared bit for bit).

A math function of a typed float constant is folded from the constant's value in its type
(`ti.tan(ti.cast(1e20, ti.f32))` under an f64 default_fp is the tangent of f32's
100000002004087734272, not of 1e20); the kernels flush subnormals, and so does the folder: a
float literal that is subnormal in default_fp, a folded operand or result, and a constant cast to
another float type are zeros of their sign. `ti.rsqrt`/`ti.floor`/`ti.ceil`/`ti.round`/`ti.abs`
of a Python number are NumPy's (Python's for abs) Python-scope values, as Taichi's. A float
`fill` is a kernel whose template argument is a float literal: a constant of default_fp first."""
import math

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.ir.subnormals import FLUSHING_MACHINE
from support.backends import on_cpu

flushing = pytest.mark.skipif(not FLUSHING_MACHINE, reason="the CPU backend flushes on x86-64 only")


def _init_flushing_cpu(**options):
    """`fs.init` on the CPU backend, whose x64 kernels flush as Taichi's; a run with every init
    forced onto the CUDA emulation (tests/cuda/force_cuda.py) checks CUDA's rules elsewhere."""
    fs.init(arch=fs.cpu, **options)
    if not on_cpu():
        pytest.skip("x64 CPU flushing; this run forces the CUDA backend's emulation")


def _zero(value, negative=False):
    return value == 0.0 and math.copysign(1.0, value) == (-1.0 if negative else 1.0)


def _f32_of(fn, x):
    """`fn` in double precision of the f32 constant x, rounded once to f32."""
    return float(np.float32(fn(float(np.float32(x)))))


def test_math_of_a_narrowed_constant_uses_its_value_in_its_type():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    out = fs.field(fs.f64, 3)

    @fs.kernel
    def k():
        out[0] = fs.tan(fs.cast(1e20, fs.f32))
        out[1] = fs.exp(fs.cast(3.14159265358979, fs.f32))
        out[2] = fs.sin(fs.cast(0.1, fs.f32))

    k()
    want = [_f32_of(math.tan, 1e20), _f32_of(math.exp, 3.14159265358979), _f32_of(math.sin, 0.1)]
    assert out.to_numpy().tolist() == want


@flushing
def test_subnormal_literals_and_folds_are_flushed_before_widening():
    _init_flushing_cpu()
    o64 = fs.field(fs.f64, 6)
    o32 = fs.field(fs.f32, 2)

    @fs.kernel
    def k():
        o64[0] = 1e-40  # an f32 literal first
        o64[1] = -1e-40 * 1.0
        o64[2] = fs.static(1e-40) * fs.cast(1e20, fs.f32)  # a flushed operand
        a = 1e-20
        o64[3] = a * a * 1e10  # a flushed folded product
        o64[4] = fs.asin(1e-45)  # a Python value, then an f32 literal
        o64[5] = fs.cast(1e-20, fs.f32) * fs.cast(1e-20, fs.f32) * 1e10
        o32[0] = fs.cast(fs.f64(1e-40), fs.f32)  # a narrowed constant
        o32[1] = fs.abs(fs.f64(1e-45))  # abs folds, then its narrowing

    k()
    got = o64.to_numpy().tolist()
    assert all(_zero(v) for v in got[:1] + got[2:]), got
    assert _zero(got[1], negative=True)
    assert _zero(o32[0]) and _zero(o32[1])


@flushing
def test_a_constant_cast_under_f64_default_is_flushed_in_its_type():
    _init_flushing_cpu(default_fp=fs.f64)
    o64 = fs.field(fs.f64, 2)
    o32 = fs.field(fs.f32, 1)
    tiny = 1e-40

    @fs.kernel
    def k():
        o64[0] = fs.cast(1e-40, fs.f32)
        o64[1] = fs.cast(fs.cast(fs.static(-1e-42), fs.f64), fs.f32)
        o32[0] = fs.cast(fs.abs(tiny), fs.f32)

    k()
    assert _zero(o64[0]) and _zero(o64[1], negative=True) and _zero(o32[0])


def test_rounding_functions_and_rsqrt_of_python_numbers_are_python_values():
    fs.init(arch=fs.cpu)
    o32 = fs.field(fs.f32, 3)
    o64 = fs.field(fs.f64, 2)
    oi = fs.field(fs.i32, 1)

    @fs.kernel
    def k():
        o32[0] = fs.rsqrt(88.7)  # 1 / sqrt in double of 88.7 itself, rounded once
        o32[1] = fs.rsqrt(fs.exp(-104.0))  # exp(-104) stays a double (no f32 underflow)
        o32[2] = fs.rsqrt(0.0)
        oi[0] = fs.round(2147483647)  # the integer, not f32's 2**31
        o64[0] = fs.cos(fs.abs(-7))  # abs of a Python int is an int, and cos takes it
        o64[1] = fs.log(fs.ceil(1e300))  # a double, not f32's inf

    k()
    assert o32[0] == float(np.float32(1 / math.sqrt(88.7)))
    assert o32[1] == float(np.float32(1 / math.sqrt(math.exp(-104.0))))
    assert o32[2] == math.inf
    assert oi[0] == 2147483647
    assert o64.to_numpy().tolist() == [float(np.float32(math.cos(7))),
                                       float(np.float32(math.log(1e300)))]


def test_a_float_fill_is_a_default_fp_literal_first():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f64, 2)
    v = fs.Vector.field(2, fs.f64, 2)
    a = fs.ndarray(fs.f64, 2)
    x.fill(1 / 3)
    v.fill(0.1)
    a.fill(1 / 3)
    assert x.to_numpy().tolist() == [float(np.float32(1 / 3))] * 2
    assert v.to_numpy().ravel().tolist() == [float(np.float32(0.1))] * 4
    assert a.to_numpy().tolist() == [float(np.float32(1 / 3))] * 2
    x.fill(16777217)  # an integer literal is exact
    assert x.to_numpy().tolist() == [16777217.0] * 2
    x[0] = 1 / 3  # an element write is not a literal: exact
    assert x[0] == 1 / 3


@flushing
def test_a_float_fill_flushes_in_default_fp():
    _init_flushing_cpu()
    x = fs.field(fs.f64, 2)
    x.fill(-1e-40)
    assert all(_zero(e, negative=True) for e in x.to_numpy().tolist())


def test_f64_default_fill_is_exact():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    x = fs.field(fs.f64, 2)
    x.fill(1 / 3)
    assert x.to_numpy().tolist() == [1 / 3] * 2
