"""Rule 1 across the launches recorded on one Tape (API.md, "the static checker").

Contract: analysis only; reads kernel summaries (`access_rules.summarize`) and, under
validation, the element sets a launch actually touched (handed in by `checks.validation`). A
`TapeState` lives as long as one Tape's recording. Per field it keeps the elements read so far
and written so far, as boxes: one `Comp` per index component, the values an index form takes
once the launch's kernel arguments are substituted (an arithmetic progression `lo..hi` by
`step`; data-dependent indices give the whole axis, marked inexact).

`launch` first runs the in-kernel rules (`KernelCheck`, with the actual argument values), then
refuses a write (by a kernel or in Python scope) to an element an earlier launch read (rule 1 across
kernels): a 'violation' when the boxes overlap on exact indices, 'undecided' when only an inexact
(data-dependent) box makes them overlap. Free reads (`Access.free`: the value reaches only field
writes, affinely with factors that carry no derivative, so no adjoint uses it) are not logged
(`_logged_boxes`), outside `grad_replaced` units: a later write of their element is allowed. Overwriting an element nobody has read is allowed: a
plain store's adjoint consumes the element's gradient, so the last write wins (Taichi's
`test_ad_set_loss_grad`). Inside `unit(...)` (a `grad_replaced` function) launches are neither
checked in-kernel nor against each other, only against what was read outside units before it:
a later unit may overwrite what an earlier unit read (both backwards are the user's, which
recompute or restore it: a step reusing its state buffer, diffmpm's scratch grid), while a
plain kernel or Python-scope write may not (a plain adjoint follows the rules).

Without validation, launches take a fast path with the same verdicts (`launch`): a kernel's
launches share one parametric plan (`boxes.FastPlan`), the read logs hold ints (template id ->
launch number, bucketed by a box's first one-value index), and boxes and `Origin`s are rebuilt from
them only for a write that may meet a logged read. Per launch the cost does not grow with the
Tape, and nothing kept per launch is a container Python's cyclic GC has to walk.

With `validation=True` nothing undecided is let through unchecked. An inexact read is kept as a
`ReadSet`: its box until the launch has run, then (`resolve`) the exact elements it read. A
write whose exact box meets a resolved set is decided at once, per element. A write with an
inexact box that meets earlier reads is returned in the launch's `Checked.captures`: the runner
(`checks.validation`) runs the launch instrumented and `resolve` refuses it exactly when its
actual writes share an element with those reads (the caller then undoes the launch and calls
`discard`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from fieldsim.checks import extremum_tape
from fieldsim.checks.access_rules import (
    RULE_TEXT,
    UNDECIDED_TEXT,
    Access,
    Finding,
    KernelCheck,
    Verdict,
    arg_env,
    describe,
    source,
    to_error,
    where,
)
from fieldsim.checks.boxes import (
    Comp,
    LaunchBoxes,
    box_mask,
    box_slices,
    bucket_key,
    constant_plan,
    exact_box,
    field_shape,
    translate,
    whole,
)
from fieldsim.checks.index_expr import Affine
from fieldsim.errors import KernelIndexRangeError, Loc
from fieldsim.ir.printer import field_name


class Origin(NamedTuple):
    """Who made an access: a kernel launch (name, number, args) or a Python-scope write.
    (A NamedTuple: one is made per access per launch, so it must be cheap.)"""

    access: Access
    kernel: str | None
    launch: int
    args: str = ""
    unit: str | None = None
    what: str | None = None  # a Python-scope write: "x.fill(0)", "x[3] = ..."

    def who(self) -> str:
        if self.kernel is None:  # a `what` with its own quoting is a sentence (host arrays)
            if self.what.startswith("kernel '"):  # a host array a later launch wrote through a view
                return self.what + " "
            return f"Python-scope {self.what} " if "`" in self.what else f"Python-scope `{self.what}` "
        inside = f"inside `{self.unit}`, " if self.unit else ""
        args = f", {self.args}" if self.args else ""
        return f"{inside}kernel '{self.kernel}' (launch {self.launch}{args}) "

    def line(self, label: str) -> str:
        verb = "writes " + field_name(self.access.field) if self.what else describe(self.access)
        return f"  {label:<18}{where(self.access.loc)}  {self.who()}{verb}:  {source(self.access.loc)}"


@dataclass(eq=False)
class ReadSet:
    """The elements one inexact (data-dependent) read of a validated launch touched: `box` (a
    hull) until the launch has run, then `mask`, a bool array over the field's storage shape."""

    box: tuple
    mask: Any = None


