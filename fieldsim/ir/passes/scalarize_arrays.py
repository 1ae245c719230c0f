"""scalarize_arrays: local arrays back into one local per entry and selects, for AD and checks.

Takes a kernel made by the frontend, offload and promote_locals, which it does not change (its
primal program may be compiling from it on another thread). A kernel without local arrays
(no `meta["local_arrays"]`, which the frontend sets when it makes an ARRAY_LOAD/ARRAY_STORE)
is returned as it is. Otherwise it returns a new kernel (every statement copied, its functions
too) in which

* `ARRAY_LOAD [s0, ..., s(n-1)][i]` is the LOCAL_LOADs of every entry and the select chain
  `select(i == 0, s0, select(i == 1, s1, ... s(n-1)))` (out of range: the last entry);
* `ARRAY_STORE [s0, ..., s(n-1)][i], v` is, for each entry k, `s_k = select(i == k, v, s_k)`
  (out of range: nothing written),

then runs promote_locals on it. That is the form the frontend made before local arrays
existed, which reverse and forward AD, the access-rule checker and validation read: their
rules for LOCAL_LOAD/LOCAL_STORE and SELECT apply unchanged, so gradients through a
runtime-indexed local stay exact. Guarantees: the same values and the same global reads and
writes as the input.

`ARRAY_MIN_ENTRIES` is where the frontend starts making arrays: a vector or matrix of fewer
entries keeps the select chain, which is as fast or faster there (a few selects against a
store to and a load from the stack; measured with benchmarks/local_arrays.py, see
BENCHMARKS.md).
"""
from __future__ import annotations

from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import Function, Kernel, Op, Stmt, array_parts
from fieldsim.ir.passes.promote_locals import promote_locals

ARRAY_MIN_ENTRIES = 8


def scalarize_arrays(kernel: Kernel) -> Kernel:
    if "local_arrays" not in kernel.meta:
        return kernel
    funcs = {id(f): Function(f.name, list(f.params), list(f.rets), [], f.loc) for f in kernel.funcs}
    remap: dict[int, Stmt] = {}
    body = _copy(kernel.body, remap, funcs)
    for f in kernel.funcs:
        funcs[id(f)].body = _copy(f.body, remap, funcs)
    meta = {k: v for k, v in kernel.meta.items() if k != "local_arrays"}
    out = Kernel(kernel.name, list(kernel.params), body, kernel.ret, kernel.loc, meta,
                 [funcs[id(f)] for f in kernel.funcs])
    return promote_locals(out)


def _copy(block: list[Stmt], remap: dict, funcs: dict) -> list[Stmt]:
    out: list[Stmt] = []
    b = IRBuilder(out)
    for s in block:
        if s.op == Op.ARRAY_LOAD:
            remap[id(s)] = _load(b, s, remap)
        elif s.op == Op.ARRAY_STORE:
            _store(b, s, remap)
        else:
            c = b.clone(s, remap)
            if s.op == Op.CALL:
                c.attr = funcs[id(s.attr)]
            c.blocks = [_copy(inner, remap, funcs) for inner in s.blocks]
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


def _store(b: IRBuilder, s: Stmt, remap: dict):
    slots, index = _parts(s, remap)
    value = remap[id(s.value)]
    with b.at(s.loc):
        for k, a in enumerate(slots):
            old = b.emit(Op.LOCAL_LOAD, a.dtype, (a,))
            b.emit(Op.LOCAL_STORE, None, (a, b.emit(Op.SELECT, a.dtype, (_hit(b, index, k), value, old))))
