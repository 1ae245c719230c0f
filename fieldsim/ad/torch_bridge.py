"""`fs.ad.torch_function`: a Python function that launches fieldsim kernels, as a torch op.

Takes `fn(*args)` that passes torch tensors to kernels' `fs.types.ndarray()` arguments (and may
copy them into and out of fields with `field.from_torch` / `field.to_torch`) and returns a
tensor or a tuple of tensors. Returns a callable whose calls are `torch.autograd.Function`
applications: the forward runs `fn` under a fieldsim Tape (without a loss) on the tensors
themselves (zero copy); the backward seeds the outputs' gradients and replays the Tape's
adjoints, returning the float tensor inputs' gradients.

Guarantees:

* Every float tensor a kernel touches inside `fn` gets its own gradient buffer (one per memory:
  two tensors viewing the same memory share it; partly overlapping views are refused), owned by
  that call, so two calls before one backward do not mix (re-entrant), and `grad_outputs` are
  only read (copied into the buffers), never aliased or zeroed.
* An input passed twice gets its gradient once (not double-counted by torch's accumulation).
* A tensor input or output modified in place after the forward makes backward raise (torch's
  version counters, through `save_for_backward`). Fields the call's kernels use are snapshot at
  the end of its forward and put back around its backward (then restored), so a later call that
  overwrites them before this backward does not change this call's gradients. Their `.grad`s
  accumulate across backwards (as torch's `.grad`): each backward adds its call's part.
* Only fieldsim kernels (and `from_torch`/`to_torch`) are differentiated: torch operations inside
  `fn` are not (do them outside `fn`, where torch's autograd sees them).
"""
from __future__ import annotations

import functools
import itertools

import numpy as np

from fieldsim.errors import FieldsimError
from fieldsim.lang import interop, runtime

_CALL_IDS = itertools.count(1)


class BridgeError(FieldsimError):
    """A torch_function / jax_function call that cannot be differentiated as asked."""


class _BufferEntry:
    """A tape entry for `to_torch`/`from_torch` inside a bridge call: moves gradient between a
    field's `.grad` and a tensor's buffer."""

    def __init__(self, recording, field, key, direction):
        self.recording, self.field, self.key, self.direction = recording, field, key, direction

    def backward(self):
        g = self.field.adjoint
        buf = self.recording.buffers.get(self.key)
        if g is None or buf is None:
            return
        storage = g.storage
        host = getattr(storage, "array", None)  # None: the gradient lives in device memory
        arr = host if host is not None else storage.to_numpy()
        if self.direction == "to_torch":  # tensor = copy(field): field.grad += tensor's gradient
            arr += buf.reshape(arr.shape).astype(arr.dtype, copy=False)
            if host is None:
                storage.from_numpy(arr)
        else:  # field = copy(tensor): tensor's gradient += field.grad
            buf += arr.reshape(buf.shape).astype(buf.dtype, copy=False)