class _Log:
    """Boxes of one field with the first origin of each, bucketed by a constant first index,
    plus the `ReadSet`s of validated launches."""

    def __init__(self):
        self.buckets: dict = {}
        self.sets: list = []  # (ReadSet, Origin)

    def add(self, box, origin: Origin):
        """Record; returns a token for `remove` (None when the box was there already)."""
        if isinstance(box, ReadSet):
            self.sets.append((box, origin))
            return ("set", box)
        bucket = self.buckets.setdefault(_key(box), {})
        if box in bucket:
            return None
        bucket[box] = origin
        return ("box", _key(box), box)

    def remove(self, token):
        if token[0] == "set":
            self.sets = [(rs, o) for rs, o in self.sets if rs is not token[1]]
        else:
            self.buckets.get(token[1], {}).pop(token[2], None)

    def meeting(self, box: tuple, _state=None):
        """Boxes (and read sets not yet resolved, by their hull) that may share an element."""
        key = _key(box)
        keys = (key, None) if key is not None else list(self.buckets)
        for k in keys:
            for b, origin in self.buckets.get(k, {}).items():
                if all(x.meets(y) for x, y in zip(b, box)):
                    yield b, origin
        for rs, origin in self.sets:
            if rs.mask is None and all(x.meets(y) for x, y in zip(rs.box, box)):
                yield rs.box, origin

    def known(self, box: tuple):
        """Resolved read sets with an element inside `box`'s hull."""
        for rs, origin in self.sets:
            if rs.mask is not None and rs.mask[box_slices(box, rs.mask.shape)].any():
                yield rs, origin


_key = bucket_key


class _FastLog:
    """The fast path's reads of one field (`TapeState._log_reads`), all ints and tuples of
    ints: `axes`: axis -> {value -> {entry: launch number}} for boxes with a one-value axis
    (the first one: `Tmpl.ax`), `loose`: {entry: launch number} for the others. A write that
    is one value on an axis looks at that value's bucket only, so `x[t, i]` and `y[i, t]`
    both stay cheap however long the Tape. Boxes and origins are made
    (`TapeState._entry_box`, `_entry_origin`) only for a write that may meet them."""

    __slots__ = ("axes", "loose")

    def __init__(self):
        self.axes: dict = {}
        self.loose: dict = {}

    def may_meet(self, t, deltas: tuple) -> bool:
        """May write template `t`, translated by `deltas`, meet a logged read?"""
        if self.loose:
            return True
        singles = t.singles
        for axis, values in self.axes.items():
            s = singles.get(axis)  # `Tmpl.value_at`, inlined: this runs per write per launch
            if s is None or (s[0] if s[1] < 0 else s[0] + deltas[s[1]]) in values:
                return True
        return False

    def meeting(self, box: tuple, state):
        """(box, Origin) of the logged reads (of `state`, a `TapeState`: passed, not kept, so
        a dropped Tape is freed at once) that may share an element with `box`."""
        for axis, values in sorted(self.axes.items()):  # axis 0 (a time step) first
            c = box[axis] if axis < len(box) else None
            if c is not None and c.lo == c.hi:
                buckets = [(c.lo, values[c.lo])] if c.lo in values else []
            else:
                buckets = list(values.items())
            for v, bucket in buckets:
                yield from self._hits(state, box, v, bucket)
        yield from self._hits(state, box, None, self.loose)

    @staticmethod
    def _hits(state, box, v, bucket):
        for entry, n in list(bucket.items()):
            t, b = state._entry_box(v, entry)
            if all(x.meets(y) for x, y in zip(b, box)):
                yield b, state._entry_origin(t, n)

    def known(self, box: tuple):
        return ()


