"""The pipeline driver: what runs when a kernel is compiled, launched, or differentiated.

Takes a kernel object (`lang.kernel.KernelObj`) and a launch's arguments. Compiling a
specialisation runs frontend -> offload (the kernel object's `build_ir`, through `run_pass`) ->
the backend's `compile`; the IR it keeps for the rest has its local arrays scalarised
(`ir_without_arrays`); the adjoint (reverse AD) and tangent (forward AD) programs are made
from the same IR on first use, except where the next is known to be wanted: a kernel compiled
while a Tape records begins its adjoint at once (`_start_adjoint`: its IR made and lowered
while the kernel's LLVM work runs on a compile thread), used only after the access rules are
judged (`_settle_adjoint`); one compiled in `FwdMode` makes its tangent program (what the
launch runs) the same way. A launch binds the arguments, lets an active Tape judge and record
it (the access-rule checker, before anything runs), picks the primal or tangent program, and
runs it on the backend, timed by the kernel profiler. An adjoint launch judges the access rules
with its own argument values first when asked (`kernel.grad(...)`) or when no Tape launch has.
Errors reach the user without fieldsim's frames. Python's cyclic garbage collector
is paused while a kernel, an adjoint or a Tape's adjoints compile (`gc_paused`).
"""
from __future__ import annotations

import contextlib
import gc
import threading
import time

from fieldsim.ad.fwd_mode import plain_program, tangent_program
from fieldsim.ad.reverse import make_adjoint
from fieldsim.checks.access_rules import kernel_check
from fieldsim.checks.tape_rules import check_grad_launch
from fieldsim.errors import AccessRuleError, FieldsimError
from fieldsim.ir.ir import walk
from fieldsim.ir.passes.promote_locals import promote_locals
from fieldsim.ir.passes.run import run_pass
from fieldsim.ir.passes.scalarize_arrays import scalarize_arrays
from fieldsim.ir.subnormals import flushing_widths
from fieldsim.lang import runtime
from fieldsim.lang.kernel import CompiledKernel, rng_key_of
from fieldsim.lang.ndarray import bound_view, check_writable, copy_back, refuse_grad_reads
from fieldsim.lang.profiler import timed
from fieldsim.lang.triplets import after_launch as builders_after_launch

_gc_pause = {"depth": 0, "was_enabled": False, "lock": threading.Lock()}


@contextlib.contextmanager
def gc_paused():
    """Python's cyclic garbage collector off for the duration (nested and concurrent uses
    count; it is switched back on only if it was on when the first began). A compile
    allocates hundreds of thousands of short-lived objects (IR statements, llvmlite values),
    and every collection that allocation count triggers walks what the program holds: 30-35
    ms of the diffmpm pair's adjoint compile (10 %). What a compile leaves is freed by
    reference counting, or by the first collection after it."""
    state = _gc_pause
    with state["lock"]:
        if state["depth"] == 0:
            state["was_enabled"] = gc.isenabled()
            gc.disable()
        state["depth"] += 1
    try:
        yield
    finally:
        with state["lock"]:
            state["depth"] -= 1
            if state["depth"] == 0 and state["was_enabled"]:
                gc.enable()