class Recording:
    """One forward call of a bridged function: its Tape and its gradient buffers."""

    def __init__(self, fn):
        self.fn = fn
        self.id = next(_CALL_IDS)
        self.buffers: dict = {}   # (address, shape, dtype) -> numpy gradient buffer
        self.ranges: dict = {}    # key -> (start, end) of the tensor's memory
        self.keep: list = []      # tensors whose memory keys the buffers
        self.tape = None
        self.snapshots: dict = {}  # field uid -> (field, its values at the end of the forward)

    # ---- the gradient provider (interop calls these while this call records or replays) ----
    @staticmethod
    def key(arr: np.ndarray):
        return (arr.ctypes.data, arr.shape, arr.dtype.str)

    def grad_for(self, x, arr: np.ndarray):
        if arr.dtype.kind != "f":
            return None
        return self.buffer(self.key(arr), arr, x)

    def buffer(self, key, arr, owner):
        buf = self.buffers.get(key)
        if buf is not None:
            return buf
        start = arr.ctypes.data
        end = start + arr.nbytes
        for other, (s, e) in self.ranges.items():
            if s < end and start < e:
                raise BridgeError("fieldsim torch_function: two tensors passed to kernels overlap "
                                  f"in memory with different shapes or dtypes ({key[1:]} vs "
                                  f"{other[1:]}); pass one view of the memory (e.g. reshape "
                                  "inside the kernel), or .clone() one of them")
        buf = self.buffers[key] = np.zeros(arr.shape, arr.dtype)
        self.ranges[key] = (start, end)
        self.keep.append(owner)
        return buf

    def on_to_torch(self, field, tensor):
        if field.dtype.is_float and field.adjoint is not None:
            arr = tensor.numpy()
            self.buffer(self.key(arr), arr, tensor)
            self._entry(_BufferEntry(self, field, self.key(arr), "to_torch"))

    def on_from_torch(self, field, tensor):
        if field.dtype.is_float and tensor.is_floating_point():
            arr = interop.host_view(tensor, "from_torch")
            self.buffer(self.key(arr), arr, tensor)
            self._entry(_BufferEntry(self, field, self.key(arr), "from_torch"))

    def _entry(self, entry):
        tape = runtime.get().tape
        if tape is self.tape:
            tape.entries.append(entry)

    # ---- forward and backward -------------------------------------------------------------------
    def forward(self, args):
        from fieldsim.ad.tape import LaunchEntry, Tape, field_sets
        rt = runtime.get()
        if rt.tape is not None:
            raise BridgeError(f"{_name(self.fn)}: called inside a fieldsim Tape; a bridged "
                              "function records its own Tape")
        self.tape = Tape(clear_gradients=False)
        interop._grad_provider.append(self)
        try:
            with self.tape:
                out = self.fn(*args)
        finally:
            interop._grad_provider.pop()
        # the fields' values at the end of this call: the replay reads them, and a later call
        # may overwrite them before this backward (snapshot, restored around the replay)
        self.snapshots = {f.uid: (f, f.storage.to_numpy()) for f in self._fields(field_sets, LaunchEntry)}
        return out

    def _fields(self, field_sets, launch_type):
        """The fields (not arrays) this call's Tape reads or writes."""
        found = {}
        for entry in self.tape.entries:
            parts = field_sets(entry.ck) if isinstance(entry, launch_type) else \
                [{0: getattr(entry, "field", None)}]
            for part in parts:
                for f in part.values():
                    f = f.primal if f is not None and f.role != "primal" and f.primal is not None else f
                    if f is not None and getattr(f, "uid", -1) >= 0 and f.storage is not None:
                        found[f.uid] = f
        return found.values()

    def _recache_views(self):
        """Put this call's launch views (and their tensors' proxies) back in the caches the
        replay looks them up in, so that it reuses their access checks instead of redoing them
        (later calls may have evicted them: those caches are small)."""
        from fieldsim.ad.tape import LaunchEntry
        from fieldsim.lang import ndarray as nd
        for entry in self.tape.entries:
            view = entry.ck if isinstance(entry, LaunchEntry) else None
            proxies = getattr(view, "proxies", None)
            if not proxies:
                continue
            base = next((c for c in entry.kernel._cache.values() if c.program is view.program
                         and c is not view), None)
            if base is None or getattr(base, "nd_views", None) is None:
                continue
            for p in proxies:
                key = getattr(p, "cache_key", None)
                if key is not None:
                    nd._TENSORS[key] = p
            base.nd_views[tuple((id(p), p.shape) for p in proxies)] = view

    def backward(self, seeds, inputs):
        """`seeds`: [(output array, its incoming gradient as numpy)]; `inputs`: the input arrays
        (None for non-float inputs). Returns a numpy gradient (or None) per input."""
        for buf in self.buffers.values():
            buf.fill(0)
        current, grads_before = self._swap_in_snapshots()
        for arr, g in seeds:
            buf = self.buffer(self.key(arr), arr, arr)
            buf += g.reshape(buf.shape).astype(buf.dtype, copy=False)  # reads g, never aliases it
        self._recache_views()
        interop._grad_provider.append(self)
        try:
            self.tape.backward()
        finally:
            interop._grad_provider.pop()
            self._swap_out_snapshots(current, grads_before)
        return self._input_grads(inputs)

    def _swap_in_snapshots(self):
        """Put this call's field values (from the end of its forward) in place and zero their
        gradients, so the replay starts from zero. Returns (values now there, gradients now
        there) by field uid, for `_swap_out_snapshots`."""
        current, grads_before = {}, {}
        for uid, (f, values) in self.snapshots.items():
            if f.storage is None:
                raise BridgeError(f"{_name(self.fn)}: field {f.ir_name!r} is gone (fs.init was "
                                  "called after the forward)")
            current[uid] = f.storage.to_numpy()
            f.storage.from_numpy(values)
            if f.adjoint is not None:
                grads_before[uid] = f.adjoint.storage.to_numpy()
                f.adjoint.storage.zero()
        return current, grads_before

    def _swap_out_snapshots(self, current, grads_before):
        """Put back the values `_swap_in_snapshots` found; add back the gradients it found to
        the replay's (field gradients accumulate, as torch's)."""
        for uid, values in current.items():
            self.snapshots[uid][0].storage.from_numpy(values)
        for uid, before in grads_before.items():
            g = self.snapshots[uid][0].adjoint.storage
            g.from_numpy(g.to_numpy() + before)

    def _input_grads(self, inputs):
        """Each input's gradient buffer (a copy); zeros for an input no kernel touched, and for
        the second pass of an input passed twice (its gradient counts once)."""
        grads, seen = [], set()
        for arr in inputs:
            if arr is None:
                grads.append(None)
                continue
            k = self.key(arr)
            buf = self.buffers.get(k)
            if buf is None or k in seen:
                grads.append(np.zeros(arr.shape, arr.dtype))
            else:
                grads.append(buf.copy())
            seen.add(k)
        return grads


