"""Atomic demotion: which atomic updates of one task may be lowered as plain load-op-store.

Takes one offloaded task (a top-level FOR or SERIAL statement) and the kernel's prologue.
Returns the ids of its ATOMIC statements (kinds add, sub, mul, and, or, xor) that no other thread can race
with, so the backend may emit `old = load; store(old op v); old` instead of an atomic
read-modify-write (Taichi's demote_atomics pass):

* in a task that runs on one thread (SERIAL, or a FOR that is not parallel): all of them;
* in a parallel FOR: an atomic to field F when every access to F in the task (load, store,
  atomic) has, at a common set of index positions, the same pure index expressions, and those
  expressions determine the loop index (one of them is the loop index itself, or they hold
  both `L // c` and `L % c` of an expression L that does, or `(L // a) % b` and `L // (a * b)`,
  which fix `L // a`: the indices of a 3-D or deeper loop). Then two iterations that touch one
  element of F are the same iteration, which runs on one thread.

`discarded_atomics(task)`: the ids of the task's parallel atomic adds and subs whose old value
no statement uses, which a backend may combine across threads before touching memory (CUDA's
warp aggregation, `CudaTarget.scatter_atomic`).

Guarantees: analysis only (reads IR, never changes it); when unsure it keeps the atomic.
"""
from __future__ import annotations

from fieldsim.ir.ir import GLOBAL_ACCESS, OPDEFS, Op, Stmt, walk
from fieldsim.ir.opdefs import Effect, Lowering

DEMOTABLE = ("add", "sub", "mul", "and", "or", "xor")  # xor etc. on integer fields only
_ACCESS = GLOBAL_ACCESS
# pure integer arithmetic: equal operand keys give equal values
_INTEGER_OPS = frozenset(op for op, d in OPDEFS.items()
                         if d.effect is Effect.PURE and d.lowering is Lowering.ARITH and d.int_ok)


def owned_atomics(task: Stmt, prologue: list[Stmt]) -> set[int]:
    body = list(walk(task.body))
    atomics = [s for s in body if s.op == Op.ATOMIC and s.attr[1] in DEMOTABLE]
    if not atomics:
        return set()
    if task.op == Op.SERIAL or (task.op == Op.FOR and not task.attr.parallel):
        return {id(s) for s in atomics}
    if task.op != Op.FOR:
        return set()
    keys = _Keys(task, prologue)
    by_field: dict[int, list[Stmt]] = {}
    for s in body:
        if s.op in _ACCESS:
            by_field.setdefault(id(s.field), []).append(s)
    owned_fields = {f for f, accs in by_field.items() if _owned(accs, keys)}
    return {id(s) for s in atomics if id(s.field) in owned_fields}


def discarded_atomics(task: Stmt) -> set[int]:
    if task.op != Op.FOR or not task.attr.parallel:
        return set()
    body = list(walk(task.body))
    used = {id(a) for st in body for a in st.args}
    return {id(s) for s in body if s.op == Op.ATOMIC and s.attr[1] in ("add", "sub")
            and id(s) not in used}


def _owned(accesses: list[Stmt], keys: _Keys) -> bool:
    """Every access shares pure index expressions, at common positions, that fix the loop index."""
    first = [keys.of(ix) for ix in accesses[0].indices]
    common = set()
    for d, k in enumerate(first):
        if k is not None and all(len(a.indices) == len(first) and keys.of(a.indices[d]) == k
                                 for a in accesses[1:]):
            common.add(k)
    return _determines_loop(common)


def _determines_loop(known: set) -> bool:
    """Close `known` under the injective steps back to an operand and report whether the loop
    index is in it: (X // c and X % c) -> X, X + v -> X, X - v -> X, v - X -> X, X * k -> X,
    for a nonzero constant c, an odd constant k and a loop-invariant v."""
    known = set(known)
    changed = True
    while changed and ("loop",) not in known:
        changed = False
        for k in list(known):
            for x in _operands_fixed_by(k, known):
                if x not in known:
                    known.add(x)
                    changed = True
    return ("loop",) in known


def _operands_fixed_by(k: tuple, known: set) -> list:
    op = k[0]
    if op == Op.FLOORDIV and _nonzero_const(k[2]) and (Op.MOD,) + k[1:] in known:
        return [k[1]]
    if op == Op.MOD:
        return _quotient_fixed_by(k, known)
    if op == Op.ADD:
        return [a for a, b in ((k[1], k[2]), (k[2], k[1])) if _invariant(b)]
    if op == Op.SUB:
        return [a for a, b in ((k[1], k[2]), (k[2], k[1])) if _invariant(b)]
    if op == Op.MUL:
        return [a for a, b in ((k[1], k[2]), (k[2], k[1])) if _odd_const(b)]
    return []


def _quotient_fixed_by(k: tuple, known: set) -> list:
    """`(X // a) % b` with `X // (a * b)` known fixes `X // a`, as `(X // a) // b == X // (a * b)`
    for positive a and b: the middle indices of a 3-D or deeper loop (`L // (n1 * n2)`,
    `(L // n2) % n1`, `L % n2`) then fix L one level at a time."""
    quotient, b = k[1], k[2]
    if quotient[0] != Op.FLOORDIV or not (_positive_const(b) and _positive_const(quotient[2])):
        return []
    a = quotient[2]
    whole = (Op.FLOORDIV, quotient[1], ("const", a[1], a[2] * b[2]))
    return [quotient] if whole in known else []


def _positive_const(k) -> bool:
    return k[0] == "const" and isinstance(k[2], int) and not isinstance(k[2], bool) and k[2] > 0


def _nonzero_const(k) -> bool:
    return k[0] == "const" and k[2] != 0


def _odd_const(k) -> bool:
    """Multiplying by an odd constant is one-to-one even when 32-bit indices wrap."""
    return k[0] == "const" and isinstance(k[2], int) and k[2] % 2 == 1


def _invariant(k) -> bool:
    """The key holds no loop index (its value is the same in every iteration)."""
    if k == ("loop",):
        return False
    return all(not isinstance(a, tuple) or _invariant(a) for a in k[1:])


class _Keys:
    """Structural keys of pure index expressions: equal keys mean equal values within one
    iteration of the task's loop. None for anything impure (loads, locals, inner loops...)."""

    def __init__(self, task: Stmt, prologue: list[Stmt]):
        self.task = task
        self.prologue = {id(p) for p in prologue}
        self.memo: dict[int, tuple | None] = {}

    def of(self, s: Stmt):
        if id(s) not in self.memo:
            self.memo[id(s)] = self._key(s)
        return self.memo[id(s)]

    def _key(self, s: Stmt):
        if s is self.task:
            return ("loop",)
        if s.op == Op.CONST:
            return ("const", str(s.dtype), s.attr)
        if s.op == Op.ARG:
            return ("arg", s.attr)
        if id(s) in self.prologue:
            return ("prologue", id(s))
        if s.op == Op.CAST:  # integer widening keeps values apart; anything else: unknown
            src = s.args[0].dtype
            if s.dtype.is_int and src is not None and src.is_int and s.dtype.bits >= src.bits:
                return self.of(s.args[0])
            return None
        if s.op in _INTEGER_OPS and s.dtype is not None and s.dtype.is_int:
            args = tuple(self.of(a) for a in s.args)
            if any(a is None for a in args):
                return None
            return (s.op,) + args
        return None
