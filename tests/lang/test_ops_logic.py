"""`fs.lang.ops` comparison/logic names (Taichi's `ti.lang.ops.cmp_lt`, `bit_not`,
`logical_and`, `ifte`, ...): Taichi 1.7.4's values in Python scope and in kernels."""
import pytest

import fieldsim as fs

o = fs.lang.ops


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def test_python_scope_scalars():
    assert o.bit_not(5) == -6 and o.bit_not(True) == -2
    assert [o.cmp_eq(1, 1), o.cmp_ne(1, 1), o.cmp_lt(1, 2), o.cmp_le(2.0, 2), o.cmp_gt(1, 2),
            o.cmp_ge(3, 2)] == [True, False, True, True, False, True]
    assert (o.logical_and(3, 5), o.logical_and(0, 5), o.logical_or(0, 5), o.logical_or(2, 0)) \
        == (5, 0, 5, 2)
    assert (o.ifte(1, 2, 3), o.ifte(0, 2.0, 3)) == (2, 3)
    assert (o.clz(8), o.popcnt(7), o.frexp(8.0)) == (28, 3, (0.5, 4))


def test_python_scope_vectors():
    assert o.bit_not(fs.Vector([1, -2])).to_numpy().tolist() == [-2, 1]
    assert o.cmp_lt(fs.Vector([1, 5]), fs.Vector([2, 2])).to_numpy().tolist() == [True, False]
    assert o.cmp_eq(fs.Vector([1.0, 5]), 5).to_numpy().tolist() == [False, True]
    with pytest.raises(ValueError, match="truth value"):
        o.logical_and(fs.Vector([1, 0]), fs.Vector([3, 3]))
    with pytest.raises(ValueError, match="truth value"):
        o.ifte(fs.Vector([1, 0]), 1, 2)


def test_kernel_scope():
    out = fs.field(fs.i32, shape=16)
    fo = fs.field(fs.f32, shape=2)

    @fs.kernel
    def k(a: fs.i32, b: fs.i32, f: fs.f32):
        out[0] = o.bit_not(a)
        out[1] = o.cmp_eq(a, b)
        out[2] = o.cmp_ne(a, b)
        out[3] = o.cmp_lt(a, b)
        out[4] = o.cmp_le(a, b)
        out[5] = o.cmp_gt(a, b)
        out[6] = o.cmp_ge(a, f)
        out[7] = o.logical_and(a, b)
        out[8] = o.logical_or(a, b)
        out[9] = o.ifte(a, b, 7)
        v = o.cmp_lt(fs.Vector([a, b]), fs.Vector([b, a]))
        out[10] = v[0]
        out[11] = v[1]
        w = o.logical_and(fs.Vector([a, 0]), fs.Vector([b, b]))
        out[12] = w[0] + 10 * w[1]
        out[13] = o.clz(a)
        out[14] = o.popcnt(b)
        out[15] = o.bit_not(fs.Vector([a, b]))[1]
        fo[0] = o.ifte(a > b, f, 0.5)
        fo[1] = o.cmp_lt(f, 2.0)

    # Taichi 1.7.4's results for these arguments
    expected = {(3, 5, 1.5): ([-4, 0, 1, 1, 1, 0, 1, 5, 3, 5, 1, 0, 1, 30, 2, -6], [0.5, 1.0]),
                (0, 5, 0.0): ([-1, 0, 1, 1, 1, 0, 1, 0, 5, 7, 1, 0, 0, 32, 2, -6], [0.5, 1.0]),
                (6, 2, 6.0): ([-7, 0, 1, 0, 0, 1, 1, 2, 6, 2, 0, 1, 1, 29, 1, -3], [6.0, 0.0]),
                (-1, -1, -1.0): ([0, 1, 0, 0, 1, 0, 1, -1, -1, -1, 0, 0, 1, 0, 32, 0], [0.5, 1.0])}
    for args, (ints, floats) in expected.items():
        k(*args)
        assert out.to_numpy().tolist() == ints, args
        assert fo.to_numpy().tolist() == floats, args


def test_python_scope_bit_counts_and_frexp_are_taichis():
    # Taichi 1.7.4's ti.lang.ops.clz/popcnt in Python scope work on the number, not its 32-bit
    # pattern: clz is 32 less the bits below the first power of two above it (32 for x <= 0),
    # popcnt counts the ones of bin(x); frexp is numpy's pair
    assert [o.clz(v) for v in (0, 1, -1, -7, 255, 2**31 - 1, 2**31, 2**40)] == \
        [32, 31, 32, 32, 24, 1, 0, 0]
    assert [o.popcnt(v) for v in (0, -1, -6, 255, 2**40)] == [0, 1, 2, 8, 1]
    m, e = o.frexp(-3.5)
    assert (m, e) == (-0.875, 2) and type(m).__name__ == "float64" and type(e).__name__ == "int32"


def test_kernel_scope_bit_counts_of_negatives_are_32_bit():
    out = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k(a: fs.i32):
        out[0] = o.clz(a)
        out[1] = o.popcnt(a)
        _, e = o.frexp(a * 1.0)
        out[2] = e
        # a Python number is Taichi's Python-scope value even here (32 + 1)
        out[3] = o.clz(0) + o.popcnt(-1)

    k(-1)
    assert out.to_numpy().tolist() == [0, 32, 1, 33]