class Driver:
    """Installed into `lang.kernel` by `fieldsim.runtime`; kernel objects call it."""

    def compile(self, kernel, rt, templates, dtypes, ret) -> CompiledKernel:
        t0 = time.perf_counter()
        with gc_paused():
            primal, hidden_fields = kernel.build_ir(rt, templates, dtypes, ret)
            ir = ir_without_arrays(primal, rt)
            ck = CompiledKernel(kernel, ir, hidden_fields,
                                [dtypes[p.name] for p in ir.params if not p.template], ret)
            backend = rt.backend()
            wanted = _program_wanted_next(rt, templates)
            job = wanted and _start_compile(backend, primal, rt)
            if not job:
                ck.program = backend.compile(primal, rt)
            else:
                # made now, while this kernel's LLVM work runs on a compile thread
                if wanted == "adjoint":  # used once the access rules are judged
                    ck.adjoint_job = _start_adjoint(ck, backend, rt)
                else:  # what this launch runs (a failure is reported by it, as before)
                    with contextlib.suppress(FieldsimError):
                        tangent_program(ck, rt)
                ck.program = job.result()
        rt.stats["compile_s"] += time.perf_counter() - t0
        return ck

    def launch(self, kernel, args, kwargs):
        rt = runtime.get()
        ad = rt._per_thread  # this thread's tape / fwd_mode / no_grad_depth (read once: hot path)
        tape = ad.tape
        plain = ad.no_grad_depth != 0  # no_grad: neither recorded nor differentiated forward
        recording = tape is not None and not plain
        checked_run = None  # Tape(validation=True): runs the launch checked per element
        templates = None
        try:
            # the fast path for scalar arguments of a compiled specialisation, else bind and
            # compile
            fast = None if kwargs else kernel._fast_bind(rt, args)
            if fast is not None:
                ck, values = fast
            else:
                templates, ck, values = _bind(kernel, rt, args, kwargs)
            if tape is not None:
                checked_run = _on_tape(tape, kernel, ck, templates, args, kwargs, values, plain)
            program = ck.program
            if ad.fwd_mode is not None:  # under no_grad: the primal, noting the duals it writes
                program = plain_program(ck, ad.fwd_mode) if plain else tangent_program(ck, rt)
        except FieldsimError as err:
            raise err.with_traceback(None) from None
        rt.launch_counter = counter = rt.launch_counter + 1
        kernel.last_rng_key = rng_key = rng_key_of(rt.random_seed, counter)
        if recording:
            tape.set_last_rng_key(rng_key)
        if checked_run is not None:
            try:
                result = checked_run(program, values, rng_key)
            except AccessRuleError as err:
                raise err.with_traceback(None) from None
        elif not rt.kernel_profiler:
            result = (rt.device or rt.backend()).launch(program, values, rng_key)
        else:
            result = timed(rt, kernel.__name__,
                           lambda: rt.backend().launch(program, values, rng_key))
        if templates:
            _after_launch(templates, ck, tape if recording else None)
        return result

    def launch_adjoint(self, kernel, args, kwargs=None, rng_key=None, check=False):
        """Run the adjoint. The access rules are judged with this launch's argument values
        when `check` (a user's `kernel.grad(...)`) or when no Tape launch has judged them."""
        rt = runtime.get()
        try:
            fast = None if kwargs else kernel._fast_bind(rt, args)  # as `launch`
            if fast is not None:
                (ck, values), templates = fast, None
                checked = ck
            else:
                templates, key, values, dtypes, ret = kernel.bind(args, kwargs or {})
                ck = kernel.compiled(templates, key, dtypes, ret)
                checked = bound_view(ck, templates)  # ndarray arguments: judged on this launch's arrays
            if checked is not ck:
                refuse_grad_reads(ck, kernel.__name__)
            if check or not checked.checked:
                analyses = checked.analyses  # (`kernel_check` imports per call: a hot path)
                rules = analyses.check if analyses is not None else kernel_check(checked)
                if check:  # a user's kernel.grad(): its indices judged as a Tape launch's are
                    check_grad_launch(rules, checked.ir, kernel.__name__, values)
                else:
                    rules.run(values)
            program = adjoint_program(ck, rt)
        except FieldsimError as err:
            raise err.with_traceback(None) from None
        _launch_adjoint_program(rt, kernel, program, values, rng_key)
        if templates:  # host arrays a GPU launch ran on device copies of, Fortran-order ones
            copy_back(templates)


    def compile_adjoints(self, wanted):
        """The adjoints a Tape's backward will run, made together (`compile_adjoints`)."""
        with gc_paused():
            compile_adjoints(wanted, runtime.get())

    def replay_adjoint(self, kernel, ck, values, rng_key=None):
        """Run the adjoint of `ck` on the values a Tape launch bound (`kernel.replay_adjoint`):
        as `launch_adjoint` for the same arguments, without binding them again."""
        rt = runtime.get()
        try:
            if not ck.checked:  # no Tape launch judged it (one inside a grad_replaced unit)
                kernel_check(ck).run(values)
            program = ck.adjoint[1] if ck.adjoint is not None else adjoint_program(ck, rt)
        except FieldsimError as err:
            raise err.with_traceback(None) from None
        _launch_adjoint_program(rt, kernel, program, values, rng_key)


