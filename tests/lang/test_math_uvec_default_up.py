"""`ti.math.uvec2/3/4` hold Taichi's default_up, the unsigned type of default_ip: u32 by
default, u64 once `init(default_ip=ti.i64)` (a u64 stored in a uvec2 keeps all its bits)."""
import numpy as np

import fieldsim as fs


def test_uvec_is_u32_by_default():
    fs.init(arch=fs.cpu)
    assert fs.math.uvec2.dtype == fs.u32
    assert fs.math.uvec4.n == 4


def test_uvec_follows_a_64_bit_default_ip():
    fs.init(arch=fs.cpu, default_ip=fs.i64)
    assert fs.math.uvec3.dtype == fs.u64
    assert fs.math.uvec3 is fs.math.uvec3
    big = 2**40 + 7

    @fs.kernel
    def keep(n: fs.u64) -> fs.u64:
        v = fs.math.uvec2(n)
        return v.y

    assert keep(big) == big
    f = fs.math.uvec2.field(shape=2)
    f[1] = [big, 3]
    assert f.to_numpy().dtype == np.uint64
    assert int(f[1][0]) == big


def test_from_import_reads_the_current_default():
    fs.init(arch=fs.cpu, default_ip=fs.i64)
    from fieldsim.math import uvec4
    assert uvec4.dtype == fs.u64
    fs.init(arch=fs.cpu)
    from fieldsim.math import uvec4 as again
    assert again.dtype == fs.u32
