"""If-converted code (an `if` lowered to selects inside a parallel loop) keeps a local's value
where a nested `if` does not store to it.

A func with `ret = a; if a > hi: ret = a - w elif a < lo: ret = a + w` inlined into a guarded
branch used to store both nested branches unconditionally (the local was made inside the
predicated block, so its stores were taken as unguarded), found in a flocking program's
`valid_angle`. Values are checked against numpy, with fast math (if-converted) and without.
"""
import numpy as np
import pytest

import fieldsim as fs


def _wrap(a):
    return np.where(a > 3.0, a - 6.0, np.where(a < -3.0, a + 6.0, a))


@pytest.mark.parametrize("fast", [True, False])
def test_nested_if_in_inlined_func_under_a_guard(fast):
    fs.init(arch=fs.cpu, fast_math=fast)
    n = 64
    inp = fs.field(fs.f32, shape=n)
    out = fs.field(fs.f32, shape=n)

    @fs.func
    def wrap(a):
        ret = a
        if a > 3.0:
            ret = a - 6.0
        elif a < -3.0:
            ret = a + 6.0
        return ret

    @fs.func
    def guarded(x):
        d = 0.0
        if x > -100.0:
            d = wrap(x)
        return d

    @fs.kernel
    def k():
        for i in out:
            out[i] = guarded(inp[i])

    a = np.linspace(-5.0, 5.0, n).astype(np.float32)
    a[::7] = -200.0  # the outer guard fails here: d stays 0
    inp.from_numpy(a)
    k()
    want = np.where(a > -100.0, _wrap(a), 0.0)
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-6)


def test_nested_if_in_ndrange_under_a_guard():
    fs.init(arch=fs.cpu)
    inp = fs.field(fs.f32, shape=(8, 16))
    out = fs.field(fs.f32, shape=(8, 16))

    @fs.kernel
    def k():
        for i, j in fs.ndrange(8, 16):
            x = inp[i, j]
            d = -1.0
            if x > -4.0:
                r = x
                if x > 3.0:
                    r = x - 6.0
                elif x < -3.0:
                    r = x + 6.0
                d = r
            out[i, j] = d

    a = np.linspace(-5.0, 5.0, 128).astype(np.float32).reshape(8, 16)
    inp.from_numpy(a)
    k()
    np.testing.assert_allclose(out.to_numpy(), np.where(a > -4.0, _wrap(a), -1.0), rtol=1e-6)
