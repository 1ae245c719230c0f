"""fs.static edge cases (break/continue in unrolled loops, runtime arguments), loops inside a
plain `if`, matrix unpacking by rows, atomics on non-writable targets."""
import numpy as np
import pytest

import fieldsim as fs


def test_static_break_and_continue_stop_or_skip_unrolling():
    x = fs.field(fs.i32, 6)

    @fs.kernel
    def k():
        for i in fs.static(range(6)):
            if fs.static(i == 1):
                continue
            x[i] = 1
            if fs.static(i == 3):
                break

    k()
    assert list(x.to_numpy()) == [1, 0, 1, 1, 0, 0]


def test_static_break_under_a_runtime_condition_is_an_error():
    x = fs.field(fs.i32, 4)

    @fs.kernel
    def k():
        for i in fs.static(range(4)):
            if x[i] > 0:
                break

    with pytest.raises(fs.FieldsimSyntaxError, match="fs.static conditions only") as info:
        k()
    assert "test_static_compat.py" in str(info.value)


def test_static_of_a_runtime_value_is_an_error():
    @fs.kernel
    def k(v: fs.f32) -> fs.i32:
        r = 0
        if fs.static(v > 0.5):
            r = 1
        return r

    with pytest.raises(fs.FieldsimCompilationError, match="must be compile-time constants"):
        k(1.0)


def test_loop_inside_a_plain_if_is_serial_and_may_break():
    @fs.kernel
    def k() -> fs.i32:
        a = 0
        if True:
            for i in range(1000):
                if i == 100:
                    break
                a += 1
        return a

    assert k() == 100


def test_matrix_unpacks_into_rows():
    r0 = fs.Vector.field(2, fs.f32, shape=())
    r1 = fs.Vector.field(2, fs.f32, shape=())
    a = fs.field(fs.f32, shape=4)

    @fs.kernel
    def rows():
        r0[None], r1[None] = fs.Matrix([[1.0, 2.0], [3.0, 4.0]])

    @fs.kernel
    def bad():
        a[0], a[1], a[2], a[3] = fs.Matrix([[1.0, 2.0], [3.0, 4.0]])

    rows()
    assert np.allclose(r0[None].to_numpy(), [1, 2]) and np.allclose(r1[None].to_numpy(), [3, 4])
    with pytest.raises(fs.FieldsimCompilationError, match="unpack"):
        bad()


def test_atomic_on_a_non_writable_target_is_an_error():
    @fs.kernel
    def k():
        y = fs.Vector([1, 2, 3])
        fs.atomic_min([3, 2, 1], y)

    with pytest.raises(fs.FieldsimSyntaxError, match="non-writable target as the first operand of 'atomic_min'"):
        k()
