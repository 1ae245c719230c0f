"""Process-wide runtime state: what `fs.init` configured, the fields and kernels it owns.

`init` starts afresh: fields and compiled kernels of an earlier `init` are dropped (using one
afterwards raises). Everything else reads the current `Runtime` through `get()`. The AD
contexts (`tape`, `fwd_mode`, `no_grad_depth`) are per thread; the rest is shared.
"""
from __future__ import annotations

import os
import threading
import warnings
from typing import ClassVar

from fieldsim.errors import FieldsimError
from fieldsim.lang import types as T


class Arch(str):
    """An arch constant (`fs.cpu`, `fs.cuda`, ...): the string fieldsim compares ('cpu',
    'cuda', ...) that prints, and has the `.name` and `.value`, of Taichi's `ti.Arch` member, so
    that `print(ti.cfg.arch)` and `getattr(ti, ti.cfg.arch.name)` behave as under Taichi.

    >>> fs.cpu == "cpu", str(fs.cpu), fs.cpu.name, fs.cuda.value
    (True, 'Arch.x64', 'x64', 3)
    """

    # Taichi's member name and number per fieldsim arch string
    _TAICHI: ClassVar[dict] = {"cpu": ("x64", 0), "arm64": ("arm64", 1), "cuda": ("cuda", 3),
                               "metal": ("metal", 4), "opengl": ("opengl", 5), "dx11": ("dx11", 6), "dx12": ("dx12", 7),
                               "amdgpu": ("amdgpu", 9), "vulkan": ("vulkan", 10), "gles": ("gles", 11)}

    def __new__(cls, value):
        # str(Arch) is Taichi's 'Arch.x64': build from the plain string it compares as
        return super().__new__(cls, str.__str__(value) if isinstance(value, str) else value)

    @property
    def name(self) -> str:
        return self._TAICHI.get(str.__str__(self), (str.__str__(self),))[0]

    @property
    def value(self) -> int:
        return self._TAICHI.get(str.__str__(self), (None, -1))[1]

    def __str__(self) -> str:
        return f"Arch.{self.name}"

    def __repr__(self) -> str:
        return f"<Arch.{self.name}: {self.value}>"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __reduce__(self):
        return (Arch, (str.__str__(self),))


cpu, cuda, gpu = Arch("cpu"), Arch("cuda"), Arch("gpu")
x64 = x86_64 = arm64 = cpu
# Taichi's other backends: fieldsim has none of them; `init` runs their programs on the CPU.
vulkan, metal, opengl, gles, dx11, dx12, amdgpu = (Arch(a) for a in ("vulkan", "metal", "opengl",
                                                                    "gles", "dx11", "dx12", "amdgpu"))
OTHER_BACKENDS = (vulkan, metal, opengl, gles, dx11, dx12, amdgpu)


