"""CUDA backend: device storage, PTX (from `codegen/ptx.py`) loaded through the driver API, and
a launcher that passes a kernel's ctx words and arguments by value.

The driver API comes from NVIDIA's `cuda-python` bindings (`cuda.bindings.driver`, the `cuda`
extra; the one run on a GPU so far: BENCHMARKS.md) or, where they are not installed, from
pycuda; `FIELDSIM_CUDA_DRIVER=pycuda` or `=cuda-python` forces one. Neither is imported before
a CUDA runtime is asked for, so importing fieldsim never needs a GPU. `is_available()` never
raises.

A launch runs each task as one grid on the default stream, so launches stay in order and a
later copy to or from the host waits for them. Parallel tasks run grid-stride over their range
(grid capped at 32 blocks per SM, fewer when AD-stack scratch would pass `SCRATCH_LIMIT`); serial
tasks run on one thread. The error words, an assert's values and the return words live in a
small per-backend device buffer; the host reads them back only for kernels that can set them (AD
stacks, `debug=True` checks) or return a value, so other launches do not wait for the GPU; a
kernel that prints is waited for, so its text comes out before the launch returns. Each
program keeps its by-value launch words between launches (`_Words`), and specialisations whose
LLVM IR is the same share one PTX build and loaded module.
"""
from __future__ import annotations

import atexit
import functools
import os
import sys
import threading
import warnings
import weakref
from concurrent.futures import ThreadPoolExecutor

import llvmlite
import numpy as np

from fieldsim.codegen import launch as launch_common
from fieldsim.codegen import llvm_build
from fieldsim.codegen.cpu import safe_symbol
from fieldsim.codegen.disk_cache import cached_build
from fieldsim.codegen.guard_zones import guard_bytes
from fieldsim.codegen.llvm import (
    CTX_ERR,
    CTX_FIELDS,
    CTX_RET,
    CTX_RNG,
    CTX_STACK,
    CTX_STACK_CAPS,
    CTX_STACK_OFFS,
    CTX_STACK_STRIDE,
    CTX_WORDS,
    ERR_WORDS,
)
from fieldsim.codegen.ptx import (
    KNOWN_ARCHS,
    VECTOR_RED_DRIVER,
    check_arch,
    find_libdevice,
    lower_for_cuda,
    optimise_to_ptx,
)
from fieldsim.errors import FieldsimRuntimeError
from fieldsim.ir.ir import Kernel
from fieldsim.lang.formatting import MAX_ASSERT_ARGS

COMPILER_VERSION = "fieldsim-cuda-1"
BLOCK_DIM = 128  # threads per block unless fs.loop_config(block_dim=...) says otherwise
BLOCKS_PER_SM = 32  # grid cap for grid-stride loops (Taichi's saturating grid size)
MAX_GRID_THREADS = 1 << 30  # llvm.Target.narrow_counters
SCRATCH_LIMIT = 256 << 20  # bytes of AD-stack scratch a launch may use in all
# the status buffer: the error words, then an assert's message values or the return words
STATUS_BYTES = 8 * (ERR_WORDS + MAX_ASSERT_ARGS)


# errors after which the CUDA context is unusable: every later call of the process fails
_CONTEXT_LOST = frozenset({"CUDA_ERROR_ILLEGAL_ADDRESS", "CUDA_ERROR_LAUNCH_FAILED",
                           "CUDA_ERROR_MISALIGNED_ADDRESS", "CUDA_ERROR_ILLEGAL_INSTRUCTION",
                           "CUDA_ERROR_HARDWARE_STACK_ERROR", "CUDA_ERROR_INVALID_PC"})
# the same errors as pycuda words them (the driver's cuGetErrorString)
_LOST_TEXTS = ("illegal memory access", "unspecified launch failure", "misaligned address",
               "illegal instruction", "hardware stack error")
CONTEXT_LOST_HELP = (
    "a kernel faulted on the GPU, and CUDA keeps no usable context after that: every later CUDA "
    "call of this process fails the same way, so restart the process. Usual causes: a field "
    "index out of range (fs.init(debug=True) checks indices and names the field and line), or "
    "recursion of a ti.real_func deeper than the thread stack (fs.init(cuda_stack_limit=...), "
    "8192 bytes by default)")


