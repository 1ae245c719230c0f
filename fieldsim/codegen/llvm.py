"""Lowering pass: fieldsim IR (offloaded tasks) to LLVM IR with llvmlite, for any target.

Takes an offloaded `Kernel` (top level: pure prologue statements and tasks). Produces one LLVM
function per task, `void @<name>_t<k>(ptr ctx, i64 worker, i64 num_workers)`, where a parallel
task runs the worker's contiguous chunk of its iteration range and a serial task runs whole.
A kernel's real functions (`Kernel.funcs`) are declared first, as
`<ret> @<name>_f<k>(ptr ctx, i64 tid, ptr rng_counter, <params>)`, so that any function and task
can call any (recursion); each is lowered like a serial task's body, its locals in its own frame.
A task that calls one gives up the task-wide memory analyses (reductions, privatized scatters,
demoted atomics, loop-nest forms), which cannot see into the call.
Targets differ only through the `Target` hooks: math calls, and (for CUDA) how the worker index
and the launch are made. The ctx is an array of 8-byte words, see `CTX_*`.

Guarantees: no out-of-bounds AD-stack write (overflow sets the error word instead), integer
division by zero yields 0 instead of trapping, and with `debug=True` field indices are bounds
checked and `assert` statements are evaluated. Errors are reported through the error words and
raised by the launcher after the launch.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass

from llvmlite import ir as L

from fieldsim.codegen import quant_llvm, vector_math
from fieldsim.codegen.alias import FieldScopes
from fieldsim.codegen.block_index import block_parts, index_interval
from fieldsim.codegen.demote import discarded_atomics, owned_atomics
from fieldsim.codegen.fill_loops import fill_plan
from fieldsim.codegen.guard_zones import guard_bytes
from fieldsim.codegen.llvm_arrays import ArrayLowering, array_entries
from fieldsim.codegen.llvm_nest import NestLowering, nbytes, reduce_start
from fieldsim.codegen.loop_accumulators import loop_accumulators
from fieldsim.codegen.loop_hints import CELLS, LANES, SCALAR, VECTOR, LoopHints
from fieldsim.codegen.loopnest import (
    conditional_loads,
    data_indexed,
    guarded_store,
    if_convertible,
    long_latency,
    loop_range,
    ndrange_split,
    whole_rows,
)
from fieldsim.codegen.privatize import PrivateLayout, private_scatters
from fieldsim.codegen.shared_divisors import (
    constant_reciprocal,
    divides_by_f32_root,
    same_value,
    shared_divisors,
)
from fieldsim.codegen.vector_scatters import VectorScatters, vector_scatters
from fieldsim.ir import dtypes as T
from fieldsim.ir.ir import GLOBAL_ACCESS, Function, Kernel, Op, Stmt, fields_of, walk
from fieldsim.ir.passes.offload import is_task
from fieldsim.lang.ndarray import is_slot
from fieldsim.lang.quant import containers_of, is_quant

# what a task-wide reduction accumulates for each atomic kind (a sub adds its negation)
_REDUCE_KIND = {"add": "add", "sub": "add", "min": "min", "max": "max"}
# ops lowered to libm calls (vector_math.FUNCTIONS): scalar_libm_loop
_LIBM_OPS = frozenset({Op.SIN, Op.COS, Op.TAN, Op.ASIN, Op.ACOS, Op.ATAN, Op.TANH, Op.EXP, Op.LOG,
                       Op.POW, Op.ATAN2})

CTX_FIELDS, CTX_ARGS, CTX_RNG, CTX_ERR, CTX_RET, CTX_STACK, CTX_STACK_STRIDE, CTX_STACK_OFFS, \
    CTX_STACK_CAPS, CTX_PRIV = range(10)
CTX_WORDS = 10  # CTX_PRIV: the running task's per-chunk scatter copies (codegen.privatize)
ERR_ASSERT, ERR_STACK_OVERFLOW, ERR_OUT_OF_BOUNDS = 1, 2, 3
ERR_WORDS = 4  # error code, which, extra, spare; an assert's message values follow
ERR_INTERRUPTED = 4  # the launch's interrupt word (err[ERR_WORD_STOP]) was set: Ctrl-C
ERR_WORD_STOP = 3  # err[3]: set by the host to stop a running launch; polled by `while` loops

I8, I32, I64 = L.IntType(8), L.IntType(32), L.IntType(64)
# LLVM fast-math flags of float ops under `fs.init(fast_math=True)`: reassociation (so float
# reductions vectorize), no signed zeros, and contraction (mul+add -> FMA) where the target
# contracts. Not nnan/ninf:
# programs test isnan/isinf, and LLVM would fold those.
# Not `arcp`/`afn`: with them LLVM computes 1/sqrt(x) as a hardware estimate plus its own
# Newton step (`vrsqrt14ps`), a few ulps off and not exact at 1/sqrt(4), and a polar
# decomposition of the identity (diffmpm's stress at rest) then gave R != I, hence a stress
# from nothing (the MPM pair's C 17 % off Taichi, Warp and float64 on AVX-512). Divisions
# sharing a divisor share one exact reciprocal instead (TaskLowering.op_div,
# codegen.shared_divisors); f32 divisions by a square root take an estimate refined so that
# it is exact there (llvm_arith.fast_rsqrt), with `arcp`/`afn` on those two instructions only.
# Not `nnan`/`ninf`: isnan/isinf keep working.
# No `contract` on the CPU (Target.contracts) unless `fs.init(fp_contract=True)`: Taichi
# 1.7.4's x64 backend never fuses a
# multiply and an add, and FMA rounding steered ill-conditioned programs elsewhere (a CG
# solve whose residual Taichi keeps exact drifted, MPM water 1e-5 off after 500 substeps).
FAST_MATH_FLAGS = ("reassoc", "nsz")
PTR = L.PointerType()
_LL = {}


def ll_type(dt: T.DataType):
    if dt not in _LL:
        _LL[dt] = {"f16": L.HalfType(), "f32": L.FloatType(), "f64": L.DoubleType()}.get(
            dt.name) or L.IntType(max(dt.bits, 8) if dt.bits > 1 else 8)
    return _LL[dt]


class Target:
    """Hooks a backend supplies. The CPU calls libm and gives each worker one contiguous chunk
    of a parallel range; CUDA overrides these (libdevice math, grid-stride loops)."""

    triple = ""
    assert_values = True  # the error words have room for an assert message's values
    # `while` loops poll the launch's stop word (host memory the launching thread sets on
    # Ctrl-C); the CUDA target cannot see host writes during a launch.
    polls_interrupt = True
    # pure scatters of parallel tasks go to per-chunk copies (codegen.privatize), not atomics
    private_scatters = True
    # worker_range gives each worker one contiguous range with step 1 (CUDA: a grid stride)
    contiguous_chunks = True
    # under fast-math, f32 `x / sqrt(q)` multiplies by a refined hardware estimate of
    # 1/sqrt(q) (llvm_arith.fast_rsqrt) instead of taking a square root and dividing
    rsqrt_estimates = True
    # further fast-math flags of float divisions and square roots under fast-math (CUDA:
    # `afn`, `div.approx` and `sqrt.approx` as Taichi's fast_math gives; the CPU keeps both
    # correctly rounded)
    approx_math: tuple = ()
    # fast-math fuses multiply-adds (`contract`): CUDA does, as Taichi's CUDA backend; the CPU
    # does not, as Taichi's x64 backend
    contracts = False

    def worker_range(self, b: L.IRBuilder, begin, end, worker, num_workers):
        """(lo, hi, step) of the iterations one worker runs, all i64."""
        total = b.sub(end, begin)
        total = b.select(b.icmp_signed("<", total, L.Constant(I64, 0)), L.Constant(I64, 0), total)
        chunk = b.sdiv(b.add(total, b.sub(num_workers, L.Constant(I64, 1))), num_workers)
        lo = b.add(begin, b.mul(worker, chunk))
        hi = b.add(lo, chunk)
        return lo, b.select(b.icmp_signed("<", hi, end), hi, end), L.Constant(I64, 1)

    # under fast-math, libm calls name their libmvec variants so loops vectorize them
    # (codegen.vector_math: the CPU backend sets this where glibc's libmvec loads)
    vector_math = None
    # libm calls without vector variants stay scalar calls (vector_math.scalar_call) in loops
    # marked scalar (scalar_libm_loop): a loop LLVM widens anyway calls the function lane by lane
    # and spills the vector registers around each call, slower than the scalar loop (the CPU)
    scalar_libm = False

    # tasks run with denormals flushed to zero (FTZ/DAZ), as Taichi's x64 backend: the CPU
    # backend sets this on x86-64 (codegen.denormals)
    flush_denormals = False
    # out-of-range float-to-int conversions give x86's results, as Taichi's x64 backend
    # (codegen.x86_conversions: "avx512" or "sse", set by the CPU backend on x86-64); None:
    # clamped to the type's range
    x86_conversions = None

    def finish_task(self, module: L.Module, fn: L.Function):
        """Called once per task function (CUDA adds its kernel entry point here)."""
        if self.flush_denormals:
            from fieldsim.codegen.denormals import flush_denormals
            flush_denormals(module, fn)

    def reciprocal_root(self, lw, b: L.IRBuilder, x):
        """f32 1/sqrt(x) for `x / sqrt(q)` under fast-math (`rsqrt_estimates`)."""
        from fieldsim.codegen.llvm_arith import fast_rsqrt
        return fast_rsqrt(lw, b, x)

    def field_memory(self, b: L.IRBuilder, ptr):
        """A field element's pointer for a load, store or atomic (CUDA: the global space)."""
        return ptr

    # a grid-stride loop (worker_range's step) over constant bounds within [0, 2**30]
    # counts in 32 bits: the CUDA launcher keeps a grid under 2**30 threads, so neither the
    # first index (begin + worker) nor an index plus the stride leaves i32 (a 64-bit add and
    # compare are two instructions each on a GPU, in every iteration)
    narrow_counters = False

    # CUDA combines the adds of a warp's lanes into one element before the atomic
    aggregates_scatters = False

    def scatter_atomic(self, b: L.IRBuilder, module: L.Module, op: str, ptr, val, tag):
        """An atomic add/sub whose old value nobody uses (`discarded_atomics`); `tag` marks an
        atomic instruction with the field's alias scope. None: there is no value."""
        tag(b.atomic_rmw(op, ptr, val, "monotonic"))

    def reduce_atomic(self, b: L.IRBuilder, module: L.Module, op: str, ptr, total):
        """A worker's reduction total (`find_reductions`) added into its element: one atomic
        per worker (CUDA first sums a warp's totals)."""
        b.atomic_rmw(op, ptr, total, "monotonic")

    # neighbouring f32 components of one element added as one access (codegen.vector_scatters;
    # CUDA's red.global.add.v2/.v4.f32 on sm_90)
    groups_vectors = False

    def vector_scatter(self, b: L.IRBuilder, module: L.Module, ptr, vals):
        """f32 `vals` added into the components from `ptr` on (a `vector_scatters` group)."""
        raise NotImplementedError

    def print(self, b: L.IRBuilder, module: L.Module, fmt: str, args, alloca_b: L.IRBuilder):
        """printf(fmt, args...) from libc (args are i64 or double), then fflush(NULL) so the
        text is out before the launch returns (pytest's capfd, Python's own prints).
        `alloca_b` makes stack slots in the function's entry block."""
        printf = module.globals.get("printf") or L.Function(
            module, L.FunctionType(I32, [PTR], var_arg=True), "printf")
        fflush = module.globals.get("fflush") or L.Function(module, L.FunctionType(I32, [PTR]), "fflush")
        b.call(printf, [b.bitcast(c_string(module, fmt), PTR)] + list(args))
        b.call(fflush, [L.Constant(PTR, None)])

    def math(self, b: L.IRBuilder, module: L.Module, name: str, dt: T.DataType, args):
        fty = ll_type(dt)
        intrinsic = {"sqrt", "sin", "cos", "exp", "log", "pow", "floor", "ceil", "round", "fabs",
                     "minnum", "maxnum"}
        if name in intrinsic:
            fn = module.declare_intrinsic(f"llvm.{name}", [fty])
        else:
            cname = name + ("f" if dt is T.f32 else "")
            fn = _declare(module, cname, fty, len(args))
        return b.call(fn, args)


