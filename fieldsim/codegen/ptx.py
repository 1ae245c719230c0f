"""CUDA code generation that needs no GPU: fieldsim IR -> LLVM IR for NVPTX -> PTX text.

`CudaTarget` plugs into the shared lowering (`codegen/llvm.py`) through its `Target` hooks:

* math goes to libdevice (`__nv_sinf`, `__nv_pow`, ...), linked in from `libdevice.10.bc`
  (found by `find_libdevice`), except sqrt, LLVM's intrinsic (`sqrt.approx` under fast-math,
  `sqrt.rn` in exact mode; f32 division likewise, `approx_math`). Without libdevice, only the
  ops NVPTX lowers natively (sqrt, fabs, floor, ceil, round, min/max) compile; a
  transcendental raises `LibdeviceNotFound`.
* a reduction into one element adds once per warp (`reduce_atomic`); `print` is the driver's
  `vprintf`.
* a parallel task's iterations are split grid-stride: worker `w` of `n` runs `begin+w`,
  `begin+w+n`, ... The loop index (not the GPU thread id) seeds `fs.random`, so a CUDA launch
  draws exactly the CPU's numbers.
* each task function `<task>` gets a kernel entry `<task>_entry(i64 ctx[CTX_WORDS], i64 arg[k])`:
  the ctx words and the kernel's runtime arguments are passed by value (so a launch needs no
  host-to-device copy), rebuilt in a local array, and the task is inlined into the entry with
  worker = ctaid.x*ntid.x + tid.x and num_workers = nctaid.x*ntid.x.

`compile_kernel` lowers, links libdevice, internalises everything but the entries, runs LLVM's
O3 pipeline with the NVPTX target machine (which adds NVVMReflect) and prints PTX. Atomics get
device scope (`syncscope("device")`): without it NVPTX uses system scope for its CAS loops.
"""
from __future__ import annotations

import functools
import glob
import os
import re
import shutil
import subprocess
import sys
import threading

import llvmlite.binding as llvm
from llvmlite import ir as L

from fieldsim.codegen import llvm_build
from fieldsim.codegen.cpu import safe_symbol
from fieldsim.codegen.jit_memory import dispose
from fieldsim.codegen.llvm import CTX_ARGS, CTX_WORDS, I32, I64, PTR, Target, c_string, ll_type, lower_kernel
from fieldsim.codegen.llvm_build import MachinePool
from fieldsim.errors import FieldsimError
from fieldsim.ir import dtypes as T

TRIPLE = "nvptx64-nvidia-cuda"
DEFAULT_ARCH = "sm_90"
# LLVM's NVPTX processors that real devices map to (cuda.device_arch), newest last
KNOWN_ARCHS = (50, 52, 53, 60, 61, 62, 70, 72, 75, 80, 86, 87, 89, 90, 100, 101, 103, 120, 121)
_lock = threading.Lock()
_initialised: list = []

# fieldsim math name -> libdevice base name (`__nv_<base>` for f64, `__nv_<base>f` for f32)
LIBDEVICE = {"sqrt": "sqrt", "fabs": "fabs", "sin": "sin", "cos": "cos", "tan": "tan",
             "asin": "asin", "acos": "acos", "atan": "atan", "tanh": "tanh", "exp": "exp",
             "log": "log", "floor": "floor", "ceil": "ceil", "round": "round", "pow": "pow",
             "atan2": "atan2", "minnum": "fmin", "maxnum": "fmax", "fma": "fma", "trunc": "trunc"}
# what NVPTX lowers itself, used when libdevice is missing
NATIVE = {"sqrt", "fabs", "floor", "ceil", "round", "minnum", "maxnum", "fma", "trunc"}


class LibdeviceNotFound(FieldsimError):
    pass


