"""CPU backend: field storage in numpy, LLVM JIT (MCJIT) with an on-disk object cache, and a
launcher that splits each parallel task across `cpu_max_num_threads` threads.

Compiled task functions are called through ctypes, which releases the GIL, so worker threads run
truly in parallel. Small launches (few iterations, or little estimated work: see SMALL_WORK)
run on the calling thread; larger ones are cut into a few chunks per thread, which the calling
thread and the pool's threads take in turn (so a descheduled thread holds up nothing); without
per-chunk Python work (scatter copies, `while` loops) the taking and the waiting run in native
code (chunk_runner), with pool threads that poll briefly for the next launch. The
object cache is keyed by the LLVM IR text, the host CPU and features, and the compiler
versions, so a second process that builds the same kernel skips LLVM optimisation and code
generation entirely.

Machine code lives in MCJIT engines of up to `jit_memory.SLAB` kernels each: an engine is freed
when none of its kernels' programs is referenced any more, and `close()` (`fs.reset()`, a new
`fs.init()`) frees them all; launching a program whose engine was freed raises
`FieldsimRuntimeError` instead of jumping into freed memory.
"""
from __future__ import annotations

import ctypes
import hashlib
import itertools
import math
import mmap
import os
import threading
import weakref
from concurrent import futures
from concurrent.futures import ThreadPoolExecutor

import llvmlite
import llvmlite.binding as llvm
import numpy as np

from fieldsim.codegen import chunk_runner, interrupt, llvm_build
from fieldsim.codegen import launch as launch_common
from fieldsim.codegen.disk_cache import cached_build
from fieldsim.codegen.guard_zones import guard_bytes
from fieldsim.codegen.jit_memory import EngineSlabs
from fieldsim.codegen.llvm import CTX_PRIV, Target, TaskInfo, lower_kernel
from fieldsim.codegen.llvm_build import MachinePool, build_object, warm_up
from fieldsim.codegen.privatize import NO_RUN, PrivateBuffers
from fieldsim.codegen.vector_math import VectorMath
from fieldsim.errors import FieldsimRuntimeError
from fieldsim.ir.intexpr import trip_count
from fieldsim.ir.ir import Kernel, Op
from fieldsim.lang.ndarray import ArrayStorage

COMPILER_VERSION = "fieldsim-cpu-2"  # 2: no FMA contraction; x / x exact
SMALL_LAUNCH = 2048  # iterations below which threads cost more than they give
# Estimated work (iterations x IR statements per iteration) below which a launch runs on the
# calling thread: waking the pool costs some tens of microseconds, more than splitting a few
# million statement-iterations (a few tens of microseconds of compiled code) saves.
SMALL_WORK = 2_000_000
# How many times a pool thread polls for the next launch (x86 `pause` between polls) before it
# goes back to sleep (about 0.6 ms on the benchmark machine): long enough to bridge the serial
# kernels of a simulation step (chunk_runner)
SPIN_POLLS = 20_000
CHUNKS_PER_THREAD = 4  # a parallel range is cut into threads x this many chunks
_TASK_FN = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)
_llvm_lock = threading.Lock()
_initialised = []


SPARSE_MAP_BYTES = 1 << 26  # a sparse field this big is reserved, not committed (_reserved_zeros)
# Linux's MAP_NORESERVE (Python's mmap module does not name it): no commit charge for the
# mapping, so overcommit's heuristic does not refuse a reservation bigger than the RAM
MAP_NORESERVE = getattr(mmap, "MAP_NORESERVE", 0x4000)


