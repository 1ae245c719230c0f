"""`fs.ad.checkpoint(step, n_steps, every=k, state=[...])`: a long time-stepped simulation that keeps
only its current state plus every k-th snapshot, and recomputes the rest in the backward pass.

Also the shared machinery of the checking tools (`fs.ad.gradcheck`, `fs.ad.jacobian`):

* `Snapshot(fields)`: numpy copies of fields' data, taken and put back at the storage level, so
  nothing is recorded on an active Tape;
* `data_fields()`: every live primal (and hidden) field of the runtime, i.e. the program state;
* `Rewind()`: a `Snapshot` of that state plus the launch counter, put back by `reset()`;
* `Recorder`: a Tape-like recording without access-rule checks that keeps, for each recorded
  entry, a copy of the data it touches, either just before it runs (`when="pre"`) or just after
  (`when="post"`); `counters[k]` is the launch counter before entry k, so `run_forward(entry,
  counter)` re-runs it with the same random numbers (`fs.random` is keyed on the counter).

Contract of `checkpoint` (see its docstring for the user-facing version): the gradient equals the
one a Tape storing every step would give, because each launch's adjoint runs on a copy of exactly
the field values that launch saw in the forward pass, and the gradients flow in place through the
`.grad` fields across steps and segments, as they do on a Tape. A value carried between steps
outside `state` would break it (the recomputation would read its end-of-forward value): the
forward follows the accesses element by element (`fieldsim.ad.carried`) and refuses one.
"""
from __future__ import annotations

import weakref

from fieldsim.ad.carried import CarriedReads
from fieldsim.ad.tape import CustomEntry, LaunchEntry, Tape, field_sets, grad_replaced
from fieldsim.errors import FieldsimRuntimeError
from fieldsim.ir.ir import Op, walk
from fieldsim.lang import runtime
from fieldsim.lang.field import Field, watch_python_reads
from fieldsim.lang.naming import user_loc

__all__ = ["CheckpointInfo", "Recorder", "Rewind", "Snapshot", "checkpoint", "data_fields",
           "run_forward"]

_DATA_ROLES = ("primal", "hidden")


# ---- state copies ------------------------------------------------------------------------------
def is_data(f) -> bool:
    return getattr(f, "role", "primal") in _DATA_ROLES


def data_fields() -> list:
    """Every live field holding program state (primal and hidden fields; no grad/dual twins)."""
    return [f for f in runtime.get().fields if is_data(f) and f.storage is not None
            and f.generation == runtime.get().generation]


def grad_fields(fields) -> list:
    return [f.adjoint for f in fields if f.adjoint is not None and f.adjoint.storage is not None]


class Snapshot:
    """Copies of some fields' data; `restore()` puts them back. Never recorded on a Tape.
    `arrays` (field id -> array) supplies copies already taken, shared rather than copied."""

    def __init__(self, fields, arrays=None):
        seen, self.data = set(), []
        for f in fields:
            if id(f) not in seen:
                seen.add(id(f))
                arr = arrays.get(id(f)) if arrays else None
                self.data.append((f, f.storage.to_numpy() if arr is None else arr))

    def restore(self):
        for f, arr in self.data:
            f.storage.from_numpy(arr)

    @property
    def nbytes(self) -> int:
        return sum(a.nbytes for _, a in self.data)

    def __getitem__(self, f):
        for g, a in self.data:
            if g is f:
                return a
        raise FieldsimRuntimeError(f"field {f.ir_name!r} is not in this copy of the program state (only "
                                   "live primal fields are: not a .grad/.dual twin, nor a field from an "
                                   "earlier fs.init())", user_loc())


class Rewind:
    """A `Snapshot` of `fields` (default: every data field) and the launch counter (`counter`, or
    the current one); `reset()` puts both back, so a re-run draws the same `fs.random` numbers.
    As a context manager it refuses to start under a Tape or FwdMode (`what` names the caller)
    and resets on exit."""

    def __init__(self, fields=None, counter=None, what="this check"):
        self.what = what
        self.snapshot = Snapshot(data_fields() if fields is None else fields)
        self.counter = runtime.get().launch_counter if counter is None else counter

    def reset(self):
        self.snapshot.restore()
        runtime.get().launch_counter = self.counter

    def __getitem__(self, f):
        return self.snapshot[f]

    def __enter__(self):
        rt = runtime.get()
        if rt.tape is not None or rt.fwd_mode is not None:
            raise FieldsimRuntimeError(f"{self.what} must be called outside a Tape and FwdMode", user_loc())
        return self

    def __exit__(self, *exc):
        self.reset()
        return False