def find_libdevice() -> str | None:
    """Path of libdevice.10.bc: $FIELDSIM_LIBDEVICE, then <root>/nvvm/libdevice for the CUDA
    roots in $CUDA_HOME/$CUDA_PATH/$CUDA_ROOT, next to `ptxas`/`nvcc` on PATH, /usr/local/cuda*,
    /opt/cuda, then NVIDIA's pip wheels (nvidia/*/nvvm/libdevice) on sys.path."""
    explicit = os.environ.get("FIELDSIM_LIBDEVICE")
    if explicit:
        return explicit if os.path.isfile(explicit) else None
    roots = [os.environ.get(v) for v in ("CUDA_HOME", "CUDA_PATH", "CUDA_ROOT")]
    for tool in ("ptxas", "nvcc"):
        exe = shutil.which(tool)
        if exe:
            roots.append(os.path.dirname(os.path.dirname(os.path.realpath(exe))))
            roots.extend(_wrapper_roots(exe))
    roots += ["/usr/local/cuda"] + sorted(glob.glob("/usr/local/cuda-*"), reverse=True)
    roots += ["/opt/cuda", "/usr/lib/nvidia-cuda-toolkit", "/usr/lib/cuda"]
    for p in sys.path:
        roots += sorted(glob.glob(os.path.join(p, "nvidia", "*")))
    for root in filter(None, roots):
        hits = sorted(glob.glob(os.path.join(root, "nvvm", "libdevice", "libdevice*.bc")))
        if hits:
            return hits[-1]
    return None


def _wrapper_roots(exe: str) -> list:
    """A `ptxas` on PATH may be a small shell wrapper (`exec /opt/cuda-x/bin/ptxas "$@"`)."""
    try:
        if os.path.getsize(exe) > 4096:
            return []
        with open(exe, errors="replace") as f:
            text = f.read()
    except OSError:
        return []
    return [os.path.dirname(os.path.dirname(m)) for m in re.findall(r"(/\S+)/(?:ptxas|nvcc)\b", text)]


@functools.cache
def _libdevice_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


@functools.cache
def _slim_libdevice(path: str, data_layout: str) -> bytes:
    """libdevice cut down to the `__nv_*` functions `CudaTarget.math` may call (and what they
    call): about 45 KB instead of 470 KB, so linking it into each kernel is cheap."""
    want = {"__nv_" + base + suffix for base in set(LIBDEVICE.values()) for suffix in ("", "f")}
    lib = llvm.parse_bitcode(_libdevice_bytes(path))
    lib.triple, lib.data_layout = TRIPLE, data_layout
    for f in lib.functions:
        if not f.is_declaration and f.name not in want:
            f.linkage = "internal"
    pm = llvm.create_new_module_pass_manager()
    pm.add_global_dead_code_eliminate_pass()
    pm.run(lib, llvm.create_pass_builder(target_machine(DEFAULT_ARCH),
                                         llvm.create_pipeline_tuning_options(speed_level=0)))
    return lib.as_bitcode()


def libdevice_functions() -> set:
    """Names defined in the libdevice found (empty without one); for tests and diagnostics."""
    path = find_libdevice()
    if path is None:
        return set()
    _init_llvm()
    return {f.name for f in llvm.parse_bitcode(_libdevice_bytes(path)).functions}


def _init_llvm():
    if not _initialised:
        with _lock:
            if not _initialised:
                llvm.initialize_all_targets()
                llvm.initialize_all_asmprinters()
                _initialised.append(True)