def c_string(module: L.Module, text: str):
    """A private NUL-terminated constant (one per distinct text in a module)."""
    data = bytearray(text.encode("utf-8")) + b"\0"
    name = ".str." + hashlib.sha1(data).hexdigest()[:16]  # stable: the IR text keys the disk cache
    if name not in module.globals:
        ty = L.ArrayType(I8, len(data))
        g = L.GlobalVariable(module, ty, name)
        g.global_constant, g.linkage, g.initializer = True, "private", L.Constant(ty, data)
    return module.globals[name]


def _declare(module, name, fty, nargs):
    if name in module.globals:
        return module.globals[name]
    return L.Function(module, L.FunctionType(fty, [fty] * nargs), name)


@dataclass
class TaskInfo:
    """One top-level task of a compiled kernel: its function symbol and IR."""

    symbol: str
    parallel: bool  # split across threads (a parallel FOR), else run by one thread
    stmt: Stmt
    body_cost: float | None = None  # statements per iteration, at most (the CPU scheduler's)
    has_while: bool | None = None  # whether it holds a `while` loop (Ctrl-C polling; cached)
    bounds: tuple | None = None  # a FOR's (lo, hi) launch expressions, or (count,) (launch.task_size_hint)
    private: PrivateLayout | None = None  # its privatized scatter fields (codegen.privatize)

    @property
    def entry(self) -> str:
        """The task's CUDA kernel entry point."""
        return self.symbol + "_entry"


class KernelInfo:
    """What the launcher needs to know about a compiled kernel besides its code."""

    def __init__(self, kernel: Kernel, symbol: str):
        self.name = kernel.name
        self.symbol = symbol
        # ndarray arguments (fieldsim.lang.ndarray) come as hidden arguments, not in the table
        self.fields = [f for f in fields_of(kernel) if not is_slot(f)]
        self.fields += containers_of(self.fields)  # the words quantized fields live in
        self.tasks: list[TaskInfo] = []
        self.asserts: list = []  # (message, loc)
        self.prints = False  # has print(): the launcher flushes Python's stdout first
        self.calls = bool(kernel.funcs)  # makes real calls (recursion: CUDA's thread stack)
        self.accesses: list = []  # (field name, loc, offset) for bounds errors
        self.stacks = kernel.meta.get("stack_capacities", [])
        self.stack_infos: list = []
        self.ret = kernel.ret
        self.params = [p for p in kernel.params if not p.template]


class Codegen:
    def __init__(self, kernel: Kernel, symbol: str, target: Target, debug=False, fast_math=False,
                 fp_contract=False):
        self.k, self.target, self.debug = kernel, target, debug
        # the flags every float op carries
        contract = ("contract",) if target.contracts or fp_contract else ()
        self.fmf = FAST_MATH_FLAGS + contract if fast_math else ()
        self.approx_fmf = self.fmf + target.approx_math if fast_math else ()  # div and sqrt
        self.module = L.Module(name=symbol)
        if target.triple:
            self.module.triple = target.triple
        self.info = KernelInfo(kernel, symbol)
        self.slot = {id(f): n for n, f in enumerate(self.info.fields)}
        self.scopes = FieldScopes(self.module, self.info.fields)  # distinct fields never alias
        self.hints = LoopHints(self.module)  # which loops LLVM may vectorize/unroll
        self.prologue = [s for s in kernel.body if not is_task(s)]
        self.funcs: dict[int, L.Function] = {}  # id(Function) -> its LLVM function

    def run(self) -> tuple[L.Module, KernelInfo]:
        for k, f in enumerate(self.k.funcs):  # all declared first: calls may come before
            fty = L.FunctionType(_result_type(f), [PTR, I64, PTR] + [ll_type(d) for d in f.params])
            self.funcs[id(f)] = L.Function(self.module, fty, f"{self.info.symbol}_f{k}")
        for f in self.k.funcs:
            FuncLowering(self, f).lower()
        for n, task in enumerate(s for s in self.k.body if is_task(s)):
            name = f"{self.info.symbol}_t{n}"
            lowering = TaskLowering(self, task, name)
            lowering.lower()
            parallel = task.op == Op.FOR and task.attr.parallel
            self.info.tasks.append(TaskInfo(name, parallel, task, private=lowering.private))
        vector_math.keep_declarations(self.module)
        return self.module, self.info