_FIELDS_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def kernel_fields(ck):
    """(reads, writes) of a compiled kernel: dicts id -> field, grad/dual fields excluded."""
    got = _FIELDS_CACHE.get(ck)
    if got is None:
        got = _FIELDS_CACHE[ck] = tuple({k: f for k, f in found.items() if is_data(f)}
                                        for found in field_sets(ck))
    return got


def atomic_kinds(ck) -> dict:
    """field id -> atomic kind ("add", ...) for the fields a kernel writes only through atomics."""
    kinds, plain = {}, set()
    for s in walk(ck.ir.body):
        if s.op == Op.ATOMIC:
            kinds.setdefault(id(s.field), s.attr[1])
        elif s.op == Op.STORE:
            plain.add(id(s.field))
    return {k: v for k, v in kinds.items() if k not in plain}


def touched_fields(entry) -> list:
    """The data fields a recorded entry may read or write, known before it runs (every data
    field for a grad_replaced unit)."""
    if isinstance(entry, LaunchEntry):
        reads, writes = kernel_fields(entry.ck)
        return list({**reads, **writes}.values())
    if isinstance(entry, CustomEntry):
        return data_fields()
    return [entry.field]


def run_forward(entry, counter=None):
    """Re-run one recorded entry's forward, with the launch counter (hence RNG keys) it had."""
    rt = runtime.get()
    if counter is not None:
        rt.launch_counter = counter
    if isinstance(entry, LaunchEntry):
        entry.kernel(*entry.args, **(entry.kwargs or {}))
    elif isinstance(entry, CustomEntry):
        entry.fn(*entry.args, **(entry.kwargs or {}))
    else:
        raise FieldsimRuntimeError(f"a Python-scope write to {entry.field.ir_name!r} recorded on a Tape "
                                   "cannot be replayed (its value was not recorded)", user_loc())


# ---- recording ------------------------------------------------------------------------------------
class Recorder(Tape):
    """Records entries like a Tape (without the access-rule checker) and, per entry, a `Snapshot`
    of the data it touches: before it runs (`when="pre"`: every data field for a unit) or after
    (`when="post"`: the fields it read or wrote, as seen in its IR or inside the unit; launches
    under `no_grad` are not recorded, but their writes are seen: `on_plain_launch`). `only` (a set of field ids) restricts the copies to those
    fields. Install it with `active()`; call `finish()` after the last entry so that its "post"
    copy is taken."""

    def __init__(self, when="pre", only=None):
        super().__init__()
        self.when, self.only = when, only
        self.snaps: list[Snapshot] = []
        self.counters: list[int] = []
        self.inside: dict[int, tuple[dict, dict]] = {}  # unit entry -> (reads, writes) within
        self.latest: dict[int, object] = {}  # field id -> its latest post copy
        self.launch_log: list = []  # every compiled kernel launched, units' insides included

    def _keep(self, fields) -> list:
        return fields if self.only is None else [f for f in fields if id(f) in self.only]

    def _flush(self):
        """Post copies of the entries recorded so far. A field the entry did not write shares
        the array of its latest copy, so a segment holds one copy per write, not per access."""
        while self.when == "post" and len(self.snaps) < len(self.entries):
            reads, writes = self.entry_fields(len(self.snaps))
            fields = self._keep(list({**reads, **writes}.values()))
            for f in fields:
                if id(f) in writes or id(f) not in self.latest:
                    self.latest[id(f)] = f.storage.to_numpy()
            self.snaps.append(Snapshot(fields, self.latest))

    def _recorded(self, counter):
        self.counters.append(counter)
        if self.when == "pre":
            self.snaps.append(Snapshot(self._keep(touched_fields(self.entries[-1]))))

    def held_bytes(self) -> int:
        """Bytes of the distinct arrays the copies hold."""
        arrays = {id(a): a for sn in self.snaps for _, a in sn.data}
        return sum(a.nbytes for a in arrays.values())

    def _note_inside(self, reads, writes):
        """A launch or write inside the open grad_replaced unit (the last entry)."""
        r, w = self.inside.setdefault(len(self.entries) - 1, ({}, {}))
        r.update(reads)
        w.update(writes)

    def entry_fields(self, k) -> tuple[dict, dict]:
        """(reads, writes) of entry k: from the kernel's IR, or seen inside a unit."""
        e = self.entries[k]
        if isinstance(e, LaunchEntry):
            return kernel_fields(e.ck)
        if isinstance(e, CustomEntry):
            return self.inside.get(k, ({}, {}))
        return {}, {id(e.field): e.field}

    def on_launch(self, kernel, ck, args, kwargs, values):
        self.launch_log.append(ck)
        if self.unit_depth:
            self.launches += 1  # as `Tape.on_launch` counts them (`host_arrays_after`)
            self.last_launch = (kernel.__name__, self.launches)
            self._note_inside(*kernel_fields(ck))
            return
        self._flush()
        counter = runtime.get().launch_counter
        super().on_launch(kernel, ck, args, kwargs, values)
        self._recorded(counter)

    def on_plain_launch(self, kernel, ck, values):
        """Internal hook: a launch under `no_grad`, not recorded. The copies pending are taken
        before it runs, and the fields it writes are copied afresh next time (`_flush` shares
        a field's latest copy with entries that do not write it)."""
        self._flush()
        for k in kernel_fields(ck)[1]:
            self.latest.pop(k, None)

    def record_python_write(self, field, idx, what):
        if self.unit_depth:
            self._note_inside({}, {id(field): field})
            return
        self._flush()
        super().record_python_write(field, idx, what)
        self._recorded(runtime.get().launch_counter)

    def record_custom(self, fn, args, kwargs):
        if self.unit_depth:  # a unit inside a unit belongs to the outer one
            return
        self._flush()
        super().record_custom(fn, args, kwargs)
        self._recorded(runtime.get().launch_counter)

    def finish(self):
        self._flush()

    def active(self):
        return _Installed(self)


