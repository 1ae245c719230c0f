"""`ti.math.mix(x, y, 0.9)`, `smoothstep(0.1, 0.7, 0.3)` in a kernel: Taichi 1.7.4 defines these
as `ti.func`s taking their arguments by value, so a Python number argument is first a default_fp
variable and the function's arithmetic runs in f32 (`1 - 0.9` is 0.10000002), not folded in double
precision. An Adam optimiser updating its moments with `mix(m, grad, beta)` drifted from Taichi
by an ulp per step before."""
import numpy as np

import fieldsim as fs

f32 = np.float32


def test_python_number_arguments_are_default_fp_values():
    fs.init(arch=fs.cpu, fast_math=False)
    x = fs.field(fs.f32, shape=())
    out = fs.field(fs.f32, shape=5)

    @fs.kernel
    def k():
        out[0] = fs.math.mix(x[None], 0.0, 0.9)
        out[1] = fs.math.mix(0.0, 1.0, 0.9)
        out[2] = fs.math.smoothstep(0.1, 0.7, 0.3)
        out[3] = fs.math.degrees(0.3)
        out[4] = fs.math.mod(x[None] + 4.5, 2.2)

    x[None] = 1.0
    k()
    t = (f32(0.3) - f32(0.1)) / (f32(0.7) - f32(0.1))
    x1 = f32(1.0)
    want = [x1 * (f32(1.0) - f32(0.9)), f32(0.9), t * t * (f32(3.0) - f32(2.0) * t),
            f32(0.3) * f32(180.0 / np.pi),
            (x1 + f32(4.5)) - f32(2.2) * np.floor((x1 + f32(4.5)) / f32(2.2))]
    np.testing.assert_array_equal(out.to_numpy(), np.array(want, dtype=np.float32))


def test_vector_mix_with_python_weight_matches_f32_arithmetic():
    fs.init(arch=fs.cpu, fast_math=False)
    n = 64
    a = fs.Vector.field(2, fs.f32, shape=n)
    b = fs.Vector.field(2, fs.f32, shape=n)
    out = fs.Vector.field(2, fs.f32, shape=n)

    @fs.kernel
    def k():
        for i in range(n):
            out[i] = fs.math.mix(a[i], b[i], 0.9)

    rng = np.random.default_rng(0)
    an = rng.normal(size=(n, 2)).astype(np.float32)
    bn = rng.normal(size=(n, 2)).astype(np.float32)
    a.from_numpy(an)
    b.from_numpy(bn)
    k()
    np.testing.assert_array_equal(out.to_numpy(), an * (f32(1.0) - f32(0.9)) + bn * f32(0.9))