class Checked(list):
    """What `TapeState.launch` found: the undecided findings (a list, worst first), and under
    validation what the run-time check (`checks.validation`) must do with this launch:
    `in_kernel` (undecided in-kernel findings), `reads` ((ReadSet, Access) to resolve after the
    run), `captures` ((write Origin, box, [(earlier read ReadSet or exact box, Origin)]): writes
    to compare with those reads) and `unresolved` (findings no run-time check can decide)."""

    def __init__(self):
        super().__init__()
        self.in_kernel: list[Finding] = []
        self.reads: list = []
        self.captures: list = []
        self.unresolved: list[Finding] = []
        self.tokens: list = []
        self.entries: list = []
        self.kernel_checked = False  # the in-kernel rules were run (not inside a unit)

    @property
    def needs_run(self) -> bool:
        return bool(self.in_kernel or self.reads or self.captures)


class _Unit:
    """`TapeState.unit(...)`: entering opens the unit, leaving records it."""

    __slots__ = ("loc", "name", "state")

    def __init__(self, state, name, loc):
        self.state, self.name, self.loc = state, name, loc

    def __enter__(self):
        self.state._units.append((self.name, self.loc))
        return self.state

    def __exit__(self, *exc) -> bool:
        self.state._end_unit()
        return False


class _Done(Checked):
    """What the fast path (no validation) returns: nothing undecided, nothing to run checked.
    Shared and read-only (its lists are tuples)."""

    def __init__(self, kernel_checked: bool):
        super().__init__()
        self.in_kernel = self.reads = self.captures = self.unresolved = ()
        self.tokens = self.entries = ()
        self.kernel_checked = kernel_checked

    def append(self, item):
        raise TypeError("a fast-path Checked is shared: it takes no findings")

    extend = append


_CHECKED, _IN_UNIT = _Done(True), _Done(False)