class TaskLowering(NestLowering, ArrayLowering):
    """Lowers one task into one LLVM function."""

    def __init__(self, cg: Codegen, task: Stmt, name: str, fn: L.Function | None = None):
        self.cg, self.task, self.name = cg, task, name
        if fn is None:
            fn = L.Function(cg.module, L.FunctionType(L.VoidType(), [PTR, I64, I64]), name)
            fn.args[0].add_attribute("noalias")
        self.fn = fn
        self.entry = self.fn.append_basic_block("entry")
        self.b = L.IRBuilder(self.fn.append_basic_block("start"))
        self.alloca_b = L.IRBuilder(self.entry)
        self.oob_slots = {}  # element type -> a dummy slot for out-of-range debug accesses
        self.vals: dict[int, L.Value] = {}
        self.loops: list[tuple] = []
        self.field_ptrs: dict[int, L.Value] = {}
        self.tid = L.Constant(I64, 0)
        self.stacks: dict[int, tuple] = {}
        self.reductions: dict[int, tuple] = {}
        self.demoted = owned_atomics(task, cg.prologue)  # atomics no other thread races with
        self.quant_stores = quant_llvm.store_groups(task)  # stores into one packed word, fused
        self.discarded = discarded_atomics(task) if cg.target.aggregates_scatters else set()
        self.vectors = vector_scatters(task, discarded_atomics(task)) \
            if cg.target.groups_vectors and not cg.debug else VectorScatters()
        self.fmf, self.approx_fmf = cg.fmf, cg.approx_fmf
        # fast-math: in a reverse-AD kernel, divisions by one divisor in one block multiply by
        # one reciprocal (the quotient rule divides by one value several times); a kernel the
        # user wrote divides each as Taichi's x64 backend does (`v / d` of a vector: a
        # shared reciprocal put a PBD cloth's velocities 0.3 % off Taichi after one frame),
        # but for divisions by one square root, which share its 1/sqrt estimate either way
        user_kernel = "adjoint_of" not in cg.k.meta
        self.div_groups = shared_divisors(task, roots_only=user_kernel) if cg.fmf else {}
        self.reciprocals: dict[int, L.Value] = {}  # id(first div of a group) -> 1/d
        self.preset: dict[int, L.Value] = {}  # statements whose value the loop nest computed
        self.ranges: dict = {}  # index ranges known in a nested ndrange loop (loopnest)
        self.written: set | None = None  # ids of the fields the task writes (made on demand)
        self.pred = None  # i1: the predicate of if-converted code (None: not predicated)
        self.holds = frozenset()  # ids of conditions true wherever the code now lowered runs
        self.pred_locals: dict = {}  # id(alloca made in if-converted code) -> its predicate
        self.nest_acc: dict = {}  # id(atomic) -> a nest's row/column accumulator (llvm_nest)
        self.nest_r = None  # the current r of a nest (i64), indexing column accumulators
        self.loop_acc: dict = {}  # id(atomic) -> the local an enclosing serial loop sums it in
        self.private: PrivateLayout | None = None
        self.private_ids: set[int] = set()  # ids of the privatized fields
        self.block_values: dict = {}  # index arithmetic made in each LLVM block (in_block)
        self.i64_constants: dict[int, L.Constant] = {}
        # id(i32 value) -> (the i64 it was truncated from, the i32 value): a loop counter's
        # i32 view widens back to the counter itself, not to sext(trunc(counter)), which
        # LLVM spends compile time proving equal (counters stay within i32: narrow_index)
        self.widened: dict[int, tuple] = {}
        # a task that calls a real function: analyses of the task's own statements miss what
        # the call does, so none of those that rest on them are used
        self.calls = any(st.op == Op.CALL for st in walk(task.body))
        # runtime-indexed local vectors as stack arrays (llvm_arrays), where the frontend made any
        self.array_of = array_entries(task.body) if "local_arrays" in cg.k.meta else {}
        self.arrays: dict = {}
        if self.calls:
            self.demoted, self.discarded, self.div_groups = set(), set(), {}
            self.vectors = VectorScatters()

    # ---- context words ------------------------------------------------------------------------
    def ctx_word(self, k, ty=I64):
        p = self.alloca_b.gep(self.fn.args[0], [L.Constant(I64, k)], source_etype=I64)
        return self.alloca_b.load(p, typ=ty)

    def load_ctx(self):
        self.field_table = self.ctx_word(CTX_FIELDS, PTR)
        self.args_ptr = self.ctx_word(CTX_ARGS, PTR)
        self.rng_key = self.ctx_word(CTX_RNG)
        self.err_ptr = self.ctx_word(CTX_ERR, PTR)
        self.ret_ptr = self.ctx_word(CTX_RET, PTR)

    def lower(self):
        ab = self.alloca_b
        self.load_ctx()
        self.rng_counter = ab.alloca(I64, name="rng_counter")
        ab.store(L.Constant(I64, 0), self.rng_counter)
        for s in self.cg.prologue:
            self.stmt(s)
        if self.task.op == Op.SERIAL:
            self.block(self.task.body)
        else:
            self.outer_for(self.task)
        if not self.b.block.is_terminated:
            self.b.ret_void()
        ab.branch(self.fn.blocks[1])
        self.cg.target.finish_task(self.cg.module, self.fn)

    # ---- blocks and control flow ------------------------------------------------------------------
    def block(self, stmts):
        for s in stmts:
            self.stmt(s)

    def stmt(self, s: Stmt):
        if self.b.block.is_terminated:
            self.b.position_at_end(self.fn.append_basic_block("dead"))
        if id(s) in self.preset:
            self.vals[id(s)] = self.preset[id(s)]
            return
        handler = getattr(self, "op_" + s.op.name.lower(), None)
        if handler is not None:
            v = handler(s)
        else:
            v = self.arith(s)
        if v is not None:
            self.vals[id(s)] = v

    def v(self, s: Stmt):
        return self.vals[id(s)]

    def find_reductions(self, task: Stmt):
        """Atomic adds (or all mins, or all maxes) to one loop-invariant element, result unused,
        field not otherwise touched in the task: accumulate per worker, one atomic at the end
        (Taichi's thread-local pass).

        Without fast math a float sum is deferred only into a 0-D field, as Taichi's pass does;
        `acc[0] += x` stays in place, so one thread adds in the loop's order (Taichi's bits).
        A min or max is exact in any order, so it is deferred in both modes."""
        prologue = {id(p) for p in self.cg.prologue}
        used = {id(a) for st in walk([task]) for a in st.args}
        cands, other = [], set()
        for st in walk(task.body):
            if st.op == Op.ATOMIC and id(st) not in used and self._reducible(st, prologue):
                cands.append(st)
            elif st.op in GLOBAL_ACCESS:
                other.add(id(st.field))
        kinds: dict = {}
        for st in cands:  # one field reduced by one kind: an add and a max do not commute
            kinds.setdefault(id(st.field), set()).add(_REDUCE_KIND[st.attr[1]])
        groups: dict = {}
        for st in cands:
            if id(st.field) in other or len(kinds[id(st.field)]) > 1:
                continue
            key = (id(st.field),) + tuple(("c", ix.attr) if ix.op == Op.CONST else ("p", id(ix))
                                          for ix in st.indices)
            groups.setdefault(key, []).append(st)
        for key, sts in groups.items():
            ty = ll_type(sts[0].field.dtype)
            acc = self.alloca_b.alloca(ty, name="reduce")
            self.alloca_b.store(reduce_start(sts[0].field.dtype, ty, sts[0].attr[1]), acc)
            for st in sts:
                self.reductions[id(st)] = (acc, sts[0])

    def _reducible(self, st: Stmt, prologue: set) -> bool:
        """An atomic into a loop-invariant element that a worker may accumulate locally."""
        kind = st.attr[1]
        if kind not in _REDUCE_KIND or is_quant(st.field):
            return False
        if not all(ix.op == Op.CONST or id(ix) in prologue for ix in st.indices):
            return False
        return kind in ("min", "max") or bool(self.cg.fmf) or st.field.shape == () \
            or not st.field.dtype.is_float

    def reset_reductions(self):
        done = set()
        for acc, first in self.reductions.values():
            if id(acc) not in done:
                done.add(id(acc))
                dt = first.field.dtype
                self.b.store(reduce_start(dt, ll_type(dt), first.attr[1]), acc)

    def flush_reductions(self):
        done = set()
        for acc, first in self.reductions.values():
            if id(acc) in done:
                continue
            done.add(id(acc))
            dt = first.field.dtype
            total = self.b.load(acc, typ=ll_type(dt))
            kind = _REDUCE_KIND[first.attr[1]]
            if kind == "add":
                op = "fadd" if dt.is_float else "add"
            else:
                op = ("f" if dt.is_float else "" if dt.is_signed else "u") + kind
            self.cg.target.reduce_atomic(self.b, self.cg.module, op, self.memory_ptr(self.element_ptr(first)), total)

    def outer_for(self, s: Stmt):
        if self.calls:
            return self.plain_outer_for(s)
        if s.attr.parallel:
            self.find_reductions(s)
            if self.cg.target.private_scatters:
                self.privatize(s)
        b = self.b
        begin, end = self.as_i64(s.args[0]), self.as_i64(s.args[1])
        kind = VECTOR
        if s.attr.parallel:
            contiguous = self.cg.target.contiguous_chunks  # fills and nests need [lo, hi)
            # (a loop over blocks stays one loop: its body is a block, see counted_loop)
            split = ndrange_split(s) if contiguous and not s.attr.blocks else None
            fill = fill_plan(s) if contiguous else None
            if split is not None and fill is None and self.whole_row_nest(s, split):
                return
            lo, hi, step = self.cg.target.worker_range(b, begin, end, self.fn.args[1], self.fn.args[2])
            if fill is not None:
                self.fill_chunk(fill, lo, hi)
                return
            kind = self.loop_kind(s)
            if split is not None:
                self.nested_for(s, lo, hi, split, kind)
                self.flush_reductions()
                return
        else:
            lo, hi, step = begin, end, None
        # an adjoint's serialized loop (attr.reverse) runs from end-1 down to begin
        self.ranges = loop_range(s) if s.attr.parallel else {}  # for speculate_loads
        self.counted_loop(s, lo, hi, outermost=True, step=step, descending=s.attr.reverse,
                          kind=kind)
        self.ranges = {}
        if not s.attr.blocks:  # (a loop over blocks added each block's sum)
            self.flush_reductions()

    def plain_outer_for(self, s: Stmt):
        """A task loop lowered without the task-wide analyses: one that calls a function."""
        begin, end = self.as_i64(s.args[0]), self.as_i64(s.args[1])
        step = None
        if s.attr.parallel:
            begin, end, step = self.cg.target.worker_range(self.b, begin, end, self.fn.args[1],
                                                           self.fn.args[2])
        self.counted_loop(s, begin, end, outermost=True, step=step, descending=s.attr.reverse,
                          kind=SCALAR)

    def loop_kind(self, s: Stmt):
        """The loop_hints kind of a parallel loop's innermost loop."""
        # gathers/scatters: vectorizing costs compile time and gains nothing (loop_hints); a
        # loop over blocks vectorizes across blocks only with gathers
        if s.attr.blocks or data_indexed(s, {id(p) for p in self.cg.prologue}) or guarded_store(s) \
                or self.scalar_libm_loop(s):
            return SCALAR
        return LANES if long_latency(s) else VECTOR

    def scalar_libm_loop(self, s: Stmt) -> bool:
        """Whether the loop calls libm's scalar functions (vector_math.scalar_call: exact
        mode), which LLVM would otherwise widen into a vector loop calling them lane by lane
        and spilling the vector registers around each call (Target.scalar_libm)."""
        target = self.cg.target
        if not target.scalar_libm or (self.fmf and target.vector_math is not None):
            return False
        return any(t.op in _LIBM_OPS and t.dtype.is_float for t in walk(s.body))

    def gathers(self, s: Stmt) -> bool:
        """Whether an inner loop reads or writes fields at data-dependent elements (`j =
        sorted[k]; pos[j]`) and has nothing slow that vector lanes would share: kept scalar,
        like such a parallel loop (loop_kind). A hash-grid neighbour loop of ~20 candidates a
        cell ran 1.2-2x Taichi's time vectorized: 16 lanes x 4 need 64 iterations, so only
        the run-time checks and the code size of the vector form ran."""
        if self.task is None or long_latency(s):
            return False
        inside = {id(t) for t in walk(s.body)}
        return data_indexed(s, {id(t) for t in walk([self.task])} - inside)

    def whole_row_nest(self, s: Stmt, split) -> bool:
        """Lowers a parallel ndrange loop (nest split `split`) of whole rows
        (loopnest.whole_rows) as a nest whose workers take whole rows, where the target's
        workers run contiguous chunks (outer_for checked that it is no fill loop); False
        (nothing emitted) for any other loop."""
        rows = whole_rows(s, split)
        if rows is None:
            return False
        first, end = (self.i64_constant(q) for q in rows)
        lo, hi, _ = self.cg.target.worker_range(self.b, first, end, self.fn.args[1],
                                                self.fn.args[2])
        self.nested_for(s, lo, hi, split, self.loop_kind(s), by_rows=True)
        self.flush_reductions()
        return True

    def fill_chunk(self, fill, lo, hi):
        """The chunk [lo, hi) of a loop that only zeroes whole fields: a memset per field
        (codegen.fill_loops)."""
        b = self.b
        count = b.sub(hi, lo)
        count = b.select(b.icmp_signed(">", count, L.Constant(I64, 0)), count, L.Constant(I64, 0))
        for field, per_element in fill.fields:
            ty = ll_type(field.dtype)
            k = L.Constant(I64, per_element)
            start = b.gep(self.field_ptr(field), [b.mul(lo, k)], source_etype=ty)
            self.memset_zero(start, b.mul(count, L.Constant(I64, per_element * nbytes(ty))))

    def privatize(self, task: Stmt):
        """Point each pure-scatter field at this chunk's copy (the field itself when the launch
        runs one chunk); their atomics become plain updates (codegen.privatize)."""
        layout = private_scatters(task, self.demoted | set(self.reductions))
        if layout is None:
            return
        ab = self.alloca_b
        worker, num_workers = self.fn.args[1], self.fn.args[2]
        alone = ab.icmp_signed("==", num_workers, L.Constant(I64, 1))
        table = self.ctx_word(CTX_PRIV, PTR)  # (chunk, field) -> where that chunk adds
        first = ab.mul(worker, L.Constant(I64, len(layout.fields)))
        for k, p in enumerate(layout.fields):
            at = ab.gep(table, [ab.add(first, L.Constant(I64, k))], source_etype=I64)
            mine = ab.load(at, typ=PTR)
            self.field_ptrs[id(p.field)] = ab.select(alone, self.field_ptr(p.field), mine)
            self.private_ids.add(id(p.field))
        self.private = layout

    def as_i64(self, a: Stmt):
        """A loop bound as i64 (sign-extended from i32; i64 bounds as they are)."""
        return self.wide(self.v(a))

    def wide(self, v, shared=False):
        """An integer index value as i64: a loop counter's i32 view as the counter itself
        (narrow_index), anything else sign-extended (index64; with `shared`, one extension
        per LLVM block: in_block)."""
        known = self.widened.get(id(v))
        if known is not None:
            return known[0]
        return self.in_block(index64, v) if shared else index64(self.b, v)

    def narrow_index(self, v64, ty):
        """The i64 loop counter `v64` as an index of type `ty`; `wide` gives `v64` back for
        it. Only for counters that stay within `ty`'s range (a loop between bounds of that
        type, a nest's row and column), where sext(trunc(v64)) == v64."""
        if ty.width == 64:
            return v64
        v = self.b.trunc(v64, ty)
        self.widened[id(v)] = (v64, v)
        return v

    def counted_loop(self, s: Stmt, lo, hi, outermost=False, step=None, descending=False,
                     kind=VECTOR):
        """`for i in range(lo, hi, step)`, or from hi-1 down to lo when `descending`. An
        outermost loop keys the random stream by its index, so each iteration draws the same
        numbers whichever way (or on whichever thread) it runs."""
        b = self.b
        # i32 bounds: every i the body sees lies between them, so it is an i32 index as is
        bounded = all(a.dtype.bits <= 32 and a.dtype.is_signed for a in s.args[:2]) \
            and s.dtype.is_signed
        narrow = step is not None and not descending and self.cg.target.narrow_counters \
            and small_constant_range(s)
        cty = I32 if narrow else I64
        if narrow:  # a grid-stride counter in 32 bits (see Target.narrow_counters)
            lo, hi, step = (b.trunc(v, I32) for v in (lo, hi, step))
        idx = self.alloca_b.alloca(cty, name="i")
        b.store(b.sub(hi, L.Constant(I64, 1)) if descending else lo, idx)
        cond_bb = self.fn.append_basic_block("for.cond")
        body_bb = self.fn.append_basic_block("for.body")
        step_bb = self.fn.append_basic_block("for.step")
        exit_bb = self.fn.append_basic_block("for.exit")
        b.branch(cond_bb)
        b.position_at_end(cond_bb)
        i = b.load(idx, typ=cty)
        if narrow:  # unsigned: the body then knows 0 <= i < hi
            b.cbranch(b.icmp_unsigned("<", i, hi), body_bb, exit_bb)
        else:
            b.cbranch(b.icmp_signed(">=", i, lo) if descending else b.icmp_signed("<", i, hi),
                      body_bb, exit_bb)
        b.position_at_end(body_bb)
        if narrow:
            self.vals[id(s)] = i if s.dtype.bits == 32 else b.sext(i, I64)
            i = b.sext(i, I64)
        else:
            self.vals[id(s)] = i if s.dtype.bits == 64 else \
                self.narrow_index(i, I32) if bounded else b.trunc(i, I32)
        if outermost:
            self.tid = i
            b.store(L.Constant(I64, 0), self.rng_counter)
        # a sum over a part of a block starts afresh (Taichi's order: a sum of part sums); a
        # loop over blocks with a loop over parts leaves it to that loop
        per_block = self.reductions and (s.attr.parts or outermost and s.attr.blocks and not any(
            t.op == Op.FOR and t.attr.parts for t in walk(s.body)))
        if per_block:
            self.reset_reductions()
        self.loops.append((step_bb, exit_bb))
        self.block(s.body)
        self.loops.pop()
        if not self.b.block.is_terminated:
            self.b.branch(step_bb)
        b.position_at_end(step_bb)
        if per_block:
            self.flush_reductions()
        step = L.Constant(I64, -1 if descending else 1) if step is None else step
        b.store(b.add(b.load(idx, typ=cty), step, flags=("nsw",) if narrow else ()), idx)
        self.cg.hints.mark(b.branch(cond_bb), kind)
        b.position_at_end(exit_bb)

    def op_for(self, s: Stmt):
        lo, hi = self.as_i64(s.args[0]), self.as_i64(s.args[1])
        held = self.hold_accumulators(s)
        masked = conditional_loads(s, self.hoisted_loads)
        kind = SCALAR if masked or self.gathers(s) or self.scalar_libm_loop(s) else VECTOR
        if s.attr.blocks:  # a block's rows stay loops, its innermost loop vectorizes
            kind = SCALAR if masked or any(t.op == Op.FOR for t in walk(s.body)) else CELLS
        self.counted_loop(s, lo, hi, kind=kind)
        for first, ptr, slot, ty in held:
            self.cg.scopes.tag(self.b.store(self.b.load(slot, typ=ty), ptr), first.field)
        for group in held:
            self.loop_acc = {k: v for k, v in self.loop_acc.items() if v is not group[2]}

    def hold_accumulators(self, s: Stmt) -> list:
        """Load the elements the loop only adds to (codegen.loop_accumulators) into locals
        its atomics then add to; the caller stores them back after the loop. Not in debug
        mode: the loads would check bounds even where the loop adds nothing."""
        if self.cg.debug:
            return []
        taken = set(self.reductions) | set(self.nest_acc) | set(self.loop_acc)
        held = []
        for group in loop_accumulators(s, self.demoted, taken):
            first = group[0]
            if id(first.field) in self.private_ids:
                continue
            for ix in first.indices:  # a constant index may be made inside the loop
                if id(ix) not in self.vals:
                    self.vals[id(ix)] = self.op_const(ix)
            ty = ll_type(first.field.dtype)
            ptr = self.memory_ptr(self.element_ptr(first))
            slot = self.alloca_b.alloca(ty, name="loop_acc")
            self.b.store(self.cg.scopes.tag(self.b.load(ptr, typ=ty), first.field), slot)
            for st in group:
                self.loop_acc[id(st)] = slot
            held.append((first, ptr, slot, ty))
        return held

    def op_loop(self, s: Stmt):
        body_bb = self.fn.append_basic_block("loop.body")
        exit_bb = self.fn.append_basic_block("loop.exit")
        self.b.branch(body_bb)
        self.b.position_at_end(body_bb)
        if self.cg.target.polls_interrupt:
            self.poll_interrupt()
        self.loops.append((body_bb, exit_bb))
        self.block(s.body)
        self.loops.pop()
        if not self.b.block.is_terminated:
            self.b.branch(body_bb)
        self.b.position_at_end(exit_bb)

    def poll_interrupt(self):
        """Leave the task when the host set the stop word: one relaxed load and a branch per
        iteration of a `while` loop, so a runaway loop can be stopped by Ctrl-C."""
        b = self.b
        p = b.gep(self.err_ptr, [L.Constant(I64, ERR_WORD_STOP)], source_etype=I64)
        stop = b.load_atomic(p, "monotonic", 8, typ=I64)
        with b.if_then(b.icmp_signed("!=", stop, L.Constant(I64, 0)), likely=False):
            self.set_error(ERR_INTERRUPTED, 0)
            self.leave()
        # (if_then continues in a fresh block after the early return)

    def op_if(self, s: Stmt):
        b = self.b
        if id(s.args[0]) in self.holds:
            return self.block(s.blocks[0])
        if self.pred is not None:
            return self.predicated_if(s)
        if self.ranges and not self.cg.debug:
            self.speculate_loads(s)
            # Without fast-math the float sums cannot be reordered, so the loop stays scalar
            # and running both branches would only cost time.
            if self.fmf and if_convertible(s, set(self.preset), set(self.reductions) | set(self.nest_acc)):
                return self.predicated_if(s)
        cond = b.icmp_signed("!=", self.v(s.args[0]), L.Constant(self.v(s.args[0]).type, 0))
        then_bb = self.fn.append_basic_block("if.then")
        else_bb = self.fn.append_basic_block("if.else")
        merge_bb = self.fn.append_basic_block("if.end")
        b.cbranch(cond, then_bb, else_bb)
        for bb, blk in ((then_bb, s.blocks[0]), (else_bb, s.blocks[1])):
            self.b.position_at_end(bb)
            self.block(blk)
            if not self.b.block.is_terminated:
                self.b.branch(merge_bb)
        self.b.position_at_end(merge_bb)

    def op_stop_grad(self, s):  # a marker for the AD passes only
        return None

    def op_break(self, s):
        self.b.branch(self.loops[-1][1])

    def op_continue(self, s):
        self.b.branch(self.loops[-1][0])

    def op_return(self, s):
        # one 8-byte word per returned scalar: f64 for floats, i64 (zero-extended if unsigned)
        for k, a in enumerate(s.args):
            v = self.convert(self.v(a), a.dtype, T.f64 if a.dtype.is_float else T.i64)
            self.b.store(v, self.b.gep(self.ret_ptr, [L.Constant(I64, k)], source_etype=I64))
        self.b.ret_void()

    def leave(self):
        """Return from the function being lowered at once (a stopped launch)."""
        self.b.ret_void()

    def op_call(self, s: Stmt):
        callee = self.cg.funcs[id(s.attr)]
        out = self.b.call(callee, [self.fn.args[0], self.tid, self.rng_counter]
                          + [self.v(a) for a in s.args])
        return out if s.attr.rets else None

    def op_call_result(self, s: Stmt):
        return self.b.extract_value(self.v(s.args[0]), s.attr)

    def op_param(self, s: Stmt):
        return self.fn.args[3 + s.attr]

    def op_serial(self, s):
        self.block(s.body)

    def op_custom_grad(self, s):
        self.block(s.blocks[0])  # forward code only: the adjoint block is for reverse AD

    # ---- leaves -------------------------------------------------------------------------------
    def op_const(self, s: Stmt):
        value = s.attr
        if s.dtype.is_float and self.cg.target.flush_denormals:
            # FTZ/DAZ act on arithmetic only: a subnormal constant would be stored as is
            from fieldsim.ir.subnormals import flushed_constant
            value = flushed_constant(value, s.dtype.bits)
        return L.Constant(ll_type(s.dtype), value)

    def op_arg(self, s: Stmt):
        p = self.alloca_b.gep(self.args_ptr, [L.Constant(I64, s.attr)], source_etype=I64)
        if s.dtype.is_float:
            raw = self.alloca_b.load(p, typ=L.DoubleType())
            return narrow_float(self.alloca_b, raw, ll_type(s.dtype)) if s.dtype is not T.f64 else raw
        raw = self.alloca_b.load(p, typ=I64)
        return self.alloca_b.trunc(raw, ll_type(s.dtype)) if s.dtype.bits < 64 else raw

    def op_rand(self, s: Stmt):
        b = self.b
        cnt = b.add(b.load(self.rng_counter, typ=I64), L.Constant(I64, 1))
        b.store(cnt, self.rng_counter)
        z = b.xor(self.rng_key, b.mul(self.tid, L.Constant(I64, 0x9E3779B97F4A7C15 - (1 << 64))))
        z = b.add(z, b.mul(cnt, L.Constant(I64, 0xD1B54A32D192ED03 - (1 << 64))))
        z = _mix64(b, _mix64(b, z))
        if s.dtype.is_float:
            if s.dtype is T.f64:
                return b.fmul(b.uitofp(b.lshr(z, L.Constant(I64, 11)), L.DoubleType()),
                              L.Constant(L.DoubleType(), 2.0 ** -53))
            f = b.uitofp(b.lshr(z, L.Constant(I64, 40)), L.FloatType())
            return b.fmul(f, L.Constant(L.FloatType(), 2.0 ** -24))
        # integers: the top bits of the 64-bit draw, reinterpreted, so a signed type spans
        # its whole range (negative values included), as in Taichi
        if s.dtype.bits >= 64:
            return z
        return b.trunc(b.lshr(z, L.Constant(I64, 64 - max(s.dtype.bits, 8))), ll_type(s.dtype))

    # ---- locals -------------------------------------------------------------------------------
    def op_alloca(self, s: Stmt):
        ty = ll_type(s.dtype)
        slot = self.array_entry(s, ty)
        if slot is None:
            slot = self.alloca_b.alloca(ty)
        self.b.store(L.Constant(ty, 0), slot)
        if self.pred is not None:
            self.pred_locals[id(s)] = self.pred  # private to the predicated block
        return slot

    def op_local_load(self, s: Stmt):
        return self.b.load(self.v(s.args[0]), typ=ll_type(s.dtype))

    def op_local_store(self, s: Stmt):
        v, slot = self.v(s.args[1]), self.v(s.args[0])
        # a store needs no guard only under the very predicate its alloca was made under: one
        # in a nested if (`ret = a; if c: ret = b`, inlined into an if) must keep `a` elsewhere
        if self.pred is not None and self.pred_locals.get(id(s.args[0])) is not self.pred:
            v = self.b.select(self.pred, v, self.b.load(slot, typ=v.type))
        self.b.store(v, slot)

    # ---- global memory -------------------------------------------------------------------------
    def arg_word(self, pos):
        """A runtime argument's raw i64 word, loaded once per task (ndarray pointers, shapes)."""
        key = ("arg", pos)
        if key not in self.field_ptrs:
            ab = self.alloca_b
            p = ab.gep(self.args_ptr, [L.Constant(I64, pos)], source_etype=I64)
            self.field_ptrs[key] = ab.load(p, typ=I64)
        return self.field_ptrs[key]

    def dim_size(self, field, d):
        """Axis d's extent (i64): a constant, or an ndarray argument's launch-time shape."""
        if is_slot(field) and d < len(field.shape_pos):
            return self.arg_word(field.shape_pos[d])
        return self.i64_constant(field.storage_shape[d])

    def i64_constant(self, value: int) -> L.Constant:
        """One constant object per value, so `in_block` sees equal strides as the same."""
        got = self.i64_constants.get(value)
        if got is None:
            got = self.i64_constants[value] = L.Constant(I64, value)
        return got

    def field_ptr(self, field):
        key = id(field)
        if key in self.field_ptrs:
            return self.field_ptrs[key]
        ab = self.alloca_b
        if is_slot(field):
            base = ab.inttoptr(self.arg_word(field.ptr_pos), PTR)
        else:
            p = ab.gep(self.field_table, [L.Constant(I64, self.cg.slot[key])], source_etype=PTR)
            base = ab.load(p, typ=PTR)
        self.field_ptrs[key] = base
        return base

    def element_ptr(self, s: Stmt):
        b = self.b
        field = s.field
        indices = [self.index_i64(ix) for ix in s.indices]
        sizes = [self.dim_size(field, d) for d in range(len(indices))]
        oob = None
        if self.cg.debug or reaches_past_guard(s):
            # without debug, a load past the guard only reads the guard zone: Taichi reads what
            # lies there, and a program may discard it (`ti.select(i + k < n, x[i + k], 0.0)`
            # evaluates both sides); stores and atomics are reported
            flag = self.cg.debug or s.op != Op.LOAD
            for i, n in zip(indices, sizes):
                bad = self.bounds_check(i, n, s) if flag else b.icmp_unsigned(">=", i, n)
                oob = bad if oob is None else b.or_(oob, bad)
        index_map = getattr(field, "index_map", None)
        if index_map is not None:  # chunk- or block-major (lang/mapped_storage.py)
            # split positions, so each part is made from its index's IR and value
            parts = index_map.split(list(range(len(indices))),
                                    lambda p, n: self.block_part(s.indices[p], indices[p], n, 0),
                                    lambda p, n: self.block_part(s.indices[p], indices[p], n, 1))
            indices = [indices[p] if isinstance(p, int) else p for p in parts]
            sizes = [self.i64_constant(n) for n in index_map.physical]
        ty = ll_type(field.dtype)
        ptr = b.gep(self.field_ptr(field), [self.linear(indices, sizes)], source_etype=ty)
        if oob is not None and self.cg.debug:
            # An out-of-range access goes to a private dummy slot, never to the field (the
            # error is raised after the task): no element is written, not even element 0.
            if ty not in self.oob_slots:
                self.oob_slots[ty] = self.alloca_b.alloca(ty)
            ptr = b.select(oob, self.oob_slots[ty], ptr)
        elif oob is not None:  # to the guard zone's last element, in the field's address space
            ptr = b.select(oob, b.gep(self.field_ptr(field), [L.Constant(I64, -1)],
                                      source_etype=ty), ptr)
        return ptr

    def block_part(self, ix: Stmt, j, n: int, inner: int):
        """`j // n` (inner 0) or `j % n` (inner 1) of index `ix` (value `j`): from the index's
        parts where block_index sees them (affine in a block's loop variables), else by a
        shift or mask."""
        parts = block_parts(ix, n)
        if parts is None:
            if inner:
                return self.in_block(slot_index, j, self.i64_constant(n - 1))
            return self.in_block(chunk_index, j, self.i64_constant(n.bit_length() - 1))
        total = self.i64_constant(0)
        for term in parts[inner]:
            if inner:
                value = self.i64_constant(term) if isinstance(term, int) else self.index_i64(term)
            else:
                x, factor = term
                value = self.i64_constant(factor) if x is None else \
                    self.in_block(scaled_index, self.index_i64(x), self.i64_constant(factor))
            total = self.in_block(offset_index, total, value)
        return total

    def index_i64(self, ix: Stmt):
        """An index as i64: a constant as a shared constant, else extended once per block."""
        v = self.v(ix)
        if v.type.width != 64 and isinstance(v, L.Constant):
            return self.i64_constant(v.constant)
        return self.wide(v, shared=True)

    def linear(self, indices, sizes):
        """The row-major element number of `indices` in a storage of axis extents `sizes`:
        with constant extents, the sum of index x stride, the constant indices gathered into
        one offset (an element's components then differ only by it); otherwise Horner's
        `(i0 * n1 + i1) * n2 + ...`."""
        if not indices:
            return self.i64_constant(0)
        if not all(_int_constant(n) is not None for n in sizes[1:]):
            lin = indices[0]
            for i, n in zip(indices[1:], sizes[1:]):
                lin = self.in_block(offset_index, self.in_block(scaled_index, lin, n), i)
            return lin
        strides = [1]
        for n in reversed(sizes[1:]):
            strides.insert(0, strides[0] * n.constant)
        offset, lin = 0, self.i64_constant(0)
        for i, stride in zip(indices, strides):
            if _int_constant(i) is not None:
                offset += i.constant * stride
            else:
                term = self.in_block(scaled_index, i, self.i64_constant(stride))
                lin = self.in_block(offset_index, lin, term)
        return self.in_block(offset_index, lin, self.i64_constant(offset))

    def in_block(self, make, *operands):
        """`make(builder, *operands)`, or what it gave for the same operands earlier in the
        current LLVM block (which that earlier instruction dominates): the accesses of one
        element's components share their index arithmetic."""
        key = (make, id(self.b.block), *map(id, operands))
        got = self.block_values.get(key)
        if got is None:
            # the operands are kept with the value, so their ids are not reused meanwhile
            got = self.block_values[key] = (make(self.b, *operands), operands)
        return got[0]

    def bounds_check(self, i, n, s):
        """Flags (err words) and returns whether index `i` is outside [0, n)."""
        b = self.b
        bad = b.icmp_unsigned(">=", i, n)
        code = len(self.cg.info.accesses)
        offset = getattr(s.field, "offset", None)  # kernels index storage: user index - offset
        kind = "ndarray argument" if is_slot(s.field) else "field"
        self.cg.info.accesses.append((s.field.ir_name, s.loc, offset, _holder_note(s.field), kind))
        with b.if_then(bad, likely=False):
            self.set_error(ERR_OUT_OF_BOUNDS, code, i)
        return bad

    def set_error(self, code, info, extra=None):
        b = self.b
        # the first failure is the one reported: later ones are often its consequences
        first = b.icmp_signed("==", b.load(self.err_ptr, typ=I64), L.Constant(I64, 0))
        with b.if_then(first):
            for k, v in ((0, L.Constant(I64, code)), (1, L.Constant(I64, info)),
                         (2, extra if extra is not None else L.Constant(I64, 0))):
                b.store(v, b.gep(self.err_ptr, [L.Constant(I64, k)], source_etype=I64))

    def memory_ptr(self, ptr):
        """An element pointer as a load, store or atomic uses it (the target's address space;
        in debug mode it may be the out-of-range slot, a stack address)."""
        return ptr if self.cg.debug else self.cg.target.field_memory(self.b, ptr)

    def op_load(self, s: Stmt):
        if is_quant(s.field):
            return quant_llvm.load(self, s)
        ptr = self.memory_ptr(self.element_ptr(s))
        return self.cg.scopes.tag(self.b.load(ptr, typ=ll_type(s.dtype)), s.field)

    def op_store(self, s: Stmt):
        if is_quant(s.field):
            return quant_llvm.store(self, s)
        self.cg.scopes.tag(self.b.store(self.v(s.value), self.memory_ptr(self.element_ptr(s))), s.field)

    def op_atomic(self, s: Stmt):
        if id(s) in self.vectors.absorbed:
            return None  # added by its group's first statement (vector_scatter)
        if id(s) in self.vectors.groups:
            return self.vector_group(self.vectors.groups[id(s)])
        if is_quant(s.field):
            return quant_llvm.atomic(self, s)
        if self.accumulated(s):
            return self.reduce_into(s)
        field, kind = s.attr
        ptr = self.element_ptr(s)
        val = self.v(s.value)
        dt = field.dtype
        if dt.is_float:
            op = {"add": "fadd", "sub": "fsub", "min": "fmin", "max": "fmax",
                  "xchg": "xchg"}.get(kind)
        else:
            signed = dt.is_signed
            op = {"add": "add", "sub": "sub", "and": "and", "or": "or", "xor": "xor",
                  "min": "min" if signed else "umin", "max": "max" if signed else "umax",
                  "xchg": "xchg"}.get(kind)
        if self.updated_in_place(s):
            return self.plain_update(ptr, val, field, kind)
        if op is None:
            return self.cas_loop(ptr, val, dt, kind)
        ptr = self.memory_ptr(ptr)
        if id(s) in self.discarded and kind in ("add", "sub") and self.pred is None:
            return self.cg.target.scatter_atomic(self.b, self.cg.module, op, ptr, val,
                                                 lambda inst: self.cg.scopes.tag(inst, field))
        return self.cg.scopes.tag(self.b.atomic_rmw(op, ptr, val, "monotonic"), field)

    def vector_group(self, group: list[Stmt]):
        """A `vector_scatters` group: one vector add where every statement is a plain parallel
        scatter; else each statement as usual (the others are then no longer absorbed)."""
        plain = self.pred is None and not any(
            self.accumulated(t) or self.updated_in_place(t) for t in group)
        del self.vectors.groups[id(group[0])]
        if not plain:
            self.vectors.absorbed.difference_update(id(t) for t in group[1:])
            return self.op_atomic(group[0])
        ptr = self.memory_ptr(self.element_ptr(group[0]))
        self.cg.target.vector_scatter(self.b, self.cg.module, ptr, [self.v(t.value) for t in group])
        return None

    def accumulated(self, s: Stmt) -> bool:
        """An atomic summed in a register or a local array, written once after its loop."""
        return id(s) in self.reductions or id(s) in self.nest_acc or id(s) in self.loop_acc

    def updated_in_place(self, s: Stmt) -> bool:
        """An atomic no other thread races with: demoted, or into a thread-private field."""
        return id(s) in self.demoted or id(s.field) in self.private_ids

    def plain_update(self, ptr, val, field, kind):
        """A demoted atomic (fieldsim.codegen.demote): load, combine, store; the old value.
        Both carry the field's alias scope, as plain loads and stores do: without it LLVM
        cannot keep a `force[i] += f` of an inner loop in a register (other fields' loads in
        that loop might alias it)."""
        b, dt, tag = self.b, field.dtype, self.cg.scopes.tag
        old = tag(b.load(ptr, typ=ll_type(dt)), field)
        if dt.is_float:
            new = {"add": b.fadd, "sub": b.fsub, "mul": b.fmul}[kind](old, val, flags=self.fmf)
        else:
            new = {"add": b.add, "sub": b.sub, "mul": b.mul, "and": b.and_, "or": b.or_,
                   "xor": b.xor}[kind](old, val)
        tag(b.store(new, ptr), field)
        return old

    def cas_loop(self, ptr, val, dt, kind):
        b = self.b
        ity = L.IntType(dt.bits)
        loop_bb, done_bb = self.fn.append_basic_block("cas"), self.fn.append_basic_block("cas.done")
        b.branch(loop_bb)
        b.position_at_end(loop_bb)
        old_i = b.load(ptr, typ=ity)
        old = b.bitcast(old_i, ll_type(dt)) if dt.is_float else old_i
        new = b.fmul(old, val) if dt.is_float else b.mul(old, val)
        new_i = b.bitcast(new, ity) if dt.is_float else new
        pair = b.cmpxchg(ptr, old_i, new_i, "monotonic", "monotonic")
        b.cbranch(b.extract_value(pair, 1), done_bb, loop_bb)
        b.position_at_end(done_bb)
        return old

    # ---- AD stacks --------------------------------------------------------------------------------
    def op_stack_alloca(self, s: Stmt):
        b, ab = self.b, self.alloca_b
        key = s.attr.capacity_key
        base = self.ctx_word(CTX_STACK, PTR)
        stride = self.ctx_word(CTX_STACK_STRIDE)
        offs = self.ctx_word(CTX_STACK_OFFS, PTR)
        caps = self.ctx_word(CTX_STACK_CAPS, PTR)
        off = ab.load(ab.gep(offs, [L.Constant(I64, key)], source_etype=I64), typ=I64)
        cap = ab.load(ab.gep(caps, [L.Constant(I64, key)], source_etype=I64), typ=I64)
        start = ab.gep(base, [ab.add(ab.mul(self.fn.args[1], stride), off)], source_etype=I8)
        count = ab.alloca(I64, name="stack_count")
        b.store(L.Constant(I64, 0), count)
        self.cg.info.stack_infos.append(s.attr)
        self.stacks[id(s)] = (start, count, cap, ll_type(s.dtype), key)
        return start

    def op_stack_push(self, s: Stmt):
        b = self.b
        start, count, cap, _ty, key = self.stacks[id(s.args[0])]
        n = b.load(count, typ=I64)
        full = b.icmp_signed(">=", n, cap)
        with b.if_else(full, likely=False) as (overflow, ok):
            with overflow:
                self.set_error(ERR_STACK_OVERFLOW, key, n)
            with ok:
                b.store(self.v(s.args[1]), b.gep(start, [b.mul(n, L.Constant(I64, 8))], source_etype=I8))
                b.store(b.add(n, L.Constant(I64, 1)), count)

    def op_stack_top(self, s: Stmt):
        b = self.b
        start, count, _cap, ty, _key = self.stacks[id(s.args[0])]
        n = b.load(count, typ=I64)
        top = b.sub(n, L.Constant(I64, 1))
        top = b.select(b.icmp_signed("<", top, L.Constant(I64, 0)), L.Constant(I64, 0), top)
        return b.load(b.gep(start, [b.mul(top, L.Constant(I64, 8))], source_etype=I8), typ=ty)

    def op_stack_pop(self, s: Stmt):
        b = self.b
        _start, count, _cap, _ty, _key = self.stacks[id(s.args[0])]
        n = b.load(count, typ=I64)
        m = b.sub(n, L.Constant(I64, 1))
        b.store(b.select(b.icmp_signed("<", m, L.Constant(I64, 0)), L.Constant(I64, 0), m), count)

    def op_assert(self, s: Stmt):
        b = self.b
        code = len(self.cg.info.asserts)
        self.cg.info.asserts.append((s.attr, s.loc))
        c = self.v(s.args[0])
        with b.if_then(b.icmp_signed("==", c, L.Constant(c.type, 0)), likely=False):
            # a formatted message's values (i64/u64/f64) go to the error words after the code
            for k, a in enumerate(s.args[1:] if self.cg.target.assert_values else ()):
                v = self.v(a)
                if a.dtype.is_float:
                    v = b.bitcast(v, I64)
                b.store(v, b.gep(self.err_ptr, [L.Constant(I64, ERR_WORDS + k)], source_etype=I64))
            self.set_error(ERR_ASSERT, code)

    def op_print(self, s: Stmt):
        self.cg.info.prints = True
        self.cg.target.print(self.b, self.cg.module, s.attr, [self.v(a) for a in s.args],
                             self.alloca_b)

    # ---- arithmetic ---------------------------------------------------------------------------
    def op_select(self, s: Stmt):
        c = self.v(s.args[0])
        return self.b.select(self.b.icmp_signed("!=", c, L.Constant(c.type, 0)),
                             self.v(s.args[1]), self.v(s.args[2]))

    def op_cast(self, s: Stmt):
        if s.attr == "bit":  # ti.bit_cast: same width, reinterpret the bits
            return self.b.bitcast(self.v(s.args[0]), ll_type(s.dtype))
        if s.dtype.bits == 1 and s.args[0].dtype.bits != 1:
            return self.to_bool(self.v(s.args[0]), s.args[0].dtype)
        return self.convert(self.v(s.args[0]), s.args[0].dtype, s.dtype)

    def to_bool(self, v, src: T.DataType):
        """A cast to u1 (`bool(x)`): 1 for any nonzero value (NaN too), as C and Taichi convert;
        truncating would keep only the lowest bit(s)."""
        zero = L.Constant(v.type, 0)
        nz = self.b.fcmp_unordered("!=", v, zero) if src.is_float else self.b.icmp_unsigned("!=", v, zero)
        return self.b.zext(nz, ll_type(T.u1))

    def convert(self, v, src: T.DataType, dst: T.DataType):
        b, ty = self.b, ll_type(dst)
        if src is dst or ll_type(src) == ty and src.is_float == dst.is_float and src.kind == dst.kind:
            return v
        if src.is_float and dst.is_float:
            return b.fpext(v, ty) if dst.bits > src.bits else narrow_float(b, v, ty)
        if src.is_float:
            return self.float_to_int(v, src, dst, ty)
        if dst.is_float:
            return b.sitofp(v, ty) if src.is_signed else b.uitofp(v, ty)
        if dst.bits > src.bits:
            if src.is_signed and dst.bits == 64 and id(v) in self.widened:
                return self.widened[id(v)][0]  # a loop counter's i32 view (narrow_index)
            return b.sext(v, ty) if src.is_signed else b.zext(v, ty)
        if dst.bits < src.bits:
            return b.trunc(v, ty)
        return v

    def float_to_int(self, v, src: T.DataType, dst: T.DataType, ty):
        """Defined conversion (plain fptosi gives poison, i.e. arbitrary values, for `int(nan)`
        or `int(1e30)`): the value is clamped in the float domain to [type min, the largest
        float below 2^k] and NaN becomes the type's minimum (0 for unsigned types), then
        converted. The two selects lower to one max and one min instruction (vectorisable;
        LLVM's fpto*i.sat intrinsics cost far more)."""
        import numpy as np
        b = self.b
        x86 = self.cg.target.x86_conversions
        if x86 is not None and dst.bits >= 8:
            from fieldsim.codegen.x86_conversions import x86_float_to_int
            return x86_float_to_int(b, v, dst.bits, dst.is_signed, ty, avx512=x86 == "avx512")
        bits = dst.bits if dst.bits > 1 else 8
        lo, hi = (-(2.0 ** (bits - 1)), 2.0 ** (bits - 1)) if dst.is_signed else (0.0, 2.0 ** bits)
        npt = {16: np.float16, 32: np.float32, 64: np.float64}[src.bits]
        big = float(np.finfo(npt).max)
        hi = min(float(np.nextafter(npt(min(hi, big)), npt(0))), big)
        lo = max(lo, -big)
        lo_c, hi_c = L.Constant(v.type, lo), L.Constant(v.type, hi)
        v = b.select(b.fcmp_unordered("<", v, lo_c), lo_c, v)  # NaN, too small: lo
        v = b.select(b.fcmp_ordered(">", v, hi_c), hi_c, v)
        return b.fptosi(v, ty) if dst.is_signed else b.fptoui(v, ty)

    def op_div(self, s: Stmt):
        x, d = s.args
        if self.fmf and s.dtype.is_float and same_value(x, d):
            # `x / x` without fast-math flags: exactly 1 (NaN for 0, inf, NaN), as Taichi's
            # fast-math folds it; with `reassoc` LLVM rewrote `J * (s / s)` into `J * a / a'`
            # chains that are 1 - ulp (an MPM plasticity ratio `sig / sig` then drifted)
            return self.b.fdiv(self.v(x), self.v(d))
        r = constant_reciprocal(d) if self.fmf else None
        if r is not None:  # Taichi's fast-math: x * fl(1/C)
            return self.b.fmul(self.v(x), L.Constant(ll_type(d.dtype), r), flags=self.fmf)
        by_sqrt = self.fmf and self.cg.target.rsqrt_estimates and divides_by_f32_root(s)
        # a division by a square root is a group of its own when no other division shares it
        first = self.div_groups.get(id(s), id(s) if by_sqrt else None)
        if first is None:
            return self.arith(s)
        if first == id(s):  # lowered before the rest of its group (shared_divisors)
            if by_sqrt:
                self.reciprocals[first] = self.cg.target.reciprocal_root(self, self.b, self.v(d.args[0]))
            else:
                dv = self.v(d)
                self.reciprocals[first] = self.b.fdiv(L.Constant(dv.type, 1.0), dv, flags=self.approx_fmf)
        r = self.reciprocals[first]
        if x.op == Op.CONST and x.attr == 1.0:
            return r
        return self.b.fmul(self.v(x), r, flags=self.fmf)

    def arith(self, s: Stmt):
        from fieldsim.codegen.llvm_arith import lower_arith
        return lower_arith(self, s)


