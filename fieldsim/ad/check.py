"""Gradient checking: `fs.ad.gradcheck(fn, inputs)` and `Tape(grad_check=[...])`.

Contract of `gradcheck(fn, inputs, eps=None, rtol=1e-2, atol=1e-4, n_directions=None, seed=0,
loss=None, raise_on_fail=True) -> GradcheckReport`:

* `fn()` runs kernel launches (and any Python code) and returns the 0-D loss field. It must be a
  deterministic function of the field data at the call: every evaluation starts from a copy of
  that state, with the loss zeroed (as a Tape does) and the launch counter rewound, so
  `fs.random` draws the same numbers each time.
* `fn` runs once to find the loss field (skipped when `loss=` is given), once under
  `Tape(loss)` for the gradients of `inputs` (float fields with `needs_grad`), then twice per
  finite-difference probe. On return every data field holds exactly what it held at the call
  (the inputs included), the `.grad` fields hold the Tape's gradients, the launch counter is
  rewound to its value at the call.
* Finite differences: every element of an input with at most 64 elements (step
  `eps * max(1, |x|)`); for a larger input (or for all inputs when `n_directions` is given)
  `n_directions` (default 3) random directions d with max|d| = 1: `g . d` against
  `(L(x + h d) - L(x - h d)) / 2h`. The step actually taken after rounding to the field's dtype
  is used. `eps` defaults to 1e-3 when the input or the loss is f32, else 1e-6. An element
  agrees when `|AD - FD| <= atol + rtol * max(|AD|, |FD|) + floor`, where `floor` is what
  rounding alone can do to the difference quotient: `2 (u|L+| + u|L-|) / |x+ - x-|` (u: the unit
  roundoff of the loss's dtype); it matters for f32 losses of large magnitude only.
* On disagreement the check narrows: `fn` runs again, recording a copy of the data each entry
  touches before it runs; entry by entry, in launch order, the entry's forward is re-run from
  that copy, the gradients of every field it touches are seeded with random values r, its
  adjoint alone is run, and the gradients of the fields it reads (from the kernel's IR, or
  seen inside a `grad_replaced` unit) are compared with finite differences of r . F(state)
  (F: that one entry's forward; state: the data it touches). The
  first entry that disagrees (a kernel launch or a `grad_replaced` unit) is named in the
  message, with the field and the worst element (index, AD value, FD value). If all agree,
  the message says the fault is in how the launches are chained (e.g. an overwritten value).
  Python-scope writes are not checked (their adjoint only zeroes gradients).
* Disagreement raises `GradcheckError` (an AssertionError carrying `.report`), unless
  `raise_on_fail=False`, in which case the report (falsy) is returned.

`Tape(grad_check=[fields])`: the Tape calls `begin_tape_grad_check(tape)` on entry (a copy of
the data and the launch counter) and `tape_grad_check(tape, fields)` after its backward: the
same comparison, replaying the recorded entries instead of a user function. Python-scope writes
recorded on that Tape cannot be replayed and are refused. The fields' data are left as the
forward left them, their gradients as the backward left them. Without the entry copy, the
replay starts from the state the forward left (loss zeroed), which the access rules make exact
unless a field accumulated with atomics (other than the loss) is read afterwards, or fs.random
draws cannot be lined up: those cases are refused with a clear error.
"""
from __future__ import annotations

from dataclasses import dataclass
from dataclasses import field as dc_field

import numpy as np

from fieldsim.ad.checkpoint import (
    Recorder,
    Rewind,
    Snapshot,
    atomic_kinds,
    data_fields,
    grad_fields,
    kernel_fields,
    run_forward,
)
from fieldsim.ad.tape import CustomEntry, LaunchEntry, PythonWriteEntry, Tape
from fieldsim.errors import FieldsimRuntimeError
from fieldsim.ir.ir import Op, walk
from fieldsim.lang import runtime
from fieldsim.lang.naming import user_loc

__all__ = [
    "EntryCheck",
    "FieldCheck",
    "GradcheckError",
    "GradcheckReport",
    "begin_tape_grad_check",
    "describe_entry",
    "gradcheck",
    "tape_grad_check",
]

SMALL = 64  # inputs with at most this many elements are checked element by element
DEFAULT_DIRECTIONS = 3


class GradcheckError(AssertionError):
    """Gradients disagree with finite differences; `.report` is the `GradcheckReport`."""

    def __init__(self, report):
        self.report = report
        super().__init__(report.message)