class TapeState:
    """Rule 1 across the launches and Python-scope writes recorded on one Tape."""

    def __init__(self, validation: bool = False, index_ranges: bool = False):
        self.validation = validation
        # refuse a launch whose surely-run index leaves its field (`_check_range`): the
        # runtime's Tape asks for it; IR-level tests judge fake fields with nominal shapes
        self.index_ranges = index_ranges
        self.reads: dict[int, _Log] = {}  # reads outside grad_replaced units
        self.unit_reads: dict[int, _Log] = {}
        self.launches = 0
        self._units: list = []
        self._checks: dict[int, tuple] = {}  # id(kernel IR) -> (KernelCheck holding it, LaunchBoxes)
        self._pending: list = []
        self._pending_reads: list = []  # the fast path's reads inside a unit (see `launch`)
        # id(FastPlan) -> (it, the log dict each of its moving reads goes to), per log set: its
        # constant reads are in those logs for good (only validation's `discard` removes
        # reads, and validation takes the full path)
        self._stored: dict = {}
        self._unit_stored: dict = {}
        # the fast path: per launch, its kernel name, kernel IR, argument values and unit, flat
        # (4 per launch: an Origin is made from these only when a message needs it)
        self._recs: list = []
        self._reg: dict | None = None  # template id -> Tmpl of the stored plans' reads
        self._extrema: dict = {}  # fields an atomic min/max went into (`extremum_tape`)

    def kernel_check(self, kernel_ir, summary=None) -> KernelCheck:
        """The cached `KernelCheck` of a kernel IR (made on its first launch; `summary` may be
        one made earlier for this IR, which a caller keeps across Tapes)."""
        if id(kernel_ir) not in self._checks:
            check = summary if isinstance(summary, KernelCheck) else KernelCheck(kernel_ir, summary)
            boxes = getattr(check, "tape_boxes", None)
            if boxes is None:
                boxes = check.tape_boxes = LaunchBoxes(check.accesses)
            self._checks[id(kernel_ir)] = (check, boxes, _logged_boxes(check))
        return self._checks[id(kernel_ir)][0]

    def launch(self, kernel_ir, kernel_name: str | None = None, summary=None,
               arg_values=None) -> Checked:
        """Check one launch before it runs, then record it. Raises `AccessRuleError`; returns
        the undecided findings when `validation` is on (else they raise too). `summary`: the
        kernel's effect table, or its `KernelCheck` (see `kernel_check`).

        Without validation (the body below) the verdicts are the same (anything undecided
        raises). A kernel's launches share one parametric plan (`boxes.FastPlan`: its boxes
        translated by the integer arguments), so a launch computes a few sums, checks each
        write against only the read-log buckets it can meet, and logs its reads as ints
        (template id -> launch number, bucketed by a one-value index); `Origin`s and boxes
        are made only when a write may meet a logged read. Per launch the cost stays flat in
        the Tape's length, and what it keeps is untracked by Python's cyclic GC."""
        made = self._checks.get(id(kernel_ir))
        if made is None:
            self.kernel_check(kernel_ir, summary)
            made = self._checks[id(kernel_ir)]
        check, boxes, logged = made
        extremum_tape.check_launch(self._extrema, check, kernel_name or kernel_ir.name,
                                   self.launches + 1, bool(self._units))
        if self.validation:
            return self._launch_validated(kernel_ir, kernel_name, check, boxes, arg_values,
                                          logged is not None and not self._units)
        units = self._units
        plan, deltas, judged = _plan_of(check, boxes, arg_values, units)
        if units:
            found, unit = _IN_UNIT, units[-1][0]
        else:
            if judged:  # any finding raises: nothing undecided is let through
                raise to_error(judged[0])
            found, unit = _CHECKED, None
        n = self.launches + 1
        name = kernel_name or kernel_ir.name
        if self.index_ranges and (plan.outside or plan.limits):
            _check_range(plan, deltas, name, kernel_ir, arg_values)
        if plan.writes:
            self._check_writes(plan, deltas, n, unit, (name, kernel_ir, arg_values))
        self.launches = n
        # flat, and the values as a tuple of numbers: nothing kept per launch is a container
        # Python's cyclic GC must walk (a 10,000-launch Tape stays cheap to collect)
        self._recs += (name, kernel_ir,
                       tuple(arg_values) if type(arg_values) is list else arg_values, unit)
        if logged is not None and not units:
            # free reads (no adjoint uses their value) are not logged; inside a grad_replaced
            # unit they are: the user's backward may re-run the forward, reading them again
            plan, deltas, _ = _plan_of(check, logged, arg_values, units)
        if plan.reads:
            self._log_launch_reads(plan, deltas, n, unit)
        return found

    def _log_launch_reads(self, plan, deltas: tuple, n: int, unit) -> None:
        """Log a fast-path launch's reads, or keep them until its unit ends."""
        stored = self._stored if unit is None else self._unit_stored
        if plan.moving_keys or id(plan) not in stored:  # else: nothing new to log
            if unit is not None:
                self._pending_reads.append((plan, deltas, n))
            else:
                self._log_reads(self.reads, stored, plan, deltas, n)

    def _check_writes(self, plan, deltas: tuple, n: int, unit, launch: tuple):
        """Refuse a fast-path launch (`launch`: its name, kernel IR, argument values) whose
        writes meet logged reads; only a log with a bucket of a write's value on its axis (or
        a loose one) is looked at."""
        logged, unit_logged = self.reads, self.unit_reads
        for t in plan.writes:
            fid = t[0]  # Tmpl.fid (indexing: this loop runs for every write of every launch)
            log = logged.get(fid)
            ulog = unit_logged.get(fid) if unit is None else None
            if log is None and ulog is None:
                continue
            if (log is not None and log.may_meet(t, deltas)) or \
                    (ulog is not None and ulog.may_meet(t, deltas)):
                name, kernel_ir, values = launch
                origin = Origin(t.access, name, n, _ArgsText(kernel_ir, arg_env(values)), unit)
                self._check(t.box(deltas), origin, None)

    def _launch_validated(self, kernel_ir, kernel_name, check, boxes, arg_values,
                          has_free: bool) -> Checked:
        """`launch` under validation: every access's box and `Origin` (but free reads'),
        read sets kept for the run-time check (`checks.validation`)."""
        if self.index_ranges:
            check_index_ranges(check, kernel_ir, kernel_name or kernel_ir.name, arg_values)
        found = Checked()
        found.in_kernel = [] if self._units else check.run(arg_values, self.validation)
        found.kernel_checked = not self._units
        env = arg_env(arg_values)
        self.launches += 1
        name, args = kernel_name or kernel_ir.name, _ArgsText(kernel_ir, env)
        unit = self._units[-1][0] if self._units else None
        entries = []
        for a, box in boxes.of_launch(env, per_access=self.validation):
            if has_free and a.free:
                continue
            if self.validation and not a.is_write and not exact_box(box):
                rs = ReadSet(box)
                found.reads.append((rs, a))
                box = rs
            entries.append((a, box, Origin(a, name, self.launches, args, unit)))
        try:
            cross = [f for a, box, origin in entries if a.is_write
                     for f in self._check(box, origin, found)]
        except Exception:
            self.launches -= 1
            raise
        found.extend(found.in_kernel + cross)
        found.entries = entries
        found.tokens = self._record(entries)
        return found

    def _log_reads(self, logs: dict, stored: dict, plan, deltas: tuple, n: int):
        """Log a launch's reads (see `_FastLog`): the entry a template id (its box fixed by
        the bucket) or (id, translations). The first launch to read a box names it."""
        made = stored.get(id(plan))
        if made is None:  # the plan's first launch in this log set: all its reads
            self._reg = None
            for t in plan.reads:
                bucket = self._bucket(logs, t, t.key(deltas))
                entry = (t.tid, tuple(deltas[i] for i in t.fis)) if t.kind == 2 else t.tid
                if entry not in bucket:
                    bucket[entry] = n
            # where each moving read goes: its field's loose dict, or its axis' value -> bucket
            targets = tuple(self._bucket(logs, t, None) if t.b0 is None
                            else logs[t.fid].axes[t.ax] for t in plan.moving_reads)
            stored[id(plan)] = (plan, targets)  # kept alive: its id is not reused
            return
        for (tid, kind, b0, fi0, fis), values in zip(plan.moving_keys, made[1]):
            entry = (tid, tuple(deltas[i] for i in fis)) if kind == 2 else tid
            if b0 is None:
                bucket = values
            else:
                key = b0 + deltas[fi0] if fi0 >= 0 else b0  # `Tmpl.key`, inlined
                bucket = values.get(key)
                if bucket is None:
                    bucket = values[key] = {}
            if entry not in bucket:
                bucket[entry] = n

    def _bucket(self, logs: dict, t, key) -> dict:
        """The {entry: launch number} dict of read template `t` with bucket value `key`."""
        log = logs.get(t.fid)
        if log is None:
            log = logs[t.fid] = _FastLog()
        if t.b0 is None:
            return log.loose
        values = log.axes.get(t.ax)
        if values is None:
            values = log.axes[t.ax] = {}
        if key is None:
            return values
        bucket = values.get(key)
        if bucket is None:
            bucket = values[key] = {}
        return bucket

    def _entry_box(self, key, entry) -> tuple:
        """(Tmpl, box) of one entry of a fast read log (`_log_reads`) in the bucket of value
        `key` (on the template's axis)."""
        reg = self._reg
        if reg is None:
            reg = self._reg = {t.tid: t for stored in (self._stored, self._unit_stored)
                               for plan, _ in stored.values() for t in plan.reads}
        if type(entry) is tuple:
            t = reg[entry[0]]
            return t, translate(t.base, t.dims, entry[1])
        t = reg[entry]
        return t, t.base if t.kind == 0 else translate(t.base, (t.ax,), (key - t.b0,))

    def _entry_origin(self, t, n: int) -> Origin:
        """The `Origin` of template `t` read by launch `n` (from the flat launch records)."""
        name, kernel_ir, values, unit = self._recs[4 * n - 4:4 * n]
        return Origin(t.access, name, n, _ArgsText(kernel_ir, arg_env(values)), unit)

    def python_write(self, field, index, loc: Loc | None, what: str) -> list[Finding]:
        """A Python-scope write (`x[i] = v`, `x.fill`, `x.from_numpy`; `index` None: all)."""
        idx = () if index is None else (tuple(index) if isinstance(index, (tuple, list)) else (index,))
        shape = field_shape(field)
        box = tuple(Comp(int(i), int(i), 0, True) for i in idx)
        box += tuple(whole(n, True) for n in shape[len(idx):])
        access = Access(field, tuple(Affine(int(i)) for i in idx), "store", -1, -1, "serial", (), loc)
        unit = self._units[-1][0] if self._units else None
        origin = Origin(access, None, self.launches, unit=unit, what=what)
        found = self._check(box, origin, None)
        self._record([(access, box, origin)])
        return found

    def resolve(self, found: Checked, read_masks: dict, write_masks: dict):
        """After a validated launch ran: raise `AccessRuleError` when its actual writes
        (`write_masks`: id(Access.stmt) -> bool array) hit an element an earlier launch read
        (`found.captures`); else fill its read sets (`read_masks`, keyed likewise)."""
        for origin, box, earlier in found.captures:
            written = write_masks.get(id(origin.access.stmt))
            if written is None:  # not watched: nothing proves it apart, so refuse (undecided)
                read, first = earlier[0]
                read_box = read.box if isinstance(read, ReadSet) else read
                raise to_error(_finding(read_box, first, box, origin, []))
            for read, first in earlier:
                mask = read.mask if isinstance(read, ReadSet) else box_mask(read, written.shape)
                both = np.argwhere(mask & written)
                if len(both):
                    raise to_error(_exact_finding(first, origin, tuple(both[0]), len(both), True))
        for rs, a in found.reads:
            rs.mask = read_masks.get(id(a.stmt))

    def discard(self, found: Checked):
        """Forget a launch `launch` recorded (it was refused at run time and undone)."""
        ids = {id(e) for e in found.entries}
        self._pending = [e for e in self._pending if id(e) not in ids]
        for logs, fid, token in found.tokens:
            if fid in logs:
                logs[fid].remove(token)
        self.launches -= 1

    def unit(self, name: str, loc: Loc | None = None) -> _Unit:
        """A `grad_replaced` call: one unit, recorded as a whole when it ends (a context
        manager; a class, not a generator: one is entered per step of a checkpointed loop)."""
        return _Unit(self, name, loc)

    def _end_unit(self):
        self._units.pop()
        if not self._units:
            if self._pending:
                entries, self._pending = self._pending, []
                self._store(entries)
            fast, self._pending_reads = self._pending_reads, []
            logs, stored = self.unit_reads, self._unit_stored
            for plan, deltas, n in fast:
                self._log_reads(logs, stored, plan, deltas, n)

    def _record(self, entries: list) -> list:
        if self._units:
            self._pending.extend(entries)
            return []
        return self._store(entries)

    def _store(self, entries: list) -> list:
        """Log the reads (a later write is checked against them; writes need no log: a later
        kernel may overwrite an element nobody read)."""
        tokens = []
        for a, box, origin in entries:
            if a.is_write:
                continue
            logs = self.unit_reads if origin.unit else self.reads
            fid = id(a.field)
            log = logs.get(fid)
            if log is None:
                log = logs[fid] = _Log()
            token = log.add(box, origin)
            if token is not None:
                tokens.append((logs, fid, token))
        return tokens

    def _check(self, box: tuple, origin: Origin, found: Checked | None) -> list[Finding]:
        fid = id(origin.access.field)  # a unit's write: reads inside earlier units are theirs
        sources = (self.reads,) if origin.unit is not None else (self.reads, self.unit_reads)
        logs = [r[fid] for r in sources if fid in r]
        if not logs:  # nobody read this field yet: the common case, kept cheap
            return []
        hits, known = [], []
        for log in logs:
            hits += log.meeting(box, self)
            known += log.known(box)
        self._raise_sure(box, origin, hits)
        if exact_box(box):
            _raise_known(box, origin, known)
            known = []
        return _deferred(box, origin, found, hits, known)

    def _raise_sure(self, box: tuple, origin: Origin, hits: list) -> None:
        """Raise at once for a read the write surely meets (any read it may meet, when run-time
        validation is off)."""
        sure = [(b, o) for b, o in hits if all(x.surely_meets(y) for x, y in zip(b, box))]
        if self.validation and not exact_box(box):
            sure = []  # which elements an inexact write hits is learnt at run time
        if sure or (hits and not self.validation):
            raise to_error(_finding(*(sure or hits)[0], box, origin, sure))