class CudaTarget(Target):
    """Target hooks for NVPTX. One instance per kernel: the entry needs its argument count."""

    triple = TRIPLE
    polls_interrupt = False  # the host cannot write the stop word during a launch
    private_scatters = False  # thousands of threads: per-chunk copies do not pay
    contiguous_chunks = False  # worker_range is a grid-stride loop
    # f32 x / sqrt(q) under fast-math: x * `rsqrt.approx(q)` (one special-function op where
    # sqrt.approx and div.approx take two or three), refined by fast_rsqrt's Newton step
    # where `refine_rsqrt` (benchmarks/gpu_variants.py measures both)
    rsqrt_estimates = True
    refine_rsqrt = False
    # under fast-math, f32 subnormals flush to zero (`.ftz` instructions, libdevice's
    # __CUDA_FTZ), as Taichi's CUDA backend always does and nvcc's --use_fast_math
    flush_subnormals = True

    def reciprocal_root(self, lw, b: L.IRBuilder, x):
        if self.refine_rsqrt:
            return super().reciprocal_root(lw, b, x)
        root = b.call(module_intrinsic(lw.cg.module, "llvm.sqrt", x.type), [x])
        root.fastmath.add("afn")
        return b.fdiv(L.Constant(x.type, 1.0), root, flags=("arcp", "afn"))

    def finish_module(self, module: L.Module, fast_math: bool):
        """Under fast-math with `flush_subnormals`: every function flushes f32 subnormals, and
        NVVMReflect answers libdevice's __CUDA_FTZ with 1."""
        if not (fast_math and self.flush_subnormals):
            return
        for fn in module.functions:
            if not fn.is_declaration:
                set.add(fn.attributes, '"denormal-fp-math-f32"="preserve-sign,preserve-sign"')
        flags = module.add_named_metadata("llvm.module.flags")
        flags.add(module.add_metadata([L.Constant(I32, 4), L.MetaDataString(module, "nvvm-reflect-ftz"),
                                       L.Constant(I32, 1)]))
    # f32 under fast-math: div.approx (2 ulp) and sqrt.approx instead of the correctly rounded
    # subroutines; exact mode keeps those (f64 is correctly rounded either way)
    approx_math = ("afn",)
    contracts = True

    def reduce_atomic(self, b: L.IRBuilder, module: L.Module, op: str, ptr, total):
        """A warp's 32 totals summed by shuffles, then one atomic from lane 0, where the whole
        warp is here together (`activemask`); else each thread's own atomic. Every thread of a
        grid adds into the same element: one atomic per thread serialises half a million of
        them on one address (gravity's energy: 1 ms at any N), one per warp 32 times fewer."""
        width = total.type.width if isinstance(total.type, L.IntType) else \
            {L.FloatType: 32, L.DoubleType: 64}.get(type(total.type))
        if width not in (32, 64) or op not in ("fadd", "add"):  # a min/max: one per thread
            return b.atomic_rmw(op, ptr, total, "monotonic")
        mask = b.call(module.declare_intrinsic("llvm.nvvm.activemask", (), L.FunctionType(I32, [])), [])
        full = L.Constant(I32, 0xFFFFFFFF)
        with b.if_else(b.icmp_unsigned("==", mask, full)) as (whole_warp, partial):
            with whole_warp:
                v = total
                for lanes in (16, 8, 4, 2, 1):
                    other = _shuffle(b, module, v, lanes, width, "bfly")
                    v = b.fadd(v, other) if op == "fadd" else b.add(v, other)
                lane = b.call(module.declare_intrinsic("llvm.nvvm.read.ptx.sreg.laneid", (),
                                                       L.FunctionType(I32, [])), [])
                with b.if_then(b.icmp_unsigned("==", lane, L.Constant(I32, 0))):
                    b.atomic_rmw(op, ptr, v, "monotonic")
            with partial:
                b.atomic_rmw(op, ptr, total, "monotonic")

    def field_memory(self, b: L.IRBuilder, ptr):
        """Fields live in device memory (`cuMemAlloc`): `ld.global`/`st.global`/`atom.global`
        (`red.global` where the old value is unused) instead of generic addressing."""
        return b.addrspacecast(ptr, GLOBAL_PTR)

    aggregates_scatters = True
    narrow_counters = True

    def scatter_atomic(self, b: L.IRBuilder, module: L.Module, op: str, ptr, val, tag):
        """Neighbouring lanes adding into one element add once: each run of consecutive lanes
        with the same address sums its values by shuffles (a segmented suffix sum) and the run's
        first lane issues the atomic. Where the whole warp is here (`activemask`) and some
        neighbours share an address; else each lane's own atomic. MPM's scatter with particles
        sorted by cell and an adjoint's `x.grad[i] += ...` over a row of pairs send many lanes
        to one address, and atomics on one address serialise in the L2."""
        width = val.type.width if isinstance(val.type, L.IntType) else \
            {L.FloatType: 32, L.DoubleType: 64}.get(type(val.type))
        if width not in (32, 64):
            return tag(b.atomic_rmw(op, ptr, val, "monotonic"))
        add = (lambda x, y: b.fadd(x, y)) if op in ("fadd", "fsub") else (lambda x, y: b.add(x, y))
        self._aggregated(b, module, ptr, [val], width, add,
                         lambda vals: tag(b.atomic_rmw(op, ptr, vals[0], "monotonic")))

    # sm_90's vector reductions for `vector_scatters` groups (benchmarks/gpu_variants.py
    # measures them against one atomic per component)
    vector_scatters = True

    def vector_scatter(self, b: L.IRBuilder, module: L.Module, ptr, vals):
        """A group's f32 values aggregated over the warp's runs as `scatter_atomic` does, then
        added by one `red.global.add.v2.f32` (or `.v4`): one L2 operation, not 2 or 4."""
        if not self.aggregates_scatters:
            return self.red_vector(b, ptr, vals)
        self._aggregated(b, module, ptr, vals, 32, lambda x, y: b.fadd(x, y),
                         lambda sums: self.red_vector(b, ptr, sums))

    @staticmethod
    def red_vector(b: L.IRBuilder, ptr, vals):
        n = len(vals)
        regs = ", ".join(f"${k + 1}" for k in range(n))
        fty = L.FunctionType(L.VoidType(), [ptr.type] + [L.FloatType()] * n)
        b.asm(fty, f"red.relaxed.gpu.global.add.v{n}.f32 [$0], {{{regs}}};",
              "l," + ",".join(["f"] * n) + ",~{memory}", [ptr, *vals], side_effect=True)

    def _aggregated(self, b, module, ptr, vals, width, add, emit):
        """`emit(values)` once per run of neighbouring lanes with one address, with the run's
        sums (`vals` summed per run), where the whole warp is here; else with each lane's own.
        One `emit` site, reached with the values and a go flag through phis (an inline-asm
        reduction is not merged across branches as an atomicrmw is)."""
        i32 = lambda k: L.Constant(I32, k)
        full, yes = i32(0xFFFFFFFF), L.Constant(L.IntType(1), 1)
        mask = b.call(module.declare_intrinsic("llvm.nvvm.activemask", (), L.FunctionType(I32, [])), [])
        before = b.block
        with b.if_then(b.icmp_unsigned("==", mask, full)):
            lane = b.call(module.declare_intrinsic("llvm.nvvm.read.ptx.sreg.laneid", (),
                                                   L.FunctionType(I32, [])), [])
            addr = b.ptrtoint(ptr, I64)
            # the last lane of a run: its right neighbour adds elsewhere (lane 31 gets its own
            # address back)
            tail = b.or_(b.icmp_unsigned("!=", _shuffle(b, module, addr, 1, 64, "down"), addr),
                         b.icmp_unsigned("==", lane, i32(31)))
            ballot = module.declare_intrinsic("llvm.nvvm.vote.ballot.sync", (),
                                              L.FunctionType(I32, [I32, L.IntType(1)]))
            tails = b.call(ballot, [full, tail])
            distinct = b.block
            with b.if_then(b.icmp_unsigned("!=", tails, full)):
                sums, head = self._add_run(b, module, vals, width, lane, tails, add)
                runs = b.block
            go, vals_w = _merge(b, [(distinct, yes, vals), (runs, head, sums)])
            whole_warp = b.block
        go, vals = _merge(b, [(before, yes, vals), (whole_warp, go, vals_w)])
        with b.if_then(go):
            emit(vals)

    @staticmethod
    def _add_run(b, module, vals, width, lane, tails, add):
        """(each lane's sums of its run from itself on, whether it is its run's first lane)."""
        cttz = module.declare_intrinsic("llvm.cttz", [I32], L.FunctionType(I32, [I32, L.IntType(1)]))
        run_end = b.call(cttz, [b.and_(tails, b.shl(L.Constant(I32, 0xFFFFFFFF), lane)),
                                L.Constant(L.IntType(1), 0)])
        vs = list(vals)
        # after step k each lane holds the sum of its run from itself up to 2k lanes on
        for k in (1, 2, 4, 8, 16):
            fits = b.icmp_unsigned("<=", b.add(lane, L.Constant(I32, k)), run_end)
            vs = [b.select(fits, add(v, _shuffle(b, module, v, k, width, "down")), v) for v in vs]
        # a run's first lane: lane 0, or the lane after a tail
        heads = b.or_(b.shl(tails, L.Constant(I32, 1)), L.Constant(I32, 1))
        return vs, b.trunc(b.lshr(heads, lane), L.IntType(1))

    def print(self, b: L.IRBuilder, module: L.Module, fmt: str, args, alloca_b: L.IRBuilder):
        """CUDA's device printf, `vprintf(fmt, words)`: each argument (i64 or f64) one 8-byte
        word of a local buffer. The driver writes the text out at the next synchronisation,
        which the launcher does after a kernel that prints."""
        vprintf = module.globals.get("vprintf") or L.Function(
            module, L.FunctionType(I32, [PTR, PTR]), "vprintf")
        # a stack slot in the entry block: one per print, not one per loop iteration
        words = alloca_b.alloca(L.ArrayType(I64, max(len(args), 1)), name="printf_args")
        for k, a in enumerate(args):
            v = a if isinstance(a.type, L.IntType) else b.bitcast(a, I64)
            b.store(v, b.gep(words, [L.Constant(I32, 0), L.Constant(I32, k)], inbounds=True))
        b.call(vprintf, [b.bitcast(c_string(module, fmt), PTR), b.bitcast(words, PTR)])

    def __init__(self, nargs: int = 0, libdevice: bool | None = None, arch: str = DEFAULT_ARCH,
                 vector_reductions: bool = True):
        self.nargs = nargs
        self.libdevice = find_libdevice() is not None if libdevice is None else libdevice
        self.entries: list[str] = []
        # `vector_reductions`: the driver loads PTX 8.1 (VECTOR_RED_DRIVER)
        self.groups_vectors = self.vector_scatters and vector_reductions and _sm(check_arch(arch)) >= 90

    def worker_range(self, b: L.IRBuilder, begin, end, worker, num_workers):
        return b.add(begin, worker), end, num_workers

    def math(self, b: L.IRBuilder, module: L.Module, name: str, dt: T.DataType, args):
        if dt.bits == 16:  # libdevice has no half math: compute in f32
            wide = [b.fpext(a, L.FloatType()) for a in args]
            return b.fptrunc(self.math(b, module, name, T.f32, wide), ll_type(dt))
        fty = ll_type(dt)
        # sqrt as LLVM's intrinsic: sqrt.rn, or sqrt.approx where the call has `afn`
        # (fast-math: approx_math); libdevice's picks approx whatever the mode
        if self.libdevice and name in LIBDEVICE and name != "sqrt":
            cname = "__nv_" + LIBDEVICE[name] + ("f" if dt.bits == 32 else "")
            fn = module.globals.get(cname) or L.Function(
                module, L.FunctionType(fty, [fty] * len(args)), cname)
            return b.call(fn, args)
        if name in NATIVE:
            fnty = L.FunctionType(fty, [fty] * len(args))
            return b.call(module.declare_intrinsic(f"llvm.{name}", [fty], fnty), args)
        raise LibdeviceNotFound(
            f"the CUDA backend needs libdevice for {name}() but found no libdevice*.bc: install "
            "the CUDA toolkit (its nvvm/libdevice folder), or set CUDA_HOME to it, or "
            "FIELDSIM_LIBDEVICE to the file itself")

    # extra i64 parameters of the entry after the ctx and argument words (an emulator's hook)
    extra_params = 0

    def thread_coords(self, b: L.IRBuilder, module: L.Module, entry: L.Function):
        """i64 (tid.x, ntid.x, ctaid.x, nctaid.x) inside the entry."""
        def sreg(r):
            fn = module.declare_intrinsic(f"llvm.nvvm.read.ptx.sreg.{r}", (), L.FunctionType(I32, []))
            return b.zext(b.call(fn, []), I64)
        return tuple(sreg(r) for r in ("tid.x", "ntid.x", "ctaid.x", "nctaid.x"))

    def finish_task(self, module: L.Module, fn: L.Function):
        fn.linkage = "internal"
        fn.attributes.add("alwaysinline")
        nparams = CTX_WORDS + self.nargs + self.extra_params
        entry = L.Function(module, L.FunctionType(L.VoidType(), [I64] * nparams), fn.name + "_entry")
        entry.calling_convention = "ptx_kernel"
        b = L.IRBuilder(entry.append_basic_block("entry"))
        ctx = b.alloca(L.ArrayType(I64, CTX_WORDS), name="ctx")
        argv = b.alloca(L.ArrayType(I64, max(self.nargs, 1)), name="args")
        for k in range(CTX_WORDS):
            slot = b.gep(ctx, [L.Constant(I32, 0), L.Constant(I32, k)], inbounds=True)
            b.store(b.ptrtoint(argv, I64) if k == CTX_ARGS else entry.args[k], slot)
        for k in range(self.nargs):
            b.store(entry.args[CTX_WORDS + k],
                    b.gep(argv, [L.Constant(I32, 0), L.Constant(I32, k)], inbounds=True))
        tid, ntid, ctaid, nctaid = self.thread_coords(b, module, entry)
        worker = b.add(b.mul(ctaid, ntid), tid)
        b.call(fn, [b.bitcast(ctx, PTR), worker, b.mul(nctaid, ntid)])
        b.ret_void()
        self.entries.append(entry.name)