@dataclass
class FieldCheck:
    """One field's comparison: per element (`mode="elements"`, arrays shaped like the field's
    storage) or per random direction (`mode="directions"`, arrays of length n_directions)."""

    name: str
    mode: str
    ad: np.ndarray
    fd: np.ndarray
    tol: np.ndarray
    storage_shape: tuple
    ndim: int = -1  # the field's own dimensions (the rest of storage_shape: components)

    @property
    def err(self) -> np.ndarray:
        return np.abs(self.ad - self.fd)

    @property
    def ok(self) -> bool:
        return bool(np.all(self.err <= self.tol))

    @property
    def worst(self) -> int:
        """Flat position of the worst element (or direction)."""
        ratio = self.err / np.maximum(self.tol, np.finfo(np.float64).tiny)
        return int(np.argmax(ratio.ravel())) if self.ad.size else 0

    @property
    def index(self) -> tuple | None:
        """The worst element's storage index (field index, then components); None for directions."""
        if self.mode == "directions":
            return None
        return tuple(int(i) for i in np.unravel_index(self.worst, self.storage_shape))

    def where(self) -> str:
        if self.mode == "directions":
            return f"{self.name} along random direction #{self.worst}"
        idx = self.index
        n = len(idx) if self.ndim < 0 else self.ndim
        text = f"[{', '.join(map(str, idx[:n])) or 'None'}]"
        return self.name + text + "".join(f"[{c}]" for c in idx[n:])

    def describe(self) -> str:
        w = self.worst
        ad, fd = self.ad.ravel()[w], self.fd.ravel()[w]
        tol = self.tol.ravel()[w]
        return (f"{self.where()}: AD {ad:.7g}, FD {fd:.7g} (|AD - FD| = {abs(ad - fd):.3g}, "
                f"tolerance {tol:.3g})")


@dataclass
class EntryCheck:
    """The check of one recorded entry's adjoint on its own (position counts from 0)."""

    position: int
    count: int
    title: str
    fields: list = dc_field(default_factory=list)
    note: str = ""

    @property
    def ok(self) -> bool:
        return all(c.ok for c in self.fields)


@dataclass
class GradcheckReport:
    """`fields`: one FieldCheck per input; `culprit`: the first entry whose adjoint disagrees (None
    when all agree or nothing was narrowed); `message`: what GradcheckError says. Falsy on failure."""

    ok: bool
    loss: float
    fields: list
    culprit: EntryCheck | None = None
    entries_checked: int = 0
    message: str = ""

    def __bool__(self):
        return self.ok

    def __str__(self):
        return self.message


@dataclass
class _Options:
    eps: float | None
    rtol: float
    atol: float
    n_directions: int | None
    rng: np.random.Generator
    loss_dtype: object = None

    def eps_for(self, f) -> float:
        if self.eps is not None:
            return float(self.eps)
        f32 = any(d is not None and np.dtype(d.np) == np.float32 for d in (f.dtype, self.loss_dtype))
        return 1e-3 if f32 else 1e-6


# ---- public entry points -------------------------------------------------------------------------
def gradcheck(fn, inputs, eps=None, rtol=1e-2, atol=1e-4, n_directions=None, seed=0, loss=None,
              raise_on_fail=True) -> GradcheckReport:
    """Compare the Tape's gradients of `fn()`'s loss w.r.t. `inputs` with central differences."""
    with Rewind(what="fs.ad.gradcheck") as start:  # data and launch counter put back on exit
        inputs = _check_inputs(inputs)
        if loss is None:
            loss = _loss_of(fn())
            start.reset()
        with Tape(loss):
            fn()
        grads_after = Snapshot(grad_fields(data_fields()))
        try:
            opts = _Options(eps, rtol, atol, n_directions, np.random.default_rng(seed), loss.dtype)
            report = _check(fn, inputs, loss, start, opts, "gradcheck")
        finally:
            grads_after.restore()
    return _finish(report, raise_on_fail)


def begin_tape_grad_check(tape):
    """Called by `Tape.__enter__` when `grad_check` is given: keep the state the check replays from."""
    tape._grad_check_start = Rewind()