def _name(fn):
    return f"torch_function {getattr(fn, '__qualname__', fn)!r}"


def torch_function(fn=None):
    """Decorator: `fn` as a differentiable torch op (see the module docstring)."""
    if fn is None:
        return torch_function
    import torch

    class _Function(torch.autograd.Function):
        @staticmethod
        def forward(ctx, *args):
            rec = Recording(fn)
            out = rec.forward(args)
            single = isinstance(out, torch.Tensor)
            outs = (out,) if single else tuple(out)
            if not all(isinstance(o, torch.Tensor) for o in outs):
                raise BridgeError(f"{_name(fn)}: must return a torch tensor or a tuple of tensors")
            rec.out_views = [interop.host_view(o, "output") for o in outs]
            # a returned input would alias it: return a copy (torch needs distinct outputs); its
            # seed still goes to the input's buffer (out_views), so the identity is kept
            outs = tuple(o.clone() if any(o is a for a in args) else o for o in outs)
            ctx.rec, ctx.single = rec, single
            ctx.n_in = len(args)
            ctx.tensor_pos = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]
            # torch's version counters: backward refuses inputs/outputs modified in place
            ctx.save_for_backward(*[args[i] for i in ctx.tensor_pos], *outs)
            ctx.mark_non_differentiable(*[o for o in outs if not o.is_floating_point()])
            return outs[0] if single else outs

        @staticmethod
        def backward(ctx, *grad_outputs):
            saved = ctx.saved_tensors  # raises if an input or output was modified in place
            rec = ctx.rec
            tensors = saved[:len(ctx.tensor_pos)]
            inputs = [None] * ctx.n_in
            for pos, t in zip(ctx.tensor_pos, tensors):
                if t.is_floating_point() and t.device.type == "cpu":
                    inputs[pos] = interop.host_view(t, "input")
            seeds = [(view, g.detach().cpu().numpy()) for view, g in zip(rec.out_views, grad_outputs)
                     if g is not None and view.dtype.kind == "f"]
            grads = rec.backward(seeds, inputs)
            return tuple(None if g is None else torch.from_numpy(g) for g in grads)

    @functools.wraps(fn)
    def wrapper(*args):
        return _Function.apply(*args)

    wrapper.autograd_function = _Function
    return wrapper