GLOBAL_PTR = L.PointerType(addrspace=1)


def module_intrinsic(module: L.Module, name: str, ty):
    return module.declare_intrinsic(name, [ty], L.FunctionType(ty, [ty]))


def _merge(b: L.IRBuilder, incoming):
    """(go, values) as phis at a join over `incoming`: (predecessor block, go, values)."""
    go = b.phi(L.IntType(1))
    vals = [b.phi(v.type) for v in incoming[0][2]]
    for block, flag, values in incoming:
        go.add_incoming(flag, block)
        for phi, v in zip(vals, values):
            phi.add_incoming(v, block)
    return go, vals


def _shuffle(b: L.IRBuilder, module: L.Module, v, lanes: int, width: int, mode: str):
    """v from another lane of a whole warp: `shfl.sync.bfly` (lane xor `lanes`) or
    `shfl.sync.down` (lane + `lanes`; a lane past 31 gets its own v), a 64-bit value as its
    two 32-bit halves."""
    clamp = 0x1F
    def shfl(x32):
        fn = module.declare_intrinsic(f"llvm.nvvm.shfl.sync.{mode}.i32", (),
                                      L.FunctionType(I32, [I32, I32, I32, I32]))
        return b.call(fn, [L.Constant(I32, 0xFFFFFFFF), x32, L.Constant(I32, lanes),
                           L.Constant(I32, clamp)])
    bits = v if isinstance(v.type, L.IntType) else b.bitcast(v, L.IntType(width))
    if width == 32:
        got = shfl(bits)
    else:
        lo = shfl(b.trunc(bits, I32))
        hi = shfl(b.trunc(b.lshr(bits, L.Constant(I64, 32)), I32))
        got = b.or_(b.zext(lo, I64), b.shl(b.zext(hi, I64), L.Constant(I64, 32)))
    return got if isinstance(v.type, L.IntType) else b.bitcast(got, v.type)


