"""Reductions into one element on CUDA: each warp sums its threads' totals by shuffles and adds
once (`CudaTarget.reduce_atomic`); a warp not all present (a block size that is no multiple of
32) adds thread by thread. The PTX checks run anywhere (ptxas where installed); the sums run on
a device (marked `cuda`) and must equal numpy's exactly: integers, and floats whose partial sums
are all exact.
"""
import numpy as np
import pytest
from test_ptx import check_ptx

import fieldsim as fs
from fieldsim.codegen import ptx as P

DTYPES = {"i32": (fs.i32, np.int32), "i64": (fs.i64, np.int64), "f32": (fs.f32, np.float32),
          "f64": (fs.f64, np.float64)}


def summing_kernel(dtype, n, block_dim=None):
    src = fs.field(dtype, shape=n)
    total = fs.field(dtype, shape=())

    @fs.kernel
    def sum_all():
        if fs.static(block_dim is not None):
            fs.loop_config(block_dim=block_dim)
        for i in src:
            total[None] += src[i]
    return src, total, sum_all


@pytest.mark.parametrize("name", list(DTYPES))
def test_reduction_ptx_sums_a_warp_then_adds_once(name):
    fs.init(arch=fs.cpu)
    _src, _total, sum_all = summing_kernel(DTYPES[name][0], 1000)
    text = P.emit_ptx(P.kernel_ir(sum_all), "sm_90")
    assert "activemask.b32" in text
    # five butterfly steps, a 64-bit value as two 32-bit halves
    assert text.count("shfl.sync.bfly.b32") == (5 if name.endswith("32") else 10)
    check_ptx(text, "sm_90", entries=1)


@pytest.mark.cuda
@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("n, block_dim", [(1, None), (1000, None), (1 << 20, None),
                                          (100_003, 48), (4096, 32)])
def test_sums_equal_numpy_exactly(name, n, block_dim):
    fs.init(arch=fs.cuda)
    dtype, np_dtype = DTYPES[name]
    src, total, sum_all = summing_kernel(dtype, n, block_dim)
    # values whose every partial sum is exact in the type: small integers (f32: sums < 2^24)
    values = (np.arange(n) % 7 - 3 if name == "f32" else np.arange(n) % 1000 - 400).astype(np_dtype)
    src.from_numpy(values)
    total[None] = 5
    sum_all()
    assert total[None] == 5 + values.sum(dtype=np.float64 if name.startswith("f") else np.int64)
    fs.init(arch=fs.cpu)
