"""A subnormal float constant in a CPU kernel is stored as a zero of its sign, as Taichi's x64
backend does: flush-to-zero acts on arithmetic only, so a constant written straight to memory
(a literal, a folded product, a constant matrix entry) has to be flushed when compiled."""
import platform

import numpy as np
import pytest

import fieldsim as fs

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                                reason="the MXCSR is x86's")


@pytest.mark.parametrize("dtype,tiny,normal", [(fs.f32, 1e-45, 2.0 ** -126),
                                               (fs.f64, 1e-320, 2.0 ** -1022)])
def test_subnormal_constants_are_stored_as_zero(dtype, tiny, normal):
    fs.init(arch=fs.cpu, default_fp=dtype)  # literals of the field's precision
    out = fs.field(dtype, shape=5)
    loop = fs.field(dtype, shape=64)
    m = fs.Matrix.field(2, 2, dtype, shape=())

    @fs.kernel
    def k():
        out[0] = tiny
        out[1] = -tiny
        out[2] = tiny * 1e3  # folded: still below the smallest normal
        out[3] = normal  # the smallest normal number stays
        out[4] = 3.0 * tiny / tiny  # DAZ on operands: 0/0
        for i in loop:
            loop[i] = tiny
        m[None] = fs.Matrix([[tiny, 1.0], [2.0, -tiny]])

    k()
    got = out.to_numpy()
    assert got[0] == 0 and not np.signbit(got[0])
    assert got[1] == 0 and np.signbit(got[1])
    assert got[2] == 0 and got[3] == normal
    assert not np.any(loop.to_numpy())
    assert m.to_numpy().tolist() == [[0.0, 1.0], [2.0, 0.0]]


def test_value_rounding_to_a_normal_f32_is_kept():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.f32, shape=1)
    just_below = float(np.nextafter(np.float64(2.0 ** -126), 0))  # rounds up to 2**-126 in f32

    @fs.kernel
    def k():
        out[0] = just_below

    k()
    assert out[0] == 2.0 ** -126