def check_arch(arch: str, what: str = "arch") -> str:
    """`arch` if it names an NVPTX processor (`sm_XY`, `sm_XYa`, `sm_XYf`); else a FieldsimError
    naming `what` (LLVM would only warn and print PTX for no GPU)."""
    if not re.fullmatch(r"sm_\d+[af]?", arch):
        raise FieldsimError(f"{what}={arch!r} is not a CUDA architecture: expected sm_XY with "
                            "the device's compute capability X.Y, e.g. sm_80 or sm_90")
    return arch


def _sm(arch: str) -> int:
    return int(re.match(r"sm_(\d+)", arch).group(1))


def _features(arch: str) -> str:
    # PTX 6.4 (CUDA 10) at least: `activemask` (reduce_atomic) needs 6.2, and LLVM's default
    # for sm_70 and older is 6.0; sm_75 and newer default to a later version already
    return "+ptx64" if _sm(arch) < 75 else ""


# the PTX ISA of sm_90's vector reductions (CudaTarget.red_vector's inline assembly, which
# LLVM's version choice does not see) and the CUDA driver that first JIT-compiles it
VECTOR_RED_PTX = (8, 1)
VECTOR_RED_DRIVER = 12010


def _ptx_for_inline_asm(ptx: str) -> str:
    """`ptx` declaring at least PTX 8.1 where it holds a vector reduction (only those modules:
    the rest keep LLVM's version, which older drivers load)."""
    if ".global.add.v2.f32" not in ptx and ".global.add.v4.f32" not in ptx:
        return ptx
    m = re.search(r"^\.version (\d+)\.(\d+)$", ptx, re.MULTILINE)
    if m is None or (int(m.group(1)), int(m.group(2))) >= VECTOR_RED_PTX:
        return ptx
    major, minor = VECTOR_RED_PTX
    return f"{ptx[:m.start()]}.version {major}.{minor}{ptx[m.end():]}"