class HostStorage(ArrayStorage):
    """A field's data: a contiguous numpy array of its own, inside a zeroed buffer that has a
    guard zone on each side.

    Kernels do not check indices (unless `debug=True`), so an out-of-range access lands
    outside the data, as in Taichi. Taichi's fields sit in one large memory pool, where an
    index one past an axis reads or writes a neighbouring field; a bare numpy array sits
    in the Python heap, where the same write corrupts the allocator and kills the process
    later (Taichi's differential_evolution example writes `best_fit[max_iter]`). The guard,
    on each side at least one outermost row, a sixteenth of the rows (up to
    GUARD_FRACTION_MAX_BYTES) and GUARD_BYTES, absorbs
    such accesses; its untouched pages cost no memory (large zeroed buffers are mapped
    lazily), but for the huge pages around the data's ends, hence the cap. A big field under a sparse node is a reservation (`_reserved_zeros`): `zero()`
    hands its pages back."""

    def __init__(self, shape, dtype, sparse=False):
        array, self.mapping = _guarded_zeros(tuple(shape), dtype.np, sparse)
        super().__init__(array)

    def zero(self):
        if self.mapping is None:
            super().zero()
        else:  # a private anonymous mapping reads zeros again once its pages are dropped
            self.mapping.madvise(mmap.MADV_DONTNEED)


def _guarded_zeros(shape, np_dtype, sparse=False):
    """(a zeroed C-contiguous array of `shape`, its mmap or None): a view into a buffer with a
    guard zone (a multiple of 64 bytes, so the data keeps the buffer's alignment) before and
    after; a big field under a sparse node is a reservation (`_reserved_zeros`)."""
    n = math.prod(shape)
    item = np.dtype(np_dtype).itemsize
    guard = guard_bytes(shape, item) // item
    total = n + 2 * guard
    mapping = None
    if sparse and total * item >= SPARSE_MAP_BYTES and hasattr(mmap, "MADV_NOHUGEPAGE"):
        mapping = _reserved_zeros(total * item)
        buffer = np.frombuffer(mapping, dtype=np_dtype)
    else:
        buffer = np.zeros(total, dtype=np_dtype)
    return buffer[guard:guard + n].reshape(shape), mapping


def _reserved_zeros(nbytes):
    """A private anonymous mapping of `nbytes` zeros that commits memory only in the pages
    written, as Taichi allocates a sparse node's cells on demand: a field under a
    pointer/bitmasked/dynamic node is stored densely, and Taichi programs size such layouts
    far beyond the RAM (oit_renderer: 1000^2 pixels x 2048 fragments, 38 GB dense, a few
    fragments written per pixel). Without MAP_NORESERVE the kernel's overcommit heuristic
    refuses a mapping bigger than the RAM; without transparent huge pages each scattered write
    commits 4 KB, not 2 MB (a 20544^2 sparse matrix's diagonal: 80 MB, not 3.4 GB). What cannot
    be reserved at all (beyond the address space, or overcommit disabled) is a MemoryError."""
    try:
        m = mmap.mmap(-1, nbytes, flags=mmap.MAP_PRIVATE | MAP_NORESERVE)
    except OSError as err:  # ENOMEM: what np.zeros reports as a MemoryError
        raise MemoryError(str(err)) from None
    m.madvise(mmap.MADV_NOHUGEPAGE)
    return m


def _init_llvm():
    if not _initialised:
        llvm.initialize_native_target()
        llvm.initialize_native_asmprinter()
        # No second, narrower vector loop for a vectorized loop's remainder: it costs 15-25%
        # of the compile time of a vectorized kernel and saves little at fieldsim's trip
        # counts. (A process-wide LLVM option; it changes no result.)
        llvm.set_option("fieldsim", "-enable-epilogue-vectorization=false")
        # No SLP search for horizontal reductions (a chain of adds into one value, a tree
        # per chain under fast-math): in big adjoint kernels it is most of the SLP
        # vectorizer's time (diffmpm's g2p.grad: 58 -> 28 ms of optimisation) and the trees it
        # builds run no faster (g2p.grad 7% faster without). Loop reductions are the loop
        # vectorizer's, which this leaves alone.
        llvm.set_option("fieldsim", "-slp-vectorize-hor=false")
        # No loop strength reduction in code generation: 10-35% of the emit time of a
        # kernel (gravity's adjoint 14.7 -> 11.1 ms), and no warm program ran slower without
        # it (BENCHMARKS.md "LLVM options and fill loops").
        llvm.set_option("fieldsim", "-disable-lsr")
        _initialised.append(True)


class CpuProgram:
    def __init__(self, info, code):
        self.info = info
        self.code = code  # jit_memory.Code: keeps the engine holding these functions alive
        self.functions = [_TASK_FN(a) for a in code.addresses]
        self.frame = None  # its reusable launch buffers (launch._Frame), made at first launch