def _logged_boxes(check: KernelCheck) -> LaunchBoxes | None:
    """The boxes of the accesses a Tape logs, when the kernel has free reads (`Access.free`:
    no adjoint uses their value, so a later launch may overwrite what they read); None when it
    logs them all (`tape_boxes`). Kept on the check, like `tape_boxes`."""
    logged = getattr(check, "tape_logged_boxes", False)
    if logged is False:
        kept = [a for a in check.accesses if not a.free]
        logged = check.tape_logged_boxes = (
            LaunchBoxes(kept) if len(kept) < len(check.accesses) else None)
    return logged


def _raise_known(box: tuple, origin: Origin, known: list) -> None:
    """A resolved read set against an exact write box: decided now."""
    for rs, first in known:
        both = np.argwhere(rs.mask & box_mask(box, rs.mask.shape))
        if len(both):
            raise to_error(_exact_finding(first, origin, tuple(both[0]), len(both)))


def _deferred(box: tuple, origin: Origin, found: Checked | None, hits: list,
              known: list) -> list[Finding]:
    """The findings left for run-time validation: captured exact reads and resolved read sets
    (checked against the write's elements later), and reads of unknown extent (unresolved; a
    Python-scope write has no later check, so those raise now)."""
    out = []
    exact_reads = [(b, o) for b, o in hits if exact_box(b)]
    if found is not None and (exact_reads or known):
        found.captures.append((origin, box, exact_reads + known))
        first = (exact_reads or [(rs.box, o) for rs, o in known])[0]
        out.append(_finding(*first, box, origin, []))
    unsure = [(b, o) for b, o in hits if not exact_box(b)]
    if unsure:
        out.append(_finding(*unsure[0], box, origin, []))
        if found is None and origin.kernel is None:  # a Python-scope write: no later check
            raise to_error(out[-1])
        if found is not None:
            found.unresolved.append(out[-1])
    return out


