"""Launch: fills the ctx words of a compiled kernel (field pointers, arguments, RNG key, error
words, return slot, AD-stack scratch) and runs its tasks in order through a backend.

After each task the error words are read; a set error raises the matching user-facing error
(naming the kernel and the source line) instead of letting a wrong value through.
"""
from __future__ import annotations

import ctypes
import operator
import sys
import threading

import numpy as np

from fieldsim.codegen.llvm import (
    CTX_ARGS,
    CTX_ERR,
    CTX_FIELDS,
    CTX_PRIV,
    CTX_RET,
    CTX_RNG,
    CTX_STACK,
    CTX_STACK_CAPS,
    CTX_STACK_OFFS,
    CTX_STACK_STRIDE,
    CTX_WORDS,
    ERR_ASSERT,
    ERR_INTERRUPTED,
    ERR_OUT_OF_BOUNDS,
    ERR_STACK_OVERFLOW,
    ERR_WORD_STOP,
    ERR_WORDS,
)
from fieldsim.codegen.privatize import NO_COPIES
from fieldsim.errors import (
    ADStackOverflowError,
    FieldsimAssertionError,
    FieldsimRuntimeError,
    KernelIndexRangeError,
)
from fieldsim.ir.intexpr import launch_expr, range_length
from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang.formatting import MAX_ASSERT_ARGS

_EMPTY = np.zeros(0, dtype=np.uint8)


class _Frame:
    """One program's launch buffers (ctx words, field table, arguments, error and return
    words), allocated once and refilled per launch: a time-stepped simulation launches the
    same small kernels thousands of times, and fresh numpy buffers per launch cost more than
    the kernels.

    `direct`: the task functions in order when every task of the program runs on the calling
    thread in one call whatever the arguments (the backend's `direct_function`), the program
    has no AD stacks and no print; such a launch calls them with no per-task scheduling (see
    `Launcher.launch`). None: the general path."""

    def __init__(self, program, backend=None):
        info = program.info
        self.busy = threading.Lock()
        self.fields_key = None
        self.fields = tuple(info.fields)
        self.ptrs = np.zeros(max(len(info.fields), 1), dtype=np.uint64)
        self.argbuf = np.zeros(max(len(info.params), 1), dtype=np.int64)
        self.argf = self.argbuf.view(np.float64)
        self.err = np.zeros(ERR_WORDS + MAX_ASSERT_ARGS, dtype=np.int64)
        # err[0] read through ctypes: a few times cheaper than numpy indexing, once per task
        self.err_code = ctypes.c_int64.from_buffer(self.err)
        from fieldsim.lang.returns import flat_dtypes
        self.ret = np.zeros(max(len(flat_dtypes(info.ret)), 1), dtype=np.int64)
        self.ctx = np.zeros(CTX_WORDS, dtype=np.uint64)
        self.ctx[CTX_FIELDS] = self.ptrs.ctypes.data
        self.ctx[CTX_ARGS] = self.argbuf.ctypes.data
        self.ctx[CTX_ERR] = self.err.ctypes.data
        self.ctx[CTX_RET] = self.ret.ctypes.data
        self.ctx[CTX_PRIV] = NO_COPIES.ctypes.data  # see codegen.privatize
        self.ctx_ptr = self.ctx.ctypes.data
        self.float_params = [p.dtype.is_float for p in info.params]
        # (position, is float) per argument: one loop with no zip per launch
        self.params = tuple(enumerate(self.float_params))
        self.stack_arrays = None
        self.direct = None
        direct_function = getattr(backend, "direct_function", None)
        if direct_function is not None and not info.stacks and not info.prints:
            fns = [direct_function(program, n) for n in range(len(info.tasks))]
            if all(fn is not None for fn in fns):
                self.direct = tuple(fns)

    def fill(self, info, args, rng_key):
        if list(map(_STORAGE, self.fields)) != self.fields_key:
            self.ptrs[:len(self.fields)] = [_field_ptr(f, info.name) for f in self.fields]
            self.fields_key = list(map(_STORAGE, self.fields))
        argf, argbuf = self.argf, self.argbuf
        for (n, is_float), v in zip(self.params, args):
            if is_float:
                argf[n] = v  # numpy converts as float(v)
            else:  # a u64 above 2**63 travels as its two's-complement bit pattern
                if type(v) is not int:
                    v = int(v)
                argbuf[n] = v - (1 << 64) if v >= (1 << 63) else v
        self.ctx[CTX_RNG] = rng_key & 0xFFFFFFFFFFFFFFFF
        if info.ret is not None:
            self.ret[:] = 0


