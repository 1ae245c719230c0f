"""On x86-64, an out-of-range float-to-int conversion gives x86's result, as Taichi 1.7.4's x64
backend does (codegen/x86_conversions.py): i32/i64 take INT_MIN, the 8- and 16-bit types the
low bits of the i32 conversion (`ti.cast(330.0, ti.u8)` is 74), u32/u64 all ones with AVX-512.
The reference below is written from those rules in Python, per float type."""
import platform

import numpy as np
import pytest
from llvmlite import binding as llvm

import fieldsim as fs

pytestmark = pytest.mark.skipif(platform.machine().lower() not in ("x86_64", "amd64"),
                                reason="x86-64 conversions")

VALS = [330.0, 255.9, 256.0, -3.0, -1.0, -0.99, -0.5, 70000.0, -40000.0, 3e9, -3e9, 5e9, 1e20,
        -1e20, float("inf"), -float("inf"), float("nan"), 2.0**31, -2.0**31, 2.0**31 - 128,
        -2.0**31 - 256, 2.0**32, 2.0**63, 2.0**64, 1.5e19, -2.0**63, 12345.7, -12345.7]
TYPES = [fs.u8, fs.i8, fs.u16, fs.i16, fs.i32, fs.u32, fs.i64, fs.u64]


def _signed(v, bits):
    lo, hi = -2.0 ** (bits - 1), 2.0 ** (bits - 1)
    return int(v) if lo <= v < hi else -(2 ** (bits - 1))  # NaN compares false


def _unsigned_wide(v, bits, avx512, ftype):
    if avx512:
        return int(v) if -1.0 < v < 2.0 ** bits else 2 ** bits - 1
    if bits == 32:
        return _signed(v, 64)
    top = ftype(2.0 ** 63)
    return _signed(v, 64) if v < top else _signed(float(ftype(v) - top), 64) ^ (1 << 63)


def reference(v, dtype, avx512, ftype):
    bits, mask = dtype.bits, (1 << dtype.bits) - 1
    v = float(ftype(v))
    if bits <= 16:
        r = _signed(v, 32)
    elif dtype.is_signed:
        r = _signed(v, bits)
    else:
        r = _unsigned_wide(v, bits, avx512, ftype)
    r &= mask
    return r - (1 << bits) if dtype.is_signed and r >> (bits - 1) else r


@pytest.mark.parametrize("fdt,ftype", [(fs.f32, np.float32), (fs.f64, np.float64)])
def test_out_of_range_conversions_give_x86_results(fdt, ftype):
    fs.init(arch=fs.cpu)
    avx512 = "+avx512f" in llvm.get_host_cpu_features().flatten()
    n = len(VALS)
    src = fs.field(fdt, shape=n)
    outs = [fs.field(t, shape=n) for t in TYPES]
    src.from_numpy(np.array(VALS, dtype=ftype))

    @fs.kernel
    def conv():
        for i in src:
            for k in fs.static(range(len(TYPES))):
                outs[k][i] = fs.cast(src[i], TYPES[k])

    conv()
    for t, o in zip(TYPES, outs):
        want = [reference(v, t, avx512, ftype) for v in VALS]
        assert o.to_numpy().tolist() == want, t


def test_unclamped_colour_to_u8_wraps_as_taichi():
    fs.init(arch=fs.cpu)
    img = fs.field(fs.u8, shape=4)

    @fs.kernel
    def write(c: fs.f32):
        for i in img:
            img[i] = fs.cast((c - 0.5 * i) * 255, fs.u8)

    write(1.2)  # 306, 178.5, 51, -76.5
    assert img.to_numpy().tolist() == [306 - 256, 178, 51, 256 - 76]
