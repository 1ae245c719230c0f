"""promote_locals: a local written once, before every read of it, becomes the value written.

Takes, and owns, a kernel just made by the frontend and offload (nothing else holds its
statements, as offload owns the frontend's): it is changed in place and returned. In its body,
and in each of its functions' bodies, each
ALLOCA that

* is written by exactly one LOCAL_STORE, of a value of the ALLOCA's own dtype, and that store is
  a later statement of the block the ALLOCA is in;
* is read only by LOCAL_LOADs inside the statements after that store in that block (so every
  read sees the one write: control flow is structured);
* appears nowhere else (not an operand of another op, not a CUSTOM_GRAD output)

is removed, with its store and its LOCAL_LOADs, and the statements that used a LOCAL_LOAD use
the stored value instead. In place because copying every statement of a kernel costs as much as
the frontend's making them.
Guarantees: the kernel computes the same values and makes the same global reads and writes;
other statements change only in their operands (a removed load's value for the load).

Why: the frontend gives every named value a local (`r = x[i] - x[j]` is an ALLOCA per
component, its zero initialisation, a store and a load per use). Most are written once. As SSA
values they cost nothing in the access-rule checks, in reverse AD (an SSA adjoint, not a slot),
in lowering or in LLVM, which all run after this pass.
"""
from __future__ import annotations

from fieldsim.ir.ir import CustomGradInfo, Kernel, Op, Stmt


class _Locals:
    """Where each ALLOCA is declared, written and read (positions in its declaring block)."""

    def __init__(self):
        self.allocas: list[Stmt] = []
        self.declared: dict[int, tuple[int, int]] = {}  # alloca -> (id(block), index)
        self.stores: dict[int, list[tuple[Stmt, int, int]]] = {}  # alloca -> (store, block, index)
        self.reads: dict[int, list[int | None]] = {}  # alloca -> index in its block of each read
        self.loads: dict[int, list[Stmt]] = {}  # alloca -> its LOCAL_LOADs
        self.escaped: set[int] = set()
        self.open: dict[int, int] = {}  # id(block) -> index of the statement being visited

    def scan(self, block: list[Stmt]):
        key = id(block)
        for n, s in enumerate(block):
            self.open[key] = n
            self.note(s, key, n)
            for inner in s.blocks:
                self.scan(inner)
        self.open.pop(key, None)

    def note(self, s: Stmt, block: int, n: int):
        if s.op == Op.ALLOCA:
            self.allocas.append(s)
            self.declared[id(s)] = (block, n)
            return
        if s.op == Op.LOCAL_LOAD:
            local = s.args[0]
            home = self.declared.get(id(local))
            self.reads.setdefault(id(local), []).append(
                self.open.get(home[0]) if home is not None else None)
            self.loads.setdefault(id(local), []).append(s)
            return
        args = s.args
        if s.op == Op.LOCAL_STORE:
            self.stores.setdefault(id(args[0]), []).append((s, block, n))
            args = args[1:]
        for a in args:
            if a.op == Op.ALLOCA:
                self.escaped.add(id(a))
        if isinstance(s.attr, CustomGradInfo):
            self.escaped.update(id(o) for o in s.attr.outputs)

    def promotable(self, local: Stmt) -> Stmt | None:
        """The one LOCAL_STORE that every read of `local` sees, if it is promotable."""
        stores = self.stores.get(id(local), ())
        if id(local) in self.escaped or len(stores) != 1:
            return None
        store, block, n = stores[0]
        home_block, home_n = self.declared[id(local)]
        if block != home_block or n < home_n or store.value.dtype is not local.dtype:
            return None
        if all(r is not None and r > n for r in self.reads.get(id(local), ())):
            return store
        return None


def promote_locals(kernel: Kernel) -> Kernel:
    for body in [kernel.body] + [f.body for f in kernel.funcs]:  # each function on its own
        _promote(body)
    return kernel


def _promote(body: list[Stmt]):
    found = _Locals()
    found.scan(body)
    value_of: dict[int, Stmt] = {}  # id(promoted LOCAL_LOAD) -> the value it reads
    gone: set[int] = set()  # the promoted ALLOCAs, their stores and their loads
    for local in found.allocas:
        store = found.promotable(local)
        if store is not None:
            gone.update((id(local), id(store)))
            for load in found.loads.get(id(local), ()):
                value_of[id(load)] = store.value
    if gone:
        gone.update(value_of)
        _rewrite(body, value_of, gone)


def _rewrite(block: list[Stmt], value_of: dict[int, Stmt], gone: set[int]):
    block[:] = [s for s in block if id(s) not in gone]
    for s in block:
        if any(id(a) in value_of for a in s.args):
            s.args = tuple(_resolved(a, value_of) for a in s.args)
        for inner in s.blocks:
            _rewrite(inner, value_of, gone)


def _resolved(value: Stmt, value_of: dict[int, Stmt]) -> Stmt:
    """What `value` stands for: a promoted load's stored value (itself perhaps a load)."""
    while id(value) in value_of:
        value = value_of[id(value)]
    return value
