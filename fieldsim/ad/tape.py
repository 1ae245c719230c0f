"""The Tape (Taichi 1.7 semantics plus Warp's `backward`), `grad_replaced`/`grad_for`, `no_grad`.

On entry a Tape zeroes every gradient (when asked) and sets `loss[None] = 0`; while active it
records each kernel launch with its arguments and RNG key, each `grad_replaced` call, and each
Python-scope write (`x[i] = v`, `fill`, `from_numpy`), checking the global data access rules
before anything runs. On exit it seeds `loss.grad[None] = 1` and replays the adjoints in reverse.
A Tape whose body raised runs no backward.
"""
from __future__ import annotations

import linecache
import warnings
from contextlib import nullcontext

import numpy as np

from fieldsim.ad.host_arrays import HostArrays
from fieldsim.ad.reverse import refuse_unreplayable
from fieldsim.checks.access_rules import kernel_check
from fieldsim.checks.analyses import analyses_of
from fieldsim.checks.tape_memo import Remembered, RepeatingTapeState
from fieldsim.checks.tape_rules import TapeState
from fieldsim.checks.validation import runner
from fieldsim.errors import FieldsimError, FieldsimRuntimeError, Loc
from fieldsim.lang import runtime
from fieldsim.lang.compat import user_loc as _user_loc
from fieldsim.lang.kernel import compile_adjoints


# ---- what a Tape records (`tape.entries`, in launch order); each knows its own backward ----------
class LaunchEntry:
    """A kernel launch: the kernel, its arguments, its compiled specialisation and the random
    stream key it ran with (the adjoint replays the same stream).

    >>> x = fs.field(fs.f32, shape=2, needs_grad=True)
    >>> loss = fs.field(fs.f32, shape=(), needs_grad=True)
    >>> @fs.kernel
    ... def total():
    ...     for i in x:
    ...         loss[None] += x[i]
    >>> with fs.ad.Tape(loss) as tape:
    ...     total()
    >>> [type(e).__name__ for e in tape.entries], tape.entries[0].kernel is total
    (['LaunchEntry'], True)
    """

    __slots__ = ("args", "ck", "kernel", "kwargs", "rng_key", "values")  # one per launch: small

    def __init__(self, kernel, args, kwargs, ck, values=None):
        self.kernel, self.args, self.kwargs, self.ck = kernel, args, kwargs, ck
        self.rng_key = None
        # the bound argument values when binding the args again would give the same values and
        # specialisation (a kernel of scalar parameters): the adjoint then skips binding
        self.values = values

    def backward(self):
        if self.values is not None:
            self.kernel.replay_adjoint(self.ck, self.values, self.rng_key)
        else:
            self.kernel.launch_adjoint(self.args, self.kwargs, self.rng_key)


class CustomEntry:
    """A call of a `grad_replaced` function: one unit, differentiated by its `grad_for`.

    >>> x = fs.field(fs.f32, shape=(), needs_grad=True)
    >>> loss = fs.field(fs.f32, shape=(), needs_grad=True)
    >>> @fs.kernel
    ... def double():
    ...     loss[None] += 2 * x[None]
    >>> @fs.ad.grad_replaced
    ... def step():
    ...     double()
    >>> @fs.ad.grad_for(step)
    ... def step_grad():
    ...     double.grad()
    >>> with fs.ad.Tape(loss) as tape:
    ...     step()
    >>> type(tape.entries[0]).__name__, x.grad[None]
    ('CustomEntry', 2.0)
    """

    __slots__ = ("args", "fn", "kwargs")

    def __init__(self, fn, args, kwargs):
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def backward(self):
        grad = getattr(self.fn, "grad", None)
        if grad is None:
            raise FieldsimRuntimeError(f"grad_replaced function {self.fn.__name__!r} has no backward: "
                                       "register one with @fs.ad.grad_for", _user_loc())
        grad(*self.args, **self.kwargs)


class PythonWriteEntry:
    """A Python-scope write: its adjoint consumes the written elements' gradient.

    >>> x = fs.field(fs.f32, shape=2, needs_grad=True)
    >>> loss = fs.field(fs.f32, shape=(), needs_grad=True)
    >>> with fs.ad.Tape(loss) as tape:
    ...     x[0] = 3.0
    >>> type(tape.entries[0]).__name__
    'PythonWriteEntry'
    """

    def __init__(self, field, idx):
        self.field, self.idx = field, idx

    def backward(self):
        g = self.field.adjoint
        if g is None:
            return
        if self.idx is None:
            g.storage.zero()
        else:
            g.storage.write_element(self.idx, np.zeros(g.element_shape, dtype=g.dtype.np))


