"""Split a flattened ndrange loop into a two-level nest (analysis only; llvm.py emits the nest).

Takes a parallel `FOR` over a linear index `lin` whose body recovers the user's indices with
`floordiv(lin, C)` / `mod(lin, C)` by positive constants (what `ti.ndrange` and struct-fors
over multi-dimensional fields lower to). Returns an `NdSplit`: the innermost extent `c` (the
smallest `mod` divisor that every other divisor is a multiple of) and, per statement, how its
value follows from `q = lin // c` and `r = lin % c`. The code generator then runs the worker's
chunk `[lo, hi)` as `for q: for r in [max(lo - q*c, 0), min(hi - q*c, c)):` so the innermost
loop has a plain induction variable (LLVM's loop vectorizer needs one; per-iteration `sdiv`/
`srem` of the linear index defeat it), and everything that depends on `q` only is loop-invariant
in the inner loop.

`speculable_loads(if_stmt, ranges, written)` finds the loads inside an `if` whose element is
in bounds whatever the condition (interval arithmetic on the indices from the nest's known
index ranges) and whose field the task never writes: the code generator loads those before
the branch, so the `if` holds only arithmetic, which LLVM if-converts (a select per lane)
instead of masked gathers. `if_convertible` says which `if`s may run as predicated
straight-line code; `nest_accumulators` which atomic adds may sum locally per row (element
depends on q only) or per chunk (on r only) and be flushed once. `data_indexed` says whether
a loop touches fields at data-dependent elements (gathers/scatters once vectorized).

Guarantees: the split only applies when `lin >= 0` on every iteration (a constant, non-negative loop
begin), so floor and truncating division agree, and when no `break` leaves the loop (it would
leave only the inner loop of the nest). The statements not described keep their meaning: the
loop's own value is still `lin = q*c + r`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from fieldsim.ir.ir import GLOBAL_ACCESS, GLOBAL_READ, GLOBAL_WRITE, PURE, Op, Stmt, array_parts, walk
from fieldsim.lang.ndarray import is_slot
from fieldsim.lang.quant import is_quant


@dataclass
class NdSplit:
    c: int  # the innermost extent: r runs over [0, c)
    # id(stmt) -> ("q", k): lin // (k*c) = q // k;  ("r", k): lin % (k*c) = (q % k)*c + r
    uses: dict
    # id(stmt) -> (lo, hi), inclusive: the values the loop index and the q/r statements take
    # (empty when the loop's end is not a constant)
    ranges: dict


def ndrange_split(loop: Stmt) -> NdSplit | None:
    """The nest split of a parallel loop, or None where it does not apply (see module doc)."""
    begin = loop.args[0]
    if begin.op != Op.CONST or not isinstance(begin.attr, int) or begin.attr < 0:
        return None
    divs, mods = [], []
    for st in loop.body:
        if st.op in (Op.FLOORDIV, Op.MOD) and len(st.args) == 2 and st.args[0] is loop \
                and st.args[1].op == Op.CONST and isinstance(st.args[1].attr, int) \
                and st.args[1].attr > 0 and st.dtype is loop.dtype:
            (mods if st.op == Op.MOD else divs).append(st)
    if not mods or _breaks_out(loop.body):
        return None
    c = min(st.args[1].attr for st in mods)
    if c < 2:
        return None
    uses, ranges = {}, {}
    end = loop.args[1]
    last = end.attr - 1 if end.op == Op.CONST and isinstance(end.attr, int) else None
    if last is not None and last >= begin.attr:
        ranges[id(loop)] = (begin.attr, last)
    for st in divs + mods:
        d = st.args[1].attr
        k, rem = divmod(d, c)
        if rem == 0:
            uses[id(st)] = ("q" if st.op == Op.FLOORDIV else "r", k)
        if id(loop) in ranges:
            ranges[id(st)] = (begin.attr // d, last // d) if st.op == Op.FLOORDIV \
                else (0, min(d - 1, last))
    return NdSplit(c, uses, ranges)


# Rows a nest needs before its chunks are cut between rows (whole_rows): a launch cuts its range
# into CHUNKS_PER_THREAD (4) chunks per thread, so 64 rows still give 16 threads a row each.
WHOLE_ROWS_MIN = 64


def whole_rows(loop: Stmt, split: NdSplit) -> tuple[int, int] | None:
    """(first, end): the rows q of a nest whose linear range is constant and made of whole rows
    of c columns, at least WHOLE_ROWS_MIN of them; else None. Workers may then take whole
    rows, and the inner loop needs no clamping to a chunk's edges."""
    begin, end = loop.args[0].attr, loop.args[1]
    if end.op != Op.CONST or not isinstance(end.attr, int):
        return None
    c = split.c
    if begin % c or end.attr % c or (end.attr - begin) // c < WHOLE_ROWS_MIN:
        return None
    return begin // c, end.attr // c