@functools.cache
def target_machine(arch: str):
    check_arch(arch)
    _init_llvm()
    return llvm.Target.from_triple(TRIPLE).create_target_machine(
        cpu=arch, features=_features(arch), opt=3)


@functools.cache
def machines(arch: str) -> MachinePool:
    """Target machines for `arch`, one lent to each thread building PTX at once."""
    check_arch(arch)
    _init_llvm()
    return MachinePool(TRIPLE, arch, _features(arch), opt=3, jit=False)


_ATOMIC_LINE = re.compile(r"^(\s*(?:%\S+ = )?(?:atomicrmw|cmpxchg) .*?) (monotonic|acquire|release|"
                          r"acq_rel|seq_cst)\b", re.MULTILINE)


def device_scope_atomics(ir_text: str) -> str:
    """Give every atomic device (`.gpu`) scope instead of the default system scope."""
    return _ATOMIC_LINE.sub(lambda m: f'{m.group(1)} syncscope("device") {m.group(2)}', ir_text)


def optimise_to_ptx(ir_text: str, entries, arch: str = DEFAULT_ARCH, libdevice: str | None = None) -> str:
    """LLVM IR text (from a `CudaTarget` lowering) -> PTX text for `arch`; `libdevice` is the
    path to link (looked up with `find_libdevice` when not given and the IR calls `__nv_*`).
    Several threads may build at once: each module in an LLVM context of its own, on a target
    machine lent to its thread, the parse, the pipeline and code generation outside llvmlite's
    lock (`llvm_build`, as the CPU backend's builds); the PTX is the same either way."""
    with machines(arch).borrow() as tm:
        context = llvm.create_context()
        mod = None
        try:
            mod = llvm_build.parse(device_scope_atomics(ir_text), context)
            mod.triple = TRIPLE
            mod.data_layout = str(tm.target_data)
            _link_libdevice(mod, libdevice, context)
            keep = set(entries)
            for f in mod.functions:
                if not f.is_declaration and f.name not in keep:
                    f.linkage = "internal"
            for g in mod.global_variables:
                if not g.is_declaration:
                    g.linkage = "internal"
            mod.verify()
            # O3 (loop vectorizer on, SLP off: the pipeline options' defaults), after dropping
            # the libdevice functions nothing calls
            llvm_build.optimise(mod, tm, 3, vectorize=True, slp=False,
                                before=lambda pm: pm.add_global_dead_code_eliminate_pass())
            if os.environ.get("FIELDSIM_PRINT_LLVM"):
                print(str(mod))
            return _ptx_for_inline_asm(llvm_build.emit(tm, mod, assembly=True).decode())
        finally:
            dispose(mod)
            context.close()


