"""Constructs found in Taichi renderers from GitHub (docs/COMPAT.md, block gh-render2): a tuple a
func returns whose items are then assigned, a BVH built in a NumPy record array and loaded into
a struct field, and a `@ti.dataclass` member with a default value (refused, as by Taichi)."""
import math

import numpy as np
import pytest

import fieldsim as fs


def test_items_of_a_tuple_returned_by_a_func_are_variables():
    # pbrt's disk sampling: `p = polar(u); p[1] = mix(...)`; Taichi makes each item a variable
    out = fs.field(fs.f64, shape=(4, 2))

    @fs.func
    def polar(r, theta):
        return r * fs.cos(theta), r * fs.sin(theta)

    @fs.kernel
    def k():
        for i in range(4):
            p = polar(2.0, 0.5 * i)
            p[1] = 0.25 * p[1] + 1.0
            p[0] += 3.0
            out[i, 0] = p[0]
            out[i, 1] = p[1]

    k()
    for i in range(4):
        assert math.isclose(out[i, 0], 2.0 * math.cos(0.5 * i) + 3.0, rel_tol=1e-6)  # f32 arithmetic (default_fp)
        assert math.isclose(out[i, 1], 0.25 * 2.0 * math.sin(0.5 * i) + 1.0, rel_tol=1e-6)  # f32 arithmetic (default_fp)


def test_tuple_item_assigned_under_a_runtime_branch():
    out = fs.field(fs.f32, shape=6)

    @fs.func
    def pair(x):
        return x, 2.0 * x

    @fs.kernel
    def k():
        for i in out:
            t = pair(float(i))
            if i % 2 == 1:
                t[0] = -1.0
            out[i] = t[0] + t[1]

    k()
    assert list(out.to_numpy()) == [0.0, 1.0, 6.0, 5.0, 12.0, 9.0]


def test_struct_field_from_numpy_record_array():
    vec3 = fs.types.vector(3, fs.f64)
    Node = fs.types.struct(lo=vec3, hi=vec3, left=fs.i32, right=fs.i32)
    nodes = Node.field(shape=5)
    rec = np.empty(5, dtype=[("lo", np.float64, (3,)), ("hi", np.float64, (3,)),
                             ("left", np.int32), ("right", np.int32), ("unused", np.int32)])
    rec[:] = ([0, 0, 0], [1, 1, 1], -1, -1, 7)
    rec[2] = ([0.5, -2, 3], [4, 5, 6.25], 3, 4, 7)
    nodes.from_numpy(rec)
    got = nodes.to_numpy()
    assert np.array_equal(got["lo"], rec["lo"]) and np.array_equal(got["hi"], rec["hi"])
    assert list(got["left"]) == [-1, -1, 3, -1, -1] and list(got["right"]) == [-1, -1, 4, -1, -1]


@pytest.mark.fieldsim_specific  # the message names the member; Taichi 1.7.4 refuses it too
def test_dataclass_member_default_is_refused_naming_the_member():
    # fieldsim used to drop the default: the member silently read zero
    with pytest.raises(fs.FieldsimSyntaxError, match=r"Default value in @dataclass is not "
                       r"supported: Sphere.color") as info:
        @fs.dataclass
        class Sphere:
            radius: float
            color: fs.math.vec3 = fs.math.vec3(255, 255, 255)
    assert "test_render_programs.py" in str(info.value)


def test_dataclass_inherits_funcs_of_a_plain_base_class():
    # JulesLePrince/taichi_raytracer: materials share `emmited`/`scatter` defaults from a base
    class Base:
        @fs.func
        def emitted(self):
            return fs.math.vec3(0.0, 0.0, 0.0)

        @fs.func
        def gain(self):
            return 1.0

    @fs.dataclass
    class Lambertian(Base):
        albedo: fs.math.vec3

        @fs.func
        def gain(self):
            return self.albedo.sum()

    @fs.dataclass
    class Light(Base):
        color: fs.math.vec3

        @fs.func
        def emitted(self):
            return self.color

    out = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        a = Lambertian(albedo=fs.math.vec3(0.5, 0.25, 0.125))
        b = Light(color=fs.math.vec3(2.0, 3.0, 4.0))
        out[0] = a.emitted().sum()
        out[1] = a.gain()
        out[2] = b.emitted().sum()
        out[3] = b.gain()

    k()
    assert list(out.to_numpy()) == [0.0, 0.875, 9.0, 1.0]


def test_floats_in_a_dict_or_list_assigned_in_a_kernel_are_default_fp_values():
    # JulesLePrince/taichi_raytracer's bounce_count_frag: `(power["r"] - neutral["r"]) * x +
    # neutral["r"]` with dicts of Python floats built in the func. Taichi makes each item an f32
    # variable, so the subtraction rounds in f32; fieldsim subtracted in f64 (1 ulp apart)
    out = fs.field(fs.f32, shape=(64, 2))

    @fs.kernel
    def k():
        for i in range(64):
            x = i / 600
            neutral = {"r": 203 / 255}
            power = [255 / 255, (0.1, 0.7)]
            out[i, 0] = (power[0] - neutral["r"]) * x + neutral["r"]
            out[i, 1] = power[1][1] - power[1][0]

    k()
    f = np.float32
    n = f(203 / 255)
    want = [(f(1.0) - n) * f(f(i) / f(600)) + n for i in range(64)]
    assert np.array_equal(out.to_numpy()[:, 0], np.array(want, dtype=np.float32))
    assert np.all(out.to_numpy()[:, 1] == f(0.7) - f(0.1))
    # the f64 difference rounded once is another number for some i: the test tells them apart
    once = [f(1.0 - 203 / 255) * f(f(i) / f(600)) + n for i in range(64)]
    assert not np.array_equal(np.array(want), np.array(once))
