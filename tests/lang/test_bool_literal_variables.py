"""A kernel variable declared from a Python `True`/`False`, or from `a if cond else b` of two
Python bools, is a `u1` as in Taichi 1.7.4 (measured): a later store converts as `bool()` does,
so `hit = False; hit = count` holds 1 for a count of 2, and `hit = 0.5` holds 1. fieldsim made
them i32 variables, which kept 2 and truncated 0.5 to 0 (found in the rendering sweep:
`is_out = True; is_out = scatter_ret.is_out`)."""
import numpy as np
import pytest
from support.programs import run_func_body

import fieldsim as fs


@pytest.mark.filterwarnings("ignore::UserWarning")
@pytest.mark.parametrize("in_loop", [False, True])
def test_bool_literal_variable_is_u1(in_loop):
    fs.init(arch=fs.cpu)
    a = fs.field(fs.i32, shape=3)
    out = fs.field(fs.i32, shape=5)
    a.from_numpy(np.array([2, 3, 1], np.int32))

    @fs.func
    def body():
        c = True
        c = a[0]  # 2 is true
        out[0] = c
        d = False
        d = a[1] - a[1]  # 0 is false
        out[1] = d
        f = False if a[2] > 0 else True
        f = a[0]
        out[2] = f
        g = True
        g = 0.5  # nonzero is true
        out[3] = g
        n = False
        n = n + a[1]  # u1 + i32 is i32 3, stored back as true
        out[4] = n

    run_func_body(body, in_loop)
    assert out.to_numpy().tolist() == [1, 0, 1, 1, 1]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_bool_ifexp_is_u1_and_still_counts_as_int():
    fs.init(arch=fs.cpu)
    a = fs.field(fs.i32, shape=2)
    out = fs.field(fs.i32, shape=3)
    a.from_numpy(np.array([5, -1], np.int32))

    @fs.kernel
    def k():
        for i in range(2):
            inside = True if a[i] > 0 else False
            out[i] = inside + 1  # u1 + i32 promotes: 2 or 1
        hit = False
        for j in range(3):  # a flag set from a loop stays one bit
            if j >= 1:
                hit = j
        out[2] = hit

    k()
    assert out.to_numpy().tolist() == [2, 1, 1]


def test_bool_literal_assignment_warns_as_taichi():
    fs.init(arch=fs.cpu)
    a = fs.field(fs.i32, shape=1)

    @fs.kernel
    def k():
        for _ in range(1):
            flag = True
            flag = a[0]

    with pytest.warns(UserWarning, match=r"u1 <- i32"):
        k()


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_select_of_python_bools_is_u1():
    fs.init(arch=fs.cpu)
    a = fs.field(fs.i32, shape=2)
    out = fs.field(fs.i32, shape=3)
    a.from_numpy(np.array([2, 3], np.int32))

    @fs.kernel
    def k():
        for _ in range(1):
            s = fs.select(a[0] > 0, True, False)
            s = a[0]
            out[0] = s
            x = (a[0] > 0) if a[1] > 0 else False  # u1 and u1
            x = a[0]
            out[1] = x
            w = True if a[0] > 0 else 0  # u1 and i32 promote to i32
            w = a[0]
            out[2] = w

    k()
    assert out.to_numpy().tolist() == [1, 1, 2]


@pytest.mark.filterwarnings("ignore::UserWarning")
def test_item_assigned_list_of_python_bools_holds_u1_items():
    fs.init(arch=fs.cpu)
    a = fs.field(fs.i32, shape=2)
    out = fs.field(fs.i32, shape=4)
    a.from_numpy(np.array([2, 3], np.int32))

    @fs.kernel
    def k():
        for _ in range(1):
            m = [True, False]
            m[1] = a[0]  # 2 is true
            out[0] = m[1]
            mixed = [True, 3]  # one variable per item: a u1 and an i32
            mixed[0] = a[0]
            mixed[1] = a[1]
            out[1] = mixed[0]
            out[2] = mixed[1]
            v = fs.Vector([True, False])  # a vector is not a list: i32 entries, as in Taichi
            v[0] = a[0]
            out[3] = v[0]

    k()
    assert out.to_numpy().tolist() == [1, 1, 3, 2]
