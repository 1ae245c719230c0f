"""`A @ B` sums each entry from `A[0, 0] * B[0, 0] * 0`, as Taichi 1.7.4 does: an entry whose
products are all -0.0 is +0.0 when that product is >= 0 (it was -0.0, so `atan2` of it gave -pi
for pi), and a NaN or inf in `A[0, 0] * B[0, 0]` makes every entry NaN."""
import math

import numpy as np

import fieldsim as fs


def _bits(x):
    return math.copysign(1.0, x)


def test_all_negative_zero_products_sum_to_plus_zero():
    fs.init(arch=fs.cpu, fast_math=False)
    f = fs.field(fs.f32, shape=4)
    r = fs.field(fs.f32, shape=6)
    f.from_numpy(np.array([-0.0, 2.0, -3.0, 0.0], np.float32))

    @fs.kernel
    def k():
        z, a, b, pz = f[0], f[1], f[2], f[3]
        # row 1: 0 (2 * +0 >= 0) + (-3 * +0) + (2 * -0) = +0
        r[0] = (fs.Matrix([[a, b], [b, a]]) @ fs.Vector([pz, z]))[1]
        # A[0, 0] * v[0] = -3 * +0 = -0 starts it: -0 + -0 + -0 = -0
        r[1] = (fs.Matrix([[b, z], [z, a]]) @ fs.Vector([pz, a]))[0]
        # an outer product through @: (2 * 2 * 0) + (-3 * 0) = +0
        c = fs.Matrix([[a], [b]]) @ fs.Matrix([[a, pz]])
        r[2] = c[1, 1]
        r[3] = fs.atan2(c[1, 1], -1.0)
        # vector @ matrix reads the vector as a row: (2 * 2 * 0) + (2 * -0) + (-0 * 2) = +0
        r[4] = (fs.Vector([a, z]) @ fs.Matrix([[a, z], [b, a]]))[1]
        # a dot product has no zero start: -0 + -0 = -0
        r[5] = fs.Vector([z, z]).dot(fs.Vector([a, a]))

    k()
    got = r.to_numpy()
    assert got[0] == 0.0 and _bits(got[0]) == 1.0
    assert got[1] == 0.0 and _bits(got[1]) == -1.0
    assert got[2] == 0.0 and _bits(got[2]) == 1.0
    assert got[3] == np.float32(math.pi)
    assert got[4] == 0.0 and _bits(got[4]) == 1.0
    assert got[5] == 0.0 and _bits(got[5]) == -1.0


def test_nan_in_first_product_reaches_every_entry():
    fs.init(arch=fs.cpu, fast_math=False)
    a = fs.field(fs.f32, shape=1)
    r = fs.field(fs.f32, shape=2)
    a[0] = -1.0

    @fs.kernel
    def k():
        x = a[0]
        m = fs.Matrix([[fs.log(x), 1.0, x ** 2], [x, 1.0, 0.0], [0.0, x, 2.0]])
        r[0] = (m @ m)[1, 2]  # x * x ** 2 + 1 * 0 + 0 * 2 = -1 without the NaN start
        n = fs.Matrix([[1.0, 1.0, x ** 2], [x, 1.0, 0.0], [0.0, x, 2.0]])
        r[1] = (n @ n)[1, 2]

    k()
    assert np.isnan(r[0])
    assert r[1] == -1.0


def test_matmul_gradient_unchanged():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    m = fs.Matrix.field(2, 3, fs.f64, shape=(), needs_grad=True)
    v = fs.Vector.field(3, fs.f64, shape=(), needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    m.from_numpy(np.array([[1.0, -2.0, 0.5], [3.0, 0.25, -1.0]]))
    v.from_numpy(np.array([2.0, -1.5, 4.0]))

    @fs.kernel
    def k():
        w = m[None] @ v[None]
        loss[None] += w[0] * w[0] + 3.0 * w[1]

    with fs.ad.Tape(loss=loss):
        k()
    mm, vv = m.to_numpy(), v.to_numpy()
    w0 = mm[0] @ vv
    # d/dm[0, j] = 2 w0 v[j], d/dm[1, j] = 3 v[j]; d/dv = 2 w0 m[0] + 3 m[1]
    np.testing.assert_allclose(m.grad.to_numpy(), np.stack([2 * w0 * vv, 3 * vv]), rtol=1e-12)
    np.testing.assert_allclose(v.grad.to_numpy(), 2 * w0 * mm[0] + 3 * mm[1], rtol=1e-12)
