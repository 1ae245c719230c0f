"""Python-scope writes of subnormal floats, as Taichi 1.7.4's x64 CPU backend stores them: its
writes run as kernels with flush-to-zero, so every `fill`, an f32 element write and an f32
`from_numpy` store 0 (of the value's sign); f64 element writes and f64 `from_numpy` keep the
value. `ti.cast(1e-45, ti.f64)` in a kernel widens a flushed f32 constant: 0."""
import math

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.ir.subnormals import FLUSHING_MACHINE

pytestmark = pytest.mark.skipif(not FLUSHING_MACHINE, reason="the CPU backend flushes on x86-64 only")


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu)


def _zero_of_sign(value, negative=False):
    return value == 0.0 and math.copysign(1.0, value) == (-1.0 if negative else 1.0)


def test_f32_writes_flush():
    a = fs.field(fs.f32, 4)
    a[3] = 1e-45
    a[2] = -3e-39
    assert _zero_of_sign(a[3]) and _zero_of_sign(a[2], negative=True)
    a[1] = 2.0 ** -126  # the smallest normal stays
    assert a[1] == 2.0 ** -126
    a.from_numpy(np.full(4, 1e-45, np.float32))
    assert not a.to_numpy().any()
    a.fill(-1e-45)
    assert all(_zero_of_sign(float(e), negative=True) for e in a.to_numpy())


def test_vector_and_ndarray_writes_flush():
    v = fs.Vector.field(2, fs.f32, 2)
    v[0] = [1e-45, 2.0]
    v[1][0] = 1e-40
    assert v[0][0] == 0.0 and v[0][1] == 2.0 and v[1][0] == 0.0
    nd = fs.ndarray(fs.f32, 3)
    nd[0] = 1e-45
    nd.fill(1e-44)
    assert nd[0] == 0.0 and nd[2] == 0.0


def test_f64_element_writes_and_from_numpy_keep_fill_flushes():
    b = fs.field(fs.f64, 3)
    b[1] = 1e-310
    assert b[1] == 1e-310
    src = np.full(3, 1e-310)
    b.from_numpy(src)
    assert b[0] == 1e-310
    b.fill(1e-310)
    assert not b.to_numpy().any()
    a = fs.field(fs.f32, 3)
    keep = np.array([1e-45, 1.0, 0.0], np.float32)
    a.from_numpy(keep)
    assert keep[0] != 0.0  # the caller's array is not changed


def test_a_widened_f32_constant_is_flushed_in_a_kernel():
    b = fs.field(fs.f64, 2)

    @fs.kernel
    def k():
        b[0] = fs.cast(1e-45, fs.f64)
        b[1] = fs.cast(1e-30, fs.f64)

    k()
    assert b[0] == 0.0 and b[1] == pytest.approx(1e-30, rel=1e-7)