def tape_grad_check(tape, fields, eps=None, rtol=1e-2, atol=1e-4, n_directions=None, seed=0):
    """After `tape`'s backward: compare the gradients of `fields` with central differences of the
    recorded launches replayed from the state at the Tape's entry; raise `GradcheckError`."""
    if tape.loss is None:
        raise FieldsimRuntimeError("Tape(grad_check=...) needs the Tape's loss", user_loc())
    for e in tape.entries:
        if isinstance(e, PythonWriteEntry):
            raise FieldsimRuntimeError(f"Tape(grad_check=...): a Python-scope write to {e.field.ir_name!r} "
                                       "was recorded on the Tape and cannot be replayed; use "
                                       "fs.ad.gradcheck(fn, inputs), which re-runs your function", user_loc())
    inputs = _check_inputs(fields)
    end = Rewind(data_fields() + grad_fields(data_fields()))
    entries = list(tape.entries)

    def replay():
        for e in entries:
            run_forward(e)
        return tape.loss

    try:
        start = getattr(tape, "_grad_check_start", None) or _start_from_end(tape, replay)
        opts = _Options(eps, rtol, atol, n_directions, np.random.default_rng(seed), tape.loss.dtype)
        report = _check(replay, inputs, tape.loss, start, opts, "Tape(grad_check)")
    finally:
        end.reset()
    _finish(report, True)
    for i in range(len(inputs)):  # Taichi's GradChecker prints this line per checked field
        print("variable", i, "passes grad check")
    return report


def _start_from_end(tape, replay) -> Rewind:
    """The replay's starting state when the Tape kept no copy at its entry: the state the forward
    left, with the loss zeroed. Exact when every element a launch reads holds the same value then
    as at the entry: rule 1 guarantees it for elements not written before they are read, and the
    replay rewrites elements stored before being read; but an accumulator (first written by an
    atomic, not the loss) read afterwards would start from its final value: refused."""
    c0 = tape.start_counter  # the launch counter at the Tape's entry
    start, rec = Rewind(counter=c0), Recorder(when=None)
    tape.loss.storage.zero()
    runtime.get().launch_counter = start.counter
    with rec.active():
        replay()
    start.snapshot.restore()
    bad = _accumulated_then_read(rec.launch_log, tape.loss)
    uses_random = any(s.op == Op.RAND for ck in rec.launch_log for s in walk(ck.ir.body))
    if bad or (c0 is None and uses_random):
        why = (f"field(s) {', '.join(repr(n) for n in bad)} accumulate with atomics and are read "
               "afterwards" if bad else "fs.random draws cannot be lined up")
        raise FieldsimRuntimeError(f"Tape(grad_check=...): the Tape kept no copy of the state at its entry "
                                   f"(fieldsim.ad.check.begin_tape_grad_check was not called) and replaying "
                                   f"from the final state is not exact here: {why}. Use "
                                   "fs.ad.gradcheck(fn, inputs) instead", user_loc())
    return start


def _accumulated_then_read(cks, loss) -> list[str]:
    """Fields (not the loss) whose first write among these launches is atomic-only (no plain store
    of the field in that launch) and that a launch then reads."""
    first_write, bad = {}, {}
    for ck in cks:
        (loads, writes), atomic_only = kernel_fields(ck), atomic_kinds(ck)
        for fid in writes:
            first_write.setdefault(fid, "atomic" if fid in atomic_only else "store")
        bad.update({fid: f for fid, f in loads.items()
                    if first_write.get(fid) == "atomic" and f is not loss})
    return [f.ir_name for f in bad.values()]


# ---- the comparison ---------------------------------------------------------------------------------
def _check(fn, inputs, loss, start, opts, what) -> GradcheckReport:
    """`fn` re-runs the forward from `start` (a Rewind); the data hold what the forward left."""
    ad = {id(f): f.adjoint.storage.to_numpy() for f in inputs}
    value = float(loss.storage.to_numpy())

    def evaluate(f, arr):
        start.reset()
        f.storage.from_numpy(arr)
        loss.storage.zero()
        fn()
        value = float(loss.storage.to_numpy())
        return value, _unit_roundoff(loss) * abs(value)

    base = {id(f): start[f] for f in inputs}
    checks = _compare(inputs, ad, base, evaluate, opts, what)
    if all(c.ok for c in checks):
        return GradcheckReport(True, value, checks, message=f"{what}: gradients agree")
    culprit, n = _narrow(fn, loss, start, opts)
    report = GradcheckReport(False, value, checks, culprit, n)
    report.message = _message(what, loss, checks, culprit, n)
    return report


def _compare(fields, ad, base, evaluate, opts, desc) -> list[FieldCheck]:
    """FieldChecks of `ad[id(f)]` against central differences of `evaluate(f, values)`, which
    returns (value, the rounding error of that value)."""
    plans = [(f, _directions(f, base[id(f)], opts)) for f in fields]
    total = sum(2 * (len(d) if d is not None else base[id(f)].size) for f, d in plans)
    with _progress(total, desc) as bar:
        return [_compare_field(f, ad[id(f)], base[id(f)], dirs, evaluate, opts, bar)
                for f, dirs in plans]


