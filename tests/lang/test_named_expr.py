"""Assignment expressions (`:=`) in kernels and funcs: they assign as `name = value` does and
take the variable's value afterwards (Taichi's build_NamedExpr)."""
import numpy as np

import fieldsim as fs


def test_walrus_in_kernel_and_func():
    x = fs.Vector.field(2, fs.f32, shape=4)
    y = fs.field(fs.i32, shape=4)
    m = fs.Vector.field(2, fs.f32, shape=())
    m[None] = [0.25, 0.75]

    @fs.func
    def twice(a):
        return (b := a * 2) + b

    @fs.kernel
    def k() -> fs.f32:
        x[0] = (p0 := m[None])
        f = 1.5
        y[0] = int(f := 3) * 10  # f stays a float variable: 3.0
        total = 0
        for i in range(1, 4):
            if (n := i * i) > 3:
                total += n
            y[i] = n
        w = 0
        while (w := w + 1) < 5:
            pass
        return p0.x + p0.y + f + total * 100 + w * 1000 + twice(1.5) * 10000

    assert k() == 1 + 3 + 1300 + 5000 + 60000
    np.testing.assert_allclose(x.to_numpy()[0], [0.25, 0.75])
    np.testing.assert_array_equal(y.to_numpy(), [30, 1, 4, 9])


def test_walrus_reassigns_a_func_parameter():
    @fs.func
    def bump(a: fs.i32) -> fs.i32:
        return (a := a + 1) * a

    @fs.kernel
    def k(v: fs.i32) -> fs.i32:
        return bump(v)

    assert k(3) == 16
