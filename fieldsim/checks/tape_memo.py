"""A Tape whose launches repeat the previous Tape's reuses its verdicts (`RepeatingTapeState`).

Takes: what a Tape's checker is handed, in order: launches (kernel IR, name, `KernelCheck`,
argument values), `grad_replaced` units opening and closing, Python-scope writes; and a
`Remembered` sequence of the events of the last Tape recorded on this thread.

Guarantees: the same verdicts, errors and messages as a fresh `TapeState(index_ranges=True)`
given the same events. A `TapeState`'s verdict on an event is a function of the events before it
(the kernels' IR and checks, integer argument values, fields' shapes, all fixed for a compiled
kernel), so while this Tape's events equal the remembered ones, one by one, each is accepted
again without being judged: a few identity and value comparisons per launch, whatever the
Tape's length. At the first event that differs (or a Python-scope write), the earlier events are
replayed into a fresh `TapeState` (the cost the Tape would have paid for them) and checking goes
on there; the remembered sequence then becomes this Tape's. A training loop records the same
launches every iteration, so from its second iteration on its Tapes are checked at this cost.

Validation Tapes (`Tape(validation=True)`) keep a plain `TapeState`: they resolve reads per run.
"""
from __future__ import annotations

from fieldsim.checks.tape_rules import _CHECKED, _IN_UNIT, TapeState

_LAUNCH, _OPEN, _CLOSE = 0, 1, 2


class Remembered:
    """The events of the last Tape recorded on one thread: (kind, four values) each."""

    __slots__ = ("events", "user")

    def __init__(self):
        self.events: list = []
        self.user = None  # the RepeatingTapeState reading or writing `events` now


def _same_values(a: tuple, b: tuple) -> bool:
    """Equal argument values of equal types (1 and 1.0 are different launches to the checker)."""
    try:
        if a != b:
            return False
    except (TypeError, ValueError):  # an array argument: judged afresh
        return False
    for x, y in zip(a, b):
        if type(x) is not type(y):
            return False
    return True


class RepeatingTapeState:
    """`TapeState`'s interface for the Tape (`launch`, `unit`, `python_write`), answered from
    `Remembered` while the events repeat, by a real `TapeState` from the first difference on."""

    validation = False

    def __init__(self, memo: Remembered):
        self.memo = memo
        memo.user = self  # a later Tape on this thread takes the sequence over
        # matched against while it repeats; never changed in place (`_go_real` copies it), so
        # a later Tape taking the sequence over cannot change what this one matched
        self.events = memo.events
        self.pos = 0  # events matched so far, while `real` is None
        self.depth = 0  # units open
        self.real: TapeState | None = None
        self.open_units: list = []

    def launch(self, kernel_ir, kernel_name, summary, arg_values):
        """As `TapeState.launch` (without validation)."""
        values = tuple(arg_values) if arg_values is not None else ()
        if self.real is None:
            p = self.pos
            event = self.events[p] if p < len(self.events) else None
            if (event is not None and event[1] is kernel_ir and event[3] is summary
                    and event[0] == _LAUNCH and event[2] == kernel_name
                    and (event[4] == () if not values else _same_values(event[4], values))):
                self.pos = p + 1
                return _IN_UNIT if self.depth else _CHECKED
            self._go_real()
        found = self.real.launch(kernel_ir, kernel_name, summary, arg_values)
        self._remember(_LAUNCH, kernel_ir, kernel_name, summary, values)
        return found

    def unit(self, name: str, loc=None) -> _RepeatingUnit:
        return _RepeatingUnit(self, name, loc)

    def python_write(self, field, index, loc, what):
        self._go_real()
        self.memo.user = None  # not remembered: the next Tape checks from its first event
        return self.real.python_write(field, index, loc, what)

    def kernel_check(self, kernel_ir, summary=None):
        self._go_real()
        return self.real.kernel_check(kernel_ir, summary)

    def _open(self, name, loc):
        if self.real is None:
            ev, p = self.events, self.pos
            if p < len(ev) and ev[p][0] == _OPEN and ev[p][1] == name and ev[p][2] == loc:
                self.pos = p + 1
                self.depth += 1
                return
            self._go_real()
        unit = self.real.unit(name, loc)
        unit.__enter__()
        self.open_units.append(unit)
        self.depth += 1
        self._remember(_OPEN, name, loc, None, None)

    def _close(self):
        self.depth -= 1
        if self.real is None:
            ev, p = self.events, self.pos
            if p < len(ev) and ev[p][0] == _CLOSE:
                self.pos = p + 1
                return
            self._go_real()
        self.open_units.pop().__exit__(None, None, None)
        self._remember(_CLOSE, None, None, None, None)

    def _remember(self, *event):
        if self.memo.user is self:
            self.events.append(event)  # this Tape's own list since `_go_real`

    def _go_real(self):
        """Replay the matched events into a fresh `TapeState`, which judges from here on."""
        if self.real is not None:
            return
        real = self.real = TapeState(validation=False, index_ranges=True)
        ev = self.events
        for p in range(self.pos):
            kind, a, b, c, d = ev[p]
            if kind == _LAUNCH:
                real.launch(a, b, c, list(d))
            elif kind == _OPEN:
                unit = real.unit(a, b)
                unit.__enter__()
                self.open_units.append(unit)
            else:
                self.open_units.pop().__exit__(None, None, None)
        self.events = ev[:self.pos]
        if self.memo.user is self:
            self.memo.events = self.events


class _RepeatingUnit:
    """`RepeatingTapeState.unit(...)`: a `grad_replaced` call's context manager."""

    __slots__ = ("loc", "name", "state")

    def __init__(self, state, name, loc):
        self.state, self.name, self.loc = state, name, loc

    def __enter__(self):
        self.state._open(self.name, self.loc)
        return self.state

    def __exit__(self, *exc) -> bool:
        self.state._close()
        return False
