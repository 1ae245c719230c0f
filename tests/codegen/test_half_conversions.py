"""Conversions to f16 from f64 go through f32 (`codegen.llvm.narrow_float`): LLVM lowers a
direct f64 -> f16 truncation to compiler-rt's `__truncdfhf2`, which the JIT does not link, so
an `f16` kernel argument (passed as a double) or a cast of an f64 value to f16 called a null
pointer and killed the process (a GitHub PBD chain program with `deltaTime: ti.f16`)."""
import numpy as np

import fieldsim as fs


def test_half_argument_and_casts_from_f64():
    fs.init(arch=fs.cpu, offline_cache=False)
    a = fs.field(fs.f32, shape=4)
    d = fs.field(fs.f64, shape=4)
    h = fs.field(fs.f16, shape=4)
    d.from_numpy(np.array([0.1, 1.0 / 3.0, 1e-3, 65504.0]))

    @fs.kernel
    def scale(dt: fs.f16):
        for i in a:
            a[i] = 2.0 * dt * (i + 1)
            h[i] = fs.cast(d[i], fs.f16)

    scale(0.033)
    dt = np.float32(np.float16(0.033))
    np.testing.assert_array_equal(a.to_numpy(), (np.float32(2.0) * dt) * np.arange(1, 5, dtype=np.float32))
    np.testing.assert_array_equal(h.to_numpy(), d.to_numpy().astype(np.float16))
    fs.init(arch=fs.cpu)
