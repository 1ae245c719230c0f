"""CPU tasks flush subnormal floats to zero (codegen/denormals.py), as Taichi's x64 backend:
results below the smallest normal number are 0 (FTZ), subnormal operands read as 0 (DAZ), in
f32 and f64, on the calling thread and on pool threads alike; the caller's own floating-point
state (numpy in Python scope) keeps IEEE subnormals after a launch."""
import platform

import numpy as np
import pytest

import fieldsim as fs

pytestmark = pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"),
                                reason="the MXCSR is x86's")


@pytest.mark.parametrize("dtype,np_dtype,tiny", [(fs.f32, np.float32, 1e-20),
                                                 (fs.f64, np.float64, 1e-160)])
@pytest.mark.parametrize("threads", [1, 2])
def test_subnormal_results_and_operands_are_zero(dtype, np_dtype, tiny, threads):
    fs.init(arch=fs.cpu, cpu_max_num_threads=threads)
    n = 1 << 16  # large enough to be split over the pool's threads
    a = fs.field(dtype, shape=n)
    square = fs.field(dtype, shape=n)
    scaled = fs.field(dtype, shape=n)

    @fs.kernel
    def k(s: dtype):
        for i in a:
            square[i] = a[i] * a[i]  # subnormal in IEEE arithmetic: flushed
            scaled[i] = a[i] * s

    vals = np.full(n, tiny, np_dtype)
    vals[::2] = 1.0
    a.from_numpy(vals)
    assert np.all(vals * vals != 0)  # numpy's IEEE result is a subnormal, not 0
    k(1.0)
    np.testing.assert_array_equal(square.to_numpy(), np.where(vals == 1.0, 1.0, 0.0))
    # a subnormal operand (DAZ) times a large factor: 0, where IEEE gives a normal number
    sub = np.finfo(np_dtype).tiny / 4
    a.from_numpy(np.full(n, sub, np_dtype))
    k(np_dtype(2 ** 20))
    assert np.all(scaled.to_numpy() == 0) and sub * np_dtype(2 ** 20) > 0
    # the launching thread's numpy still has IEEE subnormals
    assert np_dtype(tiny) * np_dtype(tiny) != 0


def test_subnormal_heavy_kernel_matches_flushed_reference():
    fs.init(arch=fs.cpu, fast_math=False)
    x = fs.field(fs.f32, shape=8)

    @fs.kernel
    def halve():
        for i in x:
            v = x[i]
            for _ in range(12):
                v = v * 0.5
            x[i] = v

    start = np.array([2 ** -120, 2 ** -110, 1.0, 2 ** -126, 3 * 2 ** -118, 0, -2 ** -115, 5.0],
                     np.float32)
    x.from_numpy(start)
    halve()
    # each halving in float32, every subnormal intermediate flushed to zero
    ref = start.astype(np.float64)
    for _ in range(12):
        ref = ref * 0.5
        ref[np.abs(ref) < np.finfo(np.float32).tiny] = 0.0
    np.testing.assert_array_equal(x.to_numpy(), ref.astype(np.float32))
