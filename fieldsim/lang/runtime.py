"""Process-wide runtime state: what `fs.init` configured, the fields and kernels it owns.

`init` starts afresh: fields and compiled kernels of an earlier `init` are dropped (using one
afterwards raises). Everything else reads the current `Runtime` through `get()`. The AD
contexts (`tape`, `fwd_mode`, `no_grad_depth`) are per thread; the rest is shared.
"""
from __future__ import annotations

import os
import threading
import warnings

from fieldsim.lang import types as T

cpu, cuda, gpu = "cpu", "cuda", "gpu"
x64 = arm64 = cpu
# Taichi's other backends: fieldsim has none of them; `init` runs their programs on the CPU.
vulkan, metal, opengl, gles, dx11, dx12, amdgpu = ("vulkan", "metal", "opengl", "gles", "dx11",
                                                  "dx12", "amdgpu")
OTHER_BACKENDS = (vulkan, metal, opengl, gles, dx11, dx12, amdgpu)


class Runtime:
    def __init__(self, arch=cpu, default_fp=T.f32, default_ip=T.i32, random_seed=0,
                 cpu_max_num_threads=None, debug=False, offline_cache=True, ad_stack_size=0,
                 offline_cache_file_path=None, **ignored):
        self.arch = _resolve_arch(arch)
        self.default_fp = _dtype(default_fp, T.f32)
        self.default_ip = _dtype(default_ip, T.i32)
        self.random_seed = int(random_seed)
        self.num_threads = int(cpu_max_num_threads or os.cpu_count() or 1)
        self.debug = bool(debug)
        self.offline_cache = bool(offline_cache) and os.environ.get("FIELDSIM_OFFLINE_CACHE", "1") != "0"
        # An empty FIELDSIM_CACHE_DIR means the default, not the working directory.
        self.cache_dir = offline_cache_file_path or os.environ.get("FIELDSIM_CACHE_DIR") or \
            os.path.join(os.path.expanduser("~"), ".cache", "fieldsim")
        self.ad_stack_size = int(ad_stack_size) if ad_stack_size else 256
        self.fields: list = []
        self.generation = _next_generation()
        self.launch_counter = 0
        self._per_thread = _PerThread()  # tape, fwd_mode, no_grad_depth: see below
        self.device = None  # a backend object (cpu or cuda) made lazily
        self.stats = {"compile_s": 0.0, "launches": 0}

    # The active Tape (and forward-mode context, and no_grad depth) belong to the thread that
    # opened them: another thread's launches and writes are neither recorded nor refused.
    tape = property(lambda self: self._per_thread.tape,
                    lambda self, v: setattr(self._per_thread, "tape", v))
    fwd_mode = property(lambda self: self._per_thread.fwd_mode,
                        lambda self, v: setattr(self._per_thread, "fwd_mode", v))
    no_grad_depth = property(lambda self: self._per_thread.no_grad_depth,
                             lambda self, v: setattr(self._per_thread, "no_grad_depth", v))

    def backend(self):
        if self.device is None:
            if self.arch == cuda:
                from fieldsim.codegen.cuda import CudaBackend
                self.device = CudaBackend(self)
            else:
                from fieldsim.codegen.cpu import CpuBackend
                self.device = CpuBackend(self)
        return self.device


class _PerThread(threading.local):
    tape = None  # the active Tape, if any
    fwd_mode = None
    no_grad_depth = 0


_generation = [0]


def _next_generation() -> int:
    _generation[0] += 1
    return _generation[0]


def _dtype(dt, default):
    if dt is None:
        return default
    if dt is float:
        return T.f32
    if dt is int:
        return T.i32
    return dt


def _resolve_arch(arch):
    if isinstance(arch, (list, tuple)):  # Taichi's `arch=[ti.cuda, ti.cpu]`: the first usable one
        for a in arch:
            if a in (cpu, "x64", "arm64") or (a in (cuda, gpu) and _cuda_reason() is None):
                return _resolve_arch(a)
        return cpu
    if arch in (None, cpu, "x64", "arm64"):
        return cpu
    if arch in (cuda, gpu):
        reason = _cuda_reason()
        if reason is None:
            return cuda
        warnings.warn(f"fs.init(arch={arch}): no usable CUDA device ({reason}); running on the "
                      "CPU. Install the `cuda` extra on a machine with an NVIDIA GPU to use it.",
                      stacklevel=3)
        return cpu
    if arch in OTHER_BACKENDS:
        warnings.warn(f"fs.init(arch={arch}): fieldsim has no {arch} backend; running on the CPU",
                      stacklevel=3)
        return cpu
    raise ValueError(f"unknown arch {arch!r}; use fs.cpu, fs.cuda or fs.gpu")


def _cuda_reason():
    """None when a CUDA device can be used, else why not."""
    from fieldsim.codegen import cuda as cuda_backend
    try:
        cuda_backend.driver()
        return None
    except Exception as err:  # noqa: BLE001 - whatever the driver bindings say
        return str(err) or type(err).__name__


_current: Runtime | None = None


def get() -> Runtime:
    global _current
    if _current is None:
        _current = Runtime()
    return _current


def init(arch=cpu, default_fp=None, default_ip=None, random_seed=0, **kwargs) -> Runtime:
    global _current
    if _current is not None:
        _shutdown(_current)
    _current = Runtime(arch, default_fp, default_ip, random_seed, **kwargs)
    return _current


def reset():
    global _current
    if _current is not None:
        _shutdown(_current)
    _current = None


def _shutdown(rt: Runtime):
    for f in rt.fields:
        f._invalidate()
    if rt.device is not None:
        rt.device.close()


def sync():
    rt = get()
    if rt.device is not None:
        rt.device.sync()