class CpuBackend:
    name = "cpu"
    host_memory = True  # kernels read host memory: a numpy argument is passed in place
    # a sparse field this big is a reservation committed per page written: a field under a
    # chunked dynamic node is then laid out chunk-major (fieldsim.lang.chunked)
    sparse_reserve_bytes = SPARSE_MAP_BYTES if hasattr(mmap, "MADV_NOHUGEPAGE") else None

    def __init__(self, rt):
        _init_llvm()
        self.rt = rt
        self.target = Target()
        triple = llvm.get_process_triple()
        self.target.flush_denormals = triple.startswith("x86_64")
        self.cpu = llvm.get_host_cpu_name()
        self.features = llvm.get_host_cpu_features().flatten()
        if triple.startswith("x86_64"):
            self.target.x86_conversions = "avx512" if "+avx512f" in self.features else "sse"
        self.target.vector_math = VectorMath.for_host(triple, self.features)
        self.target.scalar_libm = True
        self.machines = MachinePool(triple, self.cpu, self.features, opt=3)  # emit objects
        self.triple = triple
        self.jit = EngineSlabs(triple, self.cpu, self.features)  # loads and frees them
        self.pool = None
        self.compiler = None  # compile_pool's threads, made when first asked for
        self.jobs, self.jobs_lock = set(), threading.Lock()  # start_compile's, while running
        self.mailbox = None  # chunk_runner.Mailbox, made at the first split launch
        self.threads = max(1, rt.num_threads)
        self.launcher = launch_common.Launcher(self)
        self.private = PrivateBuffers()  # per-chunk scatter copies (codegen.privatize)
        # the chunk runner's machine code: a job started on a compile thread now, while the
        # program sets up its fields (about 14 ms of LLVM's first code generation, which no
        # launch waits for: until it is done, launches use the Python chunk loop)
        self.runner_object = None
        _backends.add(self)
        self._start_runner()

    # ---- storage ---------------------------------------------------------------------------------
    def allocate(self, shape, dtype, sparse=False):
        return HostStorage(shape, dtype, sparse)

    def sync(self):
        pass

    def close(self):
        for pool in (self.pool, self.compiler):
            if pool is not None:
                pool.shutdown(wait=True)
        self.pool = self.compiler = None
        self.mailbox = None  # no helper polls it any more; its engine goes with the others
        with _llvm_lock:
            self.jit.close()  # the machine code of every kernel compiled in this init

    # ---- compile ---------------------------------------------------------------------------------
    def compile(self, kernel: Kernel, rt) -> CpuProgram:
        self._start_runner()
        return self._build(*self._lower(kernel, rt), rt)

    def _start_runner(self):
        """Build the chunk runner on a compile thread, then warm LLVM's optimiser up
        (llvm_build.warm_up), so that the first kernel's compile pays neither."""
        if self.runner_object is None:
            pool = self.compile_pool()
            if pool is not None:
                self.runner_object = pool.submit(self._chunk_runner_object)

    def compile_many(self, kernels: list[Kernel], rt) -> list:
        """The programs of `kernels` (or exceptions), their LLVM work in parallel
        (`llvm_build.compile_many`)."""
        return llvm_build.compile_many(self, kernels, rt)

    def start_compile(self, kernel: Kernel, rt) -> futures.Future | None:
        """Lower `kernel` now (on the calling thread; its errors raise here) and start its LLVM
        work on a compile thread: the future of its program. None with one thread."""
        self._start_runner()
        pool = self.compile_pool()
        if pool is None:
            return None
        job = pool.submit(self._build, *self._lower(kernel, rt), rt)
        with self.jobs_lock:
            self.jobs.add(job)  # until done: a fork waits for it (_before_fork)
        job.add_done_callback(self._forget_job)
        return job

    def _forget_job(self, job):
        with self.jobs_lock:
            self.jobs.discard(job)

    def _lower(self, kernel: Kernel, rt):
        """(LLVM IR text, its symbol, TaskInfo): the Python half of a compile."""
        # The symbol is named after the IR's content, not a compile counter, so the cache key
        # does not depend on compile order and a cached object always defines the symbols
        # looked up below. The same IR compiled twice shares one loaded object.
        placeholder = f"fs_{safe_symbol(kernel.name)}_SYMBOL"
        # fast-math changes the IR text (flags on float ops), hence the symbol and cache key
        module, info = lower_kernel(kernel, placeholder, self.target, rt.debug, rt.fast_math,
                                    rt.fp_contract)
        text = str(module)
        symbol = f"fs_{safe_symbol(kernel.name)}_{hashlib.sha256(text.encode()).hexdigest()[:20]}"
        text = text.replace(placeholder, symbol)
        info.symbol = symbol
        for t in info.tasks:
            t.symbol = t.symbol.replace(placeholder, symbol)
        return text, symbol, info

    def _build(self, text: str, symbol: str, info, rt) -> CpuProgram:
        """The lowered kernel optimised, code generated (or found in a cache) and loaded: the
        LLVM half of a compile, safe to run on several threads at once."""
        with _llvm_lock:
            code = self.jit.get(symbol)
        if code is None:
            obj = self._cached_object(text, rt)
            with _llvm_lock:
                code = self.jit.load(symbol, obj, [t.symbol for t in info.tasks])
        if not all(code.addresses):
            raise FieldsimRuntimeError(f"kernel {info.name!r}: its compiled object lacks a task "
                                       "function (an invalid compile cache entry?); run "
                                       "`python -m fieldsim cache clear`")
        return CpuProgram(info, code)

    def compile_pool(self) -> ThreadPoolExecutor | None:
        """Threads that run `compile` calls at once (their LLVM work in parallel), one per
        launch thread; None with one thread."""
        if self.threads < 2:
            return None
        if self.compiler is None:
            with _llvm_lock:
                if self.compiler is None:
                    self.compiler = ThreadPoolExecutor(self.threads,
                                                       thread_name_prefix="fieldsim-compile")
        return self.compiler

    def _cached_object(self, ir_text: str, rt) -> bytes:
        parts = [COMPILER_VERSION, llvmlite.__version__, self.cpu, self.features, ir_text]
        return cached_build(rt, "cpu", parts, ".o", lambda: self._optimise_and_emit(ir_text))

    def _optimise_and_emit(self, ir_text: str) -> bytes:
        # O2, not O3: the difference is mainly non-trivial loop unswitching, which copies a
        # nest's inner loop for each row-invariant condition (the boundary tests of grid
        # kernels) and vectorizes every copy: 40-60% of those kernels' compile time, and no
        # measurable speed (issue #13, BENCHMARKS.md "Cold compile after SIMD"). Runs on any
        # thread, several at once (llvm_build): compile_many.
        show = (lambda mod: print(str(mod))) if os.environ.get("FIELDSIM_PRINT_LLVM") else None
        return build_object(ir_text, self.machines, speed_level=2, vectorize=True, show=show)

    # ---- launch ----------------------------------------------------------------------------------
    def launch(self, program: CpuProgram, args, rng_key, adjoint=False):
        if program.code.closed:
            raise FieldsimRuntimeError(
                f"kernel {program.info.name!r} was compiled before fs.reset()/fs.init() freed "
                "its machine code; call the kernel again to recompile it")
        return self.launcher.launch(program, args, rng_key)

    def direct_function(self, program, n: int):
        """Task `n`'s function when `run_task` would call it once on the calling thread for
        any arguments (no `while` loop to watch for Ctrl-C; serial, or a trip count fixed at
        compile time that is too small to split, or one thread), else None. The launcher
        then calls it directly: decided once per program, not per launch."""
        task = program.info.tasks[n]
        if _has_while(task):
            return None
        if task.parallel and self.threads > 1:
            hint = launch_common.task_size_hint(task, ())  # None: it depends on the arguments
            if hint is None or not (hint < SMALL_LAUNCH or hint * _body_cost(task) < SMALL_WORK):
                return None
        return program.functions[n]

    def run_task(self, program, n: int, ctx_ptr: int, size_hint):
        fn = program.functions[n]
        task = program.info.tasks[n]
        workers = self.threads if task.parallel else 1
        if size_hint is not None and (size_hint < SMALL_LAUNCH
                                      or size_hint * _body_cost(task) < SMALL_WORK):
            workers = 1
        if task.private is not None and workers > 1 and size_hint is not None \
                and size_hint < task.private.elements:
            workers = 1  # zeroing and summing the copies would cost more than the scatters
        # A task with a `while` loop may never end. Launched from the main thread, Ctrl-C sets
        # its stop word through the interrupt watcher; where that cannot be installed, it runs
        # on pool threads while the main thread waits, so Ctrl-C reaches Python.
        runaway = False
        if _has_while(task) and threading.current_thread() is threading.main_thread():
            if interrupt.install():
                interrupt.active.add(ctx_ptr)
                try:
                    return self._run_chunks(fn, ctx_ptr, workers, False, task)
                finally:
                    interrupt.active.discard(ctx_ptr)
            runaway = True
        if workers == 1 and not runaway:
            fn(ctx_ptr, 0, 1)
            return
        self._run_chunks(fn, ctx_ptr, workers, runaway, task)

    def _run_chunks(self, fn, ctx_ptr, workers, runaway, task):
        if workers == 1 and not runaway:
            fn(ctx_ptr, 0, 1)
            return
        pool = self._pool()
        # Dynamic scheduling: the range is cut into more chunks than threads and each thread
        # takes the next chunk until none is left, so a thread the OS does not run soon (a busy
        # machine) delays nothing: the others take its share. Chunk c uses AD-stack scratch c
        # and its thread's scatter copies (codegen.privatize).
        chunks = workers * CHUNKS_PER_THREAD if workers > 1 else 1
        helpers = workers if runaway else workers - 1
        # no per-chunk Python work: the chunk loop and the wait run in native code
        if not runaway and task.private is None and not _has_while(task) \
                and self._run_native(fn, ctx_ptr, chunks, helpers):
            return
        copies = self._copies(task, ctx_ptr, chunks, helpers + 1)
        counter = itertools.count()
        stop = []

        def work(slot):
            for c in counter:
                if c >= chunks or stop:  # stop: the launch was interrupted
                    return
                copies.take(slot, c)
                fn(ctx_ptr, c, chunks)
        futures = [pool.submit(work, slot) for slot in range(1, helpers + 1)]
        try:
            if not runaway:
                work(0)
            for f in futures:
                # A helper that never started has nothing left to do once this thread ran out
                # of chunks; when this thread only waits (runaway), every helper must run.
                if runaway or not f.cancel():
                    f.result()
            copies.reduce()
        except BaseException:
            # Ctrl-C (or an error): no chunk starts any more, running `while` loops leave at
            # their next iteration, and the launch returns only when no thread writes.
            stop.append(True)
            launch_common.request_stop(ctx_ptr)
            _wait_quietly(futures)
            raise
        finally:
            copies.detach()

    def _run_native(self, fn, ctx_ptr, chunks, helpers):
        if self.mailbox is None:
            job = self.runner_object
            if job is not None and not job.done():
                return False  # the Python chunk loop until it is built: no launch waits for it
            obj = job.result() if job is not None else self._chunk_runner_object()
            with _llvm_lock:
                code = self.jit.load("fs_chunk_runner", obj, chunk_runner.SYMBOLS)
            self.mailbox = chunk_runner.Mailbox(code)
        if not self.mailbox.busy.acquire(blocking=False):
            return False  # another Python thread is launching: the Python chunk loop
        try:
            self.mailbox.launch(ctypes.cast(fn, ctypes.c_void_p).value, ctx_ptr, chunks,
                                self._pool(), helpers, SPIN_POLLS)
        finally:
            self.mailbox.busy.release()
        return True

    def _chunk_runner_object(self) -> bytes:
        """chunk_runner's machine code, loaded into the kernels' engines (a fresh engine cost
        14 ms). Not optimised: its hand-written IR gains nothing from it, and the optimiser
        pipeline cost 13 of 19 ms. Built on a compile thread from the backend's start
        (`runner_object`), so no launch waits for it, and so kept out of the disk cache
        (where it was an entry in every cache directory and a compile in every count)."""
        obj = build_object(chunk_runner.ir_text(self.triple), self.machines, optimise_it=False)
        warm_up(self.machines)
        return obj

    def _copies(self, task, ctx_ptr, chunks, slots):
        """The scatter copies of a launch split into `chunks` (NO_RUN: none needed)."""
        if task.private is None or chunks == 1:
            return NO_RUN
        run = self.private.start(task.private, chunks, slots)
        run.attach(ctx_ptr + 8 * CTX_PRIV)
        return run

    def _pool(self) -> ThreadPoolExecutor:
        if self.pool is None:
            with _llvm_lock:
                if self.pool is None:
                    self.pool = ThreadPoolExecutor(max(1, self.threads - 1),
                                                   thread_name_prefix="fieldsim")
        return self.pool

    def max_workers(self) -> int:
        """How many task invocations of one launch may hold AD-stack scratch at once (one per
        chunk)."""
        return self.threads * CHUNKS_PER_THREAD