class _Installed:
    def __init__(self, tape):
        self.tape = tape

    def __enter__(self):
        rt = runtime.get()
        self.saved, rt.tape = rt.tape, self.tape
        return self.tape

    def __exit__(self, *exc):
        runtime.get().tape = self.saved
        return False


class _Watching(_Installed):
    """`_Installed`, with Python-scope reads reported (`record_python_read`) meanwhile."""

    def __enter__(self):
        watch_python_reads(1)
        return super().__enter__()

    def __exit__(self, *exc):
        watch_python_reads(-1)
        return super().__exit__(*exc)


class _Collector(Recorder):
    """Collects the data fields written while installed, inside grad_replaced units too (their
    launches still reach it); keeps no entries, so a long forward pass costs no memory.
    `carried` (a `CarriedReads`, or None) follows the accesses element by element."""

    def __init__(self, carried=None):
        super().__init__(when=None)
        self.written: dict = {}
        self.read: dict = {}
        self.carried = carried

    def on_launch(self, kernel, ck, args, kwargs, values):
        # numbered as a Tape numbers them: `host_arrays_after` names the launch that wrote an array
        self.launches += 1
        self.last_launch = (kernel.__name__, self.launches)
        reads, writes = kernel_fields(ck)
        self.read.update(reads)
        self.written.update(writes)
        if self.carried is not None:
            self.carried.launch(kernel.__name__, ck, values)

    def on_plain_launch(self, kernel, ck, values):
        """Internal hook: a launch under `no_grad` is followed like any other."""
        self.on_launch(kernel, ck, None, None, values)

    def record_python_write(self, field, idx, what):
        self.written[id(field)] = field
        if self.carried is not None:
            self.carried.python_access(field, idx, True, what, user_loc())

    def record_python_read(self, field, idx, what):
        """Internal hook, called by fields: a Python-scope read (`x[i]`, `x.to_numpy()`)."""
        if self.carried is not None:
            self.carried.python_access(field, idx, False, what, user_loc())

    def record_custom(self, fn, args, kwargs):
        pass  # its launches and writes are collected as they happen

    def set_last_rng_key(self, key):
        pass

    def active(self):
        return _Watching(self)


