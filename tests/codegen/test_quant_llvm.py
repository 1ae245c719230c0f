"""Kernel code for quantized fields (codegen/quant_llvm.py): every container width, and the
code generator's rewrites of loads, stores and atomics (zero-fill memsets, per-worker
reductions, loop accumulators, per-chunk scatter copies), which must leave packed words alone."""
import numpy as np
import pytest

import fieldsim as ti


@pytest.fixture(autouse=True)
def _cpu():
    ti.init(arch=ti.cpu)


def _wrap(v, bits, signed):
    u = np.mod(v, 2 ** bits)
    return np.where(u >= 2 ** (bits - 1), u - 2 ** bits, u) if signed else u


@pytest.mark.parametrize("container", [8, 16, 32, 64])
def test_every_container_width_keeps_neighbours(container):
    low, high = ti.field(ti.types.quant.int(3, True)), ti.field(ti.types.quant.int(container - 3,
                                                                                    False, ti.u64))
    bp = ti.BitpackedFields(max_num_bits=container)
    bp.place(low, high)
    ti.root.dense(ti.i, 64).place(bp)

    @ti.kernel
    def write():
        for i in range(64):
            low[i] = i - 32
            high[i] = ti.u64(i) * 977

    write()
    np.testing.assert_array_equal(low.to_numpy(), _wrap(np.arange(64) - 32, 3, True))
    np.testing.assert_array_equal(high.to_numpy(), _wrap(np.arange(64) * 977, container - 3, False))


def test_zero_fill_loop_leaves_the_other_fields_of_the_word():
    a, b = ti.field(ti.types.quant.int(8, True)), ti.field(ti.types.quant.int(8, True))
    bp = ti.BitpackedFields(max_num_bits=16)
    bp.place(a, b)
    ti.root.dense(ti.i, 100).place(bp)
    b.fill(7)
    a.fill(9)

    @ti.kernel
    def clear():
        for i in range(100):
            a[i] = 0

    clear()
    assert (a.to_numpy() == 0).all() and (b.to_numpy() == 7).all()


def test_reductions_and_scatters_go_through_the_word():
    a, b = ti.field(ti.types.quant.int(16, False)), ti.field(ti.types.quant.int(16, False))
    bp = ti.BitpackedFields(max_num_bits=32)
    bp.place(a, b)
    ti.root.dense(ti.i, 8).place(bp)
    n = 70001

    @ti.kernel
    def count():
        for i in range(n):  # one invariant element (a per-worker reduction elsewhere)
            a[0] += 1
        for i in range(n):  # scattered adds (per-chunk copies elsewhere)
            b[i % 8] += 2
        for i in range(8):  # an inner serial loop (a loop accumulator elsewhere)
            for j in range(1000):
                a[i] += 3

    count()
    expect_a = np.full(8, 3000)
    expect_a[0] += n
    np.testing.assert_array_equal(a.to_numpy(), _wrap(expect_a, 16, False))
    np.testing.assert_array_equal(b.to_numpy(), _wrap(2 * np.bincount(np.arange(n) % 8), 16, False))