def _launch_adjoint_program(rt, kernel, program, values, rng_key):
    rng = kernel.last_rng_key if rng_key is None else rng_key
    if not rt.kernel_profiler:
        (rt.device or rt.backend()).launch(program, values, rng, adjoint=True)
    else:
        timed(rt, f"{kernel.__name__}.grad",
              lambda: rt.backend().launch(program, values, rng, adjoint=True))


def _on_tape(tape, kernel, ck, templates, args, kwargs, values, plain=False):
    """The Tape judges and records a launch (returns its validation runner, or None); a
    specialisation without an adjoint is noted for the backward to make (`compile_adjoints`).
    `plain`: under `no_grad`, only shown to a checkpoint's recorders (`_plain_on_tape`)."""
    if plain:
        return _plain_on_tape(tape, kernel, ck, templates, values)
    try:
        if templates:
            tape.host_arrays_before(templates)
        run = tape.on_launch(kernel, bound_view(ck, templates) if templates else ck, args,
                             kwargs, values)
    except AccessRuleError:
        ck.adjoint_job = None  # begun with the compile (`Driver.compile`), now never used
        raise
    if ck.adjoint is None and not templates:
        tape.want_adjoint(ck, values)
    return run


def _plain_on_tape(tape, kernel, ck, templates, values):
    """A launch under `no_grad` is not recorded, but a checkpoint's recorders still see it
    (`on_plain_launch`): its forward follows what it reads and writes, and copies of what it
    changes must not be shared with earlier ones."""
    hook = getattr(tape, "on_plain_launch", None)
    if hook is not None:
        hook(kernel, bound_view(ck, templates) if templates else ck, values)


def _after_launch(templates, ck, tape):
    """Copy Fortran-order numpy arguments back; a recording Tape copies again the host arrays
    the launch wrote; a sparse matrix builder that overflowed raises."""
    copy_back(templates)
    if tape is not None:
        tape.host_arrays_after(templates, bound_view(ck, templates))
    try:
        builders_after_launch(templates)
    except FieldsimError as err:
        raise err.with_traceback(None) from None


def _bind(kernel, rt, args, kwargs):
    """(template bindings, compiled specialisation, runtime values) of one launch, bound in
    full (compiled on first use)."""
    templates, key, values, dtypes, ret = kernel.bind(args, kwargs)
    ck = kernel.compiled(templates, key, dtypes, ret)
    if templates:
        check_writable(ck, templates, kernel.__name__)
    return templates, ck, values


def compile_adjoints(wanted, rt):
    """Make the adjoints a Tape's backward is about to run, all before any runs, where the
    backend compiles several at once (`compile_many`: their LLVM work in parallel).
    `wanted`: (specialisation, the argument values of one of its Tape launches) pairs. One
    whose access rules no Tape launch judged (a launch inside a `grad_replaced` unit) is
    judged first with those values and not made if it breaks them; one that fails to build is
    left unmade too: the replay, or the user's `kernel.grad()`, then judges and builds it as
    always and reports the error where it is needed. One whose adjoint `Driver.compile` began
    is awaited, once judged."""
    backend = rt.backend()
    todo = [(ck, values) for ck, values in wanted if ck.adjoint is None]
    if len(todo) < 2 or not hasattr(backend, "compile_many") or backend.compile_pool() is None:
        return  # one at a time: the replay makes each on first use
    t0 = time.perf_counter()
    # the biggest first (by statement count): the last LLVM job to finish is then a small one
    todo.sort(key=lambda job: -sum(1 for _ in walk(job[0].ir.body)))
    made, begun = [], []
    for ck, values in todo:
        try:
            if not ck.checked:
                kernel_check(ck).run(values)  # raises AccessRuleError: not made
            if ck.adjoint_job is not None:
                begun.append(ck)
            else:
                made.append((ck, _adjoint_ir(ck, rt)))
        except FieldsimError:
            ck.adjoint_job = None
            continue  # the replay reports it (see above)
    programs = backend.compile_many([adj_ir for _, adj_ir in made], rt) if made else []
    for (ck, adj_ir), program in zip(made, programs):
        if ck.adjoint is None and not isinstance(program, BaseException):
            ck.adjoint = (adj_ir, program)
    for ck in begun:
        _settle_adjoint(ck)
    rt.stats["compile_s"] += time.perf_counter() - t0


