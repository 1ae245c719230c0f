"""Public names Taichi 1.7.4 has on instances that fieldsim lacked: `Ndarray.get_type()`,
`Struct.methods`, `vec3.to_string()`/`vec3.ndarray()`, `@ti.func`'s `.func`."""
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def test_ndarray_get_type():
    t = fs.Vector.ndarray(3, fs.f32, shape=(2, 3)).get_type()
    assert t.shape == (2, 3) and t.needs_grad is False and t.layout == fs.Layout.AOS
    assert t.element_type.n == 3 and t.element_type.dtype == fs.f32
    s = fs.ndarray(fs.f32, shape=4, needs_grad=True).get_type()
    assert (s.element_type, s.shape, s.needs_grad) == (fs.f32, (4,), True)


def test_struct_methods():
    @fs.dataclass
    class P:
        a: fs.f32

        def twice(self):
            return 2 * self.a

    assert set(P(a=1.0).methods) == {"twice"}
    assert fs.types.struct(a=fs.f32, b=fs.i32)(a=1.0, b=2).methods == {}
    assert fs.Struct(methods=3).methods == 3  # a member of that name wins


def test_matrix_type_to_string_and_ndarray():
    assert fs.types.vector(3, fs.f32).to_string() == "VectorType[3, f32]"
    assert fs.types.matrix(2, 3, fs.i32).to_string() == "MatrixType[2,3, i32]"
    a = fs.math.vec3.ndarray(shape=(2, 3))
    assert a.shape == (2, 3) and a.n == 3
    assert fs.math.mat2.ndarray(shape=3).shape == (3,)


def test_func_dot_func():
    @fs.func
    def f(x):
        return x + 1

    assert f.func is f
