"""Quantized fields on the CUDA backend: the same program on the CPU, on the emulated CUDA
backend (cuda_emu.py: the CUDA launcher and device storage over host memory) and, where a GPU
exists, on it, with bitwise equal results; and its kernels through PTX and ptxas."""
import numpy as np
import pytest
from cuda_emu import use_emulator
from test_ptx import check_ptx

import fieldsim as fs
from fieldsim.codegen import ptx as P


def quant_program():
    """Fields of every quantized kind sharing words (u8 and u32 containers, a shared exponent,
    a quant_array), written, updated atomically from many threads and read back."""
    a, b = fs.field(fs.types.quant.int(5, True)), fs.field(fs.types.quant.fixed(9, False))
    v = fs.Vector.field(2, fs.types.quant.float(exp=5, frac=7))
    c = fs.field(fs.types.quant.int(3, False))
    bits = fs.field(fs.types.quant.int(1, False))
    for fields, width, shared in (((a, b), 32, False), ((v,), 32, True), ((c,), 8, False)):
        bp = fs.BitpackedFields(width)
        bp.place(*fields, shared_exponent=shared)
        fs.root.dense(fs.i, 64).place(bp)
    fs.root.dense(fs.i, 2).quant_array(fs.i, 32, max_num_bits=32).place(bits)

    @fs.kernel
    def step():
        for i in range(64):
            a[i] = i - 20
            b[i] = i * 0.013
            v[i] = fs.Vector([b[i] * 3.0, -b[i]])
        for i in range(1000):
            a[i % 64] += 1
            c[i % 64] += 1
            bits[i % 64] += 1

    step()
    return {"a": a.to_numpy(), "b": b.to_numpy(), "v": v.to_numpy(), "c": c.to_numpy(),
            "bits": bits.to_numpy()}, step


@pytest.mark.parametrize("backend", ["emu", pytest.param("cuda", marks=pytest.mark.cuda)])
def test_quant_program_matches_the_cpu(backend):
    fs.init(arch=fs.cpu)
    ref, _ = quant_program()
    if backend == "emu":
        use_emulator(fs)
    else:
        fs.init(arch=fs.cuda)
    got, _ = quant_program()
    for k in ref:
        np.testing.assert_array_equal(got[k], ref[k], err_msg=k)


@pytest.mark.parametrize("sm", ["sm_70", "sm_90"])
def test_quant_kernels_emit_ptx(sm):
    fs.init(arch=fs.cpu)
    _, step = quant_program()
    ptx = P.emit_ptx(P.kernel_ir(step), sm)
    assert "cas.b32" in ptx  # the words are updated by compare-and-swap
    check_ptx(ptx, sm)