# `ti.init` options of Taichi 1.7 that fieldsim accepts and does not need: each with why (the
# same notes are in docs/COMPAT.md). Any other unknown keyword is a TypeError.
TAICHI_ONLY_OPTIONS = {
    "advanced_optimization": "fieldsim always runs its own passes and LLVM's optimiser",
    "cfg_optimization": "fieldsim always runs its own passes and LLVM's optimiser",
    "constant_folding": "constants are always folded in the frontend",
    "opt_level": "fieldsim always runs LLVM's optimiser (its own pipeline)",
    "external_optimization_level": "fieldsim always runs LLVM's optimiser (its own pipeline)",
    "print_ir": "prints fieldsim's IR of each compiled kernel (not Taichi's CHI IR)",
    "print_preprocessed_ir": "set FIELDSIM_PRINT_IR=1 to print fieldsim's IR",
    "print_accessor_ir": "set FIELDSIM_PRINT_IR=1 to print fieldsim's IR",
    "print_kernel_llvm_ir": "fieldsim does not print LLVM IR",
    "print_kernel_llvm_ir_optimized": "fieldsim does not print LLVM IR",
    "print_kernel_nvptx": "fieldsim does not print PTX",
    "print_struct_llvm_ir": "fieldsim does not print LLVM IR",
    "print_ir_dbg_info": "fieldsim does not print LLVM IR",
    "print_benchmark_stat": "no effect",
    "print_full_traceback": "fieldsim shows the user's frames only",
    "log_level": "fieldsim has no logger levels",
    "verbose": "fieldsim has no logger levels",
    "check_out_of_bound": "Python-scope indices are always checked; kernels check with debug=True",
    "gdb_trigger": "no effect",
    "dynamic_index": "dynamic indexing of local vectors is always on",
    "real_matrix_scalarize": "vectors and matrices are always scalarised",
    "half2_vectorization": "no effect",
    "make_thread_local": "no effect (no thread-local reduction pass)",
    "make_block_local": "no effect (no block-local storage)",
    "detect_read_only": "no effect",
    "demote_dense_struct_fors": "no effect",
    "lower_access": "no effect",
    "move_loop_invariant_outside_if": "no effect",
    "flatten_if": "no effect",
    "simplify_before_lower_access": "no effect",
    "simplify_after_lower_access": "no effect",
    "quant_opt_store_fusion": "quantized types are not supported",
    "quant_opt_atomic_demotion": "quantized types are not supported",
    "default_cpu_block_dim": "no effect (CPU loops are split per thread)",
    "cpu_block_dim_adaptive": "no effect",
    "default_gpu_block_dim": "CUDA launches choose their own block size",
    "gpu_max_reg": "no effect",
    "saturating_grid_dim": "no effect",
    "max_block_dim": "no effect",
    "device_memory_GB": "CUDA memory is allocated per field",
    "device_memory_fraction": "CUDA memory is allocated per field",
    "num_compile_threads": "kernels compile on the calling thread",
    "timeline": "no effect",
    "offline_cache_cleaning_policy": "the compile cache is never cleaned automatically",
    "offline_cache_max_size_of_files": "the compile cache is never cleaned automatically",
    "offline_cache_cleaning_factor": "the compile cache is never cleaned automatically",
    "ndarray_use_cached_allocation": "no effect",
    "use_mesh": "no effect (ti.Mesh works without it)",
    "vk_api_version": "no Vulkan backend",
    "use_gles": "no OpenGL backend",
    "short_circuit_operators": "and/or run an operand with effects always, one that only loads where needed",
    "excepthook": "no effect",
    "default_up": "ignored: the unsigned type of default_ip (ti.math.uvec2/3/4 hold it)",
    "enable_fallback": "unsupported backends always fall back to the CPU with a warning",
    "require_version": "no effect",
    "packed": "no effect (fields are always packed)",
    "_test_mode": "no effect",
    "use_unified_memory": "CUDA memory is allocated per field",
    "experimental_real_function": "real functions are inlined unless they recurse",
    "print_preprocessed": "fieldsim does not print preprocessed source",
}
_EFFECTIVE = {"real_matrix_scalarize": True, "dynamic_index": True}
FIELDSIM_OPTIONS = ("arch", "default_fp", "default_ip", "random_seed", "cpu_max_num_threads",
                    "debug", "offline_cache", "offline_cache_file_path", "ad_stack_size",
                    "kernel_profiler", "fast_math", "fp_contract", "cuda_stack_limit",
                    "unrolling_limit")


class InitOptionError(FieldsimError, TypeError, KeyError):
    """An unknown `fs.init` keyword (a TypeError; also a KeyError, which is what Taichi raises)."""


class IgnoredOptionWarning(UserWarning):
    """A Taichi `init` option that fieldsim accepts and does not need: the one-line note."""


# options that are Taichi's test harness or logging plumbing, or that fieldsim honours: no note
_QUIET_OPTIONS = {"_test_mode", "print_ir", "log_level", "excepthook", "print_full_traceback",
                  "verbose", "require_version"}


def _note_ignored(options: dict) -> None:
    # no note where the value asked for is what fieldsim does anyway (dynamic_index=True)
    noted = sorted(k for k, v in options.items() if k not in _QUIET_OPTIONS
                   and not (k in _EFFECTIVE and v == _EFFECTIVE[k]))
    if not noted:
        return
    from fieldsim.lang.naming import user_frame
    frame = user_frame()
    why = "; ".join(f"{k}: {TAICHI_ONLY_OPTIONS[k]}" for k in noted)
    msg = f"fs.init: Taichi option(s) accepted without effect in fieldsim ({why})"
    if frame is None:
        warnings.warn(msg, IgnoredOptionWarning, stacklevel=3)
    else:  # at the user's fs.init line, shown every time (each init is a fresh start)
        warnings.warn_explicit(msg, IgnoredOptionWarning, frame.f_code.co_filename, frame.f_lineno)