# ---- driver API: pycuda or cuda-python ---------------------------------------------------------
def _current_on_every_thread(cls):
    """Each driver call first makes the context current on the calling thread, once per
    thread: CUDA's current context is the thread's, and a launch from a thread it was never
    made current on (a user's worker thread) fails with CUDA_ERROR_INVALID_CONTEXT."""
    def wrap(method):
        @functools.wraps(method)
        def on_this_thread(self, *args):
            if not getattr(self.threads, "current", False):
                self.make_current()
                self.threads.current = True
            try:
                return method(self, *args)
            except FieldsimRuntimeError:
                raise
            except Exception as err:  # pycuda's errors: name the lost context as check() does
                if type(err).__name__ == "LaunchError" or any(t in str(err) for t in _LOST_TEXTS):
                    raise FieldsimRuntimeError(f"{err}: {CONTEXT_LOST_HELP}") from None
                raise
        return on_this_thread
    for name in ("alloc", "free", "htod", "dtoh", "memset8", "memset32", "load", "function",
                 "max_threads", "launch", "sync", "raise_stack_limit"):
        setattr(cls, name, wrap(getattr(cls, name)))
    return cls


@_current_on_every_thread
class _PycudaDriver:
    name = "pycuda"

    def __init__(self):
        import pycuda.driver as drv
        self.drv = drv
        drv.init()
        if drv.Device.count() < 1:
            raise RuntimeError("no CUDA device")
        self.dev = drv.Device(0)
        self.ctx = self.dev.retain_primary_context()
        self.threads = threading.local()
        a = drv.device_attribute
        self.cc = self.dev.compute_capability()
        self.sm_count = self.dev.get_attribute(a.MULTIPROCESSOR_COUNT)
        self.version = drv.get_driver_version()  # e.g. 12040 for CUDA 12.4
        self.device_name = self.dev.name()

    def make_current(self):
        self.ctx.push()

    def alloc(self, nbytes):
        try:
            mem = self.drv.mem_alloc(max(int(nbytes), 1))
        except self.drv.MemoryError as e:  # pycuda's own class: not Python's MemoryError
            raise MemoryError(f"CUDA could not allocate {int(nbytes)} bytes ({e})") from None
        return int(mem), mem

    def raise_stack_limit(self, nbytes):
        limit = self.drv.limit.STACK_SIZE
        if self.drv.Context.get_limit(limit) < nbytes:
            self.drv.Context.set_limit(limit, nbytes)

    def free(self, handle):
        handle.free()

    def htod(self, dptr, arr):
        self.drv.memcpy_htod(dptr, np.ascontiguousarray(arr))

    def dtoh(self, arr, dptr):
        self.drv.memcpy_dtoh(arr, dptr)

    def memset8(self, dptr, value, nbytes):
        self.drv.memset_d8(dptr, value, nbytes)

    def memset32(self, dptr, value, count):
        self.drv.memset_d32(dptr, value, count)

    def load(self, ptx: str):
        return self.drv.module_from_buffer(ptx.encode() + b"\0")

    def function(self, module, name, nwords):
        fn = module.get_function(name)
        fn.prepare("Q" * nwords)
        return fn

    def max_threads(self, fn) -> int:
        return fn.get_attribute(self.drv.function_attribute.MAX_THREADS_PER_BLOCK)

    def launch(self, fn, grid, block, words):
        fn.prepared_async_call((grid, 1), (block, 1, 1), None, *[int(w) for w in words])

    def sync(self):
        self.drv.Context.synchronize()

    def close(self):
        try:
            self.drv.Context.pop()
        except Exception:  # noqa: BLE001, S110 - already gone at interpreter exit
            pass


