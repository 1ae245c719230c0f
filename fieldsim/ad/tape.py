"""The Tape (Taichi 1.7 semantics plus Warp's `backward`), `grad_replaced`/`grad_for`, `no_grad`.

On entry a Tape zeroes every gradient (when asked) and sets `loss[None] = 0`; while active it
records each kernel launch with its arguments and RNG key, each `grad_replaced` call, and each
Python-scope write (`x[i] = v`, `fill`, `from_numpy`), checking the global data access rules
before anything runs. On exit it seeds `loss.grad[None] = 1` and replays the adjoints in reverse.
A Tape whose body raised runs no backward.
"""
from __future__ import annotations

import linecache
import os
import sys
import warnings
from contextlib import nullcontext

import numpy as np

from fieldsim.errors import FieldsimError, FieldsimRuntimeError, Loc
from fieldsim.ir.ir import GLOBAL_WRITE, Op, walk
from fieldsim.lang import runtime


class _Launch:
    def __init__(self, kernel, args, kwargs, ck):
        self.kernel, self.args, self.kwargs, self.ck = kernel, args, kwargs, ck
        self.rng_key = None

    def backward(self):
        self.kernel.launch_adjoint(self.args, self.kwargs, self.rng_key)


class _Custom:
    def __init__(self, fn, args, kwargs):
        self.fn, self.args, self.kwargs = fn, args, kwargs

    def backward(self):
        grad = getattr(self.fn, "grad", None)
        if grad is None:
            raise FieldsimError(f"grad_replaced function {self.fn.__name__!r} has no backward: "
                                "register one with @fs.ad.grad_for")
        grad(*self.args, **self.kwargs)


class _PythonWrite:
    """A Python-scope write: its adjoint consumes the written elements' gradient."""

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
    def __init__(self, loss=None, clear_gradients=True, validation=False, grad_check=None):
        self.loss, self.clear_gradients = loss, clear_gradients
        self.validation, self.grad_check = validation, grad_check
        self.entries: list = []
        self.state = None  # its _CheckerAdapter from __enter__; None: a Recorder that checks nothing
        self.unit_depth = 0
        self.done = False
        self.start_counter = None  # the launch counter at __enter__ (replays start there)

    # ---- recording --------------------------------------------------------------------------------
    def __enter__(self):
        rt = runtime.get()
        if rt.tape is not None:
            raise FieldsimError("Tapes cannot be nested")
        if self.loss is not None:
            _check_loss(self.loss)
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

    def __exit__(self, exc_type, exc, tb):
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
        return [(e.kernel, e.args) if isinstance(e, _Launch) else (e.fn, e.args)
                for e in self.entries if isinstance(e, (_Launch, _Custom))]

    @property
    def modes(self) -> list:
        """The autodiff mode each recorded call ran in (Taichi's `Tape.modes`)."""
        return [getattr(fn, "autodiff_mode", _mode_none()) for fn, _ in self.calls]

    def _restore_modes(self):
        """Kernels leave a validating Tape in AutodiffMode.NONE, as in Taichi."""
        for e in self.entries:
            if isinstance(e, _Launch):
                e.kernel.autodiff_mode = _mode_none()

    def on_launch(self, kernel, ck, args, kwargs, values):
        """Check a launch before it runs and record it (a launch inside a `grad_replaced` unit
        is checked, not recorded). Returns None, or under validation the callable that runs
        the launch checked per element (`checks.validation.Runner`)."""
        run = self.state.launch(kernel, ck, values) if self.state is not None else None
        if self.unit_depth:
            return run
        if self.validation:
            from fieldsim.lang.enums import AutodiffMode
            kernel.autodiff_mode = AutodiffMode.VALIDATION
        entry = _Launch(kernel, args, kwargs, ck)
        self.entries.append(entry)
        if run is not None:
            run.undo = lambda: self.entries.remove(entry)
        return run

    def set_last_rng_key(self, key):
        if self.entries and isinstance(self.entries[-1], _Launch) and self.entries[-1].rng_key is None:
            self.entries[-1].rng_key = key

    def record_python_write(self, field, idx, what):
        if self.state is not None:
            self.state.python_write(field, idx, _user_loc(), what)
        if self.unit_depth:
            return
        self.entries.append(_PythonWrite(field, idx))

    def record_custom(self, fn, args, kwargs):
        if self.unit_depth:  # a grad_replaced call inside another: the outer backward covers it
            return
        self.entries.append(_Custom(fn, args, kwargs))

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
                raise FieldsimError(f"loss field {loss.ir_name!r} has no gradient: declare it with "
                                    "needs_grad=True")
            loss.adjoint.storage.fill(1)
        for f, seed in (grads or {}).items():
            target = f.adjoint if f.adjoint is not None else None
            if target is None:
                raise FieldsimError(f"field {f.ir_name!r} has no gradient to seed")
            target.storage.from_numpy(np.broadcast_to(np.asarray(seed, dtype=f.dtype.np),
                                                      f.storage_shape).copy())
        _warn_cut_chains(self.entries)
        rt = runtime.get()
        saved, rt.tape = rt.tape, None
        try:
            for entry in reversed(self.entries):
                entry.backward()
        finally:
            rt.tape = saved
        self.done = True

    def zero(self):
        clear_all_gradients()

    def reset(self):
        self.entries.clear()
        self.state = _CheckerAdapter(self.validation)

    def grad(self):
        return self.backward(self.loss)

    def visualize(self, path="tape.dot"):
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
        raise ValueError(f"the Tape's loss must be a 0-D scalar field (shape=()), got {loss!r}")
    if loss.adjoint is None:
        raise RuntimeError(f"the Tape's loss field {loss.ir_name!r} has no gradient: declare it "
                           "with needs_grad=True (or call fs.root.lazy_grad())")


