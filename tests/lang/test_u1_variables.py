"""A variable declared from a comparison is a `u1`, kept to one bit as in Taichi 1.7.4: `+=`,
`-=`, `^=` cast their operand to `u1` (nonzero is 1) and wrap, so `c = a < b; c += 1` is 0
(it was 2: a kernel's top-level variable is a hidden `u1` field stored in 8 bits, and its
atomic add did not wrap; `n -= 1` from 0 read 255). A float assigned to one is true when
nonzero: `h = 0.5` is 1 (the constant was truncated to 0)."""
import numpy as np
import pytest
from support.programs import run_func_body

import fieldsim as fs


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("in_loop", [False, True])
def test_u1_variable_stays_one_bit(in_loop):
    fs.init(arch=fs.cpu)
    a = fs.field(fs.i32, shape=2)
    out = fs.field(fs.i32, shape=6)
    fout = fs.field(fs.f32, shape=1)
    a.from_numpy(np.array([1, 2], np.int32))

    @fs.func
    def body():
        c = a[0] < a[1]  # 1
        c += 1  # 1 + 1 wraps
        out[0] = c
        d = a[0] < a[1]
        d += 2  # 2 is true: 1 + 1
        out[1] = d
        n = a[0] > a[1]  # 0
        n -= 1  # 0 - 1 wraps to 1
        out[2] = n
        q = a[0] < a[1]
        q ^= a[1]  # 2 is true: 1 ^ 1
        out[3] = q
        e = a[0] > a[1]
        e = a[1]  # 2 is true
        out[4] = e
        w = a[0] < a[1]
        w += a[1] + 3  # 1 + 1
        out[5] = w
        h = a[0] < a[1]
        h = 0.5
        fout[0] = h

    run_func_body(body, in_loop)
    assert out.to_numpy().tolist() == [0, 0, 1, 0, 1, 0]
    assert fout[0] == 1.0


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_u1_field_atomics_wrap():
    fs.init(arch=fs.cpu)
    a = fs.field(fs.i32, shape=2)
    u = fs.field(fs.u1, shape=4)
    a.from_numpy(np.array([1, 2], np.int32))

    @fs.kernel
    def k():
        u[0] = a[0] < a[1]
        u[0] += 1
        u[1] = a[0] > a[1]
        u[1] -= 1
        u[2] = 0.25
        u[3] = a[0] < a[1]
        fs.atomic_add(u[3], a[1])

    k()
    assert u.to_numpy().tolist() == [False, True, True, False]
