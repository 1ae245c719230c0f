"""promote_locals: a local written once, before every read of it, becomes the value written.

Takes: a kernel at any stage after the frontend. Returns the kernel itself when nothing is
promoted, else a new `Kernel` (every statement a copy with its original loc) in which each
ALLOCA that

* is written by exactly one LOCAL_STORE, of a value of the ALLOCA's own dtype, and that store is
  a later statement of the block the ALLOCA is in;
* is read only by LOCAL_LOADs inside the statements after that store in that block (so every
  read sees the one write: control flow is structured);
* appears nowhere else (not an operand of another op, not a CUSTOM_GRAD output)

is gone, with its store, and each of its LOCAL_LOADs is replaced by the stored value.
Guarantees: the kernel computes the same values and makes the same global reads and writes;
no other statement changes.

Why: the frontend gives every named value a local (`r = x[i] - x[j]` is an ALLOCA per
component, its zero initialisation, a store and a load per use). Most are written once. As SSA
values they cost nothing in the access-rule checks, in reverse AD (an SSA adjoint, not a slot),
in lowering or in LLVM, which all run after this pass.
"""
from __future__ import annotations

from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import CustomGradInfo, Kernel, Op, Stmt


class _Locals:
    """Where each ALLOCA is declared, written and read (positions in its declaring block)."""

    def __init__(self):
        self.allocas: list[Stmt] = []
        self.declared: dict[int, tuple[int, int]] = {}  # alloca -> (id(block), index)
        self.stores: dict[int, list[tuple[Stmt, int, int]]] = {}  # alloca -> (store, block, index)
        self.reads: dict[int, list[int | None]] = {}  # alloca -> index in its block of each read
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
    found = _Locals()
    found.scan(kernel.body)
    stores = {id(local): store for local in found.allocas
              if (store := found.promotable(local)) is not None}
    if not stores:
        return kernel
    body = _Copy(stores).block(kernel.body)
    return Kernel(kernel.name, kernel.params, body, kernel.ret, kernel.loc, dict(kernel.meta))


class _Copy:
    def __init__(self, stores: dict[int, Stmt]):
        self.b = IRBuilder()
        self.map: dict[int, Stmt] = {}
        self.stores = stores
        self.store_ids = {id(s) for s in stores.values()}

    def block(self, stmts: list[Stmt]) -> list[Stmt]:
        out: list[Stmt] = []
        with self.b.into(out):
            for s in stmts:
                self.stmt(s)
        return out

    def stmt(self, s: Stmt):
        if s.op == Op.ALLOCA and id(s) in self.stores or id(s) in self.store_ids:
            return
        if s.op == Op.LOCAL_LOAD and id(s.args[0]) in self.stores:
            value = self.stores[id(s.args[0])].value
            self.map[id(s)] = self.map.get(id(value), value)
            return
        new = self.b.clone(s, self.map)
        for old_block, new_block in zip(s.blocks, new.blocks):
            new_block.extend(self.block(old_block))
