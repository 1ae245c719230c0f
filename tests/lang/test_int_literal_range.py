"""Python integers that become kernel constants (fieldsim/lang/expr.py `check_int_literal`):
one that fits neither default_ip nor the type it becomes is refused, as Taichi 1.7.4 refuses
it ("Integer literal ... exceeded the range"), instead of wrapping silently; the rest convert
(300 into a u8 is 44, as Taichi's cast of an i32 literal) or stay exact in wide contexts."""
import numpy as np
import pytest

import fieldsim as fs


def test_a_template_integer_beyond_i32_is_refused_not_wrapped():
    a = fs.field(fs.i32, shape=())

    @fs.kernel
    def store(n: fs.template()):
        a[None] = n

    @fs.kernel
    def twice(n: fs.template()) -> fs.i32:
        return n * 2  # folded in Python: 2**31 for n = 2**30

    # wrapped before: 7 stored for 2**40 + 7, -2147483648 returned for 2**30 * 2
    with pytest.raises(fs.FieldsimTypeError, match="Integer literal 1099511627783 exceeded"):
        store(2 ** 40 + 7)
    assert a[None] == 0
    with pytest.raises(fs.FieldsimTypeError, match="Integer literal 2147483648 exceeded"):
        twice(2 ** 30)
    store(2 ** 31 - 1)
    assert a[None] == 2 ** 31 - 1 and twice(-(2 ** 30)) == -(2 ** 31)


def test_typed_literals_and_wide_contexts():
    @fs.kernel
    def narrow() -> fs.i32:
        return fs.i32(2 ** 40)

    with pytest.raises(fs.FieldsimTypeError, match="exceeded the range of i32"):
        narrow()

    big = 0x9E3779B97F4A7C15

    @fs.kernel
    def wide(x: fs.i64, u: fs.u64) -> fs.types.vector(3, fs.u64):
        return fs.Vector([fs.u64(x + 2 ** 40), u * big, fs.cast(2 ** 40, fs.i64)], fs.u64)

    got = wide(5, 3).to_numpy().astype(np.uint64)
    assert got.tolist() == [2 ** 40 + 5, (3 * big) % 2 ** 64, 2 ** 40]

    u8 = fs.field(fs.u8, shape=())

    @fs.kernel
    def store_300():
        u8[None] = 300  # an i32 literal cast to u8, as in Taichi

    store_300()
    assert u8[None] == 44


def test_default_ip_i64_takes_big_literals():
    fs.init(arch=fs.cpu, default_ip=fs.i64)

    @fs.kernel
    def k() -> fs.i64:
        return 2 ** 40 + 7

    assert k() == 2 ** 40 + 7
    fs.init(arch=fs.cpu)


def test_a_func_returning_an_integer_constant_converts_it_to_the_annotation():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=3)

    @fs.func
    def narrow() -> fs.i8:
        return 7 + 27 * 7  # 196 as an i8: 196 - 256

    @fs.func
    def unsigned() -> fs.u8:
        return -1

    @fs.func
    def arg(x: fs.u16):
        return x

    @fs.kernel
    def k():
        out[0] = narrow()
        out[1] = unsigned()
        out[2] = arg(70000)  # 70000 - 65536

    k()  # refused before: NumPy's "Python integer 196 out of bounds for int8"
    assert out.to_numpy().tolist() == [196 - 256, 255, 70000 - 65536]