def loop_range(loop: Stmt) -> dict:
    """{id(loop): (first, last)} for a loop with constant integer bounds (the index range
    `speculable_loads` reasons with in a plain 1-d loop), else {}."""
    lo, hi = loop.args[0], loop.args[1]
    if lo.op == Op.CONST and hi.op == Op.CONST and isinstance(lo.attr, int) \
            and isinstance(hi.attr, int) and hi.attr > lo.attr:
        return {id(loop): (lo.attr, hi.attr - 1)}
    return {}


def conditional_loads(loop: Stmt, hoisted) -> bool:
    """Whether an `if` in the loop's body (outside nested loops) reads a field under its
    condition: vectorized, such a loop reads under a mask, which LLVM lowers to gathers for a
    vector field's interleaved components (an SPH pair loop `if i != j: x[j] ...` ran 6x
    slower than its scalar form, Taichi's). `hoisted(if_stmt)`: ids of the loads the code
    generator speculates before that `if` (they read nothing under a mask)."""
    def reads(block, done) -> bool:
        return any((st.op == Op.LOAD and id(st) not in done)
                   or (st.op not in (Op.FOR, Op.LOOP) and any(reads(b, done) for b in st.blocks))
                   for st in block)
    return any(st.op == Op.IF and any(reads(b, hoisted(st)) for b in st.blocks)
               for st in _outside_loops(loop.body))


def _outside_loops(block):
    """The statements of `block` and its nested blocks, not entering nested loops."""
    for st in block:
        yield st
        if st.op not in (Op.FOR, Op.LOOP):
            for b in st.blocks:
                yield from _outside_loops(b)


def written_fields(task: Stmt) -> set:
    """ids of the fields a task stores to or updates atomically."""
    return {id(st.field) for st in walk(task.body) if st.op in GLOBAL_WRITE}


def speculable_loads(if_stmt: Stmt, ranges: dict, written: set) -> list:
    """Loads in an `if`'s blocks (outside nested loops) that may run before the branch: their
    indices are defined outside the `if` or are constants, provably inside the field's shape,
    and the task never writes the field (so the value read cannot depend on the order)."""
    inner = set()
    out = []

    def scan(block):
        for st in block:
            inner.add(id(st))
            # (not a quantized field: its word may be written through another field)
            if st.op == Op.LOAD and not is_slot(st.field) and id(st.field) not in written \
                    and not is_quant(st.field) and _in_bounds(st, ranges, inner):
                out.append(st)
            if st.op not in (Op.FOR, Op.LOOP):
                for b in st.blocks:
                    scan(b)
    for b in if_stmt.blocks:
        scan(b)
    return out


def _in_bounds(load: Stmt, ranges: dict, inner: set) -> bool:
    shape = getattr(load.field, "storage_shape", None)
    if shape is None or len(shape) != len(load.indices):
        return False
    for ix, n in zip(load.indices, shape):
        if ix.op != Op.CONST and id(ix) in inner:
            return False  # computed inside the `if`: not available before the branch
        iv = _interval(ix, ranges)
        if iv is None or iv[0] < 0 or iv[1] >= n:
            return False
    return True


def _interval(s: Stmt, ranges: dict, depth=0):
    """(lo, hi) inclusive bounds of an integer statement's value, or None when unknown."""
    if id(s) in ranges:
        return ranges[id(s)]
    if s.op == Op.CONST:
        return (s.attr, s.attr) if isinstance(s.attr, int) else None
    if depth > 8 or s.dtype is None or not s.dtype.is_int or s.op not in (Op.ADD, Op.SUB, Op.MUL):
        return None
    a, b = (_interval(x, ranges, depth + 1) for x in s.args)
    if a is None or b is None:
        return None
    if s.op == Op.ADD:
        lo, hi = a[0] + b[0], a[1] + b[1]
    elif s.op == Op.SUB:
        lo, hi = a[0] - b[1], a[1] - b[0]
    else:
        corners = [x * y for x in a for y in b]
        lo, hi = min(corners), max(corners)
    bits = s.dtype.bits
    lim = 1 << (bits - 1) if s.dtype.is_signed else 1 << bits
    if lo < (-lim if s.dtype.is_signed else 0) or hi >= lim:
        return None  # might wrap
    return lo, hi


def _breaks_out(block) -> bool:
    """Whether a BREAK in `block` (outside nested loops) leaves the loop owning `block`."""
    for st in block:
        if st.op == Op.BREAK:
            return True
        if st.op not in (Op.FOR, Op.LOOP) and any(_breaks_out(b) for b in st.blocks):
            return True
    return False


