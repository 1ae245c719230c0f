"""What the backend of the current `fs.init` does where backends differ by design, for tests
that also run with every `fs.init` forced onto CUDA (tests/cuda/force_cuda.py): the CPU
backend, the CUDA backend on a device, or the CUDA backend over its host emulation
(tests/cuda/cuda_emu.py). Read from the backend object itself, not from the options
`fs.init` was given (the forcing plugin replaces `arch`)."""
import fieldsim as fs
from fieldsim.codegen.cpu import CpuBackend
from fieldsim.lang import runtime


def _backend():
    return runtime.get().backend()


def on_cpu() -> bool:
    """The CPU backend (LLVM on the host), not CUDA or its emulation."""
    return isinstance(_backend(), CpuBackend)


def emulated() -> bool:
    return getattr(getattr(_backend(), "drv", None), "name", "") == "emulator"


def arch_in_use():
    """`fs.cpu` or `fs.cuda`: the arch of the backend object (the emulation swaps its backend
    into a CPU runtime: `fs.cpu`)."""
    return fs.cpu if on_cpu() or emulated() else fs.cuda


def host_addresses() -> bool:
    """Field addresses (`fs.get_addr`) are host addresses, readable through ctypes."""
    return on_cpu() or emulated()


def flushes_subnormals(dtype) -> bool:
    """Kernels read and make subnormals of `dtype` as zero: the CPU always (MXCSR FTZ/DAZ, as
    Taichi's x64 backend), CUDA f32 under fast-math (`.ftz`, as Taichi's CUDA backend)."""
    if on_cpu():
        return True
    return not emulated() and dtype == fs.f32 and runtime.get().fast_math


def divides_exactly(dtype) -> bool:
    """A division rounds correctly: everywhere but CUDA's f32 under fast-math
    (`div.approx.f32`, 2 ulp, as Taichi's CUDA backend)."""
    return on_cpu() or emulated() or dtype != fs.f32 or not runtime.get().fast_math
