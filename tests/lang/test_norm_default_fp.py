"""`v.norm()` of an f32 vector under `default_fp=f64` is an f64, as in Taichi 1.7.4, whose norm
adds its default eps, the Python float 0.0, before the root (it was an f32 root, 7 digits).
`normalized()`, `norm_inv()` and `ti.math.length/normalize` follow; an integer eps keeps f32."""
import numpy as np

import fieldsim as fs


def test_f32_vector_norm_is_default_fp():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    a = fs.field(fs.f32, shape=2)
    r = fs.field(fs.f64, shape=5)
    a.from_numpy(np.array([0.25, 0.1], np.float32))

    @fs.kernel
    def k():
        u = fs.Vector([a[0], a[1]])
        r[0] = u.norm()
        r[1] = u.normalized()[0]
        r[2] = fs.math.length(u)
        r[3] = u.norm_inv()
        r[4] = u.norm(0)

    k()
    xf, yf = np.float32(0.25), np.float32(0.1)
    s32 = xf * xf + yf * yf  # norm_sqr stays f32
    x, n64 = np.float64(xf), np.sqrt(np.float64(s32))
    assert r[0] == n64
    assert r[1] == x * (1.0 / n64)
    assert r[2] == n64
    assert r[3] == 1.0 / n64
    assert r[4] == np.float64(np.sqrt(s32))