# ---- checkpointing -------------------------------------------------------------------------------
class CheckpointInfo:
    """What a `checkpoint` call kept: `n_snapshots` state copies of `snapshot_bytes` in all during
    the forward pass; `peak_backward_bytes`: the most held at once during its backward (the
    snapshots plus one segment's per-launch copies), 0 until the backward has run."""

    def __init__(self, n_steps, every):
        self.n_steps, self.every = n_steps, every
        self.n_snapshots = 0
        self.snapshot_bytes = 0
        self.peak_backward_bytes = 0
        self.recomputed_steps = 0

    def __repr__(self):
        return (f"CheckpointInfo(n_steps={self.n_steps}, every={self.every}, n_snapshots="
                f"{self.n_snapshots}, snapshot_bytes={self.snapshot_bytes}, peak_backward_bytes="
                f"{self.peak_backward_bytes})")


def checkpoint(step, n_steps, every, state=None, save=None, restore=None):
    """Run `step(t)` for t = 0 .. n_steps-1, keeping every `every`-th state for the backward pass.

    Contract:

    * `step(t)` advances the simulation from time t to t+1 by kernel launches (Python-scope writes
      and `grad_replaced` calls are allowed too). It reads the current state from the `state`
      fields and leaves the next state in the same fields, overwritten in place (scratch fields
      such as forces or a double buffer are fine).
    * Everything a step hands to a later step must be in `state` (or saved by `save`): the
      backward restores only that at each snapshot. Fields the steps only read (parameters)
      are copied at the end of the forward and put back for the recomputation. Fields the
      steps only accumulate into (`loss[None] += ...`, atomic adds never read by a step),
      write-once outputs (`traj[t + 1, i] = f(traj[t, i])`) and scratch fields written before
      they are read in every step are fine: the backward's recomputation writes them again,
      and every field the steps wrote is put back to its end-of-forward value when the
      backward finishes. With `state=[...]` this is enforced: an element of another field
      that a step reads before any write to it in its segment and that a later write
      (kernel, atomic or Python-scope; `x[i]` and `to_numpy()` count as reads) changes is
      carried outside the state, and the call raises `AccessRuleError` at the end of its
      forward, naming the field, the read and the write, before any gradient is written
      (`fieldsim.ad.carried`: a read that may run, under an `if` or at a data-dependent
      index, counts for every element it may reach, and only a plain store that surely runs
      over an exact box, or stores of one element in both branches of an `if`, cover; so a
      scratch written under an `if`, partly or through atomics, and read at data-dependent
      indices is refused: clear all of it at the start of each step, or add it to the
      state). With `save=` and `restore=` it is the user's to keep.
    * `step` must be deterministic given the state, the parameters and `t` (`fs.random` draws
      are replayed: the launch counter is rewound for each recomputed segment).
    * Each launch must obey the in-kernel access rules (checked when its adjoint is made).
      Across launches, overwriting state in place is allowed: the backward recomputes each
      segment from its snapshot, recording every launch with a copy of the fields it touched,
      and runs each launch's adjoint on exactly the values it saw, in reverse order. Rule 1 is
      thus satisfied per launch by recomputation, and the gradient equals the one of a program
      that stores every step (time-indexed fields on a plain Tape).
    * Gradients live in the `.grad` fields, in place: the state's gradient is carried from
      segment to segment in the state fields' `.grad`; parameters' gradients accumulate there.

    Under a Tape the whole call is one entry (a `grad_replaced` unit named
    `checkpoint(<step>)`): the outer Tape neither records nor checks the launches inside.
    Memory: ceil(n_steps / every) snapshots of the state (numpy copies) in the forward pass;
    in the backward, one segment's per-launch copies (about `every` states plus scratch) on
    top. Outside a Tape (or in `fs.ad.no_grad`, or under `fs.ad.FwdMode`, whose tangents flow
    through in-place updates) it is a plain loop with no snapshots.

    `state`: the fields holding the current state; or give `save() -> obj` and `restore(obj)`.
    Returns a `CheckpointInfo` (snapshot counts and bytes; backward figures after backward).
    """
    run = _Checkpointed(step, int(n_steps), int(every), state, save, restore)
    rt = runtime.get()
    if rt.tape is None or rt.no_grad_depth or rt.fwd_mode is not None:
        for t in range(run.n_steps):
            step(t)
        return run.info
    unit = grad_replaced(run.forward)
    unit.__name__ = f"checkpoint({getattr(step, '__name__', 'step')})"
    unit.grad = run.backward
    return unit()


