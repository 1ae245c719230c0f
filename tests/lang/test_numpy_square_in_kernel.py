"""`np.square(v)` in a kernel is `v * v`, as in Taichi (numpy's object loop calls the value's
`__mul__`), and differentiates as one: d/dx x^2 = 2x."""
import numpy as np

import fieldsim as fs


def test_numpy_square_of_a_kernel_value_is_its_product_with_itself():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=4, needs_grad=True)
    v = fs.Vector.field(2, fs.f32, shape=4)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)
    x.from_numpy(np.array([-1.5, 0.0, 2.0, 3.0], dtype=np.float32))

    @fs.kernel
    def k():
        for i in x:
            loss[None] += np.square(x[i])
            v[i] = np.square(fs.Vector([x[i], 1.0 + x[i]]))

    with fs.ad.Tape(loss=loss):
        k()
    a = x.to_numpy().astype(np.float64)
    np.testing.assert_allclose(loss[None], np.sum(a * a), rtol=1e-6)
    np.testing.assert_allclose(v.to_numpy(), np.stack([a * a, (1 + a) ** 2], axis=1), rtol=1e-6)
    np.testing.assert_allclose(x.grad.to_numpy(), 2 * a, rtol=1e-6)
