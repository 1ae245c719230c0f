"""A `ti.template()` (or `ti.ref`) parameter passed a field element whose index calls a func,
`f(x[g(i)])`, aliases that element as for `f(x[i])` (Taichi writes through it; fieldsim passed
a copy, so the func's writes were lost), and `g` runs once per call."""
import numpy as np

import fieldsim as fs


def test_writes_reach_the_element_and_the_index_is_computed_once():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=8)
    v = fs.Vector.field(2, fs.f32, shape=8)
    idx = fs.field(fs.i32, shape=8)
    calls = fs.field(fs.i32, shape=())
    idx.from_numpy((7 - np.arange(8)).astype(np.int32))

    @fs.func
    def bump(a: fs.template()):
        a += 1.0

    @fs.func
    def scale(a: fs.template(), k):
        a *= k

    @fs.func
    def g(i):
        calls[None] += 1
        return idx[i]

    @fs.kernel
    def k():
        for i in range(4):
            bump(x[i])
            bump(x[g(i)])
            scale(a=v[g(i)], k=3.0)

    v.from_numpy(np.ones((8, 2), np.float32))
    k()
    np.testing.assert_array_equal(x.to_numpy(), [1, 1, 1, 1, 1, 1, 1, 1])
    np.testing.assert_array_equal(v.to_numpy()[:, 0], [1, 1, 1, 1, 3, 3, 3, 3])
    assert calls[None] == 8  # twice per iteration, once per call of g
