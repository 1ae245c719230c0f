"""A swizzle past a vector's end is a TaichiSyntaxError in Taichi's words, in both scopes."""
import re

import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def _words(n, group, got):
    return re.escape(f"vec{n} only has attributes={tuple(group[:n])!r}, got={tuple(got)!r}")


def test_python_scope_reads_and_writes():
    v = fs.Vector([4.0, 5.0])
    with pytest.raises(fs.TaichiSyntaxError, match=_words(2, "xyzw", "z")):
        _ = v.z
    with pytest.raises(fs.TaichiSyntaxError, match=_words(2, "rgba", "b")):
        v.b = 1.0
    with pytest.raises(fs.TaichiSyntaxError, match=_words(2, "stpq", "stp")):
        _ = v.stp
    with pytest.raises(fs.TaichiSyntaxError, match=_words(2, "xyzw", "xyz")):
        v.xyz = [1.0, 2.0, 3.0]
    with pytest.raises(fs.TaichiRuntimeError, match="value len does not match the swizzle pattern=yx"):
        v.yx = [1.0, 2.0, 3.0]
    assert v.to_numpy().tolist() == [4.0, 5.0]  # nothing written by the refused ones


def test_python_scope_swizzles_in_range_still_work():
    v = fs.Vector([1, 2, 3])
    v.zx = [7, 8]
    assert v.to_numpy().tolist() == [8, 2, 7]
    v.xy = 0  # a scalar fills the components
    assert v.to_numpy().tolist() == [0, 0, 7]
    assert np.array_equal(v.bgr.to_numpy(), [7, 0, 0])
    assert not hasattr(v, "no_such_name")


def test_kernel_scope_local_and_field():
    f = fs.Vector.field(2, fs.f32, shape=3)

    @fs.kernel
    def write_local():
        u = fs.Vector([1.0, 2.0])
        u.z = 3.0

    @fs.kernel
    def write_many():
        u = fs.Vector([1.0, 2.0])
        u.xyz = [1.0, 2.0, 3.0]

    @fs.kernel
    def read_field() -> fs.f32:
        return f[0].w

    for k, n, grp, got in [(write_local, 2, "xyzw", "z"), (write_many, 2, "xyzw", "xyz"),
                           (read_field, 2, "xyzw", "w")]:
        with pytest.raises(fs.TaichiSyntaxError, match=_words(n, grp, got)):
            k()


def test_kernel_scope_in_range_unchanged():
    @fs.kernel
    def k() -> fs.f32:
        u = fs.Vector([1.0, 2.0, 3.0])
        u.zx = fs.Vector([10.0, 20.0])
        return u.x * 100 + u.y * 10 + u.z

    assert k() == pytest.approx(20.0 * 100 + 2.0 * 10 + 10.0)
