"""Float literals that become integer constants (fieldsim/lang/expr.py `value`, `cast`): one that
truncates into the type is folded; one that does not (1e300, inf as an f32 literal, 3e9 into an
i32, -3.0 into a u8) converts as a runtime float of the same value does, the backend's
conversion (x86's results on x86-64, as Taichi's x64 backend), instead of an OverflowError at
compile time or Python's wrapped integer."""
import platform
import warnings

import numpy as np
import pytest

import fieldsim as fs
from support.backends import on_cpu

try:
    from fieldsim.lang.precision import PrecisionLossWarning
except ImportError:  # run under Taichi (FIELDSIM_AS_TAICHI=1), which logs its warnings in C++
    PrecisionLossWarning = UserWarning

X86 = platform.machine().lower() in ("x86_64", "amd64")


def test_out_of_range_float_literals_convert_as_runtime_floats():
    fs.init(arch=fs.cpu)
    lit = fs.field(fs.i32, shape=4)
    run = fs.field(fs.i32, shape=4)
    u8 = fs.field(fs.u8, shape=4)

    @fs.kernel
    def literals():
        lit[0] = 1e300  # inf as the f32 literal Taichi makes of it
        lit[1] = fs.cast(-1e40, fs.i32)
        lit[2] = 3e9
        lit[3] = fs.cast(2.9, fs.i32)
        u8[0] = fs.cast(-3.0, fs.u8)
        u8[1] = fs.cast(330.0, fs.u8)
        u8[2] = 255.9
        u8[3] = fs.cast(-0.5, fs.u8)

    @fs.kernel
    def runtime(a: fs.f32, b: fs.f32, c: fs.f32, d: fs.f32):
        run[0], run[1], run[2], run[3] = int(a), int(b), int(c), int(d)

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's "overflow encountered in cast" leaked before
        # the i32 <- f32 stores warn "Assign may lose precision", as in Taichi
        warnings.filterwarnings("ignore", category=PrecisionLossWarning)
        literals()
    runtime(float("inf"), -float("inf"), 3e9, 2.9)  # the f32 values of the literals
    np.testing.assert_array_equal(lit.to_numpy(), run.to_numpy())
    assert lit[3] == 2 and u8[2] == 255 and u8[3] == 0
    if X86 and on_cpu():  # CUDA (and its emulation) clamps instead
        assert lit.to_numpy().tolist()[:3] == [-2 ** 31] * 3
        assert u8[0] == 253 and u8[1] == 74


@pytest.mark.parametrize("dt", [fs.i64, fs.u32, fs.i8])
def test_in_range_float_literals_truncate(dt):
    fs.init(arch=fs.cpu)
    out = fs.field(dt, shape=2)

    @fs.kernel
    def k():
        out[0] = 100.7
        out[1] = fs.cast(-0.9, dt)

    k()
    assert out.to_numpy().tolist() == [100, 0]


def test_a_cast_literal_is_default_fp_first():
    fs.init(arch=fs.cpu)  # default_fp f32: Taichi makes the literal an f32 constant, then casts
    out = fs.field(fs.i64, shape=())

    @fs.kernel
    def k():
        out[None] = fs.cast(123456789.0, fs.i64)

    k()
    assert out[None] == int(np.float32(123456789.0)) == 123456792
