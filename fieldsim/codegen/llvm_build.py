"""LLVM optimisation and code generation of one module, from several threads at once.

Takes: an LLVM IR text, a target machine lent to the calling thread (`MachinePool`) and the
pipeline's tuning. Returns the object file's bytes. Guarantees: the bytes depend only on the
text, the machine's settings and the tuning, not on the thread or on what other threads compile
meanwhile (tests/codegen/test_parallel_compile.py compares them).

Why: llvmlite makes every call into LLVM under one process-wide lock, so two threads compiling
two kernels take turns. The three calls that do the work (parsing, the pass pipeline, code
generation: all of a compile's time) are made here without that lock, on a module in an LLVM
context of its own and with a target machine that only the calling thread uses meanwhile: the conditions
under which LLVM compiles concurrently (LLVM's own ORC JIT compiles on several threads the same
way). Every other call (making and freeing those objects) keeps llvmlite's lock. Where an
llvmlite version lacks the unlocked entry points, the locked calls are used: slower, same bytes.
"""
from __future__ import annotations

import threading
from contextlib import contextmanager
from ctypes import c_char_p, string_at

import llvmlite.binding as llvm
from llvmlite.binding import ffi

from fieldsim.codegen.jit_memory import dispose


def _unlocked(name: str):
    """llvmlite's C entry point `name` without its global lock (the locked one if absent)."""
    fn = getattr(ffi.lib, name)
    return getattr(fn, "_cfn", fn)


class MachinePool:
    """`llvm.TargetMachine`s with the same settings, each lent to one thread at a time (a
    target machine is not safe to share between threads that generate code at once), the most
    recently returned first. LLVM builds a machine's tables (its subtarget, the cost model the
    vectorizers ask) at its first use: the machine `warm_up` used, on a compile thread, then
    serves the program's first kernel on whichever thread compiles it (2-3 ms of a first
    compile; a machine per thread left the main thread's cold)."""

    def __init__(self, triple: str, cpu: str, features: str, opt: int = 3, jit: bool = True):
        self.settings = (triple, cpu, features, opt, jit)
        self._free: list = []
        self._lock = threading.Lock()
        self.made = 0  # machines created so far (at most one per thread building at once)

    @contextmanager
    def borrow(self):
        with self._lock:
            tm = self._free.pop() if self._free else None
        if tm is None:
            triple, cpu, features, opt, jit = self.settings
            tm = llvm.Target.from_triple(triple).create_target_machine(
                cpu=cpu, features=features, opt=opt, jit=jit)
            with self._lock:
                self.made += 1
        try:
            yield tm
        finally:
            with self._lock:
                self._free.append(tm)


def compile_many(backend, kernels: list, rt) -> list:
    """A backend's programs of `kernels`, or for one that failed to build its exception
    (compiling it again reports it): each lowered on the calling thread in turn (Python, which
    holds the GIL) by `backend.start_compile`, its LLVM work begun on a compile thread as soon
    as its text is ready, so the LLVM work of several runs in parallel and alongside the next
    one's lowering (`backend.compile` where it has no compile threads). A job is anything with
    `exception()` and `result()` that wait for it (a `Future`, cuda's `_CudaJob`)."""
    jobs = []
    for kernel in kernels:
        try:
            jobs.append(backend.start_compile(kernel, rt) or backend.compile(kernel, rt))
        except Exception as err:  # noqa: BLE001 - handed back to the caller, see above
            jobs.append(err)
    return [job.exception() or job.result() if _is_job(job) else job for job in jobs]


def _is_job(x) -> bool:
    return callable(getattr(x, "exception", None)) and callable(getattr(x, "result", None))


def parse(text: str, context) -> llvm.ModuleRef:
    """`llvm.parse_assembly` into `context`, without the global lock."""
    with ffi.OutputString() as err:
        mod = llvm.ModuleRef(_unlocked("LLVMPY_ParseAssembly")(context, c_char_p(text.encode()),
                                                               err), context)
        if err:
            mod.close()
            raise RuntimeError(f"LLVM IR parsing error\n{err}")
    return mod