class _CheckerAdapter:
    """Connects the Tape's launches to the access-rule checker (fieldsim.checks): one
    `TapeState.launch` per launch, with the launch's argument values."""

    def __init__(self, validation):
        from fieldsim.checks.tape_rules import TapeState
        from fieldsim.checks.validation import runner
        from fieldsim.lang.kernel import kernel_check
        self.state = TapeState(validation=validation)
        self._runner, self._kernel_check = runner, kernel_check  # imported once, not per launch

    def launch(self, kernel, ck, values):
        found = self.state.launch(ck.ir, kernel.__name__, self._kernel_check(ck), list(values))
        run = self._runner(ck, kernel.__name__, found, self.state)
        if run is None and found.kernel_checked:
            ck.checked = True  # its adjoint may be made (a validated run marks it when it passes)
        return run

    def python_write(self, field, idx, loc, what):
        self.state.python_write(field, idx, loc, what)

    def unit(self, name, loc):
        return self.state.unit(name, loc)


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _user_loc() -> Loc | None:
    """The innermost caller outside fieldsim (walking frames: `inspect.stack()` would read
    the source of every frame on each Python-scope write)."""
    frame = sys._getframe(2)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not os.path.abspath(filename).startswith(_PACKAGE):
            line = linecache.getline(filename, frame.f_lineno).rstrip("\n")
            return Loc(filename, frame.f_lineno, 0, None, frame.f_code.co_name, line)
        frame = frame.f_back
    return None


def _warn_cut_chains(entries):
    """Warn when a float field without gradients carries values from gradient fields to later
    kernels: the gradient would silently stop there."""
    written_from_grad: dict[int, object] = {}
    for e in entries:
        if not isinstance(e, _Launch):
            continue
        reads, writes = field_sets(e.ck)
        for f in reads.values():
            if id(f) in written_from_grad and f.adjoint is None:
                warnings.warn(f"field {f.ir_name!r} has no gradient (needs_grad=False) but sits in the "
                              f"middle of a differentiated chain: kernel {e.kernel.__name__!r} reads "
                              "it after an earlier kernel wrote it from values with gradients, so the "
                              "gradient stops there. Declare it with needs_grad=True.", UserWarning,
                              stacklevel=4)
                written_from_grad.pop(id(f))
        if any(f.adjoint is not None for f in reads.values()):
            for f in writes.values():
                if f.adjoint is None and f.dtype.is_float and f.role == "primal":
                    written_from_grad[id(f)] = f


def field_sets(ck):
    """The fields a compiled kernel reads and writes, computed once per CompiledKernel."""
    cached = ck.field_sets
    if cached is None:
        reads, writes = {}, {}
        for s in walk(ck.ir.body):
            if s.op == Op.LOAD:
                reads[id(s.field)] = s.field
            elif s.op in GLOBAL_WRITE:
                writes[id(s.field)] = s.field
        cached = ck.field_sets = (reads, writes)
    return cached


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
        raise FieldsimError(f"clear_all_gradients: gradient_type must be SNodeGradType.ADJOINT or "
                            f"SNodeGradType.DUAL, got {gradient_type!r}")
    return named[key]


def grad_replaced(fn):
    """Mark a Python function of kernel launches as one unit on the Tape, with a user backward."""

    def wrapper(*args, **kwargs):
        rt = runtime.get()
        tape = rt.tape
        if rt.fwd_mode is not None and not rt.no_grad_depth:
            return _forward_through_custom(wrapper, fn, args, kwargs)
        if tape is None or rt.no_grad_depth:
            return fn(*args, **kwargs)
        tape.record_custom(wrapper, args, kwargs)
        code = getattr(fn, "__code__", None)
        loc = Loc(code.co_filename, code.co_firstlineno, 0, None, fn.__name__) if code else None
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
        raise FieldsimError(f"grad_replaced function {fn.__name__!r} has a custom backward but no "
                            "forward-mode rule: register one with @fs.ad.jvp_for, or call it outside "
                            "fs.ad.FwdMode")
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