IF_CONVERT_MAX = 256  # statements: beyond this, running both branches costs more than it gives
_PREDICABLE = {Op.ALLOCA, Op.LOCAL_LOAD, Op.LOCAL_STORE, Op.STOP_GRAD}


def if_convertible(if_stmt: Stmt, speculated: set, reductions: set) -> bool:
    """Whether an `if` can run as straight-line code under a predicate: its blocks hold only
    pure ops, loads already done before the branch (`speculated` ids), locals, thread-local
    reductions (`reductions` ids) and such `if`s, at most IF_CONVERT_MAX statements. Such
    code has no effect but its local stores and reductions, which the code generator guards
    with selects; it cannot trap (integer division by zero is defined)."""
    count = [0]

    def ok(block) -> bool:
        for st in block:
            count[0] += 1
            if count[0] > IF_CONVERT_MAX or not _predicable(st, speculated, reductions):
                return False
            if st.op == Op.IF and not all(ok(b) for b in st.blocks):
                return False
        return True
    return all(ok(b) for b in if_stmt.blocks)


def _predicable(st: Stmt, speculated: set, reductions: set) -> bool:
    """One statement of if-convertible code (its nested blocks are checked by the caller)."""
    if st.op == Op.IF:
        return True
    if st.op == Op.LOAD:
        return id(st) in speculated
    if st.op == Op.ATOMIC:
        return id(st) in reductions
    return st.op in PURE or st.op in _PREDICABLE


COLUMN_MAX = 4096  # inner extent up to which a column accumulator (c elements) lives on the stack


def nest_accumulators(loop: Stmt, split: NdSplit, outside: set, skip: set) -> dict:
    """Atomic adds of a nested ndrange loop that can accumulate locally: id(atomic) -> "row"
    when the element depends on q only (one register per row, one atomic after the row) or
    "col" when it depends on r only (a stack array of c values over the worker's whole chunk,
    c atomics at its end). The field must be touched in the task only by atomic add/sub whose
    results are unused (adds commute, so deferring them changes no value but by float
    rounding, as the threads' order already does), and not be an ndarray argument (two may
    share memory). `outside`: ids of statements defined before the loop (prologue); `skip`:
    atomics already taken (the task-wide reductions)."""
    body = list(walk(loop.body))
    used = {id(a) for st in body for a in st.args}
    plain: dict = {}
    for st in body:
        if st.op in GLOBAL_WRITE or st.op == Op.LOAD:
            f = st.field
            ok = st.op == Op.ATOMIC and st.attr[1] in ("add", "sub") and id(st) not in used \
                and not is_slot(f) and not is_quant(f)
            plain[id(f)] = plain.get(id(f), True) and ok
    out, cols = {}, 0
    for st in body:
        if st.op != Op.ATOMIC or id(st) in skip or not plain.get(id(st.field)):
            continue
        sup = set()
        for ix in st.indices:
            s = _support(ix, split, outside, loop, 0)
            if s is None:
                sup = None
                break
            sup |= s
        if sup is None or sup == {"q", "r"}:
            continue
        if "r" in sup:
            if split.c * (cols + 1) > COLUMN_MAX:
                continue
            cols += 1
            out[id(st)] = "col"
        else:
            out[id(st)] = "row"
    return out


def _support(s: Stmt, split: NdSplit, outside: set, loop: Stmt, depth):
    """Which of q and r an index depends on ({"q"}, {"r"}, both, or none), or None when it
    depends on anything else (the linear index, a load, a local, an inner loop)."""
    if s.op == Op.CONST or id(s) in outside:
        return set()
    use = split.uses.get(id(s))
    if use is not None:
        return {"q"} if use[0] == "q" else ({"r"} if use[1] == 1 else {"q", "r"})
    if s is loop or depth > 16 or s.op not in PURE or s.op == Op.LOAD or not s.args:
        return set() if s.op == Op.ARG else None
    out = set()
    for a in s.args:
        k = _support(a, split, outside, loop, depth + 1)
        if k is None:
            return None
        out |= k
    return out


def _stored_values(body: list[Stmt]) -> dict:
    """id(ALLOCA) -> the values `body` stores into it (an ARRAY_STORE may write any entry of
    its array)."""
    stored: dict = {}
    for st in body:
        if st.op == Op.LOCAL_STORE:
            stored.setdefault(id(st.args[0]), []).append(st.args[1])
        elif st.op == Op.ARRAY_STORE:
            for slot in array_parts(st)[0]:
                stored.setdefault(id(slot), []).append(st.value)
    return stored