class Tape:
    """Record kernel launches for reverse-mode AD (Taichi's `ti.ad.Tape`).

    On entry it zeroes every gradient (unless `clear_gradients=False`) and sets `loss[None] = 0`,
    and it checks the global data access rules of each launch before it runs (see the guide "The
    access rules and the checker"). On exit it seeds `loss.grad[None] = 1` and runs the adjoints in
    reverse order. A body that raised runs no backward.

    Args:
        loss: a 0-D field with `needs_grad=True` (or None: call `tape.backward(loss)` yourself).
        clear_gradients: zero all gradients on entry.
        validation: check at run time, element by element, the accesses the static checker
        cannot decide (data-dependent indices).
        grad_check: compare the gradients with finite differences after the backward.

    >>> x = fs.field(fs.f32, shape=3, needs_grad=True)
    >>> loss = fs.field(fs.f32, shape=(), needs_grad=True)
    >>> @fs.kernel
    ... def compute():
    ...     for i in x:
    ...         loss[None] += x[i] ** 2
    >>> x.from_numpy(np.array([1.0, 2.0, 3.0], dtype=np.float32))
    >>> with fs.Tape(loss=loss):
    ...     compute()
    >>> x.grad.to_numpy().tolist()
    [2.0, 4.0, 6.0]
    """
    def __init__(self, loss=None, clear_gradients=True, validation=False, grad_check=None):
        self.loss, self.clear_gradients = loss, clear_gradients
        self.validation, self.grad_check = validation, grad_check
        self.entries: list = []
        self.state = None  # its _CheckerAdapter from __enter__; None: a Recorder that checks nothing
        self.unit_depth = 0
        self.done = False
        self.start_counter = None  # the launch counter at __enter__ (replays start there)
        # id of each compiled specialisation launched while recording without an adjoint ->
        # (it, its first launch's argument values): the backward makes them together first
        self.wanted = {}
        self.host_arrays = HostArrays()  # NumPy arrays the launches took, to see Python's changes
        self.launches, self.last_launch = 0, None  # the launches recorded; the last (name, number)

    # ---- recording --------------------------------------------------------------------------------
    def __enter__(self):
        """Start recording (see the class docstring); returns the Tape."""
        rt = runtime.get()
        refused = self._refusal_to_enter(rt)
        if refused is not None:  # the user's mistake: shown without fieldsim's frames
            raise refused.with_traceback(None) from None
        self.entered_at = _user_loc()
        if self.loss is not None:
            try:
                _check_loss(self.loss)
            except FieldsimError as err:  # the user's mistake: shown without fieldsim's frames
                raise err.with_traceback(None) from None
        if self.clear_gradients:
            clear_all_gradients()
        if self.loss is not None:
            if _is_torch(self.loss):  # a torch tensor loss (Taichi takes one): zeroed in place
                import torch
                with torch.no_grad():
                    self.loss.zero_()
            else:
                self.loss.storage.zero()
        self.state = _CheckerAdapter(self.validation)
        if self.validation:  # fields with gradients now carry validation state (snode.ptr)
            rt.adjoint_checkbits = True
        if self.grad_check:
            from fieldsim.ad.check import begin_tape_grad_check
            begin_tape_grad_check(self)
        self.start_counter = rt.launch_counter
        rt.tape = self
        return self

    def _refusal_to_enter(self, rt):
        """Tapes do not nest; a Tape that holds a recording is not entered again (a
        RuntimeError in Taichi too, for both; located, as the user's mistake). The error, or None."""
        if rt.tape is not None:
            outer = getattr(rt.tape, "entered_at", None)
            where = f" (the recording one was entered at {outer})" if outer is not None else ""
            return FieldsimRuntimeError(f"Tapes cannot be nested: finish the Tape that is recording "
                                        f"before entering another{where}", _user_loc())
        if self.entries:  # its backward would replay the earlier recording's launches again
            return FieldsimRuntimeError(f"this Tape already holds the recording made when it was "
                                        f"entered at {getattr(self, 'entered_at', None)}: a Tape "
                                        "records once; call tape.reset() to record again with it, "
                                        "or make a new Tape", _user_loc())
        return None

    def __exit__(self, exc_type, exc, tb):
        """Stop recording and, when a loss was given and the body did not raise, run the backward."""
        rt = runtime.get()
        rt.tape = None
        self._restore_modes()
        if exc_type is not None:
            return False
        if self.loss is not None:
            self.backward(self.loss)
            if self.grad_check:
                from fieldsim.ad.check import tape_grad_check
                tape_grad_check(self, self.grad_check)
        return False

    # ---- Taichi's view of the recording: `calls` and `modes` ---------------------------------------
    @property
    def calls(self) -> list:
        """(callable, args) of each kernel launch and `grad_replaced` call recorded, in order."""
        return [(e.kernel, e.args) if isinstance(e, LaunchEntry) else (e.fn, e.args)
                for e in self.entries if isinstance(e, (LaunchEntry, CustomEntry))]

    @property
    def modes(self) -> list:
        """The autodiff mode each recorded call ran in (Taichi's `Tape.modes`)."""
        return [getattr(fn, "autodiff_mode", _mode_none()) for fn, _ in self.calls]

    def _restore_modes(self):
        """Kernels leave a validating Tape in AutodiffMode.NONE, as in Taichi."""
        for e in self.entries:
            if isinstance(e, LaunchEntry):
                e.kernel.autodiff_mode = _mode_none()

    def on_launch(self, kernel, ck, args, kwargs, values):
        """Internal hook (the kernel launcher calls it; not user API): check a launch before it
        runs and record it (a launch inside a `grad_replaced` unit
        is checked, not recorded). Returns None, or under validation the callable that runs
        the launch checked per element (`checks.validation.Runner`)."""
        self.launches += 1  # numbered as the checker numbers them
        self.last_launch = (kernel.__name__, self.launches)
        run = (self.state.launch(kernel, ck, values, in_unit=bool(self.unit_depth))
               if self.state is not None else None)
        if self.unit_depth:
            return run
        if self.validation:
            from fieldsim.lang.enums import AutodiffMode
            kernel.autodiff_mode = AutodiffMode.VALIDATION
        # the values as a tuple of numbers: Python's cyclic GC stops tracking it (a list would
        # stay one more container per launch for every full collection to walk)
        entry = LaunchEntry(kernel, args, kwargs, ck,
                            tuple(values) if kernel.scalar_params() else None)
        self.entries.append(entry)
        if run is not None:
            run.undo = lambda: self.entries.remove(entry)
        return run

    def host_arrays_before(self, templates):
        """Internal hook, called by the kernel launcher before a recorded launch with ndarray
        arguments: a host array changed from Python since the Tape last saw it is a
        Python-scope write of the whole array (refused where a recorded adjoint reads it)."""
        self.host_arrays.before_launch(templates, self.launches + 1, self._host_array_changed)

    def host_arrays_after(self, templates, ck):
        """Internal hook, called by the kernel launcher after that launch ran."""
        self.host_arrays.after_launch(templates, field_sets(ck)[1], self.last_launch)

    def _host_array_changed(self, proxy, name, writer=None):
        if writer is not None:  # Origin.who: a "kernel '...'" sentence is its own subject
            what = (f"kernel '{writer[0]}' (launch {writer[1]}), through another view of the memory "
                    f"that array {name!r} was read through,")
        else:
            what = (f"`{name}[...] = ...` (array {name!r} changed in place from Python, found at "
                    "this line; pass the kernel a copy if that is meant)")
        self.record_python_write(proxy, None, what)

    def want_adjoint(self, ck, values):
        """Internal hook, called by the kernel launcher: specialisation `ck` was launched with
        argument values `values` while recording and has no adjoint yet."""
        if id(ck) not in self.wanted:
            self.wanted[id(ck)] = (ck, tuple(values))

    def set_last_rng_key(self, key):
        """Internal hook, called by the kernel launcher: the RNG key the last launch used
        (replayed by its adjoint)."""
        if self.entries and isinstance(self.entries[-1], LaunchEntry) and self.entries[-1].rng_key is None:
            self.entries[-1].rng_key = key

    def record_python_write(self, field, idx, what):
        """Internal hook, called by fields: record a Python-scope write (`x[i] = v`, `fill`, `from_numpy`)."""
        if self.state is not None:
            self.state.python_write(field, idx, _user_loc(), what)
        if self.unit_depth:
            return
        self.entries.append(PythonWriteEntry(field, idx))

    def record_custom(self, fn, args, kwargs):
        """Internal hook, called by `fs.ad.grad_replaced`: record one call of a function with a user backward."""
        if self.unit_depth:  # a grad_replaced call inside another: the outer backward covers it
            return
        self.entries.append(CustomEntry(fn, args, kwargs))

    # ---- backward ---------------------------------------------------------------------------------
    def backward(self, loss=None, grads=None):
        """Seed `loss.grad[None] = 1` (or the given `grads`) and run the adjoints in reverse."""
        if loss is not None and _is_torch(loss):
            import torch
            if loss.grad is None:  # the kernels' adjoints read it (fieldsim.lang.interop)
                loss.grad = torch.zeros_like(loss)
            loss.grad.fill_(1)
        elif loss is not None:
            if loss.adjoint is None:
                raise FieldsimRuntimeError(f"loss field {loss.ir_name!r} has no gradient: declare it with "
                                           "needs_grad=True", _user_loc())
            loss.adjoint.storage.fill(1)
        for f, seed in (grads or {}).items():
            target = f.adjoint if f.adjoint is not None else None
            if target is None:
                raise FieldsimRuntimeError(f"field {f.ir_name!r} has no gradient to seed", _user_loc())
            target.storage.from_numpy(np.broadcast_to(np.asarray(seed, dtype=f.dtype.np),
                                                      f.storage_shape).copy())
        if self.state is not None:
            try:
                self.host_arrays.before_backward(self._host_array_changed)
            except FieldsimError as err:  # the user's change: shown without fieldsim's frames
                raise err.with_traceback(None) from None
        _warn_cut_chains(self.entries)
        wanted, self.wanted = list(self.wanted.values()), {}
        compile_adjoints(wanted)  # all at once, in parallel where the backend can
        rt = runtime.get()
        saved, rt.tape = rt.tape, None
        try:
            for entry in reversed(self.entries):
                entry.backward()
        finally:
            rt.tape = saved
        self.done = True

    def zero(self):
        """Zero every gradient field (as `fs.ad.clear_all_gradients()`)."""
        clear_all_gradients()

    def reset(self):
        """Forget what was recorded, to record again with the same Tape."""
        self.entries.clear()
        self.wanted = {}
        self.host_arrays = HostArrays()
        self.launches, self.last_launch = 0, None
        self.state = _CheckerAdapter(self.validation)

    def grad(self):
        """Run the backward of the loss given at construction (Taichi's `tape.grad()`)."""
        return self.backward(self.loss)

    def visualize(self, path="tape.dot"):
        """Write the recorded launches as a Graphviz DOT file at `path`; returns the DOT text."""
        from fieldsim.ad.visualize import write_tape_dot
        return write_tape_dot(self, path)