class _Checkpointed:
    def __init__(self, step, n_steps, every, state, save, restore):
        if every < 1 or n_steps < 0:
            raise ValueError(f"checkpoint: every must be >= 1 and n_steps >= 0 (got every={every}, "
                             f"n_steps={n_steps})")
        if state is None and (save is None or restore is None):
            raise ValueError("checkpoint: give the state fields (state=[...]) or both save= and restore=")
        self.step, self.n_steps, self.every = step, n_steps, every
        self.state = list(state or [])
        for f in self.state:
            if not isinstance(f, Field):
                raise TypeError(f"checkpoint: state must be a list of fields, got {f!r}")
        self._save = save or (lambda: Snapshot(self.state))
        self._restore = restore or (lambda snap: snap.restore())
        self.info = CheckpointInfo(n_steps, every)
        self.snapshots, self.counters = [], []
        self.inputs = Snapshot([])  # the fields the steps only read (`forward`)
        self.collector = None
        self.end_counter = 0

    def forward(self):
        # with save=/restore= what the snapshots restore is the user's: nothing to check
        carried = CarriedReads(id(f) for f in self.state) if self.state else None
        self.collector = _Collector(carried)
        with self.collector.active():
            for t in range(self.n_steps):
                if t % self.every == 0:
                    self.snapshots.append(self._save())
                    self.counters.append(runtime.get().launch_counter)
                    if carried is not None:
                        carried.new_segment()
                self.step(t)
        self.end_counter = runtime.get().launch_counter
        if carried is not None and carried.found is not None:
            err = carried.error(getattr(self.step, "__name__", "step"), self.state)
            raise err.with_traceback(None) from None
        # the fields the steps only read: unchanged by them, so copied now as they were at the
        # start; the backward recomputes the steps from these even if a later launch or
        # Python-scope write on the Tape changed them
        kept = {**self.collector.written, **{id(f): f for f in self.state}}
        self.inputs = Snapshot([f for k, f in self.collector.read.items() if k not in kept])
        self._check_overwrites()
        self.info.n_snapshots = len(self.snapshots)
        self.info.snapshot_bytes = sum(_nbytes(s) for s in self.snapshots)
        return self.info

    def _check_overwrites(self):
        """Refuse (Rule 1 on the Tape) a field the steps write that a launch before this call
        read: the backward puts the fields back to their end-of-forward values, which that
        launch's adjoint would then see instead of what it read."""
        tape = runtime.get().tape
        if getattr(tape, "state", None) is None:
            return
        name = getattr(self.step, "__name__", "step")
        fields = {**self.collector.written, **{id(f): f for f in self.state}}
        for f in fields.values():
            tape.state.python_write(f, None, user_loc(), f"checkpoint({name}) overwriting {f.ir_name}")

    def backward(self):
        written = list({**self.collector.written, **{id(f): f for f in self.state}}.values())
        at_end = Snapshot(written)  # put back afterwards: earlier adjoints see the forward's values
        at_end_inputs = Snapshot([f for f, _ in self.inputs.data])
        only = {id(f) for f in written}  # fields the steps never write keep their values
        rt = runtime.get()
        try:
            self.inputs.restore()
            for s in reversed(range(len(self.snapshots))):
                self._segment_backward(s, only)
        finally:
            at_end.restore()
            at_end_inputs.restore()
            rt.launch_counter = self.end_counter

    def _segment_backward(self, s, only):
        rt = runtime.get()
        self._restore(self.snapshots[s])
        rt.launch_counter = self.counters[s]
        rec = Recorder(when="post", only=only)
        with rec.active():
            for t in range(s * self.every, min((s + 1) * self.every, self.n_steps)):
                self.step(t)
            rec.finish()
        self.info.recomputed_steps += min(self.every, self.n_steps - s * self.every)
        held = self.info.snapshot_bytes + rec.held_bytes()
        self.info.peak_backward_bytes = max(self.info.peak_backward_bytes, held)
        for entry, snap in zip(reversed(rec.entries), reversed(rec.snaps)):
            snap.restore()
            entry.backward()


def _nbytes(obj) -> int:
    if hasattr(obj, "nbytes"):
        return int(obj.nbytes)
    if isinstance(obj, (list, tuple)):
        return sum(_nbytes(o) for o in obj)
    if isinstance(obj, dict):
        return sum(_nbytes(o) for o in obj.values())
    return 0