def data_indexed(loop: Stmt, outside: set) -> bool:
    """Whether the loop's body loads, stores or updates a field element whose index depends on
    data: a loaded value (but a load at constant indices: the same element every iteration),
    an atomic's old value, an AD stack, a random number, or a local variable assigned such a
    value. Indices built from constants, arguments, loop indices and statements in `outside`
    (ids defined before the loop) with pure arithmetic are not. The code generator keeps such
    loops scalar: vectorized, every such access is a gather or scatter (loop_hints)."""
    body = list(walk(loop.body))
    stored = _stored_values(body)
    memo: dict = {}

    def data(s: Stmt, depth: int) -> bool:
        if s.op in (Op.CONST, Op.ARG, Op.FOR) or id(s) in outside:
            return False
        key = id(s.args[0]) if s.op == Op.LOCAL_LOAD else id(s)  # a local: all its loads
        if key in memo:
            return memo[key]
        if depth > 32:
            return True
        memo[key] = False  # a local's stores may read the local itself: decided by the rest
        if s.op == Op.LOCAL_LOAD:
            out = any(data(v, depth + 1) for v in stored.get(key, ()))
        elif s.op == Op.LOAD:
            out = any(ix.op != Op.CONST for ix in s.indices)
        elif s.op in PURE and s.op not in GLOBAL_READ:
            out = any(data(a, depth + 1) for a in s.args)
        else:
            out = True
        memo[key] = out
        return out
    return any(st.op in GLOBAL_ACCESS and any(data(ix, 0) for ix in st.indices) for st in body)


def guarded_store(loop: Stmt) -> bool:
    """Whether the loop's body stores to a field under an `if`. Vectorized, such a store is a
    masked store per lane group, which on this code ran slower than the scalar loop (mpm88's
    update_grid: 40 vs 21 us per launch), so the code generator keeps such loops scalar."""
    stack = [(st, False) for st in loop.body]
    while stack:
        st, guarded = stack.pop()
        if guarded and st.op == Op.STORE:  # atomics under an if: reductions, if-converted
            return True
        for block in st.blocks:
            stack.extend((inner, guarded or st.op == Op.IF) for inner in block)
    return False


# float operations that take many cycles per vector on the divide/square-root unit or as a call
_LONG_LATENCY = frozenset({Op.DIV, Op.SQRT, Op.POW, Op.EXP, Op.LOG, Op.SIN, Op.COS, Op.TAN,
                           Op.ASIN, Op.ACOS, Op.ATAN, Op.ATAN2, Op.TANH})


def long_latency(loop: Stmt) -> bool:
    """Whether the loop's body has a float division, square root or transcendental. Such a
    body keeps the slow unit busy on one vector of lanes; interleaving several (LLVM's
    default for a reduction) adds code and compile time, not speed (gravity's pair energy:
    4 interleaved 16-lane groups ran no faster than one), so the code generator asks for one
    (loop_hints.LANES)."""
    return any(st.op in _LONG_LATENCY and st.dtype.is_float for st in walk(loop.body))


class RowBound(NamedTuple):
    side: str  # "lo": each row runs r >= q + delta; "hi": r < q + delta
    delta: int
    cond: Stmt  # the comparison every `if` of the body tests: true on every column that runs


# r >= q + delta ("lo") or r < q + delta ("hi") for `q <op> r`; `r <op> q` uses the mirror op
_ROW_BOUND = {Op.LT: ("lo", 1), Op.LE: ("lo", 0), Op.GT: ("hi", 0), Op.GE: ("hi", 1)}
_MIRROR = {Op.LT: Op.GT, Op.LE: Op.GE, Op.GT: Op.LT, Op.GE: Op.LE}


def row_bound(loop: Stmt, split: NdSplit):
    """A triangular nest's bound on r, or None: when the body does nothing outside `if`s
    without `else` on one comparison of q's index with r's (as `for i, j in ndrange(n, n):
    if i < j:` lowers to), the iterations where it is false do nothing, and each row runs
    only r >= q + delta (side "lo") or r < q + delta ("hi"), where `cond` holds. Locals
    declared in the body, constants and the index recovery are allowed outside those `if`s."""
    cond, ifs = None, 0
    for st in loop.body:
        if st.op == Op.IF:
            if cond is None:
                cond = st.args[0]
            if st.args[0] is not cond or st.blocks[1]:
                return None
            ifs += 1
        elif st.op not in (Op.ALLOCA, Op.CONST, Op.FLOORDIV, Op.MOD, *_ROW_BOUND):
            return None
    if not ifs or cond.op not in _ROW_BOUND:
        return None
    a, b = cond.args
    uses = split.uses
    if uses.get(id(a)) == ("q", 1) and uses.get(id(b)) == ("r", 1):
        return RowBound(*_ROW_BOUND[cond.op], cond)
    if uses.get(id(a)) == ("r", 1) and uses.get(id(b)) == ("q", 1):
        return RowBound(*_ROW_BOUND[_MIRROR[cond.op]], cond)
    return None
