"""`ti.cast(<Python float>, dtype)` in a kernel rounds the float to default_fp first, as Taichi
1.7.4 does (its `Expr(0.1)` is a default_fp constant, then cast): under default_fp=f32,
`ti.cast(0.1, ti.f64)` is 0.1f widened, not the double 0.1 (fieldsim gave the double, so
`ti.cast(ti.cast(638244.979, ti.f64) + z, ti.u64)` was 638244 where Taichi gives 638245)."""
import numpy as np

import fieldsim as fs


def test_python_float_cast_goes_through_default_fp():
    fs.init(arch=fs.cpu, default_fp=fs.f32)
    o = fs.field(fs.f64, shape=6)
    oi = fs.field(fs.u64, shape=1)

    @fs.kernel
    def k(z: fs.i32):
        o[0] = fs.cast(0.1, fs.f64)
        o[1] = fs.f64(0.1)  # a typed literal: the exact double in both
        o[2] = fs.cast(1e300, fs.f64)
        o[3] = fs.cast(fs.Vector([0.1, 0.2]), fs.f64)[1]
        o[4] = fs.cast(-0.0, fs.f64)
        o[5] = fs.cast(0.1, fs.f16)
        oi[0] = fs.cast(fs.cast(638244.9791835569, fs.f64) + z, fs.u64)

    k(0)
    assert o[0] == float(np.float32(0.1))
    assert o[1] == 0.1
    assert o[2] == np.inf
    assert o[3] == float(np.float32(0.2))
    assert o[4] == 0.0 and np.signbit(o[4])
    assert o[5] == float(np.float16(np.float32(0.1)))
    assert oi[0] == int(np.float32(638244.9791835569))  # 638245


def test_default_fp_f64_keeps_the_double():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    o = fs.field(fs.f64, shape=1)

    @fs.kernel
    def k():
        o[0] = fs.cast(0.1, fs.f64)

    k()
    assert o[0] == 0.1
