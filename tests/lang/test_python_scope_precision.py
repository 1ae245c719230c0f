"""Python-scope vectors and math keep Taichi 1.7.4's precision: `ti.types.vector(3, float)`
values hold default_fp entries, an entry is a numpy scalar of that dtype, `norm`/`dot`/`sum` are
numpy scalars summed in order, and `ti.sin`/`ti.atan2`/... are numpy's in the input's precision
(an f32 camera direction gives an f32 yaw, as a program's kernels then capture it)."""
import numpy as np

import fieldsim as fs


def test_float_typed_vector_is_default_fp():
    fs.init(arch=fs.cpu)
    vec3 = fs.types.vector(3, float)
    p = vec3([3, 0.5, 2])
    d = (vec3([0.0, 0.0, 0.0]) - p).normalized()
    ref = -np.array([3, 0.5, 2], np.float32)
    ref = ref * (np.float32(1.0) / np.sqrt((ref ** 2).sum()))
    assert d.to_numpy().dtype == np.float32
    assert d[0] == ref[0] and type(d[0]) is np.float32
    assert d.x == ref[0] and type(d.z) is np.float32
    n = p.norm()
    assert type(n) is np.float32 and n == np.sqrt((np.array([3, 0.5, 2], np.float32) ** 2).sum())
    assert type(p.dot(p)) is np.float32
    yaw = fs.atan2(-d[0], -d[2])
    assert type(yaw) is np.float32 and yaw == np.arctan2(-ref[0], -ref[2])
    assert type(fs.asin(d[1])) is np.float32 and fs.asin(d[1]) == np.arcsin(ref[1])
    assert type(fs.sqrt(2.0)) is np.float64 and fs.sqrt(2.0) == np.sqrt(2.0)
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    assert fs.types.vector(2, float)([0.1, 0.2]).to_numpy().dtype == np.float64


def test_struct_field_snode_is_its_first_members():
    fs.init(arch=fs.cpu)
    ray = fs.types.struct(ro=fs.types.vector(3, float), t=float)
    rays = ray.field()
    block = fs.root.bitmasked(fs.ij, (4, 4))
    block.place(rays)

    @fs.kernel
    def touch():
        rays[1, 2].t = 1.0
        rays[3, 0].t = 2.0

    @fs.kernel
    def count() -> fs.i32:
        n = 0
        for i, j in rays:
            n += 1
        return n

    touch()
    assert count() == 2
    assert rays.snode.parent() is rays.parent() is rays.t.snode.parent()
    rays.snode.parent().deactivate_all()
    assert count() == 0


def test_pre_1_0_field_constructor_is_refused_with_the_new_spelling():
    fs.init(arch=fs.cpu)
    import pytest
    with pytest.raises(TypeError, match=r"shape.*fs\.Vector\.field"):
        fs.Vector(3, dt=fs.f32, shape=(4, 4))
    with pytest.raises(TypeError, match=r"shape.*fs\.Matrix\.field"):
        fs.Matrix([[1, 2]], dt=fs.f32, shape=4)
    assert fs.Vector([1, 2], ndim=1).to_numpy().tolist() == [1, 2]
