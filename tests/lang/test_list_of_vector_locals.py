"""`x = [vec3(0), vec3(0)]` in a kernel, then `x[j] = p[i]` at a constant index: as in Taichi 1.7.4
(its `expr_init` of a list), a Python list whose items are variables. fieldsim made the list one
2x3 matrix and refused `x[j] = p[i]` ("Expected 2 indices, got 1"), which stopped a continuous
collision detection program from GitHub (StrayHyena/Graphics `Simulation/ContinuousCollision.py`,
four point lists declared at the kernel's top level and refilled in its serial loops)."""
import numpy as np
import pytest

import fieldsim as fs


def _fields(n=8):
    p = fs.Vector.field(3, fs.f32, shape=n)
    out = fs.Vector.field(3, fs.f32, shape=n)
    p.from_numpy(np.stack([np.arange(n), 2 * np.arange(n), -np.arange(n)], 1).astype(np.float32))
    return p, out


def _expected(n=8):
    a = np.stack([np.arange(n), 2 * np.arange(n), -np.arange(n)], 1).astype(np.float64)
    return a


def test_top_level_list_refilled_in_a_later_loop():
    fs.init(arch=fs.cpu)
    p, out = _fields()
    vec3 = fs.types.vector(3, fs.f32)

    @fs.kernel
    def k():
        x = [vec3(0, 0, 0), vec3(0, 0, 0)]  # kernel top level: the items cross into the loop's task
        for i in range(7):
            for j in fs.static(range(2)):
                x[j] = p[i + j]
            out[i] = x[0] + 2 * x[1]

    k()
    a = _expected()
    np.testing.assert_array_equal(out.to_numpy()[:7], a[:7] + 2 * a[1:])


def test_list_in_a_loop_body_with_augmented_items_and_whole_list_uses():
    fs.init(arch=fs.cpu)
    p, out = _fields()
    vec3 = fs.types.vector(3, fs.f32)

    @fs.func
    def total(items):
        s = vec3(0, 0, 0)
        for v in fs.static(items):
            s += v
        return s

    @fs.kernel
    def k():
        for i in range(7):
            x = [vec3(1, 1, 1), p[i], vec3(0, 0, 0)]
            x[2] = p[i + 1]
            x[0] += p[i]
            x[-1] *= 2.0
            out[i] = total(x) + x[1]

    k()
    a = _expected()
    np.testing.assert_array_equal(out.to_numpy()[:7], (1 + a[:7]) + a[:7] + 2 * a[1:] + a[:7])


def test_a_runtime_index_is_refused_naming_the_list():
    fs.init(arch=fs.cpu)
    p, out = _fields()

    @fs.kernel
    def k(j: fs.i32):
        for i in range(7):
            x = [p[i], p[i + 1]]
            x[j] = p[0]
            out[i] = x[0]

    with pytest.raises(fs.FieldsimSyntaxError, match=r"'x' is a list of 2 variables") as e:
        k(1)
    assert "test_list_of_vector_locals.py" in str(e.value) and "x[j] = p[0]" in str(e.value)
