"""An f16 value cast to an integer type compiles (it raised llvmlite's "float too large to
pack with e format": the x86 conversion's range bounds 2^31, 2^63 were made half constants)
and converts as its f32 widening does. Expected values from numpy's float16 rounding."""
import numpy as np

import fieldsim as fs


def test_f16_casts_to_every_integer_width():
    fs.init(arch=fs.cpu)
    a = fs.field(fs.f32, shape=1)
    h = fs.field(fs.f16, shape=4)
    r = fs.field(fs.i64, shape=7)
    q = fs.field(fs.u64, shape=1)

    @fs.kernel
    def store():
        h[0] = a[0] + 52669.0  # rounds to 52672 in f16
        h[1] = a[0] - 300.5
        h[2] = a[0] - 65504.0

    @fs.kernel
    def convert():
        r[0] = fs.cast(h[0], fs.u32)
        r[1] = fs.cast(h[1], fs.i32)
        r[2] = fs.cast(h[2], fs.i64)
        r[3] = fs.cast(h[1], fs.i16)
        r[4] = fs.cast(h[0], fs.u16)
        r[5] = fs.cast(h[1], fs.i8)
        r[6] = fs.cast(h[1], fs.u8)
        q[0] = fs.cast(h[0], fs.u64)

    store()
    convert()
    big = int(np.float16(52669.0))
    low = int(np.float16(-300.5))  # -300: truncation toward zero
    assert r.to_numpy().tolist() == [big, low, -65504, low, big, (low & 0xFF) - 256, low & 0xFF]
    assert q[0] == big
