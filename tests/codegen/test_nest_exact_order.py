"""Exact mode keeps one thread's atomic adds in program order inside ndrange nests.

A Lennard-Jones pair loop from GitHub (`for i, j in ti.ndrange(n, n): if i < j: f[i] += g;
f[j] -= g`) gave forces a few ulps from Taichi 1.7.4's with `fast_math=False` on one thread:
the nest lowering summed `f[i]`'s row and `f[j]`'s column contributions in locals and added
them at the end of the row / chunk, an order Taichi never uses; the MD trajectory then drifted
from Taichi's. Checks: on one thread with `fast_math=False`, a pair loop, a row sum into an
element that already holds a value and a column sum give the bits of float32 additions in the
loop's own order (computed here with NumPy scalars); with fast math the same kernels still
agree to float32 rounding.
"""
import numpy as np

import fieldsim as fs

N = 48
SCALE = np.float32(0.37)


def _data():
    return (np.sin(np.arange(N) * 1.7) * 3).astype(np.float32)


def _pair_reference(x):
    f = np.zeros(N, np.float32)
    for i in range(N):
        for j in range(N):
            if i < j:
                g = np.float32((x[i] - x[j]) * SCALE)
                f[i] = np.float32(f[i] + g)
                f[j] = np.float32(f[j] - g)
    return f


def _row_col_reference(x, start):
    row, col = start.copy(), start.copy()
    for i in range(N):
        for j in range(N):
            row[i] = np.float32(row[i] + np.float32(x[j] * x[i]))
            col[j] = np.float32(col[j] + np.float32(x[i] * SCALE))
    return row, col


def _run(fast_math):
    fs.init(arch=fs.cpu, cpu_max_num_threads=1, fast_math=fast_math, offline_cache=False)
    x, f = fs.field(fs.f32, N), fs.field(fs.f32, N)
    row, col = fs.field(fs.f32, N), fs.field(fs.f32, N)

    @fs.kernel
    def pairs():
        for i, j in fs.ndrange(N, N):
            if i < j:
                g = (x[i] - x[j]) * 0.37
                f[i] += g
                f[j] -= g

    @fs.kernel
    def rows_and_columns():
        for i, j in fs.ndrange(N, N):
            row[i] += x[j] * x[i]
            col[j] += x[i] * 0.37

    data = _data()
    start = (np.cos(np.arange(N)) * 100).astype(np.float32)
    x.from_numpy(data)
    row.from_numpy(start)
    col.from_numpy(start)
    pairs()
    rows_and_columns()
    return data, start, f.to_numpy(), row.to_numpy(), col.to_numpy()


def test_exact_mode_adds_in_program_order():
    data, start, f, row, col = _run(fast_math=False)
    want_row, want_col = _row_col_reference(data, start)
    np.testing.assert_array_equal(f.view(np.uint32), _pair_reference(data).view(np.uint32))
    np.testing.assert_array_equal(row.view(np.uint32), want_row.view(np.uint32))
    np.testing.assert_array_equal(col.view(np.uint32), want_col.view(np.uint32))


def test_fast_math_agrees_to_rounding():
    data, start, f, row, col = _run(fast_math=True)
    want_row, want_col = _row_col_reference(data, start)
    np.testing.assert_allclose(f, _pair_reference(data), atol=2e-5)
    np.testing.assert_allclose(row, want_row, rtol=1e-5, atol=1e-3)
    np.testing.assert_allclose(col, want_col, rtol=1e-5, atol=1e-3)