class _ArgsText:
    """`_args_text`, formatted only when a message needs it (not at every launch)."""

    __slots__ = ("env", "kernel_ir")

    def __init__(self, kernel_ir, env: dict):
        self.kernel_ir, self.env = kernel_ir, env

    def __str__(self) -> str:
        return _args_text(self.kernel_ir, self.env)

    def __bool__(self) -> bool:
        return bool(str(self))


def _check_range(plan, deltas: tuple, name: str, kernel_ir, arg_values) -> None:
    """Refuse a launch (before it runs) with an index that surely runs and is out of its
    field's range for these arguments: it would read or write outside the field's memory
    (Taichi without `debug=True` does so silently; here it could crash the process)."""
    for fi, lo, hi in plan.limits:
        if not lo <= deltas[fi] <= hi:
            break
    else:
        if not plan.outside:
            return
    bad = list(plan.outside)
    bad += [(a, d, Comp(c.lo + deltas[fi], c.hi + deltas[fi], c.step, True))
            for fi, lo, hi, a, d, c in plan.range_items if not lo <= deltas[fi] <= hi]
    a, d, c = bad[0]
    n = field_shape(a.field)[d]
    args = _args_text(kernel_ir, arg_env(arg_values))
    # the class of a debug-mode bounds check: Taichi's TaichiAssertionError under debug=True
    raise KernelIndexRangeError(
        f"{where(a.loc)}: kernel '{name}'{' (' + args + ')' if args else ''} {describe(a)} "
        f"with index {d} taking {c.lo}..{c.hi}, outside 0..{n - 1}: {source(a.loc)}\n"
        "It would touch memory outside the field (Taichi does not check this either unless "
        "ti.init(debug=True)); keep the index in range, e.g. with ti.min/ti.max or an `if`.")