class Runtime:
    def __init__(self, arch=cpu, default_fp=T.f32, default_ip=T.i32, random_seed=0,
                 cpu_max_num_threads=None, debug=False, offline_cache=True, ad_stack_size=0,
                 offline_cache_file_path=None, kernel_profiler=False, fast_math=True,
                 fp_contract=False, cuda_stack_limit=8192, unrolling_limit=32,
                 **taichi_options):
        unknown = sorted(k for k in taichi_options if k not in TAICHI_ONLY_OPTIONS)
        if unknown:
            from fieldsim.lang.compat import user_loc
            raise InitOptionError(f"fs.init() got unknown option(s) {', '.join(unknown)}; valid options: "
                            f"{', '.join(FIELDSIM_OPTIONS)} (and Taichi's, accepted without "
                            f"effect: {', '.join(sorted(TAICHI_ONLY_OPTIONS))})", user_loc())
        self.ignored_options = dict(taichi_options)  # accepted for Taichi programs; see above
        _note_ignored(taichi_options)
        self.kernel_profiler = bool(kernel_profiler)
        from fieldsim.lang.profiler import KernelProfile
        self.profile = KernelProfile()
        self.arch = _resolve_arch(arch)
        self.default_fp = _dtype(default_fp, T.f32)
        self.default_ip = _dtype(default_ip, T.i32)
        self.random_seed = int(random_seed)
        self.num_threads = int(cpu_max_num_threads or os.cpu_count() or 1)
        self.debug = bool(debug)
        # Fast-math (Taichi's default, True): float ops may be reassociated (and, on CUDA,
        # contracted to FMA; the CPU rounds products as Taichi's x64 backend), so reductions
        # vectorize; shared divisors become one reciprocal and f32 x/sqrt(q)
        # a refined estimate (codegen); NaN and infinity keep their meaning (no nnan/ninf).
        # False: IEEE results, op by op.
        self.fast_math = bool(fast_math)
        # fieldsim's own: under fast-math, let the CPU fuse multiply-adds too (faster where
        # FMAs dominate; results then differ from Taichi's x64 backend in last bits)
        self.fp_contract = bool(fp_contract)
        self.offline_cache = bool(offline_cache) and os.environ.get("FIELDSIM_OFFLINE_CACHE", "1") != "0"
        # An empty FIELDSIM_CACHE_DIR means the default, not the working directory.
        self.cache_dir = offline_cache_file_path or os.environ.get("FIELDSIM_CACHE_DIR") or \
            os.path.join(_xdg_cache_home(), "fieldsim")
        self.ad_stack_size = int(ad_stack_size) if ad_stack_size else 256
        # bytes of GPU thread stack for kernels that make real calls (Taichi's option and default)
        self.cuda_stack_limit = int(cuda_stack_limit)
        # fs.static loops warn past this many unrolled iterations (0: never), as Taichi
        self.unrolling_limit = int(unrolling_limit)
        self.fields: list = []
        self.generation = _next_generation()
        # bumped by SNodeTree.destroy(): compiled kernels may hold a destroyed tree's fields
        # (a data-oriented `self.x` rebound since), so every kernel compiles afresh, as in Taichi
        self.kernel_epoch = 0
        self.snode_tree_ids: set = set()  # ids of live finalized trees (fs.root's is 0 once counted)
        self.launch_counter = 0
        self._per_thread = _PerThread()  # tape, fwd_mode, no_grad_depth: see below
        self.device = None  # a backend object (cpu or cuda) made lazily
        self.stats = {"compile_s": 0.0, "launches": 0}

    def __getattr__(self, name):
        """Taichi config options read back (`current_cfg().fast_math`): the value given to
        `init`, else what fieldsim effectively does (dynamic_index is always on), else
        Taichi's default."""
        if name not in TAICHI_ONLY_OPTIONS:
            raise AttributeError(f"'Runtime' object has no attribute {name!r}")
        if name in _EFFECTIVE:
            return _EFFECTIVE[name]
        given = self.__dict__.get("ignored_options", {})
        return given[name] if name in given else _TAICHI_DEFAULTS.get(name)

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
            self.device = HOOKS["make_backend"](self)
        return self.device


