"""Rebinding a name that holds a compile-time Python value (an object, a tuple, a field).

Through fs.static if/for bodies the rebinding holds after the block, as Python's would (it
used to end with the block: the old object came back silently). Under a runtime if/loop it
is refused with Taichi's message: a runtime branch cannot choose between Python objects.
"""
import numpy as np
import pytest

import fieldsim as fs


class _Obj:
    def __init__(self, tag):
        self.tag = tag


def test_runtime_if_rebinding_an_object_is_refused():
    fs.init(arch=fs.cpu)
    objs = [_Obj(10), _Obj(20)]
    out = fs.field(int, 1)

    @fs.kernel
    def pick(c: int):
        o = objs[0]
        if c > 0:
            o = objs[1]
        out[0] = o.tag

    with pytest.raises(fs.FieldsimSyntaxError, match="Variable 'o' cannot be assigned"):
        pick(1)


def test_runtime_loop_rebinding_a_tuple_is_refused():
    fs.init(arch=fs.cpu)
    out = fs.field(int, 1)

    @fs.kernel
    def loop(n: int):
        t = (1, 2)
        for _ in range(n):
            t = (3, 4)
        out[0] = t[0]

    with pytest.raises(fs.FieldsimSyntaxError, match="runtime if/loop cannot rebind"):
        loop(2)


def test_static_if_and_static_for_rebind_as_python():
    fs.init(arch=fs.cpu)
    a = fs.field(int, 2)
    b = fs.field(int, 2)
    out = fs.field(int, 3)
    a.fill(1)
    b.fill(2)
    objs = [_Obj(5), _Obj(6), _Obj(7)]

    @fs.kernel
    def k():
        f = a
        if fs.static(True):
            f = b
        out[0] = f[0]
        best = objs[0]
        for i in fs.static(range(3)):
            if fs.static(objs[i].tag > best.tag):
                best = objs[i]
        out[1] = best.tag
        t = (1, 2)
        for _ in fs.static(range(2)):
            t = (t[1], t[0] + t[1])
        out[2] = t[1]

    k()
    # Python semantics: f is b; best is the object with the largest tag; (1,2)->(2,3)->(3,5)
    assert out.to_numpy().tolist() == [2, 7, 5]


def test_rebinding_inside_its_own_runtime_block_still_works():
    fs.init(arch=fs.cpu)
    objs = [_Obj(3), _Obj(4)]
    out = fs.field(int, 2)

    @fs.kernel
    def k(c: int):
        for i in range(2):
            o = objs[0]
            o = objs[1]
            if c > 0:
                out[i] = o.tag + i

    k(1)
    assert out.to_numpy().tolist() == [4, 5]


def test_python_bool_stored_again_is_a_variable():
    # `flag = PY_BOOL` then `flag = True` under a runtime if: Taichi makes the bool a variable
    fs.init(arch=fs.cpu)
    use = False
    out = fs.field(int, 2)

    @fs.kernel
    def k(c: int):
        flag = use
        if c > 0:
            flag = True
        out[c] = flag

    k(0)
    k(1)
    assert out.to_numpy().tolist() == [0, 1]


def test_numpy_scalar_makes_a_variable_a_runtime_loop_can_store():
    # a Kepler solver's `esp = FLOAT_MAX` (np.finfo(np.float32).max) then `esp = ...` in a loop:
    # Taichi makes NumPy numbers variables of the default types, as it does Python numbers
    fs.init(arch=fs.cpu)
    big = np.finfo(np.float32).max
    x = fs.field(fs.f32, 4)
    x.from_numpy(np.array([0.5, 1.5, 2.5, 3.5], np.float32))

    @fs.kernel
    def last(n: int) -> fs.f32:
        esp = big
        k = np.int64(7)
        for i in range(n):
            esp = x[i] * 2
            k = i
        return esp + k

    assert last(3) == 5.0 + 2
    # untouched, the variable keeps the NumPy value (Taichi 1.7.4 loses an np.float32 start value
    # when a runtime loop stores the name, and returns 0 + 7: not emulated)
    assert last(0) == np.float32(big) + 7

    @fs.kernel
    def branch(c: int) -> int:
        n = np.int16(3)
        if c > 0:
            n = 40000  # the default i32, not the NumPy scalar's i16
        return n

    assert branch(1) == 40000 and branch(0) == 3
