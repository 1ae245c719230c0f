"""`@fs.data_oriented` classes: kernel and func methods, `self` bound at compile time, gradients
through method kernels, and the error for a kernel method of an undecorated class."""
import pytest

import fieldsim as fs


@fs.data_oriented
class Grid:
    def __init__(self, n, scale):
        self.n, self.scale = n, scale
        self.x = fs.field(fs.f32, shape=n, needs_grad=True)
        self.loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.func
    def weight(self, i):
        return self.scale * i

    @fs.kernel
    def fill(self, offset: fs.f32):
        for i in self.x:
            self.x[i] = self.weight(i) + offset

    @fs.kernel
    def energy(self):
        for i in self.x:
            self.loss[None] += self.x[i] * self.x[i]

    @staticmethod
    @fs.kernel
    def seven() -> fs.i32:
        return 7

    @property
    @fs.kernel
    def first(self) -> fs.f32:
        return self.x[0]


def test_kernel_methods_read_fields_and_attributes_of_self():
    g = Grid(5, 2.0)
    g.fill(0.5)
    assert [g.x[i] for i in range(5)] == [2.0 * i + 0.5 for i in range(5)]
    assert g.first == 0.5
    assert g.seven() == 7 and Grid.seven() == 7


def test_two_instances_compile_separately():
    a, b = Grid(3, 1.0), Grid(4, 10.0)
    a.fill(0.0)
    b.fill(1.0)
    assert a.x[2] == 2.0
    assert b.x[3] == 31.0


def test_method_kernel_gradient_is_analytic():
    g = Grid(4, 1.0)
    g.fill(1.0)
    with fs.ad.Tape(loss=g.loss):
        g.energy()
    for i in range(4):  # d(sum x^2)/dx = 2x
        assert g.x.grad[i] == pytest.approx(2.0 * g.x[i])


def test_bound_kernel_grad_seeds_by_hand():
    g = Grid(3, 1.0)
    g.fill(2.0)
    g.loss.grad[None] = 1.0
    g.energy.grad()
    assert g.x.grad[1] == pytest.approx(2.0 * 3.0)


def test_func_method_callable_in_python_scope():
    g = Grid(2, 3.0)
    assert g.weight(4) == 12.0


def test_kernel_method_of_undecorated_class_is_a_clear_error():
    class Plain:
        def __init__(self):
            self.x = fs.field(fs.f32, shape=2)

        @fs.kernel
        def run(self):
            for i in self.x:
                self.x[i] = 1.0

    with pytest.raises(fs.FieldsimSyntaxError, match="data_oriented") as info:
        Plain().run()
    assert "test_data_oriented.py" in str(info.value)


def test_static_and_class_func_methods():
    @fs.data_oriented
    class Scaled:
        factor = 3.0

        def __init__(self):
            self.x = fs.field(fs.f32, shape=4)

        @staticmethod
        @fs.func
        def square(v):
            return v * v

        @classmethod
        @fs.func
        def scaled(cls, v):
            return cls.factor * v

        @fs.kernel
        def run(self):
            for i in self.x:
                self.x[i] = self.square(i) + self.scaled(i)

    s = Scaled()
    s.run()
    assert list(s.x.to_numpy()) == [i * i + 3.0 * i for i in range(4)]


def test_data_oriented_object_as_template_argument():
    g = Grid(3, 2.0)

    @fs.kernel
    def fill_from(obj: fs.template(), v: fs.f32):
        for i in obj.x:
            obj.x[i] = obj.weight(i) * v

    fill_from(g, 0.5)
    assert list(g.x.to_numpy()) == [0.0, 1.0, 2.0]


def test_private_members_are_name_mangled_as_python_does():
    # taichi-dev/taichi#2109: `self.__x` in a method must read `self._Cls__x`
    @fs.data_oriented
    class __Holder:
        def __init__(self):
            self.__scale = 3
            self.__f = fs.field(fs.i32, shape=4)

        @fs.func
        def __get(self, i):
            return self.__f[i] * self.__scale

        @fs.kernel
        def run(self) -> fs.i32:
            for i in self.__f:
                self.__f[i] = i
            s = 0
            for i in range(4):
                s += self.__get(i)
            return s

    class Sub(__Holder):
        pass

    assert __Holder().run() == 18
    assert Sub().run() == 18