class _PerThread(threading.local):
    tape = None  # the active Tape, if any
    fwd_mode = None
    no_grad_depth = 0
    tape_memo = None  # the last Tape's checked launches (checks.tape_memo.Remembered)


class _KernelPythonCalls(threading.local):
    depth = 0  # Python functions a kernel being compiled is calling now (frontend_expr)


_KERNEL_PYTHON_CALLS = _KernelPythonCalls()


def call_from_kernel(fn, args, kwargs):
    """`fn(*args, **kwargs)`, a plain Python call a kernel makes while it compiles."""
    from fieldsim.errors import PythonScopeError
    _KERNEL_PYTHON_CALLS.depth += 1
    try:
        return fn(*args, **kwargs)
    except PythonScopeError as err:
        if getattr(fn, "__module__", None) is not None and fn.__module__.split(".")[0] == "fieldsim":
            # called from the kernel's own line (`a = x.to_numpy()`): the frontend locates it
            # there; from a user's helper, the helper's line (already on it) says more
            err.loc = None
        raise
    finally:
        _KERNEL_PYTHON_CALLS.depth -= 1


def python_scope_only(what: str):
    """Refuses making a field or ndarray from a kernel or func, as Taichi does ("field cannot
    be called in Taichi-scope"): made while the kernel compiled, it would be made once and
    kept, its values carried from launch to launch where a temporary was meant."""
    if _KERNEL_PYTHON_CALLS.depth:
        from fieldsim.errors import PythonScopeError
        raise PythonScopeError(
            f"a {what} cannot be made in a kernel or @func: fields and ndarrays are made in "
            "Python scope (make it once, before the kernel, and pass it or use it as a global; "
            "per-thread temporaries are locals, e.g. fs.Vector.zero(fs.f32, n))")


def python_scope_call(what: str):
    """Refuses a Python-scope data call (`x.to_numpy()`, `x.from_numpy(a)`, `x.to_torch()`) made
    from a kernel or func, as Taichi does: run once while the kernel compiled, its copy would be
    kept, and later launches would read stale values."""
    if _KERNEL_PYTHON_CALLS.depth:
        from fieldsim.errors import PythonScopeError
        raise PythonScopeError(
            f"{what} cannot be called in a kernel or @func (Taichi-scope): it would run once, "
            "while the kernel compiles, and the kernel would keep that copy; read or write the "
            "elements in the kernel (x[i]), or call it in Python scope")


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
        warnings.warn(f"fs.init(arch=fs.{Arch(arch).name}): no usable CUDA device ({reason}); running on the "
                      "CPU. Install the `cuda` extra on a machine with an NVIDIA GPU to use it.",
                      stacklevel=3)
        return cpu
    if arch in OTHER_BACKENDS:
        name = Arch(arch).name
        warnings.warn(f"fs.init(arch=fs.{name}): fieldsim has no {name} backend; running on the CPU",
                      stacklevel=3)
        return cpu
    raise ValueError(f"unknown arch {arch!r}; use fs.cpu, fs.cuda or fs.gpu")


def _cuda_reason():
    """None when a CUDA device can be used, else why not."""
    return HOOKS["cuda_reason"]()


# What this layer asks of the backends, installed by `fieldsim.runtime` (which may import
# them): `make_backend(rt)` -> the device object for rt.arch; `cuda_reason()` -> None or why
# no CUDA device can be used.
HOOKS: dict = {}


_current: Runtime | None = None


def get() -> Runtime:
    global _current
    if _current is None:
        _current = Runtime()
    return _current


