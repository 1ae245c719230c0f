"""An element-level reference for the access rules, on programs from tape_program_gen.

`violations(plan, idx)` runs a `Plan` abstractly, with the concrete `idx` values, launch by
launch, and lists every broken rule as (rule, where, text): `where` is the kernel's name for a
break inside one launch, 'tape' for one between launches or Python-scope writes. It takes the rules as API.md states them:

* rule 1: no write of an element after a read of it: in the same thread later in program
  order, by any other thread of a parallel loop (threads run in no fixed order), in a later
  iteration of a serialized loop, or by a later launch or Python-scope write on the Tape;
  except a companion read (a `lin` term of a store, `+=` or `-=`: its adjoint uses no value),
  which only a write from another thread breaks; the checker proves it for a write through
  the same index in the same thread, so the reference frees only those in a launch;
* rule 2: within one launch, a write may follow a write of the same element only if it is an
  atomic add (`+=`, `-=`, the loss) that does not follow an atomic_max, or both are atomic_max;
  across launches overwriting is free.

It is exact for these programs (guards, offsets and argument values are all evaluated), so an
accepted program with a violation here is a soundness bug of the checker, and a kernel refused
(as a certain violation, not undecided) without one here is a false alarm.
"""
from __future__ import annotations

from collections import defaultdict
from typing import NamedTuple

from tape_program_gen import N, Plan, condition_holds, guards

ACCUMULATE = {"add": "add", "sub": "add", "loss": "add", "max": "max", "store": "store",
              "mul": "store"}


class Event(NamedTuple):
    thread: int
    pos: int
    element: tuple  # (field number or 'loss', index)
    kind: str  # 'read', 'add', 'max' or 'store'
    linear: tuple | None = None  # a companion read: the (pattern, const) it was read through
    index: tuple | None = None  # a write: the (pattern, const) it wrote through


def _element(pattern: str, const: int, i: int, a: int, idx) -> int:
    return {"i": i, "i+1": i + 1, "i-1": i - 1, "c": const, "rev": N - 1 - i, "i+a": i + a,
            "idx": int(idx[i])}[pattern]


def _runs(stmt, i: int, a: int) -> bool:
    ok = {"i+1": i + 1 < N, "i-1": i >= 1, "i+a": i + a < N}
    return all(ok[p] for p in guards(stmt)) and condition_holds(stmt.cond, i)


def events(stmts, a: int, idx) -> list[Event]:
    out = []
    for i in range(N):
        pos = 0
        for s in stmts:
            if not _runs(s, i, a):
                continue
            for f, pattern, const, shape in s.loads:
                lin = _through(pattern, const) if shape == "lin" and s.kind in _LINEAR_SINKS else None
                out.append(Event(i, pos, (f, _element(pattern, const, i, a, idx)), "read", lin))
            target = ("loss", 0) if s.kind == "loss" else (s.target, _element(*s.index, i, a, idx))
            if s.kind == "mul":
                out.append(Event(i, pos, target, "read"))
            written = None if s.kind == "loss" else _through(*s.index)
            out.append(Event(i, pos + 1, target, ACCUMULATE[s.kind], index=written))
            pos += 2
    return out


_LINEAR_SINKS = ("store", "add", "sub", "loss")


def _through(pattern: str, const: int) -> tuple:
    return pattern, const if pattern == "c" else 0  # only `c` reads its constant


def _freed(r: Event, w: Event) -> bool:
    """A companion read that a write through the same index in the same thread follows."""
    return (r.linear is not None and w.thread == r.thread and w.pos > r.pos
            and w.kind in ("add", "store") and w.index == r.linear)


def _may_follow(first: str, second: str) -> bool:
    # not an add after a max: the max's adjoint finds its winner by the element's final value
    return (second == "add" and first != "max") or first == second == "max"


def _in_launch(evs: list[Event], serialize: bool, name: str, a: int) -> list[tuple]:
    found = []
    by_element = defaultdict(list)
    for e in evs:
        by_element[e.element].append(e)
    for element, group in by_element.items():
        reads = [e for e in group if e.kind == "read"]
        writes = [e for e in group if e.kind != "read"]
        for r in reads:
            for w in writes:
                later = ((w.thread, w.pos) > (r.thread, r.pos) if serialize
                         else w.thread != r.thread or w.pos > r.pos)
                if later and not _freed(r, w):
                    text = f"{name}({a}): {element} read by thread {r.thread}, written by {w.thread}"
                    found.append((1, name, text))
        for k, w1 in enumerate(writes):
            for w2 in writes[k + 1:]:
                if serialize or w1.thread == w2.thread:
                    first, second = sorted((w1, w2), key=lambda e: (e.thread, e.pos))
                    # a plain store may follow in order: its adjoint takes and zeroes the gradient
                    bad = not (_may_follow(first.kind, second.kind) or second.kind == "store")
                else:
                    bad = not (_may_follow(w1.kind, w2.kind) and _may_follow(w2.kind, w1.kind))
                if bad:
                    text = (f"{name}({a}): {element} written by threads {w1.thread} ({w1.kind}) "
                            f"and {w2.thread} ({w2.kind})")
                    found.append((2, name, text))
    return found


def violations(p: Plan, idx) -> list[tuple]:
    """Every broken rule of the plan's run, in launch order."""
    kernels = {name: (serialize, stmts) for name, serialize, stmts in p.kernels}
    read: set = set()
    found = []
    for call in p.calls:
        if call[0] == "python":
            _, f, index = call
            written = {(f, k) for k in range(N)} if index < 0 else {(f, index)}
            found += [(1, "tape", f"Python write of {e} after a read") for e in sorted(written & read)]
            continue
        _, name, a = call
        serialize, stmts = kernels[name]
        evs = events(stmts, a, idx)
        found += _in_launch(evs, serialize, name, a)
        written = {e.element for e in evs if e.kind != "read"}
        found += [(1, "tape", f"{name}({a}) writes {e} read by an earlier launch")
                  for e in sorted(written & read, key=str)]
        # a companion read's adjoint uses no value: a later launch may overwrite its element
        read |= {e.element for e in evs if e.kind == "read" and e.linear is None}
    return found
