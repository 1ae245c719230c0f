"""Values a checkpointed step hands to a later step outside its `state` (gh-ckpt).

`fs.ad.checkpoint`'s backward recomputes each segment from its snapshot of the state; every
other field then holds its end-of-forward value. A segment's recomputation is thus wrong exactly
when it reads an element of such a field before writing it (an *exposed* read) and some write,
in that segment or a later one, changes that element after the read: the element carried a
value between steps outside the state. `CarriedReads` follows the forward pass element by
element and finds the first such element, so that `checkpoint` refuses it before the backward
writes any gradient.

Element sets are the checker's boxes (`checks.boxes`: a launch's accesses with its argument
values substituted). Only certain accesses count, so that no program is refused on a guess: a
read or write whose box is exact (no data-dependent index, no `if` guard) and which surely runs
(no `if`, `while`, `break` around it). A plain store (not an atomic update, whose result still
depends on the old value) covers the elements it certainly writes for the rest of its segment;
a read of an element not covered is exposed, and any later write of it is refused. Python-scope writes
(`x[i] = v`, `fill`, `from_numpy`) and reads (`x[i]`, `to_numpy`) count like launches, and so do
`fs.ndarray`s and NumPy arrays passed to kernels (the checker sees them as fields).

Not carried (accepted): write-once time-indexed outputs (`traj[t + 1] = f(traj[t])`: the
element read is never written again), atomic accumulators never read (`loss[None] += ...`),
scratch fields written before they are read in every step, fields only read, state fields.
"""
from __future__ import annotations

import numpy as np

from fieldsim.checks.access_rules import AccessKind, arg_env, describe, kernel_check, source, where
from fieldsim.checks.boxes import LaunchBoxes, box_slices, exact_box, field_shape, surely_runs
from fieldsim.errors import AccessRuleError
from fieldsim.ir.printer import field_name
from fieldsim.lang.ndarray import ExternalArray


class _Track:
    """One field's elements: `written` in the current segment (certainly), `exposed` (read
    before any write in their segment), `reader` (index into `CarriedReads.events` of the
    first exposed read of each element, -1 for none)."""

    __slots__ = ("exposed", "field", "reader", "written")

    def __init__(self, field, shape):
        self.field = field
        self.written = np.zeros(shape, dtype=bool)
        self.exposed = np.zeros(shape, dtype=bool)
        self.reader = np.full(shape, -1, dtype=np.int32)


class CarriedReads:
    """Follows a checkpoint's forward pass (see the module docstring). `skip`: ids of the fields
    the snapshots restore. `found`: (field, element, reading event, writing event) of the first
    carried element, or None; an event is (kernel name or None, launch number, Access or None,
    Python-scope text, loc)."""

    def __init__(self, skip):
        self.skip = set(skip)
        self.tracks: dict[int, _Track] = {}
        self.events: list = []
        self.found = None
        self.launches = 0
        self._exits: dict = {}

    def _track(self, field):
        if id(field) in self.skip or getattr(field, "role", "primal") not in ("primal", "hidden") \
                or getattr(field, "storage", None) is None:
            return None
        tr = self.tracks.get(id(field))
        if tr is None:
            tr = self.tracks[id(field)] = _Track(field, field_shape(field))
        return tr

    def new_segment(self):
        for tr in self.tracks.values():
            tr.written[...] = False

    def launch(self, name, ck, values):
        self.launches += 1
        if self.found is not None:
            return
        check = ck.analyses.check if ck.analyses is not None else kernel_check(ck)
        boxes = getattr(check, "tape_boxes", None)
        if boxes is None:
            boxes = check.tape_boxes = LaunchBoxes(check.accesses)
        event = None
        # program order inside the launch: `f[i] = 0` then `f[i] += g` reads what it wrote
        pairs = sorted(boxes.of_launch(arg_env(values), per_access=True),
                       key=lambda p: (p[0].task_index, p[0].position))
        for a, box in pairs:
            tr = self._track(a.field)
            if tr is None or not (exact_box(box) and surely_runs(a, self._exits)):
                continue
            if event is None:
                event = (name, self.launches)
            sl, ev = box_slices(box, tr.written.shape), event + (a, None, a.loc)
            if a.kind is AccessKind.RMW:  # `x[i] = x[i] * 2`: its load is folded into it
                self._access(tr, sl, False, ev, False)
            # an atomic update keeps the old value in the element: it does not cover it
            self._access(tr, sl, a.is_write, ev, a.kind in (AccessKind.STORE, AccessKind.RMW))

    def python_access(self, field, idx, is_write, what, loc):
        if self.found is not None:
            return
        tr = self._track(field)
        if tr is None:
            return
        if idx is None:
            where_ = ()
        else:
            idx = tuple(idx) if isinstance(idx, (tuple, list)) else (idx,)
            where_ = tuple(slice(int(i), int(i) + 1) for i in idx)
        self._access(tr, where_, is_write, (None, self.launches, None, what, loc), True)

    def _access(self, tr, sl, is_write, event, covers):
        if is_write:
            hit = tr.exposed[sl]
            if hit.any():
                element = tuple(int(i) for i in np.argwhere(hit)[0])
                element = tuple(s.start + i * (s.step or 1) for s, i in zip(sl, element)) + \
                    element[len(sl):]
                self.found = (tr.field, element, self.events[tr.reader[element]], event)
                return
            if covers:
                tr.written[sl] = True
            return
        new = ~tr.written[sl] & ~tr.exposed[sl]
        if new.any():
            tr.exposed[sl] |= new
            tr.reader[sl] = np.where(new, len(self.events), tr.reader[sl])
            self.events.append(event)

    def error(self, step_name, state) -> AccessRuleError:
        field, element, read, write = self.found
        name = field_name(field)
        kept = ", ".join(field_name(f) for f in state)
        text = ", ".join(str(i) for i in element) or "None"
        lines = [
            (f"fs.ad.checkpoint({step_name}): field '{name}' carries values from one step to a later "
            f"one outside state=[{kept}]:"),
            _line("read:", read), _line("overwritten:", write),
            f"  element: {name}[{text}], read before any write in its segment and changed after.",
            ("The backward recomputes each segment from its snapshot of the state, where this "
            f"read would see '{name}' as the forward pass left it, not the value it read; the "
            "gradient would be silently wrong. Nothing was differentiated."),
            _fix(field, kept, name)]
        if read[0] is None:  # fieldsim cannot follow what a Python-scope read's value feeds
            lines.append("If that Python-scope read only reports the value (a print, a log), "
                         "move it out of the step (after the checkpoint call) or add the field to "
                         "state as above: a read inside the step is taken as one the step uses.")
        related = (("read", read[4]),) if read[4] is not None else ()
        return AccessRuleError("\n".join(lines), loc=write[4], related=related)


def _fix(field, kept, name) -> str:
    state = f"state=[{kept + ', ' if kept else ''}{name}]"
    if isinstance(field, ExternalArray):  # a NumPy array: no field to name in `state`
        return (f"To fix: pass an fs.ndarray instead of the NumPy array '{name}' and add it to "
                f"{state}, or save and restore the array with save=/restore=.")
    return f"To fix: add it to {state} (or save and restore it with save=/restore=)."


def _line(label, event) -> str:
    kernel, n, a, what, loc = event
    if kernel is None:
        who = f"Python-scope `{what}`"
    else:
        who = f"kernel '{kernel}' (launch {n} in the checkpoint) {describe(a)}"
    return f"  {label:<13}{where(loc)}  {who}:  {source(loc)}"