def _directions(f, x0, opts):
    n = opts.n_directions
    if n is None:
        if x0.size <= SMALL:
            return None
        n = DEFAULT_DIRECTIONS
    dirs = []
    for _ in range(int(n)):
        d = opts.rng.standard_normal(x0.shape)
        dirs.append(d / max(np.max(np.abs(d)), 1e-12))
    return dirs


def _compare_field(f, g, x0, dirs, evaluate, opts, bar) -> FieldCheck:
    eps = opts.eps_for(f)
    g = np.asarray(g, dtype=np.float64)
    if dirs is None:
        ad, fd, noise = g.copy(), np.zeros(x0.shape), np.zeros(x0.shape)
        for e in range(x0.size):
            h = eps * max(1.0, abs(float(x0.flat[e])))
            fd.flat[e], _, noise.flat[e] = _probe(f, x0, h, evaluate, bar, e)
        mode = "elements"
    else:
        h = eps * max(1.0, float(np.max(np.abs(x0))) if x0.size else 1.0)
        ad, fd, noise = np.zeros(len(dirs)), np.zeros(len(dirs)), np.zeros(len(dirs))
        for k, d in enumerate(dirs):
            fd[k], step, noise[k] = _probe(f, x0, h, evaluate, bar, d)
            ad[k] = float(np.sum(g * step)) / (2 * h)
        mode = "directions"
    tol = opts.atol + opts.rtol * np.maximum(np.abs(ad), np.abs(fd)) + noise
    return FieldCheck(f.ir_name, mode, ad, fd, tol, tuple(x0.shape), len(f.shape))


def _probe(f, x0, h, evaluate, bar, where):
    """Central difference at one element (`where` an int) or along a direction (an array):
    returns (FD value, the actual step x+ - x- as float64, the FD's rounding floor: twice the
    evaluations' rounding errors over the step)."""
    plus, minus = x0.copy(), x0.copy()
    if isinstance(where, (int, np.integer)):
        plus.flat[where] = x0.flat[where] + h
        minus.flat[where] = x0.flat[where] - h
        step = float(plus.flat[where]) - float(minus.flat[where])
    else:
        plus = (x0.astype(np.float64) + h * where).astype(x0.dtype)
        minus = (x0.astype(np.float64) - h * where).astype(x0.dtype)
        step = plus.astype(np.float64) - minus.astype(np.float64)
    (lp, ep), (lm, em) = evaluate(f, plus), evaluate(f, minus)
    bar.update(2)
    width = step if isinstance(step, float) else 2 * h
    return (lp - lm) / width, step, 2 * (ep + em) / abs(width)


# ---- narrowing to one entry ------------------------------------------------------------------------
def _narrow(fn, loss, start, opts):
    """(the first entry whose adjoint disagrees or None, how many entries were checked)."""
    start.reset()
    loss.storage.zero()
    rec = Recorder(when="pre")
    with rec.active():
        fn()
    n = len(rec.entries)
    for k, (entry, pre, counter) in enumerate(zip(rec.entries, rec.snaps, rec.counters)):
        if isinstance(entry, PythonWriteEntry):
            continue
        check = _check_entry(k, n, entry, pre, counter, rec.entry_fields(k), opts)
        if not check.ok:
            return check, k + 1
    return None, n


def _check_entry(k, n, entry, pre, counter, rw, opts) -> EntryCheck:
    """Seed the gradients of every field the entry touches with r, run its adjoint alone; the
    gradients of the fields it reads must equal d(r . F(state))/d field by finite differences."""
    reads, writes = rw
    touched = [f for f in {**reads, **writes}.values() if f.dtype.is_float and f.adjoint is not None]
    inputs = [f for f in reads.values() if f.dtype.is_float and f.adjoint is not None]
    seeds = {id(f): opts.rng.uniform(-1, 1, f.storage_shape).astype(f.dtype.np) for f in touched}
    pre.restore()
    run_forward(entry, counter)
    for f in touched:
        f.adjoint.storage.from_numpy(seeds[id(f)])
    entry.backward()
    ad = {id(f): f.adjoint.storage.to_numpy() for f in inputs}

    def evaluate(f, arr):
        pre.restore()
        f.storage.from_numpy(arr)
        run_forward(entry, counter)
        value = rounding = 0.0
        for g in touched:
            r = seeds[id(g)].ravel().astype(np.float64)
            out = g.storage.to_numpy().ravel().astype(np.float64)
            value += float(np.dot(r, out))
            rounding += _unit_roundoff(g) * float(np.dot(np.abs(r), np.abs(out)))
        return value, rounding

    base = {id(f): pre[f] for f in inputs}
    fields = _compare(inputs, ad, base, evaluate, opts, f"entry #{k}")
    return EntryCheck(k, n, describe_entry(entry), fields, _custom_grad_note(entry))