def _mode_none():
    from fieldsim.lang.enums import AutodiffMode
    return AutodiffMode.NONE


class TapeLossError(FieldsimRuntimeError, ValueError):
    """A Tape's loss that is not one differentiable element (Taichi raises a RuntimeError)."""


def _is_torch(x) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "requires_grad")


def _check_loss(loss):
    from fieldsim.lang.field import Field
    from fieldsim.lang.ndarray import Ndarray
    if _is_torch(loss):  # Taichi's messages
        if loss.numel() != 1:
            raise TapeLossError("The loss of `Tape` must be a tensor only contains one element, got "
                                f"shape {tuple(loss.shape)}")
        if not loss.requires_grad:
            raise TapeLossError("Gradients of loss are not allocated, please set requires_grad=True "
                                "for all tensors that are required by autodiff.")
        return
    if isinstance(loss, Ndarray) and (loss.ndim_el != 0 or int(np.prod(loss.shape)) != 1):
        raise TapeLossError("The loss of `Tape` must be an ndarray with only one element, got "
                            f"{loss!r}")
    if isinstance(loss, Ndarray) and loss.grad is None:
        raise TapeLossError("Gradients of loss are not allocated, please set needs_grad=True for "
                            "all ndarrays that are required by autodiff.")
    if isinstance(loss, Ndarray):
        pass  # Taichi takes an ndarray loss of one element
    elif not isinstance(loss, Field) or loss.shape != () or loss.ndim_el != 0:
        raise TapeLossError(f"the Tape's loss must be a 0-D scalar field (shape=()), got "
                            f"{loss!r}", _user_loc())
    _refuse_component_loss(loss)
    if loss.adjoint is None:
        raise TapeLossError(
            f"the Tape's loss field {loss.ir_name!r} has no gradient: declare it with "
            f"needs_grad=True ({loss.ir_name} = fs.field(..., needs_grad=True)), or call "
            "fs.root.lazy_grad() after declaring the fields", _user_loc())