def check_index_ranges(check: KernelCheck, kernel_ir, name: str, arg_values) -> None:
    """A user's `kernel.grad(...)` outside a Tape: refuse it, as a Tape launch is refused, when
    an index that surely runs is out of its field's range for these arguments (`_check_range`):
    the adjoint would read or write outside the field and give a wrong gradient."""
    boxes = getattr(check, "tape_boxes", None)
    if boxes is None:
        boxes = check.tape_boxes = LaunchBoxes(check.accesses)
    plan, deltas, _ = _plan_of(check, boxes, arg_values, ())
    if plan.outside or plan.limits:
        _check_range(plan, deltas, name, kernel_ir, arg_values)


def check_grad_launch(check: KernelCheck, kernel_ir, name: str, arg_values) -> None:
    """A user's `kernel.grad(...)`: its in-kernel rules (`KernelCheck.run`) and index ranges
    (`check_index_ranges`) judged with its argument values, once per values: a backward that
    calls `p2g.grad(s)` for every step judges each `s` once per compiled kernel."""
    try:
        # the values as bound (converted to the parameters' types): equal keys, equal launches
        key = tuple(arg_values)
        if key in check.grad_launches_passed:
            return
    except TypeError:  # an array argument: judged afresh
        key = None
    check.run(arg_values)
    check_index_ranges(check, kernel_ir, name, arg_values)
    if key is not None:
        if len(check.grad_launches_passed) >= 1 << 14:
            check.grad_launches_passed.clear()
        check.grad_launches_passed.add(key)