class FuncLowering(TaskLowering):
    """Lowers one real function (declared by `Codegen.run`) into its LLVM function."""

    def __init__(self, cg: Codegen, func: Function):
        llfn = cg.funcs[id(func)]
        super().__init__(cg, Stmt(Op.SERIAL, None, blocks=[func.body], loc=func.loc), llfn.name,
                         llfn)
        self.func = func
        self.demoted, self.discarded = set(), set()  # callers may run on many threads
        self.vectors = VectorScatters()

    def lower(self):
        self.load_ctx()
        self.tid, self.rng_counter = self.fn.args[1], self.fn.args[2]
        self.block(self.task.body)
        if not self.b.block.is_terminated:
            self.b.unreachable()  # the body ends with its RETURN
        self.alloca_b.branch(self.fn.blocks[1])

    def leave(self):
        rets = self.func.rets
        self.ret([L.Constant(ll_type(d), 0) for d in rets])

    def op_return(self, s: Stmt):
        self.ret([self.v(a) for a in s.args])

    def ret(self, values):
        if not values:
            self.b.ret_void()
        elif len(values) == 1:
            self.b.ret(values[0])
        else:  # several results: a literal struct
            agg = L.Constant(self.fn.function_type.return_type, L.Undefined)
            for k, v in enumerate(values):
                agg = self.b.insert_value(agg, v, k)
            self.b.ret(agg)