def _refuse_component_loss(loss):
    # `y.get_scalar_field(i)` of a 0-D vector field passes the shape check but has no gradient
    # of its own; "declare it with needs_grad" would send the user to the wrong place
    from fieldsim.lang.field import ComponentField
    if isinstance(loss, ComponentField):
        raise TapeLossError(
            f"the Tape's loss {loss.ir_name!r} is one component of the vector/matrix field "
            f"{loss.owner.ir_name!r}; a Tape's loss must be a 0-D scalar field: store the component "
            f"into one (loss[None] = {loss.owner.ir_name}[None][{', '.join(map(str, loss.component_indices()))}]) "
            "and give that", _user_loc())


class _CheckerAdapter:
    """Connects the Tape's launches to the access-rule checker (fieldsim.checks): one
    `TapeState.launch` per launch, with the launch's argument values."""

    def __init__(self, validation):
        if validation:
            self.state = TapeState(validation=True, index_ranges=True)
            return
        # a training loop's Tapes repeat the same launches: judged on the first, reused after
        per_thread = runtime.get()._per_thread
        if per_thread.tape_memo is None:
            per_thread.tape_memo = Remembered()
        self.state = RepeatingTapeState(per_thread.tape_memo)

    def launch(self, kernel, ck, values, in_unit=False):
        state = self.state
        analyses = ck.analyses  # made once per compiled kernel (`kernel_check` imports per call)
        check = analyses.check if analyses is not None else kernel_check(ck)
        found = state.launch(ck.ir, kernel.__name__, check, values)
        if not ck.checked and not in_unit:  # a grad_replaced unit's backward is the user's
            refuse_unreplayable(ck.ir)
        run = runner(ck, kernel.__name__, found, state) if state.validation else None
        if run is None and found.kernel_checked:
            ck.checked = True  # its adjoint may be made (a validated run marks it when it passes)
        return run

    def python_write(self, field, idx, loc, what):
        self.state.python_write(field, idx, loc, what)

    def unit(self, name, loc):
        return self.state.unit(name, loc)


