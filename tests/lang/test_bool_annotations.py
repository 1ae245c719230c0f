"""`bool` where Taichi accepts it as a type: a struct or dataclass member, a kernel argument
and a kernel return are u1; a u1 field element reads as the int 0 or 1 in Python scope."""
import numpy as np

import fieldsim as fs


def test_bool_struct_member_is_u1_in_both_scopes():
    Hit = fs.types.struct(hit=bool, d=float)
    f = Hit.field(shape=3)

    @fs.kernel
    def k() -> fs.i32:
        s = Hit(hit=1, d=1.0)
        f[1].hit = s.d > 0.5
        f[2].hit = s.d > 2.0
        empty = Hit()
        return int(s.hit) * 10 + int(empty.hit)

    assert f.hit.dtype == fs.u1
    assert k() == 10
    got = f.to_numpy()["hit"]
    assert got.dtype == np.bool_ and got.tolist() == [False, True, False]
    assert f[1].hit == 1 and type(f[1].hit) is int


def test_bool_dataclass_member():
    @fs.dataclass
    class Record:
        hit: bool
        pos: fs.math.vec3

    g = Record.field(shape=2)

    @fs.kernel
    def k():
        r = Record()
        r.hit = True
        g[1] = r

    k()
    assert g.hit.to_numpy().tolist() == [False, True]


def test_bool_kernel_argument_and_return():
    @fs.kernel
    def negate(b: bool) -> bool:
        return not b

    assert negate(True) == 0 and negate(False) == 1


def test_bool_field_element_reads_as_int():
    f = fs.field(bool, shape=2)
    f[0] = 1
    assert (f[0], f[1]) == (1, 0)
    assert type(f[0]) is int
