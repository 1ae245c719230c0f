"""scalarize_arrays: local arrays back into one local per entry and selects.

Takes a kernel made by the frontend and offload (and perhaps promote_locals), which it does not
change (a primal program may be compiling from it on another thread), and `keep`: the arrays
(by the id of their first entry's ALLOCA) to leave as they are. A kernel without local arrays
(no `meta["local_arrays"]`, which the frontend sets when it makes an ARRAY_LOAD/ARRAY_STORE),
or whose arrays are all kept, is returned as it is. Otherwise it returns a new kernel (every
statement copied, its functions too) in which, for every array not kept,

* `ARRAY_LOAD [s0, ..., s(n-1)][i]` is the LOCAL_LOADs of every entry and the select chain
  `select(i == 0, s0, select(i == 1, s1, ... s(n-1)))` (out of range: the last entry);
* `ARRAY_STORE [s0, ..., s(n-1)][i], v` is, for each entry k, `s_k = select(i == k, v, s_k)`
  (out of range: nothing written),

and `meta["local_arrays"]` is gone when no array is left. That is the form the frontend made
before local arrays existed. Guarantees: the same values and the same global reads and writes
as the input. Callers run promote_locals on the result.

Two uses. Reverse and forward AD, the access-rule checker and validation read a kernel with no
arrays left (`keep` empty): their rules for LOCAL_LOAD/LOCAL_STORE and SELECT apply unchanged,
so gradients through a runtime-indexed local stay exact. The primal program keeps the arrays
that `keeps_array` chooses (`small_arrays_scalarized`, before promote_locals): measured with
benchmarks/local_arrays.py (BENCHMARKS.md, "Runtime-indexed locals"), a stack array wins
wherever a local is written at a runtime index from ARRAY_MIN_ENTRIES = 3 entries on (a store
to the select form rewrites every entry), while a local only read at runtime indices keeps its
entries in registers and the select chain, which vectorizes, up to READ_ONLY_MIN_ENTRIES
(17: a loop that does not vectorize pays the whole chain per read; a D3Q19 LBM collision's
19-entry moment vectors ran 1.4x Taichi's time as chains, at its speed as arrays).
"""
from __future__ import annotations

from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import Function, Kernel, Op, Stmt, array_parts, walk_all

ARRAY_MIN_ENTRIES = 3  # written at a runtime index: a stack array from this many entries on
READ_ONLY_MIN_ENTRIES = 17  # only read at runtime indices: a stack array from this many on


def keeps_array(entries: int, written: bool) -> bool:
    """Whether the primal program keeps a local of `entries` entries, `written` at a runtime
    index somewhere (else only read at runtime indices), as a stack array."""
    return entries >= (ARRAY_MIN_ENTRIES if written else READ_ONLY_MIN_ENTRIES)


def small_arrays_scalarized(kernel: Kernel) -> Kernel:
    """`scalarize_arrays` of the arrays that `keeps_array` does not keep."""
    if "local_arrays" not in kernel.meta:
        return kernel
    arrays: dict[int, tuple[int, bool]] = {}  # id(first entry) -> (entries, written)
    for s in walk_all(kernel):
        if s.op in (Op.ARRAY_LOAD, Op.ARRAY_STORE):
            slots = array_parts(s)[0]
            _, written = arrays.get(id(slots[0]), (0, False))
            arrays[id(slots[0])] = (len(slots), written or s.op == Op.ARRAY_STORE)
    return scalarize_arrays(kernel, frozenset(k for k, (n, w) in arrays.items()
                                              if keeps_array(n, w)))


def scalarize_arrays(kernel: Kernel, keep: frozenset = frozenset()) -> Kernel:
    if "local_arrays" not in kernel.meta:
        return kernel
    funcs = {id(f): Function(f.name, list(f.params), list(f.rets), [], f.loc) for f in kernel.funcs}
    copy = _Copy(keep, funcs)
    body = copy.block(kernel.body)
    for f in kernel.funcs:
        funcs[id(f)].body = copy.block(f.body)
    if not copy.changed:
        return kernel
    meta = {k: v for k, v in kernel.meta.items() if k != "local_arrays" or copy.kept}
    return Kernel(kernel.name, list(kernel.params), body, kernel.ret, kernel.loc, meta,
                  [funcs[id(f)] for f in kernel.funcs])


class _Copy:
    """The copying walk: `changed` once an array op was rewritten, `kept` once one was not."""

    def __init__(self, keep: frozenset, funcs: dict):
        self.keep, self.funcs = keep, funcs
        self.remap: dict[int, Stmt] = {}
        self.changed = self.kept = False

    def block(self, block: list[Stmt]) -> list[Stmt]:
        out: list[Stmt] = []
        b = IRBuilder(out)
        for s in block:
            if s.op in (Op.ARRAY_LOAD, Op.ARRAY_STORE) and id(s.args[0]) not in self.keep:
                self.changed = True
                got = (_load if s.op == Op.ARRAY_LOAD else _store)(b, s, self.remap)
                self.remap[id(s)] = got
                continue
            self.kept = self.kept or s.op in (Op.ARRAY_LOAD, Op.ARRAY_STORE)
            c = b.clone(s, self.remap)
            if s.op == Op.CALL:
                c.attr = self.funcs[id(s.attr)]
            c.blocks = [self.block(inner) for inner in s.blocks]
        return out


def _parts(s: Stmt, remap: dict) -> tuple[list[Stmt], Stmt]:
    slots, index = array_parts(s)
    return [remap[id(a)] for a in slots], remap[id(index)]


def _hit(b: IRBuilder, index: Stmt, k: int) -> Stmt:
    return b.binary(Op.EQ, index, b.const(k, index.dtype))


def _load(b: IRBuilder, s: Stmt, remap: dict) -> Stmt:
    slots, index = _parts(s, remap)
    with b.at(s.loc):
        loads = [b.emit(Op.LOCAL_LOAD, s.dtype, (a,)) for a in slots]
        got = loads[-1]
        for k in range(len(loads) - 2, -1, -1):
            got = b.emit(Op.SELECT, s.dtype, (_hit(b, index, k), loads[k], got))
    return got


def _store(b: IRBuilder, s: Stmt, remap: dict) -> None:
    slots, index = _parts(s, remap)
    value = remap[id(s.value)]
    with b.at(s.loc):
        for k, a in enumerate(slots):
            old = b.emit(Op.LOCAL_LOAD, a.dtype, (a,))
            b.emit(Op.LOCAL_STORE, None, (a, b.emit(Op.SELECT, a.dtype, (_hit(b, index, k), value, old))))
