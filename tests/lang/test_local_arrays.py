"""Local vectors and matrices indexed at run time: values against plain Python.

Such a local written at a runtime index is one stack array in the primal program from
ARRAY_MIN_ENTRIES entries on (ARRAY_LOAD/ARRAY_STORE), one only read from READ_ONLY_MIN_ENTRIES
on; otherwise a select over its entries. Both must give what Python gives,
for pushes and pops of a stack, `+=` at runtime indices, runtime (row, column) of a matrix, the
BVH programs' tuple assignment `stack[p + 1], stack[p + 2], p = a, b, p + 2`, a func that
writes a caller's local through a template parameter, and out-of-range indices (debug=True:
an assertion; otherwise the last entry is read and nothing is written, at every size).
"""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.ir.passes.scalarize_arrays import ARRAY_MIN_ENTRIES, READ_ONLY_MIN_ENTRIES

# a select chain, the smallest array, the BVH stack
SIZES = [ARRAY_MIN_ENTRIES - 1, ARRAY_MIN_ENTRIES, 64]


def _python_stack(i, size, steps):
    st, sp, out = [0] * size, 0, 0
    for j in range(steps):
        st[sp] = i * 100 + j
        sp = (sp + 1) % size
        if (i + j) % 3 == 2:
            sp = (sp + size - 1) % size
            out += st[sp] * (j + 1)
            st[(sp + 2) % size] += j
    return out + sum(st[k] * (k + 1) for k in range(size))


@pytest.mark.parametrize("size", SIZES)
def test_stack_pushes_pops_and_updates(size):
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=32)

    @fs.kernel
    def k(steps: fs.i32):
        for i in out:
            st = fs.Vector([0] * size)
            sp, acc = 0, 0
            for j in range(steps):
                st[sp] = i * 100 + j
                sp = (sp + 1) % size
                if (i + j) % 3 == 2:
                    sp = (sp + size - 1) % size
                    acc += st[sp] * (j + 1)
                    st[(sp + 2) % size] += j
            for t in range(size):
                acc += st[t] * (t + 1)
            out[i] = acc

    k(40)
    assert out.to_numpy().tolist() == [_python_stack(i, size, 40) for i in range(32)]


@pytest.mark.parametrize("shape", [(2, 2), (3, 4), (8, 8)])
def test_matrix_at_runtime_rows_and_columns(shape):
    n, m = shape
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    out = fs.field(fs.f64, shape=(16, n, m))

    @fs.kernel
    def k():
        for i in range(16):
            a = fs.Matrix.zero(fs.f64, n, m)
            for t in range(3 * n * m):
                a[(t * 5 + i) % n, (t + i) % m] += t * 0.25 + a[(t + 1) % n, (i * t) % m]
            for r, c in fs.static(fs.ndrange(n, m)):
                out[i, r, c] = a[r, c]

    k()
    want = np.zeros((16, n, m))
    for i in range(16):
        a = np.zeros((n, m))
        for t in range(3 * n * m):
            a[(t * 5 + i) % n, (t + i) % m] += t * 0.25 + a[(t + 1) % n, (i * t) % m]
        want[i] = a
    np.testing.assert_array_equal(out.to_numpy(), want)


def test_tuple_assignment_and_a_func_writing_through_a_template():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=8)

    @fs.func
    def push(st: fs.template(), sp, value):
        st[sp] = value
        return sp + 1

    @fs.kernel
    def k():
        for i in out:
            stack = fs.Vector([0] * 64)
            ptr = 0
            stack[ptr + 1], stack[ptr + 2], ptr = i + 1, i + 2, ptr + 2
            ptr = push(stack, ptr + 1, 7 * i)
            out[i] = stack[1] * 1000 + stack[2] * 100 + stack[ptr - 1] * 10 + ptr

    k()
    assert out.to_numpy().tolist() == [(i + 1) * 1000 + (i + 2) * 100 + 70 * i + 4
                                       for i in range(8)]


@pytest.mark.parametrize("size", SIZES)
def test_out_of_range_reads_the_last_entry_and_writes_nothing(size):
    fs.init(arch=fs.cpu)

    @fs.kernel
    def k(i: fs.i32) -> fs.i32:
        v = fs.Vector([0] * size)
        for t in range(size):
            v[t] = t + 1
        v[i] = 1000  # out of range: no entry changes
        total = 0
        for t in range(size):
            total += v[t]
        return total * 10000 + v[i]  # out of range: the last entry

    full = size * (size + 1) // 2
    for bad in (-1, size, size + 5, -1000):
        assert k(bad) == full * 10000 + size
    assert k(0) == (full - 1 + 1000) * 10000 + 1000


@pytest.mark.parametrize("size", SIZES)
def test_out_of_range_is_an_assertion_with_debug(size):
    fs.init(arch=fs.cpu, debug=True)

    @fs.kernel
    def k(i: fs.i32) -> fs.i32:
        v = fs.Vector([0] * size)
        v[i] = 42
        return v[i]

    assert k(size - 1) == 42
    with pytest.raises(AssertionError, match="Out of bound access"):
        k(size)
    with pytest.raises(AssertionError, match="Out of bound access"):
        k(-1)


@pytest.mark.parametrize("size", [READ_ONLY_MIN_ENTRIES - 1, READ_ONLY_MIN_ENTRIES])
def test_a_table_only_read_at_runtime_indices(size):
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    out = fs.field(fs.f64, shape=64)

    @fs.kernel
    def k(scale: fs.f64):
        for i in out:
            table = fs.Vector([fs.cos(t * scale) for t in range(size)])
            acc = 0.0
            for j in range(20):
                acc += table[(i * 7 + j * 3) % size] * j
            out[i] = acc

    k(0.25)
    table = np.cos(np.arange(size) * 0.25)
    want = [sum(table[(i * 7 + j * 3) % size] * j for j in range(20)) for i in range(64)]
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-12)