def _warn_cut_chains(entries):
    """Warn when a float field without gradients carries values from gradient fields to later
    kernels: the gradient would silently stop there."""
    written_from_grad: dict[int, object] = {}
    # per specialisation (a Tape repeats a few kernels thousands of times): (its reads without
    # a gradient, whether it reads a field with one, the float primal fields it writes
    # without one)
    summaries: dict[int, tuple] = {}
    for e in entries:
        if not isinstance(e, LaunchEntry):
            continue
        summary = summaries.get(id(e.ck))  # the entries keep every ck alive: ids stay unique
        if summary is None:
            reads, writes = field_sets(e.ck)
            summary = summaries[id(e.ck)] = (
                [f for f in reads.values() if f.adjoint is None],
                any(f.adjoint is not None for f in reads.values()),
                [f for f in writes.values()
                 if f.adjoint is None and f.dtype.is_float and f.role == "primal"])
        cut_reads, reads_grad, carriers = summary
        if written_from_grad:
            for f in cut_reads:
                if id(f) in written_from_grad and getattr(f, "qtype", None) is not None:
                    raise FieldsimRuntimeError(
                        f"field {f.ir_name!r} has quantized type {f.qtype} but sits in the middle "
                        f"of a differentiated chain: kernel {e.kernel.__name__!r} reads it after "
                        "an earlier kernel wrote it from values with gradients. Quantized fields "
                        "are not differentiable (Taichi silently drops the gradient there): keep "
                        "that value in a float field", _user_loc())
                if id(f) in written_from_grad:
                    warnings.warn(f"field {f.ir_name!r} has no gradient (needs_grad=False) but sits in "
                                  "the middle of a differentiated chain: kernel "
                                  f"{e.kernel.__name__!r} reads it after an earlier kernel wrote it "
                                  "from values with gradients, so the gradient stops there. Declare "
                                  "it with needs_grad=True.", UserWarning, stacklevel=4)
                    written_from_grad.pop(id(f))
        if reads_grad:
            for f in carriers:
                written_from_grad[id(f)] = f


def field_sets(ck):
    """The fields a compiled kernel reads and writes: (reads, writes), field id -> field."""
    return analyses_of(ck).field_sets


def clear_all_gradients(gradient_type=None):
    """Zero every gradient field of one kind: adjoints (`x.grad`, the default, as in Taichi; a
    Tape clears only these) or duals (`SNodeGradType.DUAL` / "dual")."""
    role = _gradient_role(gradient_type)
    for f in runtime.get().fields:
        if f.role == role and f.storage is not None:
            f.storage.zero()