def ir_without_arrays(primal, rt):
    """The IR a specialisation keeps (`ck.ir`, which AD, the checks and validation read): the
    primal's, with its local arrays (if any) back in per-entry form (scalarize_arrays). Only
    the primal program is compiled from the arrays."""
    if "local_arrays" not in primal.meta:
        return primal
    ir = run_pass("scalarize_arrays", scalarize_arrays, primal, verify=rt.debug)
    return run_pass("promote_locals", promote_locals, ir, verify=rt.debug)


def adjoint_program(ck: CompiledKernel, rt):
    """The adjoint of a compiled kernel (reverse AD, compiled; made once). Callers judge the
    access rules first (`kernel_check`)."""
    if ck.adjoint is None:
        t0 = time.perf_counter()
        with gc_paused():
            _settle_adjoint(ck)
            if ck.adjoint is None:
                adj_ir = _adjoint_ir(ck, rt)
                ck.adjoint = (adj_ir, rt.backend().compile(adj_ir, rt))
        rt.stats["compile_s"] += time.perf_counter() - t0
    return ck.adjoint[1]


def _adjoint_ir(ck: CompiledKernel, rt):
    """Reverse AD of a specialisation's IR (the access rules judged first by the caller)."""
    return run_pass("reverse", make_adjoint, ck.ir, not rt.fast_math,
                    flushing_widths(rt.arch, rt.fast_math), verify=rt.debug)


def _program_wanted_next(rt, templates) -> str | None:
    """Which other program of a kernel compiled now this thread will want: "tangent" in
    `FwdMode` (the launch runs it, not the primal), "adjoint" while it records on a Tape (the
    backward makes it: `_on_tape` notes it as wanted, also inside a `grad_replaced` unit, whose
    user backward calls `.grad`; not for ndarray bindings, which it does not note), else None
    (also under `no_grad`)."""
    ad = rt._per_thread
    if ad.no_grad_depth != 0:
        return None
    if ad.fwd_mode is not None:
        return "tangent"
    return "adjoint" if ad.tape is not None and not templates else None


def _start_compile(backend, ir, rt):
    """The backend's program of `ir` begun on a compile thread (a future), or None where the
    backend compiles on the calling thread only."""
    start = getattr(backend, "start_compile", None)
    return start(ir, rt) if start is not None else None


def _start_adjoint(ck: CompiledKernel, backend, rt):
    """(adjoint IR, future of its program) begun now, before the access rules are judged: held
    on `ck.adjoint_job` and used only by `_settle_adjoint`, which every path to the adjoint
    takes after judging them. None where it cannot be made (the usual path then makes it on
    first use and reports why there, as without this head start)."""
    try:
        adj_ir = _adjoint_ir(ck, rt)
        job = _start_compile(backend, adj_ir, rt)
    except Exception:  # noqa: BLE001 - reported where the adjoint is needed, see above
        return None
    return (adj_ir, job) if job is not None else None


def _settle_adjoint(ck: CompiledKernel):
    """`ck.adjoint` from the job `Driver.compile` began, once it is done (callers judge the
    access rules first, and count the wait as compile time); a job that failed is dropped,
    and the adjoint made again on first use."""
    if ck.adjoint_job is None:
        return
    (adj_ir, job), ck.adjoint_job = ck.adjoint_job, None
    if ck.adjoint is not None:
        return
    if job.exception() is None:  # waits; a failure is reported by the usual path instead
        ck.adjoint = (adj_ir, job.result())
