"""Fields and ndarrays cannot be made inside a kernel or func, as in Taichi ("field cannot be
called in Taichi-scope"). fieldsim made one while compiling and kept it: a k-means update from
GitHub that allocates its per-cluster sums with `ti.Vector.field(2, ti.f32, k)` in the kernel
would have carried the sums over from one launch to the next."""
import pytest

import fieldsim as fs


@pytest.mark.parametrize("make", [
    lambda: fs.field(fs.f32, shape=4),
    lambda: fs.Vector.field(2, fs.f32, shape=4),
    lambda: fs.Matrix.field(2, 2, fs.f32, shape=4),
    lambda: fs.Struct.field({"a": fs.f32}, shape=4),
    lambda: fs.types.vector(2, fs.f32).field(shape=4),
    lambda: fs.ndarray(fs.f32, shape=4),
])
def test_making_a_field_in_a_kernel_is_refused_at_its_line(make):
    """Directly or through a Python helper the kernel calls (here a lambda)."""
    fs.init(arch=fs.cpu)
    out = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        make()
        for i in range(4):
            out[i] = i

    with pytest.raises(fs.FieldsimSyntaxError, match=r"cannot be made in a kernel or @func") as info:
        k()
    assert __file__ in str(info.value) and "shape=4" in str(info.value)  # the user's line


def test_a_func_may_not_make_one_either():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.f32, shape=4)

    @fs.func
    def scratch():
        return fs.Vector.field(2, fs.f32, shape=4)

    @fs.kernel
    def k():
        t = scratch()
        for i in range(4):
            out[i] = t[i][0]

    with pytest.raises(fs.FieldsimSyntaxError, match=r"a field cannot be made in a kernel"):
        k()