_STORAGE = operator.attrgetter("storage")


class Launcher:
    """Launches programs on a backend. The AD-stack scratch buffer belongs to the launching
    thread: launches from several Python threads never share (or free) each other's stacks,
    and a buffer only grows between launches of its own thread."""

    def __init__(self, backend):
        self.backend = backend
        self._local = threading.local()

    @property
    def scratch(self):
        return getattr(self._local, "scratch", _EMPTY)

    @scratch.setter
    def scratch(self, value):
        self._local.scratch = value

    def launch(self, program, args, rng_key):
        info = program.info
        frame = program.frame
        # busy.acquire(False) is an atomic test-and-set: two threads never share a frame; a
        # launch that finds the frame taken (another Python thread's) makes its own.
        if frame is None or not frame.busy.acquire(False):
            frame = _Frame(program, self.backend)
            frame.busy.acquire()
            if program.frame is None:
                program.frame = frame
        try:
            frame.fill(info, args, rng_key)
            direct = frame.direct
            if direct is not None:  # every task on this thread, one call each
                ctx_ptr, err_code = frame.ctx_ptr, frame.err_code
                for fn in direct:
                    fn(ctx_ptr, 0, 1)
                    if err_code.value:
                        raise_frame_error(info, frame, None)
            else:
                self._run_tasks(program, info, frame, args)
            self.backend.rt.stats["launches"] += 1
            if info.ret is None:
                return None
            from fieldsim.lang.returns import rebuild
            return rebuild(info.ret, frame.ret)
        finally:
            frame.busy.release()

    def _run_tasks(self, program, info, frame, args):
        """The general path: AD stacks sized from the arguments, print flushed, each task
        scheduled by the backend (threads, Ctrl-C) from its size for these arguments."""
        frame.err[:ERR_WORDS] = 0  # the stop word too (a Ctrl-C'd launch of this frame set it)
        if info.prints:  # the kernel's printf output must follow what Python printed
            sys.stdout.flush()
        caps = self.set_stacks(frame, info, args, self.backend.rt.ad_stack_size)
        run_task, ctx_ptr, err_code = self.backend.run_task, frame.ctx_ptr, frame.err_code
        for n, task in enumerate(info.tasks):
            run_task(program, n, ctx_ptr, task_size_hint(task, args))
            if err_code.value:
                raise_frame_error(info, frame, caps)

    def set_stacks(self, frame, info, args, default):
        """Point the frame's stack words at this launch's AD-stack layout; returns capacities."""
        if not info.stacks:
            return np.zeros(1, np.int64)
        caps, offs, stride = self.stack_layout(info, args, default)
        frame.stack_arrays = (caps, offs)  # kept alive while the kernel reads them
        ctx = frame.ctx
        ctx[CTX_STACK] = self.scratch.ctypes.data
        ctx[CTX_STACK_STRIDE] = stride
        ctx[CTX_STACK_OFFS] = offs.ctypes.data
        ctx[CTX_STACK_CAPS] = caps.ctypes.data
        return caps

    def stack_layout(self, info, args, default):
        caps, offs, stride = stack_caps(info, args, default)
        need = stride * self.backend.max_workers()
        if self.scratch.size < need:
            self.scratch = np.zeros(need, dtype=np.uint8)
        return caps, offs, stride


_NO_STACKS = (np.zeros(1, np.int64), np.zeros(1, np.int64), 0)  # read only


def stack_caps(info, args, default):
    """(capacities, byte offsets, bytes per worker) of a launch's AD stacks, from its args."""
    if not info.stacks:
        return _NO_STACKS
    caps = np.array([max(1, int(f.evaluate(list(args), default))) for f in info.stacks], dtype=np.int64)
    sizes = caps * 8
    offs = np.concatenate([[0], np.cumsum(sizes)[:-1]]).astype(np.int64)
    return caps, offs, int(sizes.sum())


def _field_ptr(field, kernel_name):
    if field.storage is None:
        raise FieldsimRuntimeError(f"kernel {kernel_name!r} uses field {field.ir_name!r}, which "
                                   f"has no storage: {_why_no_storage(field)}")
    return field.storage.ptr


def _why_no_storage(field) -> str:
    if getattr(field, "_destroyed", False):
        return "its SNodeTree was destroyed (FieldsBuilder.finalize().destroy())"
    from fieldsim.lang import runtime
    if getattr(field, "generation", None) != runtime.get().generation:
        return "it belongs to an earlier fs.init(), which dropped its fields"
    return "it is not placed yet (fs.root.dense(...).place(...), or give shape=)"