def _result_type(f: Function):
    """A real function's LLVM result: void, its one scalar, or a struct of several."""
    if not f.rets:
        return L.VoidType()
    if len(f.rets) == 1:
        return ll_type(f.rets[0])
    return L.LiteralStructType([ll_type(d) for d in f.rets])


def small_constant_range(s: Stmt) -> bool:
    """A FOR whose bounds are constants within [0, 2**30] (Target.narrow_counters; the
    frontend starts ranges at 0)."""
    lo, hi = s.args[0], s.args[1]
    return lo.op == Op.CONST and hi.op == Op.CONST and 0 <= int(lo.attr) and int(hi.attr) <= (1 << 30)


def index64(b: L.IRBuilder, v):
    """An index as i64: sign-extended from i32, a constant folded (no instruction)."""
    if v.type.width == 64:
        return v
    if isinstance(v, L.Constant):
        return L.Constant(I64, v.constant)
    return b.sext(v, I64)


def _int_constant(v):
    return v.constant if isinstance(v, L.Constant) and isinstance(v.constant, int) else None


def scaled_index(b: L.IRBuilder, lin, n):
    """`lin * n` (i64), folded where constant: most element addresses have constant parts (a
    vector's component, a stride of 1), and every instruction left out is one less to build,
    print and hand to LLVM."""
    c_lin, c_n = _int_constant(lin), _int_constant(n)
    if c_lin is not None and c_n is not None:
        return L.Constant(I64, c_lin * c_n)
    return lin if c_n == 1 else b.mul(lin, n)