def _plan_of(check: KernelCheck, boxes: LaunchBoxes, arg_values, units) -> tuple:
    """(`FastPlan`, its form values, in-kernel findings) of a fast-path launch: the kernel's
    parametric plan, or (arguments in loop bounds or guards, a float index...) its plan per
    argument values. Findings are judged outside units only."""
    plan = boxes.fast
    if plan is not None and (arg_values is None or type(arg_values) in (list, tuple)):
        deltas = plan.deltas(arg_values) if plan.forms else ()
        if deltas is not None:
            judged = check.judge_env(arg_env(arg_values)) if check.symbolic and not units else ()
            return plan, deltas, judged
    plan, judged = _launch_plan(check, boxes, arg_values)
    return plan, (), judged


def _launch_plan(check: KernelCheck, boxes: LaunchBoxes, arg_values) -> tuple:
    """(`FastPlan` of its boxes, in-kernel findings) of a launch, kept per argument values
    (with their types: 1 and 1.0 are different launches) on the kernel's `LaunchBoxes`, so a
    launch seen before, on this Tape or an earlier one, is judged by one lookup."""
    try:
        if arg_values is None:
            key = ()
        elif isinstance(arg_values, (list, tuple)):
            key = tuple((type(v), v) for v in arg_values)
        else:
            key = None  # a mapping of positions: judged afresh
        plan = boxes.by_values.get(key) if key is not None else None
    except TypeError:  # an unhashable argument (an array): judged afresh
        key, plan = None, None
    if plan is None:
        env = arg_env(arg_values)
        plan = (constant_plan(*boxes.plan(env)), check.judge_env(env))
        if key is not None:
            if len(boxes.by_values) >= 1 << 14:
                boxes.by_values.clear()
            boxes.by_values[key] = plan
    return plan


def _args_text(kernel_ir, env: dict) -> str:
    """`t=3, n=128`: ARG positions count the runtime (non-template) parameters only."""
    params = [p for p in getattr(kernel_ir, "params", []) if not p.template]
    names = {i: p.name for i, p in enumerate(params)}
    return ", ".join(f"{names.get(p, f'arg{p}')}={v}" for p, v in sorted(env.items()))


_FIX = ("write to a separate field per time step (`x[t+1, i] = f(x[t, i])`), or do the "
        "Python-scope write before the Tape starts; if the overwrite is intended (a step "
        "reusing its state buffer), checkpoint the step with `@fs.ad.grad_replaced`.")


def _message(first: Origin, second: Origin, element_line: str, tail: str) -> str:
    name = field_name(first.access.field)
    return "\n".join([
        RULE_TEXT[1],
        (f"On this Tape, {second.who()}writes elements of field '{name}' that {first.who()}"
         "read earlier:"),
        first.line("first access:"), second.line("offending access:"), element_line, tail])


def _finding(read_box: tuple, first: Origin, box: tuple, second: Origin, sure: list) -> Finding:
    verdict = Verdict.VIOLATION if sure else Verdict.UNDECIDED
    name = field_name(first.access.field)
    elements = ", ".join(x.text(y) for x, y in zip(read_box, box))
    line = f"  elements in both: {name}[{elements}]" if elements else f"  element: {name}[None]"
    tail = (UNDECIDED_TEXT if verdict is Verdict.UNDECIDED else "To fix: ") + _FIX
    return Finding(1, verdict, first.access.field, first.access, second.access,
                   _message(first, second, line, tail))


def _exact_finding(first: Origin, second: Origin, element: tuple, count: int,
                   ran: bool = False) -> Finding:
    """A violation on elements known exactly (Tape(validation=True) recorded what ran)."""
    name = field_name(first.access.field)
    text = ", ".join(str(int(i)) for i in element) or "None"
    more = f" (and {count - 1} more element{'s' * (count > 2)})" if count > 1 else ""
    done = ("the offending launch was undone: the fields it writes hold their earlier values"
            if ran else "the offending write was refused before it ran")
    line = f"  element in both: {name}[{text}]{more}, found by Tape(validation=True); {done}."
    return Finding(1, Verdict.VIOLATION, first.access.field, first.access, second.access,
                   _message(first, second, line, "To fix: " + _FIX))