def _link_libdevice(mod, libdevice: str | None, context):
    """Link the slimmed libdevice into `mod` where it calls `__nv_*` functions."""
    if not any(f.is_declaration and f.name.startswith("__nv_") for f in mod.functions):
        return
    path = libdevice or find_libdevice()
    if path is None:
        raise LibdeviceNotFound("libdevice*.bc not found (set CUDA_HOME or FIELDSIM_LIBDEVICE)")
    with _lock:  # made once, on the global context
        slim = _slim_libdevice(path, mod.data_layout)
    lib = llvm.parse_bitcode(slim, context=context)
    lib.triple, lib.data_layout = TRIPLE, mod.data_layout
    mod.link_in(lib)


def lower_for_cuda(kernel, symbol: str, debug: bool = False, target_cls=None, libdevice=None,
                   fast_math: bool = False, arch: str = DEFAULT_ARCH, vector_reductions: bool = True):
    """fieldsim IR -> (llvmlite module, KernelInfo, entry names). `libdevice` (bool): whether
    math may call libdevice; None looks for it. `fast_math`: `fs.init(fast_math=...)`; `arch`:
    the PTX target the module is for; `vector_reductions`: whether its driver loads sm_90's."""
    nargs = sum(1 for p in kernel.params if not p.template)
    target = (target_cls or CudaTarget)(nargs=nargs, libdevice=libdevice, arch=arch,
                                        vector_reductions=vector_reductions)
    module, info = lower_kernel(kernel, symbol, target, debug, fast_math)
    target.finish_module(module, fast_math)
    return module, info, target.entries