def chunk_index(b: L.IRBuilder, j, shift):
    """`j >> shift` (i64, arithmetic), folded where constant: the block of index j."""
    c_j = _int_constant(j)
    return L.Constant(I64, c_j >> shift.constant) if c_j is not None else b.ashr(j, shift)


def slot_index(b: L.IRBuilder, j, mask):
    """`j & mask` (i64), folded where constant: index j's place in its block."""
    c_j = _int_constant(j)
    return L.Constant(I64, c_j & mask.constant) if c_j is not None else b.and_(j, mask)


def offset_index(b: L.IRBuilder, scaled, i):
    """`scaled + i` (i64), folded where constant."""
    c_scaled, c_i = _int_constant(scaled), _int_constant(i)
    if c_scaled is not None and c_i is not None:
        return L.Constant(I64, c_scaled + c_i)
    if c_i == 0:
        return scaled
    return i if c_scaled == 0 else b.add(scaled, i)


def _mix64(b, z):
    z = b.mul(b.xor(z, b.lshr(z, L.Constant(I64, 30))), L.Constant(I64, 0xBF58476D1CE4E5B9 - (1 << 64)))
    z = b.mul(b.xor(z, b.lshr(z, L.Constant(I64, 27))), L.Constant(I64, 0x94D049BB133111EB - (1 << 64)))
    return b.xor(z, b.lshr(z, L.Constant(I64, 31)))


