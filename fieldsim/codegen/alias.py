"""Alias scopes for field accesses: LLVM `!alias.scope` / `!noalias` metadata.

Takes a kernel's fields (`KernelInfo.fields`). Each `fieldsim.lang.field.Field` has its own
buffer (allocated per field, never a view of another), so an access to one field never
touches another's memory: every load, store and atomic on such a field gets its own scope and
`!noalias` with every other field's. LLVM then needs no run-time overlap checks before it
vectorizes a loop that writes one field and reads another, and can hoist loads past stores.
Ndarray arguments get no metadata: two of them may view the same memory.

Scopes are named by the field's position in the kernel's table (`fs.field.<k>`), so the IR
text, which keys the compile cache, does not depend on anything else.
"""
from __future__ import annotations

from llvmlite import ir as L

from fieldsim.lang.field import Field
from fieldsim.lang.ndarray import is_slot
from fieldsim.lang.quant import is_quant


class FieldScopes:
    def __init__(self, module: L.Module, fields: list):
        # a quantized field's word holds other fields' bits: it gets no scope of its own
        own = [f for f in fields if isinstance(f, Field) and not is_slot(f) and not is_quant(f)]
        self.md: dict[int, tuple] = {}
        if len(own) < 2:
            return  # one field aliases nothing else that is tagged: no gain
        domain = module.add_metadata([L.MetaDataString(module, "fieldsim.fields")])
        scopes = {id(f): module.add_metadata([L.MetaDataString(module, f"fs.field.{k}"), domain])
                  for k, f in enumerate(own)}
        for f in own:
            mine = module.add_metadata([scopes[id(f)]])
            others = module.add_metadata([scopes[id(g)] for g in own if g is not f])
            self.md[id(f)] = (mine, others)

    def tag(self, instr, field):
        """Marks a load/store/atomic of `field` (no-op for ndarrays and lone fields)."""
        md = self.md.get(id(field))
        if md is not None:
            instr.set_metadata("alias.scope", md[0])
            instr.set_metadata("noalias", md[1])
        return instr