@_current_on_every_thread
class _CudaPythonDriver:
    name = "cuda-python"

    def __init__(self):
        try:
            from cuda.bindings import driver as cu
        except ImportError:
            from cuda import cuda as cu  # cuda-python < 12.6
        self.cu = cu
        self.check(cu.cuInit(0))
        if self.check(cu.cuDeviceGetCount()) < 1:
            raise RuntimeError("no CUDA device")
        self.dev = self.check(cu.cuDeviceGet(0))
        self.ctx = self.check(cu.cuDevicePrimaryCtxRetain(self.dev))
        self.threads = threading.local()
        attr = cu.CUdevice_attribute
        get = lambda a: self.check(cu.cuDeviceGetAttribute(a, self.dev))
        self.cc = (get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                   get(attr.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR))
        self.sm_count = get(attr.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        self.version = int(self.check(cu.cuDriverGetVersion()))  # e.g. 12040 for CUDA 12.4
        self._param_ptrs: dict = {}  # (address, length) of a words array -> its kernelParams
        raw = self.check(cu.cuDeviceGetName(256, self.dev))
        raw = raw.split(b"\0")[0].decode(errors="replace") if isinstance(raw, bytes) else raw
        self.device_name = str(raw)

    def check(self, result):
        err, rest = result[0], result[1:]
        if int(err) != 0:
            name = self.cu.cuGetErrorName(err)
            text = name[1].decode() if len(name) > 1 and isinstance(name[1], bytes) else str(err)
            if text == "CUDA_ERROR_OUT_OF_MEMORY":  # the caller names the field (lang/field.py)
                raise MemoryError(f"CUDA driver error {text} ({int(err)})")
            if text in _CONTEXT_LOST:
                raise FieldsimRuntimeError(f"CUDA driver error {text} ({int(err)}): {CONTEXT_LOST_HELP}")
            raise RuntimeError(f"CUDA driver error {text} ({int(err)})")
        if not rest:
            return None
        return rest[0] if len(rest) == 1 else rest

    def make_current(self):
        self.check(self.cu.cuCtxSetCurrent(self.ctx))

    def alloc(self, nbytes):
        dptr = self.check(self.cu.cuMemAlloc(max(int(nbytes), 1)))
        return int(dptr), dptr

    def free(self, handle):
        self.check(self.cu.cuMemFree(handle))

    def raise_stack_limit(self, nbytes):
        limit = self.cu.CUlimit.CU_LIMIT_STACK_SIZE
        if self.check(self.cu.cuCtxGetLimit(limit)) < nbytes:
            self.check(self.cu.cuCtxSetLimit(limit, nbytes))

    def htod(self, dptr, arr):
        arr = np.ascontiguousarray(arr)
        self.check(self.cu.cuMemcpyHtoD(dptr, arr.ctypes.data, arr.nbytes))

    def dtoh(self, arr, dptr):
        self.check(self.cu.cuMemcpyDtoH(arr.ctypes.data, dptr, arr.nbytes))

    def memset8(self, dptr, value, nbytes):
        self.check(self.cu.cuMemsetD8(dptr, value, nbytes))

    def memset32(self, dptr, value, count):
        self.check(self.cu.cuMemsetD32(dptr, value, count))

    def load(self, ptx: str):
        return self.check(self.cu.cuModuleLoadData(ptx.encode() + b"\0"))

    def function(self, module, name, nwords):
        return self.check(self.cu.cuModuleGetFunction(module, name.encode()))

    def max_threads(self, fn) -> int:
        attr = self.cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK
        return self.check(self.cu.cuFuncGetAttribute(attr, fn))

    def launch(self, fn, grid, block, words):
        """`words`: a C-contiguous uint64 array (the launcher keeps it between launches, so
        the array of pointers to its words is made once per array)."""
        key = (words.ctypes.data, len(words))
        ptrs = self._param_ptrs.get(key)
        if ptrs is None:
            if len(self._param_ptrs) > 4096:  # addresses of arrays long gone
                self._param_ptrs.clear()
            ptrs = self._param_ptrs[key] = np.arange(len(words), dtype=np.uint64) * 8 + np.uint64(key[0])
        self.check(self.cu.cuLaunchKernel(fn, grid, 1, 1, block, 1, 1, 0, 0, ptrs.ctypes.data, 0))

    def sync(self):
        self.check(self.cu.cuCtxSynchronize())

    def close(self):
        pass


_DRIVERS = {"cuda-python": _CudaPythonDriver, "pycuda": _PycudaDriver}  # tried in this order
_driver_state: dict = {}


def driver():
    """The process's driver binding, made once (its primary context made current); raises
    RuntimeError naming what each binding said when none works."""
    if "driver" in _driver_state:
        return _driver_state["driver"]
    if "error" in _driver_state:
        raise RuntimeError(_driver_state["error"])
    forced = os.environ.get("FIELDSIM_CUDA_DRIVER", "").strip().lower()
    if forced and forced not in _DRIVERS:
        warnings.warn(f"FIELDSIM_CUDA_DRIVER={forced!r} is not one of {', '.join(_DRIVERS)}; "
                      "trying each", stacklevel=2)
    names = [forced] if forced in _DRIVERS else list(_DRIVERS)
    problems = []
    for name in names:
        try:
            d = _DRIVERS[name]()
        except Exception as e:  # noqa: BLE001 - ImportError, driver errors, no device...
            problems.append(f"{name}: {type(e).__name__}: {e}")
            continue
        _driver_state["driver"] = d
        atexit.register(d.close)
        return d
    _driver_state["error"] = "no usable CUDA driver binding (" + "; ".join(problems) + ")"
    raise RuntimeError(_driver_state["error"])


def is_available() -> bool:
    """True if a driver binding imports and device 0 gives a context. Never raises."""
    try:
        driver()
        return True
    except Exception:  # noqa: BLE001
        return False


def device_arch(cc) -> str:
    """`sm_XY` for a compute capability, clamped to what LLVM's NVPTX knows (a device newer
    than `KNOWN_ARCHS` gets the newest: PTX JITs forward)."""
    v = cc[0] * 10 + cc[1]
    known = [k for k in KNOWN_ARCHS if k <= v] or [KNOWN_ARCHS[0]]
    return f"sm_{known[-1]}"


# ---- storage ---------------------------------------------------------------------------------------
class DeviceStorage:
    """A field's data in device memory (C order, zero-filled), or memory someone else owns
    (`borrowed`: a DLPack import, never freed here).

    For DLPack (fieldsim.lang.interop, which reaches storage by these names only): `ptr`, `shape`,
    `dtype`, `dlpack_device` ((kDLCUDA, device 0): the driver uses device 0), and `exported`, the
    number of live exports: a backend reset leaves such memory allocated, to be freed when the
    last reference (the consumer's) goes."""

    dlpack_device = (2, 0)

    def __init__(self, backend, shape, dtype):
        self._describe(backend, shape, dtype)
        # zeroed guard zones before and after the data, as the CPU's (HostStorage): a stencil's
        # `x[i - 1]` at i = 0 reads zero, not memory before the allocation (on a GPU an illegal
        # address where none is mapped), and a write one row past the end stays in the field's
        # own allocation; 256 bytes keep cuMemAlloc's alignment
        guard = guard_bytes(self.shape, self.dtype.itemsize, 256) if self.nbytes else 0
        base, self._handle = self.drv.alloc(self.nbytes + 2 * guard)
        self.ptr = base + guard
        if self.nbytes:
            self.drv.memset8(base, 0, self.nbytes + 2 * guard)

    def _describe(self, backend, shape, dtype):
        self.drv = backend.drv
        self.shape = tuple(int(s) for s in shape)
        self.dtype = np.dtype(dtype.np)
        self.size = int(np.prod(self.shape, dtype=np.int64))
        self.nbytes = self.size * self.dtype.itemsize
        self.exported = 0
        self.keep = None

    @classmethod
    def borrowed(cls, backend, ptr, shape, dtype, keep):
        """Storage over `ptr` (device memory `keep` owns and is kept alive with it)."""
        s = cls.__new__(cls)
        s._describe(backend, shape, dtype)
        s.ptr, s._handle, s.keep = int(ptr), None, keep
        return s

    def _span(self, idx):
        """(byte offset, shape) of the block `idx` (leading indices) selects."""
        idx = tuple(int(i) for i in idx)
        rest = self.shape[len(idx):]
        off = 0
        for i, n in zip(idx, self.shape):
            off = off * n + i
        off *= int(np.prod(rest, dtype=np.int64))
        return off * self.dtype.itemsize, rest

    def read_element(self, idx):
        off, rest = self._span(idx)
        out = np.empty(rest, dtype=self.dtype)
        if out.nbytes:
            self.drv.dtoh(out, self.ptr + off)
        return out[()] if not rest else out

    def write_element(self, idx, value):
        off, rest = self._span(idx)
        arr = np.ascontiguousarray(np.broadcast_to(np.asarray(value, dtype=self.dtype), rest))
        if arr.nbytes:
            self.drv.htod(self.ptr + off, arr)

    def to_numpy(self):
        out = np.empty(self.shape, dtype=self.dtype)
        if self.nbytes:
            self.drv.dtoh(out, self.ptr)
        return out

    def from_numpy(self, arr):
        arr = np.asarray(arr, dtype=self.dtype)
        if arr.shape != self.shape:  # a 0-d field's value arrives as shape (1,) (ascontiguousarray)
            arr = arr.reshape(self.shape) if arr.size == self.size else np.broadcast_to(arr, self.shape)
        arr = np.ascontiguousarray(arr)
        if self.nbytes:
            self.drv.htod(self.ptr, arr)

    def fill(self, value):
        v = np.asarray(value, dtype=self.dtype)
        if not self.nbytes:
            return
        raw = v.reshape(-1).view(np.uint8)
        if v.size == 1 and (raw == raw[0]).all():
            self.drv.memset8(self.ptr, int(raw[0]), self.nbytes)
        elif v.size == 1 and self.dtype.itemsize == 4:
            self.drv.memset32(self.ptr, int(raw.view(np.uint32)[0]), self.size)
        else:  # a vector/matrix element, or 8-byte values: broadcast on the host
            self.from_numpy(np.broadcast_to(v, self.shape))

    def zero(self):
        if self.nbytes:
            self.drv.memset8(self.ptr, 0, self.nbytes)

    def free(self):
        if self._handle is not None:
            handle, self._handle, self.ptr = self._handle, None, 0
            self.drv.free(handle)

    def __del__(self):
        try:
            self.free()
        except Exception:  # noqa: BLE001, S110 - at interpreter exit the context may be gone
            pass


class _Buffer:
    """A growable device buffer (scratch, AD-stack tables)."""

    def __init__(self, drv):
        self.drv, self.ptr, self.nbytes, self._handle = drv, 0, 0, None

    def ensure(self, nbytes):
        if nbytes > self.nbytes:
            if self._handle is not None:
                self.drv.sync()  # a kernel still running may use the old buffer
            self.release()
            self.ptr, self._handle = self.drv.alloc(nbytes)
            self.nbytes = nbytes
        return self.ptr

    def release(self):
        if self._handle is not None:
            self.drv.free(self._handle)
        self.ptr, self.nbytes, self._handle = 0, 0, None


# ---- program and launch ------------------------------------------------------------------------
class CudaProgram:
    def __init__(self, info, module, functions, ptx, max_threads=None):
        self.info, self.module, self.functions, self.ptx = info, module, functions, ptx
        # per task: the most threads a block of its kernel may have (registers permitting)
        self.max_threads = max_threads or [1024] * len(functions)
        self.nargs = len(info.params)
        self.table = None  # device copy of the field-pointer table, with the tuple it holds
        self.table_key = None
        self.stack_key = None  # the capacities whose (offs, caps) tables were last uploaded
        self.stack_buf = None
        self.frame = _Words(self)  # the launch words, reused by one launch at a time
        self.grids: dict = {}  # (task, size hint, stack stride) -> (blocks, threads per block)
        self.checked = _sets_error_word(info)
        self.ret_words = _return_words(info)


_MASK64 = 0xFFFFFFFFFFFFFFFF
_STORAGE = launch_common._STORAGE


class _Words:
    """A program's by-value launch words (ctx words, then one per argument), kept between
    launches: only what changed is written again (the driver copies them at each launch, so
    the next launch may overwrite them at once)."""

    def __init__(self, program):
        self.busy = threading.Lock()
        self.words = np.zeros(CTX_WORDS + program.nargs, dtype=np.uint64)
        self.argf = self.words.view(np.float64)
        self.params = tuple((CTX_WORDS + n, p.dtype.is_float) for n, p in enumerate(program.info.params))
        self.fields = tuple(program.info.fields)
        self.fields_key = None  # the storages the field table was made for
        self.status = None  # the status buffer's address the words hold


def _sets_error_word(info) -> bool:
    """Can the kernel set the error word (AD stacks, `debug=True` checks)? Only then does the
    host read it back after each task (which waits for the GPU)."""
    return bool(info.stacks or info.asserts or info.accesses or info.stack_infos)


def _flush_c_stdout():
    """fflush(NULL): the driver writes device printf text through C's stdout buffer."""
    import ctypes
    try:
        libc = ctypes.CDLL(None)  # the process's own C library (POSIX)
    except (OSError, TypeError):  # elsewhere the driver's own flush is all there is
        return
    libc.fflush(None)


def _return_words(info) -> int:
    """Words of the kernel's return value (one per scalar; 0 without one)."""
    if info.ret is None:
        return 0
    from fieldsim.lang.returns import flat_dtypes
    return len(flat_dtypes(info.ret))


class CudaLauncher:
    """Fills the entry's by-value words (ctx words, then arguments) and runs tasks as grids.
    (Not `launch.Launcher`: that one points the ctx at host buffers and runs `run_task`.)"""

    def __init__(self, backend):
        self.backend = backend

    def launch(self, program: CudaProgram, args, rng_key):
        frame = program.frame
        if not frame.busy.acquire(blocking=False):  # another thread is launching it
            return self.launch_with(program, _Words(program), args, rng_key)
        try:
            return self.launch_with(program, frame, args, rng_key)
        finally:
            frame.busy.release()

    def launch_with(self, program: CudaProgram, frame: _Words, args, rng_key):
        be, info = self.backend, program.info
        if program.ret_words:
            be.status.ensure(STATUS_BYTES + 8 * program.ret_words)  # before the words hold it
        words = self.entry_words(program, frame, args, rng_key)
        caps, offs, stride = launch_common.stack_caps(info, args, be.rt.ad_stack_size)
        if stride:
            words[CTX_STACK_STRIDE] = stride
            words[CTX_STACK_OFFS], words[CTX_STACK_CAPS] = self.stack_tables(program, caps, offs)
        checked = program.checked
        if checked or program.ret_words:
            be.drv.memset8(be.status.ptr, 0, 8 * (ERR_WORDS + program.ret_words))
        if info.prints:  # the kernel's printf output must follow what Python printed
            sys.stdout.flush()
        for n, task in enumerate(info.tasks):
            self.run_task(program, n, task, args, words, stride)
            if checked:
                self.raise_if_failed(info, caps)
        if info.prints:  # the driver writes device printf output when the GPU is waited for
            be.drv.sync()
            _flush_c_stdout()
        be.rt.stats["launches"] += 1
        return None if info.ret is None else self.read_return(info)

    def entry_words(self, program: CudaProgram, frame: _Words, args, rng_key) -> np.ndarray:
        """The by-value words: ctx words (field table, RNG key, status pointers), then one word
        per argument: its f64 bits, or the integer mod 2**64 (CTX_ARGS, left 0, is rebuilt on
        the device from these words). Written into `frame`'s words, the field table and the
        status pointers only where they changed."""
        words = frame.words
        status = self.backend.status.ptr
        if frame.status != status:
            words[CTX_ERR] = status
            words[CTX_RET] = status + 8 * ERR_WORDS
            frame.status = status
        storages = list(map(_STORAGE, frame.fields))
        if storages != frame.fields_key:
            words[CTX_FIELDS] = self.field_table(program)
            frame.fields_key = storages
        words[CTX_RNG] = rng_key & _MASK64
        argf = frame.argf
        for (n, is_float), v in zip(frame.params, args):
            if is_float:
                argf[n] = v  # numpy converts as float(v)
            else:
                words[n] = int(v) & _MASK64
        return words

    def run_task(self, program: CudaProgram, n: int, task, args, words, stride: int):
        """Task `n` as one grid (with its share of AD-stack scratch)."""
        be = self.backend
        key = (n, launch_common.task_size_hint(task, args), stride)
        shape = program.grids.get(key)
        if shape is None:
            if len(program.grids) > 256:  # size hints from arguments that keep changing
                program.grids.clear()
            shape = program.grids[key] = be.geometry(task, key[1], stride, program.max_threads[n])
        grid, block = shape
        if stride:
            words[CTX_STACK] = be.scratch.ensure(stride * grid * block)
        be.drv.launch(program.functions[n], grid, block, words)

    def raise_if_failed(self, info, caps):
        """Read the error words back (waits for the grid) and raise what the kernel reported
        (an assert's message values follow the error words)."""
        be = self.backend
        err = np.zeros(ERR_WORDS + (MAX_ASSERT_ARGS if info.asserts else 0), dtype=np.int64)
        be.drv.dtoh(err, be.status.ptr)
        if err[0]:
            launch_common.raise_kernel_error(info, err, caps)

    def read_return(self, info):
        """The kernel's return value (a scalar, or a vector, matrix, struct or tuple: one word
        per scalar) from the status buffer, after the error words."""
        from fieldsim.lang.returns import rebuild
        ret = np.zeros(_return_words(info), dtype=np.int64)
        self.backend.drv.dtoh(ret, self.backend.status.ptr + 8 * ERR_WORDS)
        return rebuild(info.ret, ret)

    def field_table(self, program: CudaProgram) -> int:
        ptrs = tuple(launch_common._field_ptr(f, program.info.name) for f in program.info.fields)
        if program.table_key != ptrs:
            if program.table is None:
                program.table = _Buffer(self.backend.drv)
            program.table.ensure(8 * max(len(ptrs), 1))
            self.backend.drv.htod(program.table.ptr, np.array(ptrs or (0,), dtype=np.uint64))
            program.table_key = ptrs
        return program.table.ptr

    def stack_tables(self, program: CudaProgram, caps, offs):
        key = tuple(caps.tolist())  # the offsets follow from the capacities
        if program.stack_buf is None:
            program.stack_buf = _Buffer(self.backend.drv)
        n = len(caps)
        base = program.stack_buf.ensure(16 * n)
        if program.stack_key != key:
            self.backend.drv.htod(base, np.concatenate([offs, caps]).astype(np.int64))
            program.stack_key = key
        return base, base + 8 * n


class _CudaJob:
    """A program being made: its PTX built on a compile thread (a future, or None when the
    module is loaded already), the rest by `finish(ptx)` on the first thread that asks for the
    result or the exception (the thread whose CUDA context is current)."""

    def __init__(self, finish, ptx):
        self._finish, self._ptx = finish, ptx
        self._program = self._error = None
        self._lock = threading.Lock()

    def _settle(self):
        with self._lock:
            if self._program is None and self._error is None:
                try:
                    self._program = self._finish(None if self._ptx is None else self._ptx.result())
                except Exception as err:  # noqa: BLE001 - kept for result()/exception()
                    self._error = err

    def exception(self):
        self._settle()
        return self._error

    def result(self):
        self._settle()
        if self._error is not None:
            raise self._error
        return self._program


class CudaBackend:
    name = "cuda"
    host_memory = False  # a numpy argument is copied to the device and back (ndarray._staged)

    def __init__(self, rt, drv=None):
        self.rt = rt
        self.drv = drv if drv is not None else driver()
        forced = os.environ.get("FIELDSIM_CUDA_ARCH")
        self.arch = check_arch(forced, "FIELDSIM_CUDA_ARCH") if forced else device_arch(self.drv.cc)
        # sm_90's vector reductions where the driver JIT-compiles their PTX (8.1: CUDA 12.1)
        self.vector_reductions = self.drv.version >= VECTOR_RED_DRIVER
        self.libdevice = find_libdevice()  # looked up once: the toolkit does not move
        self.libdevice_key = _file_key(self.libdevice)
        self.max_blocks = max(1, self.drv.sm_count * BLOCKS_PER_SM)
        self.launcher = CudaLauncher(self)
        self.status = _Buffer(self.drv)
        self.status.ensure(STATUS_BYTES)
        self.drv.memset8(self.status.ptr, 0, STATUS_BYTES)
        self.scratch = _Buffer(self.drv)
        self.storages: weakref.WeakSet = weakref.WeakSet()
        self.programs: list = []
        self.loaded: dict = {}  # LLVM IR text -> (PTX, module, functions, max threads)
        self.compiler = None  # the PTX-building threads (compile_pool)
        self.counter = 0
        self.stack_limit = 0  # the thread stack this backend raised the context's to
        atexit.register(_close_at_exit, weakref.ref(self))  # before the driver lets go

    # ---- storage ---------------------------------------------------------------------------------
    def allocate(self, shape, dtype, sparse=False):  # device memory: `sparse` changes nothing
        s = DeviceStorage(self, shape, dtype)
        self.storages.add(s)
        return s

    def borrow(self, ptr, shape, dtype, keep):
        """Storage over device memory someone else owns (a DLPack import: fieldsim.lang.interop),
        never freed here; `keep` lives as long as it."""
        return DeviceStorage.borrowed(self, ptr, shape, dtype, keep)

    def sync(self):
        self.drv.sync()

    def close(self):
        try:
            self.drv.sync()
        except Exception:  # noqa: BLE001, S110 - a failed kernel must not block the reset
            pass
        if self.status._handle is None and not self.programs:
            return  # closed already
        for s in list(self.storages):
            if not s.exported:  # exported through DLPack: freed when the consumer lets go
                s.free()
        for p in self.programs:
            for buf in (p.table, p.stack_buf):
                if buf is not None:
                    buf.release()
        self.programs.clear()
        self.loaded.clear()
        self.scratch.release()
        self.status.release()

    # ---- compile ---------------------------------------------------------------------------------
    def compile(self, kernel: Kernel, rt) -> CudaProgram:
        text, info, entries = self._lower(kernel, rt)
        ptx = None if text in self.loaded else self._cached_ptx(text, entries, rt)
        return self._program(text, info, ptx)

    def compile_pool(self) -> ThreadPoolExecutor | None:
        """Threads that build PTX at once (LLVM's work, outside Python's lock); None where the
        host has one core."""
        workers = min(os.cpu_count() or 1, 8)
        if workers < 2:
            return None
        if self.compiler is None:
            self.compiler = ThreadPoolExecutor(workers, thread_name_prefix="fieldsim-ptx")
        return self.compiler

    def start_compile(self, kernel: Kernel, rt):
        """Lower `kernel` now (its errors raise here) and build its PTX on a compile thread: a
        job whose `result()` is the program (its module loaded on the thread that asks, where
        the CUDA context is current). None without compile threads."""
        pool = self.compile_pool()
        if pool is None:
            return None
        text, info, entries = self._lower(kernel, rt)
        ptx = None if text in self.loaded else pool.submit(self._cached_ptx, text, entries, rt)
        return _CudaJob(lambda built: self._program(text, info, built), ptx)

    def compile_many(self, kernels: list[Kernel], rt) -> list:
        """The programs of `kernels` (or exceptions), their PTX built on the compile threads
        meanwhile (`llvm_build.compile_many`)."""
        return llvm_build.compile_many(self, kernels, rt)

    def _lower(self, kernel: Kernel, rt):
        """(LLVM IR text, KernelInfo, entry names): the Python half of a compile."""
        self.counter += 1
        # Each kernel is its own CUDA module, so its symbols need not be unique: a name without
        # a compile counter keeps the cache key independent of compile order.
        symbol = f"fs_{safe_symbol(kernel.name)}"
        module_ir, info, entries = lower_for_cuda(kernel, symbol, rt.debug,
                                                  libdevice=self.libdevice is not None,
                                                  fast_math=rt.fast_math, arch=self.arch,
                                                  vector_reductions=self.vector_reductions)
        return str(module_ir), info, entries

    def _program(self, text: str, info, ptx: str | None) -> CudaProgram:
        """The program of lowered `text` whose PTX is `ptx`, its module loaded on this thread;
        a template kernel's specialisations for other fields lower to the same LLVM IR
        (fields are passed by pointer): one PTX build and one loaded module serve them all."""
        loaded = self.loaded.get(text)
        self.stack_for(info)
        if loaded is None:
            module = self.drv.load(ptx)
            nwords = CTX_WORDS + len(info.params)
            fns = [self.drv.function(module, t.entry, nwords) for t in info.tasks]
            loaded = self.loaded[text] = (ptx, module, fns, [self.drv.max_threads(f) for f in fns])
        ptx, module, fns, max_threads = loaded
        program = CudaProgram(info, module, fns, ptx, max_threads)
        self.programs.append(program)
        return program

    def stack_for(self, info):
        """Raise the context's thread stack to `cuda_stack_limit` for a kernel that makes real
        calls: recursion's frames live there, 1 KB a thread by the driver's default. Once, as
        Taichi does at init, and only when needed: the driver reserves the stack for every
        resident thread (8 KB is about 2 GB on a 132-SM GPU)."""
        if info.calls and self.stack_limit < self.rt.cuda_stack_limit:
            self.drv.raise_stack_limit(self.rt.cuda_stack_limit)
            self.stack_limit = self.rt.cuda_stack_limit

    def _cached_ptx(self, text, entries, rt) -> str:
        parts = [COMPILER_VERSION, llvmlite.__version__, self.arch, self.libdevice_key, text]
        ptx = cached_build(rt, "cuda", parts, ".ptx",
                           lambda: optimise_to_ptx(text, entries, self.arch, self.libdevice).encode())
        return ptx.decode()

    # ---- launch ----------------------------------------------------------------------------------
    def launch(self, program: CudaProgram, args, rng_key, adjoint=False):
        return self.launcher.launch(program, args, rng_key)

    def geometry(self, task, size_hint, stride=0, max_threads=1024):
        """(blocks, threads per block) for one task."""
        if not task.parallel:
            return 1, 1
        stmt = task.stmt
        block = int(getattr(stmt.attr, "block_dim", None) or BLOCK_DIM)
        block = max(1, min(block, 1024, int(max_threads)))
        blocks = self.max_blocks if size_hint is None else max(1, -(-int(size_hint) // block))
        # under 2**30 threads in all: 32-bit grid-stride counters rely on it (narrow_counters)
        blocks = min(blocks, self.max_blocks, MAX_GRID_THREADS // block)
        if stride:
            blocks = max(1, min(blocks, SCRATCH_LIMIT // (stride * block)))
        return blocks, block


def _file_key(path: str | None) -> str:
    """What identifies a file's contents in a cache key: its real path (not a `cuda` symlink
    that an upgrade repoints), size and modification time."""
    if path is None:
        return ""
    st = os.stat(path)
    return f"{os.path.realpath(path)}:{st.st_size}:{st.st_mtime_ns}"


def _close_at_exit(ref):
    backend = ref()
    if backend is not None:
        backend.close()
