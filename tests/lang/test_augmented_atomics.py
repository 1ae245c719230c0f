"""`&=`, `|=` and `^=` on a field element, or on a kernel variable a parallel loop writes, are
atomics as `+=` is (Taichi's rule). They were a load and a store: threads lost each other's
updates (on the CPU `^=` over 2^20 iterations gave a different word each run; on an H200
Taichi's own test_local_atomics got 1 for 1023)."""
import numpy as np
import pytest

import fieldsim as fs

N = 1 << 20


def _bits_toggled_odd_times(n):
    """The XOR of `1 << (i % 31)` for i < n, in numpy."""
    counts = np.bincount(np.arange(n) % 31, minlength=31)
    return int(sum(1 << k for k in range(31) if counts[k] % 2))


@pytest.mark.parametrize("run", range(3))
def test_kernel_variables_in_a_parallel_loop(run):
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k():
        a = 0
        b = -1
        c = 0
        d = 0
        for i in range(N):
            a |= 1 << (i % 31)
            b &= ~(1 << (i % 29))
            c ^= 1 << (i % 31)
            d += 1
        out[0] = a
        out[1] = b
        out[2] = c
        out[3] = d

    k()
    assert out.to_numpy().tolist() == [2 ** 31 - 1, -(1 << 29), _bits_toggled_odd_times(N), N]


def test_field_elements_and_vector_components():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.u32, shape=3)
    v = fs.Vector.field(2, fs.i32, shape=())
    x.from_numpy(np.array([0, 0xFFFFFFFF, 0], np.uint32))

    @fs.kernel
    def k():
        for i in range(N):
            x[0] |= fs.u32(1) << fs.u32(i % 32)
            x[1] &= ~(fs.u32(1) << fs.u32(i % 16))
            x[2] ^= fs.u32(i & 0xFF)
            v[None] ^= fs.Vector([i % 7, i % 5])

    k()
    xor_bytes = np.bitwise_xor.reduce(np.arange(N, dtype=np.uint32) & 0xFF)
    assert x.to_numpy().tolist() == [0xFFFFFFFF, 0xFFFF0000, int(xor_bytes)]
    want = [np.bitwise_xor.reduce(np.arange(N) % 7), np.bitwise_xor.reduce(np.arange(N) % 5)]
    assert v[None].to_numpy().tolist() == [int(w) for w in want]


def test_bitwise_updates_of_floats_are_refused_naming_the_field():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=3, name="x")
    n = fs.field(fs.i32, shape=3, name="n")

    @fs.kernel
    def on_float():
        for i in x:
            x[i] |= 1

    @fs.kernel
    def float_value():
        for i in n:
            n[i] ^= 1.5

    with pytest.raises(fs.FieldsimTypeError, match="bitwise atomic or needs integer operands: field 'x' is f32"):
        on_float()
    with pytest.raises(fs.FieldsimTypeError, match="atomic xor on field 'n' needs integer operands"):
        float_value()
    with pytest.raises(fs.FieldsimTypeError, match="field 'x' is f32"):
        fs.kernel(lambda: fs.atomic_and(x[0], 1))()


def test_elements_one_thread_owns_take_plain_updates_and_agree():
    """Demotion (codegen/demote.py): a bitwise update no other thread races with is a plain
    load-op-store, as `+=` is; the results are the same."""
    fs.init(arch=fs.cpu)
    x = fs.field(fs.i32, shape=64)

    @fs.kernel
    def k():
        for i in x:  # x[i] is this iteration's own element
            for j in range(1000):
                x[i] ^= j * (i + 1)
                x[i] |= 1 << (j % 3)

    k()
    want = np.zeros(64, np.int64)
    for i in range(64):
        for j in range(1000):
            want[i] ^= j * (i + 1)
            want[i] |= 1 << (j % 3)
    np.testing.assert_array_equal(x.to_numpy(), want.astype(np.int32))