def _gradient_role(gradient_type) -> str:
    if gradient_type is None:
        return "grad"
    named = {"adjoint": "grad", "grad": "grad", "dual": "dual"}
    # by name: a program may hold SNodeGradType from a second copy of the enums module
    key = str(getattr(gradient_type, "name", gradient_type)).lower()
    if key not in named:
        raise FieldsimRuntimeError(f"clear_all_gradients: gradient_type must be SNodeGradType.ADJOINT or "
                                   f"SNodeGradType.DUAL, got {gradient_type!r}", _user_loc())
    return named[key]


def grad_replaced(fn):
    """Mark a Python function of kernel launches as one unit on the Tape, with a user backward."""

    code = getattr(fn, "__code__", None)
    loc = Loc(code.co_filename, code.co_firstlineno, 0, None, fn.__name__) if code else None

    def wrapper(*args, **kwargs):
        rt = runtime.get()
        tape = rt.tape
        if rt.fwd_mode is not None and not rt.no_grad_depth:
            return _forward_through_custom(wrapper, fn, args, kwargs)
        if tape is None or rt.no_grad_depth:
            return fn(*args, **kwargs)
        tape.record_custom(wrapper, args, kwargs)
        unit = tape.state.unit(fn.__name__, loc) if tape.state is not None else nullcontext()
        tape.unit_depth += 1
        try:
            with unit:  # its launches are checked against what was read before it
                return fn(*args, **kwargs)
        finally:
            tape.unit_depth -= 1

    wrapper.__name__ = fn.__name__
    wrapper.__wrapped__ = fn
    wrapper.grad = None
    wrapper.jvp = None
    return wrapper


def _forward_through_custom(wrapper, fn, args, kwargs):
    """In FwdMode a grad_replaced section runs its user JVP, or is refused."""
    if wrapper.jvp is None:
        raise FieldsimRuntimeError(f"grad_replaced function {fn.__name__!r} has a custom backward but no "
                                   "forward-mode rule: register one with @fs.ad.jvp_for, or call it outside "
                                   "fs.ad.FwdMode", _user_loc())
    rt = runtime.get()
    rt.no_grad_depth += 1  # the primal runs plainly; the user's JVP computes the duals
    try:
        out = fn(*args, **kwargs)
    finally:
        rt.no_grad_depth -= 1
    wrapper.jvp(*args, **kwargs)
    return out


def grad_for(primal):
    """Register the decorated function as the backward of a `grad_replaced` function. As in
    Taichi, a primal that is not a `grad_replaced` function (a plain function, or a kernel, whose
    `.grad` is its own adjoint) is refused with a RuntimeError: replacing a kernel's adjoint
    would silently change every `kernel.grad()` and Tape that uses it."""

    def decorator(fn):
        name = getattr(primal, "__name__", repr(primal))
        loc = _def_loc(fn)
        if not hasattr(primal, "grad"):
            raise FieldsimRuntimeError(
                f"@fs.ad.grad_for({name}): primal function {name!r} must be decorated with "
                "@fs.ad.grad_replaced", loc)
        if primal.grad is not None:
            raise FieldsimRuntimeError(
                f"@fs.ad.grad_for({name}): the primal must be a Python function decorated with "
                f"@fs.ad.grad_replaced, not a kernel ({name!r} already has its adjoint "
                f"`{name}.grad`); wrap the kernel launch in a @fs.ad.grad_replaced function "
                "and register the backward for that", loc)
        primal.grad = fn
        return fn
    return decorator


def _def_loc(fn) -> Loc | None:
    code = getattr(fn, "__code__", None)
    if code is None:
        return None
    line = linecache.getline(code.co_filename, code.co_firstlineno).rstrip("\n")
    return Loc(code.co_filename, code.co_firstlineno, 0, None, fn.__name__, line)


def no_grad(fn):
    """Run without recording on the Tape: no adjoint is made or run for it."""

    def wrapper(*args, **kwargs):
        rt = runtime.get()
        rt.no_grad_depth += 1
        try:
            return fn(*args, **kwargs)
        finally:
            rt.no_grad_depth -= 1

    def placeholder(*args, **kwargs):  # `forward.grad(...)`: a no_grad function has no adjoint
        return None

    wrapper.__name__ = fn.__name__
    wrapper.grad = placeholder
    return wrapper
