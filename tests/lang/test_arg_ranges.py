"""Scalar kernel arguments are never wrapped, truncated or rounded silently, and a debug-mode
out-of-range index raises without writing anything (not even element 0)."""
import numpy as np
import pytest

import fieldsim as fs


@fs.kernel
def _noop(a: fs.i32, b: fs.f32, c: fs.i64, d: fs.u8):
    pass


@pytest.mark.parametrize("args,name,what", [
    ((2**31, 0, 0, 0), "a", "out of range for i32"),
    ((-2**31 - 1, 0, 0, 0), "a", "out of range for i32"),
    ((2**32 + 5, 0, 0, 0), "a", "out of range for i32"),
    ((3.7, 0, 0, 0), "a", "expects an integer"),
    ((float("nan"), 0, 0, 0), "a", "expects an integer"),
    ((0, 1j, 0, 0), "b", "got complex"),
    ((0, 10**400, 0, 0), "b", "too large"),
    ((0, 0, 2**63, 0), "c", "out of range for i64"),
    ((0, 0, 0, 256), "d", "out of range for u8"),
    ((0, 0, 0, -1), "d", "out of range for u8"),
    ((np.int64(2**40), 0, 0, 0), "a", "out of range for i32"),
])
def test_bad_scalar_arguments_are_a_type_error_naming_the_argument(args, name, what):
    with pytest.raises(fs.FieldsimTypeError, match=f"kernel '_noop': argument '{name}'.*{what}"):
        _noop(*args)


def test_extreme_in_range_arguments_arrive_exactly():
    out = fs.field(fs.i64, shape=3)

    @fs.kernel
    def put(a: fs.i32, c: fs.i64, f: fs.f32):
        out[0] = a
        out[1] = c
        out[2] = fs.i64(f)

    put(-2**31, 2**63 - 1, 2.0)  # an integral float is accepted for an integer too
    assert out.to_numpy().tolist() == [-2**31, 2**63 - 1, 2]
    put(np.int32(2**31 - 1), -2**63, np.float32(4))
    assert out.to_numpy().tolist() == [2**31 - 1, -2**63, 4]


def test_debug_out_of_bounds_store_writes_nothing():
    fs.init(arch=fs.cpu, debug=True, offline_cache=False)
    y = fs.field(fs.i32, shape=(4, 3))
    z = fs.field(fs.i32, shape=4)

    @fs.kernel
    def w(i: fs.i32, j: fs.i32):
        y[i, j] = 7
        fs.atomic_add(z[i], 5)

    with pytest.raises(fs.FieldsimIndexError, match="out of range for field"):
        w(9, 0)
    with pytest.raises(fs.FieldsimIndexError):
        w(-1, 0)
    assert not y.to_numpy().any() and not z.to_numpy().any()
    w(3, 2)
    assert y[3, 2] == 7 and z[3] == 5