def init(arch=cpu, default_fp=None, default_ip=None, random_seed=0, **kwargs) -> Runtime:
    """Start (or restart) fieldsim: pick the backend and defaults (Taichi's `ti.init`).

    Restarting invalidates every field made before.

    Args:
        arch: `fs.cpu` (LLVM, multi-threaded) or `fs.cuda`/`fs.gpu` when pycuda and a GPU exist.
        default_fp: the dtype of Python floats in kernels (`fs.f32` by default).
        default_ip: the dtype of Python ints in kernels (`fs.i32` by default).
        random_seed: the seed of `fs.random()`.
        **kwargs: further options (`debug`, `ad_stack_size`, `offline_cache`, ...).
            `fast_math` (default True, as in Taichi): float ops may be reassociated (and fused
            into FMA on CUDA; never on the CPU, as in Taichi's x64 backend), so loops vectorize, divisions by one value in one block multiply by its
            reciprocal, and f32 `x / sqrt(q)` multiplies by a refined 1/sqrt estimate (about
            an ulp); `fast_math=False` gives IEEE results op by op. `fp_contract=True`
            (fieldsim's own, default False) lets fast-math fuse multiply-adds on the CPU too:
            faster where FMAs dominate, last bits no longer Taichi's. `cuda_stack_limit`
            (Taichi's, default 8192): bytes of GPU thread stack for kernels that call a
            recursive `real_func` (deeper recursion overflows it: an illegal-address error).
            `unrolling_limit` (Taichi's, default 32): an `fs.static` loop unrolling more
            iterations warns (a `SyntaxWarning`; 0: never).

    >>> rt = fs.init(arch=fs.cpu, default_fp=fs.f64)
    >>> fs.field(float, shape=1).dtype
    f64
    >>> rt = fs.init(arch=fs.cpu)
    """
    global _current
    if _current is not None:
        _shutdown(_current)
    arch, default_fp, default_ip = _from_environment(arch, default_fp, default_ip, kwargs)
    _current = Runtime(arch, default_fp, default_ip, random_seed, **kwargs)
    return _current


# Taichi's environment variables: TI_ARCH wins over `arch=`; the others (TI_DEBUG=1, ...) apply
# where `init` does not give the option, as in Taichi 1.7.
_ENV_OPTIONS = {"debug": bool, "fast_math": bool, "offline_cache": bool, "kernel_profiler": bool,
                "cpu_max_num_threads": int, "ad_stack_size": int}
_ENV_BITS = {"32": (T.f32, T.i32), "64": (T.f64, T.i64)}


def _from_environment(arch, default_fp, default_ip, kwargs: dict):
    env = os.environ
    arch = env.get("TI_ARCH") or arch
    for name, given, k in (("TI_DEFAULT_FP", default_fp, 0), ("TI_DEFAULT_IP", default_ip, 1)):
        value = env.get(name)
        if value and given is None:
            if value not in _ENV_BITS:
                raise ValueError(f"Invalid {name}={value}, should be 32 or 64")
            if k == 0:
                default_fp = _ENV_BITS[value][0]
            else:
                default_ip = _ENV_BITS[value][1]
    for key, cast in _ENV_OPTIONS.items():
        value = env.get("TI_" + key.upper())
        if value and key not in kwargs:
            try:
                kwargs[key] = cast(int(value))
            except ValueError:  # a ValueError, as Taichi's own: naming the variable
                raise ValueError(f"Invalid TI_{key.upper()}={value}, should be an integer") from None
    _taichi_options_from_environment(env, kwargs)
    return arch, default_fp, default_ip


def _taichi_options_from_environment(env, kwargs: dict) -> None:
    """Taichi reads TI_<OPTION> for every option of its config (TI_PRINT_IR=1,
    TI_CHECK_OUT_OF_BOUND=1, ...), typed as the option's default."""
    for key, default in _TAICHI_DEFAULTS.items():
        value = env.get("TI_" + key.upper())
        if not value or key in kwargs:
            continue
        kind = type(default)
        try:
            kwargs[key] = bool(int(value)) if kind is bool else kind(value)
        except ValueError:
            raise ValueError(f"Invalid TI_{key.upper()}={value}, should be "
                             f"{'an integer' if kind in (bool, int) else 'a number'}") from None