def describe_entry(entry) -> str:
    """'kernel 'name'(args) (file:line)' or 'grad_replaced function 'name' (backward 'g')'."""
    if isinstance(entry, LaunchEntry):
        loc = entry.kernel.def_loc()
        where = f" ({loc.file}:{loc.line})" if loc is not None else ""
        return f"kernel {entry.kernel.__name__!r}({format_args(entry.args, entry.kwargs)}){where}"
    if isinstance(entry, CustomEntry):
        grad = getattr(entry.fn, "grad", None)
        back = f" (its backward {getattr(grad, '__name__', grad)!r})" if grad is not None else ""
        return (f"grad_replaced function {entry.fn.__name__!r}"
                f"({format_args(entry.args, entry.kwargs)}){back}")
    return f"Python-scope write to {entry.field.ir_name!r}"


def format_args(args, kwargs=None) -> str:
    parts = [_fmt(a) for a in args] + [f"{k}={_fmt(v)}" for k, v in (kwargs or {}).items()]
    return ", ".join(parts)


def _fmt(v) -> str:
    if hasattr(v, "ir_name"):
        return v.ir_name
    if isinstance(v, (int, float, bool, np.number)):
        return f"{v:.6g}" if isinstance(v, (float, np.floating)) else str(v)
    text = repr(v)
    return text if len(text) <= 24 else type(v).__name__


def _custom_grad_note(entry) -> str:
    if not isinstance(entry, LaunchEntry):
        return ""
    names = sorted({s.attr.name for s in walk(entry.ck.ir.body) if s.op == Op.CUSTOM_GRAD})
    if not names:
        return ""
    return ("it uses user adjoints (fs.ad.func_grad) for @fs.func " +
            ", ".join(repr(x) for x in names) + ": check those first")


# ---- helpers ------------------------------------------------------------------------------------
def _message(what, loss, checks, culprit, n) -> str:
    head = (f"{what} failed: the Tape's gradients of {loss.ir_name!r} disagree with central "
            "finite differences:")
    lines = [head]
    lines += [f"  d {loss.ir_name} / d {c.describe()}" for c in checks if not c.ok]
    if culprit is not None:
        lines.append(f"First launch whose adjoint disagrees: #{culprit.position} of the "
                     f"{culprit.count} recorded entries (counting from 0), {culprit.title}:")
        lines += [f"  {c.describe()}" for c in culprit.fields if not c.ok]
        if culprit.note:
            lines.append(f"  ({culprit.note})")
    else:
        lines.append(f"Each of the {n} recorded entries' adjoints agrees with finite differences on "
                     "its own: the fault is in how they are chained (a value overwritten after it "
                     "was read, a Python-scope write, a field without needs_grad in the middle of "
                     "the chain) or in non-determinism (atomics order, data outside the fields).")
    return "\n".join(lines)


def _unit_roundoff(f) -> float:
    return float(np.finfo(f.dtype.np).eps) / 2


def _finish(report, raise_on_fail):
    if not report.ok and raise_on_fail:
        raise GradcheckError(report)
    return report


def _check_inputs(inputs) -> list:
    from fieldsim.lang.field import Field
    if isinstance(inputs, Field):
        inputs = [inputs]
    inputs = list(inputs)
    for f in inputs:
        if not isinstance(f, Field):
            raise TypeError(f"gradcheck: inputs must be fields, got {f!r}")
        if not f.dtype.is_float or f.adjoint is None:
            raise ValueError(f"gradcheck: input field {f.ir_name!r} needs a gradient: declare it "
                             "as a float field with needs_grad=True")
    return inputs


def _loss_of(value):
    from fieldsim.lang.field import Field
    if not isinstance(value, Field):
        raise TypeError("gradcheck: fn() must return the 0-D loss field (or pass loss=), got "
                        f"{type(value).__name__}")
    return value


class _progress:
    """A tqdm bar for long finite-difference loops (silent for short ones)."""

    def __init__(self, total, desc):
        self.total, self.desc, self.bar = total, desc, None

    def __enter__(self):
        if self.total >= 200:
            try:
                from tqdm.auto import tqdm
                self.bar = tqdm(total=self.total, desc=self.desc, leave=False, unit="run")
            except ImportError:
                self.bar = None
        return self

    def update(self, n):
        if self.bar is not None:
            self.bar.update(n)

    def __exit__(self, *exc):
        if self.bar is not None:
            self.bar.close()
        return False