# every live backend, for the fork handlers below
_backends: weakref.WeakSet = weakref.WeakSet()


def _before_fork():
    """A fork copies only the forking thread: a compile thread inside LLVM at that moment
    leaves LLVM's locks held forever in the child. The compiles no caller may be waiting for,
    the start-up job (chunk runner and warm-up, from `ti.init` on) and the jobs
    `start_compile` began (an adjoint begun on a Tape), are waited for by the fork."""
    for backend in list(_backends):
        with backend.jobs_lock:
            jobs = list(backend.jobs)
        if backend.runner_object is not None:
            jobs.append(backend.runner_object)
        futures.wait(jobs)


def _after_fork_in_child():
    """The child has none of the parent's threads: a ThreadPoolExecutor copied from the parent
    believes its dead threads idle (their jobs would wait forever), so each backend makes new
    pools and a new mailbox when next needed; and the Ctrl-C watcher is gone (interrupt.forget)."""
    for backend in list(_backends):
        backend.pool = backend.compiler = backend.mailbox = None
    interrupt.forget()


os.register_at_fork(before=_before_fork, after_in_child=_after_fork_in_child)


def _wait_quietly(futures):
    """Wait for every future, through further Ctrl-Cs and whatever the helpers raised."""
    for f in futures:
        while True:
            try:
                if not f.cancel():
                    f.exception()
                break
            except KeyboardInterrupt:
                continue


