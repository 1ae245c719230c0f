"""`ti.math` functions are Taichi funcs: a Python float argument becomes a default_fp value before
the function's arithmetic, so it rounds as f32 arithmetic does (a Shadertoy port's
`mix(vec3(length(v)), v, 0.85)` had differed from Taichi's in the last bit)."""
import numpy as np

import fieldsim as fs

tm = fs.math



def test_python_float_argument_of_mix_is_an_f32_value():
    fs.init(arch=fs.cpu, default_fp=fs.f32, fast_math=False)
    out = fs.Vector.field(3, fs.f32, shape=2)

    @fs.kernel
    def k(x: fs.f32):
        v = tm.vec3(x, 2.0 * x, 3.0 * x)
        out[0] = tm.mix(tm.vec3(x), v, 0.85)
        out[1] = tm.mix(x, v, 0.85)

    x = np.float32(1.2345678)
    k(float(x))
    a = np.float32(0.85)
    v = np.array([x, np.float32(2) * x, np.float32(3) * x], np.float32)
    want = x * (np.float32(1) - a) + v * a  # every operation in f32, as in Taichi
    np.testing.assert_array_equal(out.to_numpy()[0], want)
    np.testing.assert_array_equal(out.to_numpy()[1], want)
    # folding 1 - 0.85 in f64 first would give another last bit
    assert not np.array_equal(want, x * np.float32(1 - 0.85) + v * a)