def reaches_past_guard(s: Stmt) -> bool:
    """Whether field access `s` has indices of known range (loop variables of constant bounds,
    constants, sums and constant multiples of them) that could put it past the guard zone
    around its field's data (`guard_zones`): outside any memory fieldsim owns, where it would
    corrupt the process or crash it. Such an access is checked as in debug mode (an error
    naming the field and line, after the task, if it ever runs out of range)."""
    field = s.field
    shape = getattr(field, "storage_shape", None)
    if (is_slot(field) or getattr(field, "index_map", None) is not None or not shape
            or len(shape) != len(s.indices)):
        return False
    lo = hi = 0
    stride = 1
    for ix, n in zip(reversed(s.indices), reversed(shape)):
        span = index_interval(ix)
        if span is None:
            return False
        lo += min(span[0] * stride, span[1] * stride)
        hi += max(span[0] * stride, span[1] * stride)
        stride *= n
    item = max(field.dtype.bits // 8, 1)
    guard = guard_bytes(tuple(shape), item) // item
    return lo < -guard or hi >= stride + guard


def lower_kernel(kernel: Kernel, symbol: str, target: Target, debug=False, fast_math=False,
                 fp_contract=False):
    return Codegen(kernel, symbol, target, debug, fast_math, fp_contract).run()


def _holder_note(field):
    """For a sparse node's hidden length/mask field: which user fields the node holds, so an
    out-of-range message names them (None for user fields)."""
    node = getattr(field, "sparse_node", None)
    if node is None:
        return None
    names = ", ".join(repr(f.ir_name) for f in node._placed_fields())
    return f"the cell index of the {node.kind} node that holds {names}"


def narrow_float(b: L.IRBuilder, v, ty):
    """`fptrunc v to ty`, a double going to half through float: LLVM lowers f64 -> f16 to
    compiler-rt's `__truncdfhf2`, which the JIT does not link (a call through a null pointer:
    an `f16` kernel argument crashed the process); f32 -> f16 is F16C's `vcvtps2ph`."""
    if isinstance(ty, L.HalfType) and isinstance(v.type, L.DoubleType):
        v = b.fptrunc(v, L.FloatType())
    return b.fptrunc(v, ty)
