"""With fast_math=False, a libm call whose argument LLVM proves constant is folded in double
precision and rounded once, as Taichi 1.7.4's LLVM folds it: a variable reassigned in
straight-line code, a field element stored then read, a func's local. The run-time f32
functions differ from that in the last bit for some inputs, so these kernels gave a value an
ulp away from Taichi's. The loop of a call on run-time values stays scalar."""
import ctypes
import ctypes.util
import math

import numpy as np
import pytest

import fieldsim as fs

_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_LIBM.tanhf.restype, _LIBM.tanhf.argtypes = ctypes.c_float, [ctypes.c_float]


def _folded(v):
    return np.float32(math.tanh(float(np.float32(v))))


# inputs where libm's f32 tanhf is an ulp away from the double result rounded once
VALUES = [v for v in np.round(np.linspace(0.05, 0.99, 400), 6).tolist()
          if np.float32(_LIBM.tanhf(float(np.float32(v)))) != _folded(v)][:8]


def test_the_inputs_tell_folded_from_run_time():
    assert len(VALUES) == 8


@pytest.mark.parametrize("v", VALUES)
def test_constants_libm_calls_are_folded_as_taichis(v):
    fs.init(arch=fs.cpu, fast_math=False, offline_cache=False)
    out = fs.field(fs.f32, shape=4)
    x = fs.field(fs.f32, shape=2)
    other = v / 2

    @fs.func
    def f(a):
        a = v
        return fs.tanh(a)

    @fs.kernel
    def k():
        a = other
        a = v  # reassigned in straight-line code
        out[0] = fs.tanh(a)
        x[1] = v  # stored, then read in the same task
        out[1] = fs.tanh(x[1])
        out[2] = f(other)
        out[3] = fs.tanh(x[0] + v)  # x[0] is known at run time only

    k()
    got = out.to_numpy()
    assert got[:3].tolist() == [_folded(v)] * 3
    assert got[3] == np.float32(_LIBM.tanhf(float(np.float32(v))))


def test_a_run_time_loop_of_libm_calls_stays_scalar(capfd, monkeypatch):
    monkeypatch.setenv("FIELDSIM_PRINT_LLVM", "1")
    fs.init(arch=fs.cpu, fast_math=False, offline_cache=False)
    x = fs.field(fs.f32, shape=256)

    @fs.kernel
    def scalar_tanh():
        for i in x:
            x[i] = fs.tanh(x[i])

    scalar_tanh()
    text = capfd.readouterr().out
    assert "call float @tanhf" in text and "x float> @llvm.tanh" not in text
