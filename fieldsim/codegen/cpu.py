"""CPU backend: field storage in numpy, LLVM JIT (MCJIT) with an on-disk object cache, and a
launcher that splits each parallel task across `cpu_max_num_threads` threads.

Compiled task functions are called through ctypes, which releases the GIL, so worker threads run
truly in parallel. Small launches run on the calling thread. The object cache is keyed by the
LLVM IR text, the host CPU and features, and the compiler versions, so a second process that
builds the same kernel skips LLVM optimisation and code generation entirely.
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

import llvmlite
import llvmlite.binding as llvm
import numpy as np

from fieldsim.codegen import launch as launch_common
from fieldsim.codegen.llvm import Target, lower_kernel
from fieldsim.lang.ir import Kernel

COMPILER_VERSION = "fieldsim-cpu-1"
SMALL_LAUNCH = 2048  # iterations below which threads cost more than they give
_TASK_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
_llvm_lock = threading.Lock()
_initialised = []


class HostStorage:
    """A field's data: a contiguous numpy array."""

    def __init__(self, shape, dtype):
        self.array = np.zeros(shape, dtype=dtype.np)

    @property
    def ptr(self) -> int:
        return self.array.ctypes.data

    def read_element(self, idx):
        return self.array[idx].copy() if self.array[idx].ndim else self.array[idx]

    def write_element(self, idx, value):
        self.array[idx] = value

    def to_numpy(self):
        return self.array.copy()

    def from_numpy(self, arr):
        self.array[...] = arr

    def fill(self, value):
        self.array[...] = value

    def zero(self):
        self.array.fill(0)


def _init_llvm():
    if not _initialised:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        _initialised.append(True)


class CpuProgram:
    def __init__(self, info, functions):
        self.info, self.functions = info, functions


class CpuBackend:
    name = "cpu"

    def __init__(self, rt):
        _init_llvm()
        self.rt = rt
        self.target = Target()
        triple = llvm.get_process_triple()
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        self.tm = llvm.Target.from_triple(triple).create_target_machine(
            cpu=self.cpu, features=self.features, opt=3, jit=True)
        self.engine = llvm.create_mcjit_compiler(llvm.parse_assembly(""), self.tm)
        self.pool = None
        self.threads = max(1, rt.num_threads)
        self.launcher = launch_common.Launcher(self)
        self.counter = 0

    # ---- storage ---------------------------------------------------------------------------------
    def allocate(self, shape, dtype):
        return HostStorage(shape, dtype)

    def sync(self):
        pass

    def close(self):
        if self.pool is not None:
            self.pool.shutdown(wait=True)
            self.pool = None

    # ---- compile ---------------------------------------------------------------------------------
    def compile(self, kernel: Kernel, rt) -> CpuProgram:
        self.counter += 1
        symbol = f"fs_{_safe(kernel.name)}_{self.counter}"
        module, info = lower_kernel(kernel, symbol, self.target, rt.debug)
        text = str(module)
        obj = self._cached_object(text, rt)
        with _llvm_lock:
            self.engine.add_object_file(llvm.ObjectFileRef.from_data(obj))
            self.engine.finalize_object()
            fns = [_TASK_FN(self.engine.get_function_address(t["symbol"])) for t in info.tasks]
        return CpuProgram(info, fns)

    def _cached_object(self, ir_text: str, rt) -> bytes:
        key = hashlib.sha256("\n".join([COMPILER_VERSION, llvmlite.__version__, self.cpu,
                                        self.features, ir_text]).encode()).hexdigest()
        path = os.path.join(rt.cache_dir, "cpu", key[:2], key + ".o")
        if rt.offline_cache and os.path.exists(path):
            rt.stats["cache_hits"] = rt.stats.get("cache_hits", 0) + 1
            with open(path, "rb") as f:
                return f.read()
        rt.stats["llvm_compiles"] = rt.stats.get("llvm_compiles", 0) + 1
        obj = self._optimise_and_emit(ir_text)
        if rt.offline_cache:
            try:
                os.makedirs(os.path.dirname(path), exist_ok=True)
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "wb") as f:
                    f.write(obj)
                os.replace(tmp, path)
            except OSError:
                pass  # a read-only cache directory only costs speed
        return obj

    def _optimise_and_emit(self, ir_text: str) -> bytes:
        with _llvm_lock:
            mod = llvm.parse_assembly(ir_text)
            mod.triple = self.tm.triple
            mod.data_layout = str(self.tm.target_data)
            mod.verify()
            pto = llvm.create_pipeline_tuning_options(speed_level=3)
            pto.loop_vectorization = True
            pto.slp_vectorization = True
            pb = llvm.create_pass_builder(self.tm, pto)
            pb.getModulePassManager().run(mod, pb)
            if os.environ.get("FIELDSIM_PRINT_LLVM"):
                print(str(mod))
            return self.tm.emit_object(mod)

    # ---- launch ----------------------------------------------------------------------------------
    def launch(self, program: CpuProgram, args, rng_key, adjoint=False):
        return self.launcher.launch(program, args, rng_key)

    def run_task(self, program, n: int, ctx_ptr: int, size_hint):
        fn = program.functions[n]
        task = program.info.tasks[n]
        workers = self.threads if task["parallel"] else 1
        if size_hint is not None and size_hint < SMALL_LAUNCH:
            workers = 1
        if workers == 1:
            fn(ctx_ptr, 0, 1)
            return
        if self.pool is None:
            self.pool = ThreadPoolExecutor(self.threads - 1, thread_name_prefix="fieldsim")
        futures = [self.pool.submit(fn, ctx_ptr, w, workers) for w in range(1, workers)]
        fn(ctx_ptr, 0, workers)
        for f in futures:
            f.result()

    def max_workers(self) -> int:
        return self.threads


def _safe(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name)[:40]