def _has_while(task: TaskInfo) -> bool:
    """Whether a task contains a `while` loop (cached on the task)."""
    if task.has_while is None:
        task.has_while = _contains_loop(task.stmt.blocks)
    return task.has_while


def _contains_loop(blocks) -> bool:
    # iterative: the first launch of every kernel runs this over its whole IR
    stack = list(blocks)
    while stack:
        for s in stack.pop():
            if s.op == Op.LOOP:
                return True
            if s.blocks:
                stack.extend(s.blocks)
    return False


def _body_cost(task: TaskInfo) -> float:
    """IR statements one iteration of a task's loop runs, at most (cached on the task)."""
    if task.body_cost is None:
        task.body_cost = _block_cost(task.stmt.body) if task.stmt.op == Op.FOR else 1
    return task.body_cost


def _block_cost(block) -> float:
    total = 0.0
    for s in block:
        inner = sum(_block_cost(b) for b in s.blocks)
        if s.op == Op.FOR:
            trips = trip_count(s, ())
            if trips is None:
                return math.inf  # a trip count known only at run time: assume it is large
            inner *= trips
        elif s.op == Op.LOOP:
            return math.inf
        total += 1 + inner
    return total


def safe_symbol(name: str) -> str:
    """A kernel name as an LLVM symbol fragment (the backends add a prefix and a counter).
    The JIT and PTX take ASCII symbols only, so a letter beyond it (Python allows `_q2σ`)
    is spelled by its code point, which keeps `_q2σ` and `_q2τ` apart.

    >>> safe_symbol("_q2σ"), safe_symbol("step-1")
    ('_q2u03c3', 'step_1')
    """
    return "".join(c if c.isascii() and c.isalnum() else "_" if c.isascii() else f"u{ord(c):04x}"
                   for c in name)[:40]