def compile_kernel(kernel, symbol: str, arch: str = DEFAULT_ARCH, debug: bool = False,
                   fast_math: bool = False):
    """fieldsim IR -> (PTX text, KernelInfo); each `info.tasks[n].entry` names a kernel."""
    module, info, entries = lower_for_cuda(kernel, symbol, debug, fast_math=fast_math, arch=arch)
    return optimise_to_ptx(str(module), entries, arch), info


def emit_ptx(kernel_ir, arch: str = DEFAULT_ARCH, debug: bool = False, symbol: str | None = None,
             fast_math: bool = False) -> str:
    """The PTX of an offloaded kernel (see `kernel_ir`) for `arch` (e.g. "sm_70", "sm_90")."""
    name = symbol or "fs_" + safe_symbol(kernel_ir.name)
    return compile_kernel(kernel_ir, name, arch, debug, fast_math)[0]


def kernel_ir(kernel_obj, *args, **kwargs):
    """The offloaded IR `kernel_obj(*args)` would compile, built without compiling or launching
    (fields must exist in the current runtime; any arch works)."""
    from fieldsim.lang import runtime
    templates, _key, _values, dtypes, ret = kernel_obj.bind(args, kwargs)
    return kernel_obj.build_ir(runtime.get(), templates, dtypes, ret)[0]


# ---- ptxas, for tests and diagnostics --------------------------------------------------------
def ptxas_path() -> str | None:
    return shutil.which("ptxas")


@functools.cache
def ptxas_knows(arch: str) -> bool:
    """Whether the installed ptxas targets `arch` (CUDA 13 dropped sm_70 and older)."""
    exe = ptxas_path()
    if exe is None:
        return False
    r = subprocess.run([exe, "--help"], capture_output=True, text=True, check=False)
    return f"'{arch}'" in r.stdout


def ptxas_target(arch: str) -> str | None:
    """The GPU the installed ptxas should assemble PTX for `arch` to: `arch` itself, else the
    oldest newer one it knows (PTX for sm_XY assembles for any sm_MN >= XY), else None."""
    if ptxas_knows(arch):
        return arch
    want = int(arch.split("_")[1])
    for v in (75, 80, 86, 89, 90, 100, 120):
        if v >= want and ptxas_knows(f"sm_{v}"):
            return f"sm_{v}"
    return None


def run_ptxas(ptx: str, arch: str) -> subprocess.CompletedProcess:
    """Assemble `ptx` for `arch` with ptxas (output discarded); returns the finished process."""
    import tempfile
    with tempfile.TemporaryDirectory(prefix="fs-ptx-") as d:
        src = os.path.join(d, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        return subprocess.run([ptxas_path(), f"-arch={arch}", src, "-o", os.path.join(d, "k.cubin")],
                              capture_output=True, text=True, check=False)
