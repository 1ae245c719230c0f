"""Backend choice: the device object for a runtime's arch, and whether CUDA can be used.

`make_backend(rt)` gives a `codegen.cuda.CudaBackend` for arch cuda, else a
`codegen.cpu.CpuBackend`; `cuda_reason()` is None when a CUDA driver and device answer, else the
driver's own reason (never raises). Neither imports a CUDA binding before it is asked for.
"""
from __future__ import annotations


def make_backend(rt):
    if rt.arch == "cuda":
        from fieldsim.codegen.cuda import CudaBackend
        return CudaBackend(rt)
    from fieldsim.codegen.cpu import CpuBackend
    return CpuBackend(rt)


def cuda_reason() -> str | None:
    from fieldsim.codegen import cuda as cuda_backend
    try:
        cuda_backend.driver()
        return None
    except Exception as err:  # noqa: BLE001 - whatever the driver bindings say
        return str(err) or type(err).__name__
