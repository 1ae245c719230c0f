"""Kernel features Taichi's bundled GGUI examples use: `ti.zero`/`ti.one`, `v.cast(float)`,
Python's `pow` in a kernel, and `a, flag = 0, False` making `flag` a variable (not a constant)."""
import numpy as np

import fieldsim as fs


def test_zero_and_one_keep_shape_and_type():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(3, fs.f32, shape=2)
    n = fs.field(fs.i32, shape=2)

    @fs.kernel
    def k():
        for i in v:
            v[i] = fs.zero(v[i]) + fs.one(v[i]) * (i + 0.5)
            n[i] = fs.one(n[i]) + fs.zero(n[i]) + i

    k()
    assert np.array_equal(v.to_numpy(), [[0.5] * 3, [1.5] * 3])
    assert np.array_equal(n.to_numpy(), [1, 2])
    assert list(fs.zero(fs.Vector([2.0, 3.0]))) == [0.0, 0.0] and fs.one(7) == 1


def test_vector_cast_to_python_float_and_int_uses_defaults():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    out = fs.Vector.field(2, fs.f64, shape=1)
    iout = fs.Vector.field(2, fs.i32, shape=1)

    @fs.kernel
    def k(s: fs.f64):
        base = fs.Vector([1, 2])
        out[0] = base.cast(float) * s  # f64 (default_fp): no f32 rounding
        iout[0] = (base.cast(float) * 1.75).cast(int)

    k(0.1)
    assert np.array_equal(out.to_numpy()[0], [0.1, 0.2])
    assert np.array_equal(iout.to_numpy()[0], [1, 3])


def test_builtin_pow_in_kernel():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=3)

    @fs.kernel
    def k(g: fs.f32):
        for i in x:
            x[i] = pow(i + 1.0, g) + pow(2, 3)

    k(1.5)
    assert np.allclose(x.to_numpy(), np.arange(1, 4) ** 1.5 + 8, rtol=1e-6)


def test_tuple_assigned_false_is_a_variable():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=4)

    @fs.func
    def search(limit):
        steps, hit = 0, False
        for _ in range(10):
            steps += 1
            hit = steps > limit
            if hit:
                break
        return steps, hit

    @fs.kernel
    def k():
        for i in range(1):
            s, h = search(3)
            out[0], out[1] = s, h
            s2, h2 = search(20)
            out[2], out[3] = s2, h2

    k()
    assert out.to_numpy().tolist() == [4, 1, 10, 0]