def size_hint(task: Stmt, args):
    """The iteration count of a task when its bounds are known at launch, else None (as
    `trip_count`)."""
    if task.op != Op.FOR:
        return 1
    return range_length(launch_expr(task.args[0]), launch_expr(task.args[1]), args)


def task_size_hint(task, args):
    """`size_hint` of a compiled task (a `TaskInfo`), its bounds' launch expressions read
    from the IR once and kept on the task, so they die with the kernel (the count itself where
    they are constant)."""
    if task.stmt.op != Op.FOR:
        return 1
    bounds = task.bounds
    if bounds is None:
        lo, hi = launch_expr(task.stmt.args[0]), launch_expr(task.stmt.args[1])
        # constant bounds (most tasks): the count itself, computed once
        bounds = task.bounds = (range_length(lo, hi, ()),) \
            if _constant(lo) and _constant(hi) else (lo, hi)
    if len(bounds) == 1:
        return bounds[0]
    return range_length(bounds[0], bounds[1], args)


def _constant(e) -> bool:
    return e is not None and (e[0] == "const" or (e[0] != "arg" and all(map(_constant, e[1:]))))


def request_stop(ctx_ptr: int):
    """Set a running launch's stop word: its `while` loops return at their next iteration."""
    err = ctypes.c_uint64.from_address(ctx_ptr + 8 * CTX_ERR).value
    ctypes.c_int64.from_address(err + 8 * ERR_WORD_STOP).value = 1


def raise_frame_error(info, frame, caps):
    """Raise the error a task of this launch reported, after clearing the frame's error
    words for its next launch (the direct path clears them only here)."""
    err = frame.err.copy()
    frame.err[:] = 0
    raise_kernel_error(info, err, caps if caps is not None else np.zeros(1, np.int64))


def raise_kernel_error(info, err, caps):
    code, which, extra = int(err[0]), int(err[1]), int(err[2])
    if code == ERR_INTERRUPTED:
        raise KeyboardInterrupt(f"kernel {info.name!r} was interrupted")
    if code == ERR_STACK_OVERFLOW:
        stack = info.stack_infos[0] if info.stack_infos else None
        for s in info.stack_infos:
            if s.capacity_key == which:
                stack = s
        formula = info.stacks[which] if which < len(info.stacks) else None
        loc = getattr(formula, "loc", None) or (stack.loc if stack else None)
        raise ADStackOverflowError(
            f"kernel {info.name!r}: the AD stack for {stack.name if stack else 'a loop-carried value'} "
            f"overflowed its {int(caps[which])} entries in the adjoint (a loop ran more iterations than "
            "the stack was sized for). Raise fs.init(ad_stack_size=...) (its size for loops whose trip "
            "count is not known at launch), or give the loop bounds from constants or kernel arguments "
            "so the stack is sized from them.", loc)
    if code == ERR_OUT_OF_BOUNDS:
        name, loc = info.accesses[which][:2]
        offset = info.accesses[which][2] if len(info.accesses[which]) > 2 else None
        note = (f" (the field has offset {offset}; the index shown is the user's index minus "
                "the offset)") if offset else ""
        holder = info.accesses[which][3] if len(info.accesses[which]) > 3 else None
        note += f" ({holder})" if holder else ""
        kind = info.accesses[which][4] if len(info.accesses[which]) > 4 else "field"
        # "Out of bound access": Taichi's words for its debug bounds check, which programs match
        raise KernelIndexRangeError(f"kernel {info.name!r}: Out of bound access: index {extra} is "
                                    f"out of range for {kind} {name!r}{note}", loc)
    if code == ERR_ASSERT:
        msg, loc = info.asserts[which]
        if isinstance(msg, tuple):  # a formatted message: its values follow the error words
            msg, kinds = msg
            words = err[ERR_WORDS:ERR_WORDS + len(kinds)]
            values = [float(w.view(np.float64)) if k == "f" else int(w.view(np.uint64)) if k == "u"
                      else int(w) for w, k in zip(words, kinds)]
            msg = msg % tuple(values) if len(values) == len(kinds) else msg.replace("%%", "%")
        raise FieldsimAssertionError(f"kernel {info.name!r}: assertion failed: {msg}", loc)
    raise FieldsimRuntimeError(f"kernel {info.name!r} reported error code {code}")