def optimise(mod: llvm.ModuleRef, tm: llvm.TargetMachine, speed_level: int, vectorize: bool,
             slp: bool | None = None, before=None):
    """LLVM's default pipeline at `speed_level` (loop vectorizer on when `vectorize`, SLP when
    `slp`, which defaults to `vectorize`), without the global lock. `before(pm)`, if given,
    adds passes to a module pass manager run first with the same pass builder."""
    pto = llvm.create_pipeline_tuning_options(speed_level=speed_level)
    pto.loop_vectorization = vectorize
    pto.slp_vectorization = vectorize if slp is None else slp
    pb = llvm.create_pass_builder(tm, pto)
    first = None
    if before is not None:
        first = llvm.create_new_module_pass_manager()
        before(first)
        _unlocked("LLVMPY_RunNewModulePassManager")(first, mod, pb)
    mpm = pb.getModulePassManager()
    try:
        _unlocked("LLVMPY_RunNewModulePassManager")(mpm, mod, pb)
    finally:
        dispose(first, mpm, pb, pto)  # else about 70 KB per compile stays (jit_memory.py)


def emit(tm: llvm.TargetMachine, mod: llvm.ModuleRef, assembly: bool = False) -> bytes:
    """`tm.emit_object(mod)` (or `emit_assembly`), without the global lock."""
    with ffi.OutputString() as err:
        buf = _unlocked("LLVMPY_TargetMachineEmitToMemory")(tm, mod, 0 if assembly else 1, err)
        if not buf:
            raise RuntimeError(str(err))
    try:
        return string_at(ffi.lib.LLVMPY_GetBufferStart(buf), ffi.lib.LLVMPY_GetBufferSize(buf))
    finally:
        ffi.lib.LLVMPY_DisposeMemoryBuffer(buf)


def build_object(text: str, machines: MachinePool, speed_level: int = 2, vectorize=True,
                 optimise_it=True, show=None) -> bytes:
    """The object file of the IR `text`: parsed into a fresh context, verified, optimised (when
    `optimise_it`), code generated. `show(module)`, if given, sees the optimised module."""
    with machines.borrow() as tm:
        return _build(text, tm, speed_level, vectorize, optimise_it, show)


def _build(text, tm, speed_level, vectorize, optimise_it, show) -> bytes:
    context = llvm.create_context()
    mod = None
    try:
        mod = parse(text, context)
        mod.triple = tm.triple
        mod.data_layout = str(tm.target_data)
        mod.verify()
        if optimise_it:
            optimise(mod, tm, speed_level, vectorize)
        if show is not None:
            show(mod)
        return emit(tm, mod)
    finally:
        dispose(mod)
        context.close()


# a masked sum with a square root: a loop the vectorizers take, as kernels' loops are
_WARM_UP_IR = """
define void @fs_warm_up(ptr noalias %a, ptr noalias %out, i64 %n) {
entry:
  br label %loop
loop:
  %i = phi i64 [ 0, %entry ], [ %next, %loop ]
  %sum = phi float [ 0.0, %entry ], [ %sum.next, %loop ]
  %p = getelementptr float, ptr %a, i64 %i
  %x = load float, ptr %p
  %pos = fcmp ogt float %x, 0.0
  %root = call fast float @llvm.sqrt.f32(float %x)
  %term = select i1 %pos, float %root, float 0.0
  %sum.next = fadd fast float %sum, %term
  %next = add nsw i64 %i, 1
  %done = icmp eq i64 %next, %n
  br i1 %done, label %exit, label %loop
exit:
  store float %sum.next, ptr %out
  ret void
}
declare float @llvm.sqrt.f32(float)
"""


def warm_up(machines: MachinePool):
    """Optimise and code-generate a small loop, discarding the result. LLVM builds tables on
    first use (the pass pipeline's analyses, the target's instruction selection): done on a
    compile thread while a program sets up, they cost its first kernel compile 2-3 ms less
    (BENCHMARKS.md, "First step")."""
    build_object(_WARM_UP_IR, machines)
