"""A host emulation of the CUDA backend, to test everything but the GPU itself without one.

`EmuBackend` is the real `CudaBackend` (storage, launcher, grid geometry, status words, AD
stack scratch) over `EmuDriver`, whose "device memory" is host memory and whose launch runs
every (block, thread) of the grid in turn. Kernels are lowered with `EmuTarget`: the CUDA
target's grid-stride loops and by-value entry, but host math and the thread coordinates passed
as four extra arguments instead of read from PTX special registers; they are JIT-compiled for
the host. What this cannot test: the driver bindings, NVPTX code generation (test_ptx.py checks
that up to ptxas), and real parallelism on a GPU (test_cuda_run.py on a device).
"""
from __future__ import annotations

import ctypes

import llvmlite.binding as llvm
import numpy as np
from llvmlite import ir

from fieldsim.codegen import cuda as C
from fieldsim.codegen.llvm import CTX_WORDS, Target
from fieldsim.codegen.ptx import CudaTarget, lower_for_cuda


class EmuTarget(CudaTarget):
    triple = ""
    extra_params = 4
    math = Target.math
    reduce_atomic = Target.reduce_atomic  # no warps: the emulator runs one thread at a time
    aggregates_scatters = False
    field_memory = Target.field_memory  # the host has one address space
    flush_subnormals = False  # host code
    print = Target.print  # the host's printf (a device's vprintf: test_ptx.py)

    def __init__(self, nargs=0, libdevice=None, arch="sm_90", vector_reductions=True):
        super().__init__(nargs, libdevice=False, arch=arch, vector_reductions=vector_reductions)

    @staticmethod
    def red_vector(b, ptr, vals):  # the host has no vector reductions: one atomic each
        for k, v in enumerate(vals):
            b.atomic_rmw("fadd", b.gep(ptr, [ir.Constant(ir.IntType(64), k)], source_etype=v.type),
                         v, "monotonic")

    def thread_coords(self, b, module, entry):
        return tuple(entry.args[CTX_WORDS + self.nargs + k] for k in range(4))

    def finish_task(self, module, fn):
        super().finish_task(module, fn)
        module.globals[self.entries[-1]].calling_convention = ""


class EmuDriver:
    name = "emulator"
    cc = (9, 0)
    version = 13000  # the driver API version (cuDriverGetVersion) it stands for
    device_name = "host emulation"

    GUARD = 64  # bytes after each allocation that a kernel must never touch

    def __init__(self, sm_count=1):
        self.sm_count = sm_count
        self.launches = []  # (entry, grid, block) of every launch, for tests
        self.live = {}  # ptr -> (buffer, nbytes)
        self.stack_limits = []  # every raise_stack_limit(nbytes), for tests

    def alloc(self, nbytes):
        nbytes = max(int(nbytes), 1)
        buf = np.zeros(nbytes + self.GUARD, dtype=np.uint8)
        buf[nbytes:] = 0xA5
        self.live[buf.ctypes.data] = (buf, nbytes)
        return buf.ctypes.data, buf

    def free(self, handle):
        self.live.pop(handle.ctypes.data, None)

    def check_guards(self, what):
        for buf, n in self.live.values():
            if (buf[n:] != 0xA5).any():
                raise AssertionError(f"{what} wrote past the end of a {n}-byte allocation")

    def htod(self, dptr, arr):
        arr = np.ascontiguousarray(arr)
        ctypes.memmove(dptr, arr.ctypes.data, arr.nbytes)

    def dtoh(self, arr, dptr):
        ctypes.memmove(arr.ctypes.data, dptr, arr.nbytes)

    def memset8(self, dptr, value, nbytes):
        ctypes.memset(dptr, value, nbytes)

    def memset32(self, dptr, value, count):
        np.ctypeslib.as_array((ctypes.c_uint32 * count).from_address(dptr))[:] = value

    def launch(self, fn, grid, block, words):
        cfn, name = fn
        self.launches.append((name, grid, block))
        w = [int(x) for x in words]
        for blk in range(grid):
            for t in range(block):
                cfn(*w, t, block, blk, grid)
        self.check_guards(f"{name} (grid {grid}, block {block})")

    def raise_stack_limit(self, nbytes):  # host threads have their own stacks
        self.stack_limits.append(nbytes)

    def sync(self):
        pass

    def close(self):
        pass


class EmuBackend(C.CudaBackend):
    """CudaBackend over EmuDriver; `compile` JITs the emulation entries for the host."""

    def __init__(self, rt, sm_count=1):
        super().__init__(rt, EmuDriver(sm_count))
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        # the host CPU's features: f16 conversions are instructions (F16C), not compiler-rt
        # calls the JIT does not link (an f16 kernel jumped to a null pointer)
        self.tm = llvm.Target.from_default_triple().create_target_machine(
            cpu=llvm.get_host_cpu_name(), features=llvm.get_host_cpu_features().flatten(),
            opt=2, jit=True)
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.tm)

    def compile_pool(self):  # kernels are JIT-compiled for the host here, one at a time
        return None

    def compile(self, kernel, rt):
        self.counter += 1
        rt.stats["llvm_compiles"] = rt.stats.get("llvm_compiles", 0) + 1  # no on-disk cache here
        symbol = f"emu_{C.safe_symbol(kernel.name)}_{self.counter}"
        module, info, _entries = lower_for_cuda(kernel, symbol, rt.debug, target_cls=EmuTarget)
        mod = llvm.parse_assembly(str(module))
        mod.triple = self.tm.triple
        mod.data_layout = str(self.tm.target_data)
        mod.verify()
        pb = llvm.create_pass_builder(self.tm, llvm.create_pipeline_tuning_options(speed_level=2))
        pb.getModulePassManager().run(mod, pb)
        self.engine.add_module(mod)
        self.engine.finalize_object()
        nwords = CTX_WORDS + len(info.params) + 4
        proto = ctypes.CFUNCTYPE(None, *([ctypes.c_uint64] * nwords))
        fns = [(proto(self.engine.get_function_address(t.entry)), t.entry) for t in info.tasks]
        self.stack_for(info)
        program = C.CudaProgram(info, mod, fns, ptx=None)
        self.programs.append(program)
        return program


def use_emulator(fs, sm_count=1, **init_kwargs):
    """fs.init on the CPU, then swap in the emulated CUDA backend (before any field exists)."""
    rt = fs.init(arch=fs.cpu, **init_kwargs)
    rt.device = EmuBackend(rt, sm_count)
    return rt
