"""Lowering of local arrays (a mixin of llvm.TaskLowering): a local vector/matrix indexed at run
time, as one stack array.

Takes a task whose ARRAY_LOAD/ARRAY_STORE statements name their array by its entries' ALLOCAs
(an ALLOCA is an entry of one array at most: ir.verify). Each such array is one LLVM
`alloca [n x T]` in the function's entry block, and each entry's ALLOCA is a constant GEP into
it, zeroed where the ALLOCA stands like any local: constant-index accesses stay plain loads and
stores at a fixed offset (SROA splits the array into registers when no runtime access is left
after optimisation). ARRAY_LOAD is one load at the runtime entry number, ARRAY_STORE one store:
O(1) per access, as in Taichi, where the select chain of a scalarised vector costs O(n).

Guarantees: an entry number out of range (possible only without `debug=True`, whose frontend
asserts it) reads the last entry and writes nothing, as the select chain does; nothing outside
the array is read or written. The same LLVM IR serves the CPU and CUDA targets (a CUDA local
array lives in the thread's local memory).
"""
from __future__ import annotations

from llvmlite import ir as L

from fieldsim.ir.ir import Op, Stmt, array_parts, walk

_I32 = L.IntType(32)


def array_entries(body: list[Stmt]) -> dict[int, tuple[tuple, int]]:
    """id(ALLOCA) -> (the ALLOCAs of the array it is an entry of, its entry number), for the
    ALLOCAs of `body` that ARRAY_LOAD/ARRAY_STORE index."""
    out: dict[int, tuple[tuple, int]] = {}
    for s in walk(body):
        if s.op in (Op.ARRAY_LOAD, Op.ARRAY_STORE):
            slots = array_parts(s)[0]
            if id(slots[0]) not in out:
                out.update((id(a), (slots, k)) for k, a in enumerate(slots))
    return out


class ArrayLowering:
    """The array half of TaskLowering: needs `b`, `alloca_b`, `v`, `array_of` (the task's
    `array_entries`, empty where the kernel has no arrays) and `arrays` (an empty dict)."""

    def array_entry(self, s: Stmt, ty) -> L.Value | None:
        """The slot of ALLOCA `s` of LLVM type `ty` when it is an array's entry (a constant
        GEP into the array, made in the entry block), else None."""
        got = self.array_of.get(id(s))
        if got is None:
            return None
        slots, k = got
        key = id(slots[0])
        if key not in self.arrays:
            arr_ty = L.ArrayType(ty, len(slots))
            self.arrays[key] = (self.alloca_b.alloca(arr_ty, name="local_array"), arr_ty)
        arr, arr_ty = self.arrays[key]
        return self.alloca_b.gep(arr, [L.Constant(_I32, 0), L.Constant(_I32, k)], inbounds=True)

    def _entry_ptr(self, s: Stmt):
        """(pointer to the entry an ARRAY_LOAD/STORE names, clamped into the array; whether the
        entry number was in range, i1; the entries' LLVM type). The array was made when its
        entries' ALLOCAs, which come first, were lowered."""
        slots, index = array_parts(s)
        arr, arr_ty = self.arrays[id(slots[0])]
        i = self.v(index)
        last = L.Constant(i.type, len(slots) - 1)
        inside = self.b.icmp_unsigned("<=", i, last)  # a negative number is a huge unsigned one
        k = self.b.select(inside, i, last)
        ptr = self.b.gep(arr, [L.Constant(i.type, 0), k], inbounds=True)
        return ptr, inside, arr_ty.element

    def op_array_load(self, s: Stmt):
        ptr, _, ty = self._entry_ptr(s)
        return self.b.load(ptr, typ=ty)

    def op_array_store(self, s: Stmt):
        ptr, inside, ty = self._entry_ptr(s)
        key = ("scratch", str(ty))  # out of range: the store goes to a scratch slot instead
        if key not in self.arrays:
            self.arrays[key] = self.alloca_b.alloca(ty, name="array_scratch")
        self.b.store(self.v(s.value), self.b.select(inside, ptr, self.arrays[key]))