_CFG_RENAMED = {"cpu_max_num_threads": "num_threads"}
# Taichi 1.7.4's `ti.cfg` values after a plain `ti.init(arch=ti.cpu)`, for the options fieldsim
# only accepts: read back where not given, and the types TI_<OPTION> variables are read as
_TAICHI_DEFAULTS = {"advanced_optimization": True, "cfg_optimization": True,
                    "check_out_of_bound": False, "cpu_block_dim_adaptive": True,
                    "default_cpu_block_dim": 32, "default_gpu_block_dim": 128,
                    "demote_dense_struct_fors": True, "detect_read_only": True,
                    "device_memory_GB": 1.0, "device_memory_fraction": 0.0, "flatten_if": False,
                    "gpu_max_reg": 0, "half2_vectorization": False, "lower_access": True,
                    "make_block_local": True, "make_thread_local": True, "max_block_dim": 1024,
                    "move_loop_invariant_outside_if": False, "offline_cache_cleaning_factor": 0.25,
                    "offline_cache_cleaning_policy": "lru",
                    "offline_cache_max_size_of_files": 104857600, "opt_level": 1,
                    "print_accessor_ir": False, "print_ir": False, "print_ir_dbg_info": True,
                    "print_kernel_llvm_ir": False, "print_kernel_llvm_ir_optimized": False,
                    "print_preprocessed_ir": False, "print_struct_llvm_ir": False,
                    "quant_opt_atomic_demotion": True, "quant_opt_store_fusion": True,
                    "saturating_grid_dim": 0, "simplify_after_lower_access": True,
                    "simplify_before_lower_access": True, "timeline": False, "verbose": True,
                    # not in ti.cfg: on what `ti.init(_test_mode=True)` returns
                    "log_level": "info", "gdb_trigger": False}


class Config:
    """`ti.cfg`: the options of the current `init`, read back (`ti.cfg.debug`, `ti.cfg.arch`);
    Taichi options fieldsim only accepts read back as given, else as Taichi's default.

    >>> rt = fs.init(arch=fs.cpu, debug=True)
    >>> fs.cfg.debug, fs.cfg.arch == fs.cpu, fs.cfg.default_fp
    (True, True, f32)
    >>> rt = fs.init(arch=fs.cpu)
    """

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        value = getattr(get(), _CFG_RENAMED.get(name, name))
        return _TAICHI_DEFAULTS.get(name) if value is None else value

    def __repr__(self):
        return f"<fs.cfg of the current init: arch={get().arch}, debug={get().debug}>"


cfg = Config()


def reset():
    """Shut fieldsim down; every field made so far becomes invalid (Taichi's `ti.reset`).

    >>> fs.reset()
    >>> rt = fs.init(arch=fs.cpu)
    """
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
    """Wait until every launched kernel has finished (a no-op on the CPU, where launches block).

    >>> fs.sync()
    """
    rt = get()
    if rt.device is not None:
        rt.device.sync()


def _xdg_cache_home() -> str:
    """$XDG_CACHE_HOME when set to an absolute path (the XDG spec ignores relative ones), else
    ~/.cache."""
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    return xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".cache")


def is_arch_supported(arch) -> bool:
    """`ti.is_arch_supported(arch)`: can `init(arch=arch)` run on it without falling back?

    >>> fs.is_arch_supported(fs.cpu), fs.is_arch_supported(fs.vulkan)
    (True, False)
    """
    if arch in (cpu, "x64", "arm64"):
        return True
    if arch in (cuda, gpu):
        return _cuda_reason() is None
    return False


# Taichi's logging levels. fieldsim has no C++ logger: its messages are Python warnings, which
# the `warnings` module filters; the level is kept so programs that set or ask for it run.
TRACE, DEBUG, INFO, WARN, ERROR, CRITICAL = "trace", "debug", "info", "warn", "error", "critical"
_LOG_LEVELS = (TRACE, DEBUG, INFO, WARN, ERROR, CRITICAL)
_log_level = [INFO]


def set_logging_level(level) -> None:
    """Taichi's `ti.set_logging_level`: keeps the level (`fs.TRACE` ... `fs.CRITICAL`).

    >>> fs.set_logging_level(fs.WARN); fs.is_logging_effective(fs.INFO)
    False
    >>> fs.set_logging_level(fs.INFO)
    """
    if level not in _LOG_LEVELS:
        raise ValueError(f"unknown logging level {level!r}; use one of {', '.join(_LOG_LEVELS)}")
    _log_level[0] = level


def is_logging_effective(level) -> bool:
    """Would a message at `level` be logged at the level set now?

    >>> fs.is_logging_effective(fs.ERROR)
    True
    """
    if level not in _LOG_LEVELS:
        raise ValueError(f"unknown logging level {level!r}; use one of {', '.join(_LOG_LEVELS)}")
    return _LOG_LEVELS.index(level) >= _LOG_LEVELS.index(_log_level[0])
