"""Real calls (recursive `fs.real_func`) on the CUDA backend without a GPU: the same LLVM IR as
the CPU's, emitted as PTX with the functions as `.func`s (and through ptxas where it is on
PATH), and run by the host emulation of the backend, whose results must equal the CPU's."""
import re

import numpy as np
import pytest
from cuda_emu import use_emulator
from support.programs import fibonacci_pairs

import fieldsim as fs
from fieldsim.codegen import ptx as P


def program():
    f = fs.field(fs.f32, shape=16, name="f")
    hits = fs.field(fs.i32, shape=(), name="hits")

    @fs.real_func
    def sum_to(n: fs.i32) -> fs.i32:
        if n == 0:
            return 0
        return sum_to(n - 1) + n

    @fs.real_func
    def range_sum(lo: fs.i32, hi: fs.i32) -> fs.f32:
        r = 0.0
        if lo == hi:
            r = f[lo]
            hits[None] += 1
        else:
            m = (lo + hi) // 2
            r = range_sum(lo, m) + range_sum(m + 1, hi)
        return r

    @fs.real_func
    def fib_pair(n: fs.i32) -> (fs.i32, fs.f64):
        if n == 0:
            return 0, 1.0
        a, b = fib_pair(n - 1)
        return fs.i32(b), a + b

    @fs.kernel
    def k(n: fs.i32) -> fs.i32:
        for i in f:
            f[i] = sum_to(i) + range_sum(i, 15) * 0.0 + 0.5 + fib_pair(i)[0] * 0
        return sum_to(n) + fib_pair(20)[0] - 6765

    return f, hits, k


def results():
    f, hits, k = program()
    total = k(300)
    return total, f.to_numpy(), hits[None]


def test_emulated_cuda_runs_real_calls_like_the_cpu():
    fs.init(arch=fs.cpu)
    ref = results()
    use_emulator(fs)
    got = results()
    assert ref[0] == got[0] == 300 * 301 // 2
    i = np.arange(16)
    assert np.array_equal(ref[1], (i * (i + 1) // 2 + 0.5).astype(np.float32))
    assert np.array_equal(ref[1], got[1])
    assert ref[2] == got[2] == int((16 - i).sum())


@pytest.mark.parametrize("sm", ["sm_70", "sm_90"])
def test_real_calls_emit_ptx(sm):
    fs.init(arch=fs.cpu)
    _, _, k = program()
    ptx = P.emit_ptx(P.kernel_ir(k, 5), sm)
    assert re.search(r"\.func\s+\(\.param \.b32 func_retval0\) \w+_f\d+\(", ptx), ptx[:3000]
    assert "call.uni" in ptx or "call " in ptx
    gpu = P.ptxas_target(sm)
    if gpu is not None:
        r = P.run_ptxas(ptx, gpu)
        assert r.returncode == 0, r.stderr


def test_a_kernel_making_real_calls_raises_the_thread_stack_once():
    """The driver's 1 KB thread stack overflowed at Fibonacci pairs 90 calls deep on an H200;
    a kernel that makes real calls raises it to `cuda_stack_limit` (Taichi's option), once."""
    rt = use_emulator(fs, cuda_stack_limit=12288)
    fib = fibonacci_pairs()
    run_fib, no_calls = fib.run_fib, fib.no_calls
    assert no_calls() == 1 and rt.device.drv.stack_limits == []
    assert run_fib(10) == 55 and run_fib(20) == 6765
    assert rt.device.drv.stack_limits == [12288]
    use_emulator(fs)
    run_fib = fibonacci_pairs().run_fib
    run_fib(3)
    assert fs.lang.runtime.get().device.drv.stack_limits == [8192]  # Taichi's default


@pytest.mark.cuda
def test_recursion_90_calls_deep_runs_on_a_gpu():
    fs.init(arch=fs.cuda)
    run_fib = fibonacci_pairs().run_fib
    fibs = [0, 1]
    while len(fibs) <= 90:
        fibs.append(fibs[-1] + fibs[-2])
    assert [run_fib(n) for n in (1, 30, 90)] == [fibs[1], fibs[30], fibs[90]]
    fs.init(arch=fs.cpu)
