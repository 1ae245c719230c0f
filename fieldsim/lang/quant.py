"""Quantized fields: `ti.field(qtype)` and `ti.BitpackedFields(max_num_bits).place(...)`.

Takes Taichi 1.7's layout calls: quantized fields placed into a `BitpackedFields` (several per
container word, in placing order, a float's exponent then its digits; `shared_exponent=True`
gives a group of floats one exponent), the bitpack placed like a field under `fs.root` or a
dense or sparse node; a quantized field placed directly gets a word of its own. Guarantees:
- each bitpack is one hidden unsigned-int field (`u8/u16/u32/u64`, as `max_num_bits` says) of
  the placement's shape, and each quantized field a `QuantField` of its compute dtype whose
  `quant` holds a `QuantSlot` per component, each naming its bitpack (the components of a
  vector/matrix may go to different bitpacks through `get_scalar_field`): kernels read and
  write the bits through `fieldsim.codegen.quant_llvm` (atomically, a CAS loop on the word;
  `containers_of` adds the container fields to a kernel's field table), Python scope through
  `QuantStorage` (`fieldsim.lang.quant_codec`);
- Taichi's errors where Taichi raises them (bits past `max_num_bits`, a non-quantized field in
  a bitpack, a shared exponent over fewer than 2 floats) and a clear `FieldsimTypeError` at the
  user's line for gradients (`needs_grad`, `needs_dual`, a grad twin): quantized fields are
  not differentiated (Taichi gives them none either);
- under sparse nodes, each quantized field is a leaf of the tree as a field is (activation,
  struct-fors, deactivation zeroing its bits); `SNode.quant_array` cells are packed along
  the node's axes, `bits` each, one field per array.
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import FieldsimRuntimeError, FieldsimSyntaxError, FieldsimTypeError
from fieldsim.lang import types as T
from fieldsim.lang.field import Field
from fieldsim.lang.naming import user_loc
from fieldsim.lang.quant_codec import decode, encode_many
from fieldsim.lang.quant_types import QuantFloat, QuantSlot, QuantType
from fieldsim.lang.snode import PLACE, SNode


def is_quant(field) -> bool:
    """Whether kernels reach `field`'s elements as bits of a container word."""
    return getattr(field, "quant", None) is not None


class QuantField(Field):
    """A scalar, vector or matrix field of a quantized type; reads give (and writes take) its
    compute dtype. `quant` holds one `QuantSlot` per component (row-major); the components of
    a vector/matrix may sit in different bitpacks (placed through `get_scalar_field`)."""

    def __init__(self, qtype: QuantType, shape=None, name="", needs_grad=False,
                 needs_dual=False, offset=None, n=None, m=None, ndim_el=0):
        if needs_grad or needs_dual:
            raise FieldsimTypeError(f"a field of quantized type {qtype} cannot have a gradient "
                                    "or dual (needs_grad/needs_dual): quantized fields are not "
                                    "differentiable", user_loc())
        self.qtype = qtype
        self.quant: tuple | None = None
        super().__init__(qtype.compute, None, name, n=n, m=m, ndim_el=ndim_el)
        if shape is not None:
            from fieldsim.lang.field import _normalize_shape
            self._place(_normalize_shape(shape, self), offset=offset)

    def _unplaced_twin(self, role):
        return None

    def _attach(self, role, place=True):
        raise FieldsimTypeError(f"field {self.ir_name!r} has quantized type {self.qtype}: it has "
                                f"no {role} (quantized fields are not differentiable)", user_loc())

    _enable_twin = _attach

    def parent(self, n=1):
        """Taichi places a bitpack's fields under a `bit_struct` node of their own, so that
        `x.parent(2)` is the node the bitpack was placed in (it was one level higher here)."""
        slot = self.quant[0] if self.quant else None
        if n < 1 or self._snode is None or slot is None or slot.lanes or \
                getattr(slot.pack, "lone", True):
            return super().parent(n)
        return slot.pack.bit_struct_node(self._snode._parent).parent(n - 1)

    @property
    def components(self) -> int:
        return int(np.prod(self.element_shape, dtype=np.int64))

    def _set_slot(self, comp: int, slot: QuantSlot):
        if self.quant is None:
            self.quant = (None,) * self.components
        if self.quant[comp] is not None:
            raise FieldsimRuntimeError(f"field {self.ir_name!r} is already in a BitpackedFields",
                                       user_loc())
        self.quant = self.quant[:comp] + (slot,) + self.quant[comp + 1:]

    def _place(self, shape, offset=None, snode=None):
        shape = tuple(shape)
        array = snode._parent if snode is not None and snode._parent is not None else None
        if array is not None and array.quant_bits is not None:
            self._array_slot(shape, offset, array)
            offset = None
        elif self.quant is None:  # placed on its own: a word of its own
            bits = self.qtype.bits * self.components
            lone = BitpackedFields(next((b for b in (32, 64) if bits <= b), bits))
            lone.lone = True  # no bitpack in the user's layout: no bit_struct node either
            lone.place(self)
            lone.container(shape, offset)
        super()._place(shape, offset=offset, snode=snode)
        self.storage = QuantStorage(self)

    def _array_slot(self, shape, offset, array):
        q = self.qtype
        if isinstance(q, QuantFloat) or self.ndim_el or self.quant is not None or offset:
            raise FieldsimTypeError(f"quant_array: field {self.ir_name!r} must be a scalar "
                                    "quantized int or fixed field with no offset, placed alone",
                                    user_loc())
        dims = sorted(array.axis_sizes)
        lanes = tuple((dims.index(a), n) for a, n in sorted(array.own.items()))
        cells = int(np.prod([n for _, n in lanes]))
        if cells * q.bits > array.quant_bits:
            raise FieldsimRuntimeError(f"quant_array: {cells} cells of {q.bits} bits do not fit "
                                       f"in max_num_bits={array.quant_bits}", user_loc())
        bp = BitpackedFields(array.quant_bits)
        self._set_slot(0, QuantSlot(q, array.quant_bits, 0, lanes=lanes, pack=bp))
        bp.container(tuple(s // dict(lanes).get(d, 1) for d, s in enumerate(shape)), None)

    def _new_storage(self, snode):
        return None  # the containers' memory (set by _place)


def placed_slots(field) -> tuple:
    """`field.quant`, every component in a placed bitpack, or a clear error."""
    slots = field.quant
    missing = [k for k, s in enumerate(slots) if s is None or s.pack.words is None]
    if missing:
        raise FieldsimRuntimeError(f"field {field.ir_name!r}: component {missing[0]} is in no "
                                   "placed BitpackedFields", user_loc())
    return slots


def containers_of(fields) -> list:
    """The container fields holding the quantized fields among `fields` (each once): a kernel
    reaches the words through them."""
    out: dict = {}
    for f in fields:
        for slot in placed_slots(f) if is_quant(f) else ():
            out.setdefault(id(slot.pack), slot.pack.words)
    return list(out.values())


class QuantStorage:
    """Python-scope access to one quantized field: its slots in the container fields' words.
    An element is written a component at a time (Taichi writes each with its own accessor);
    `from_numpy` and `fill` store all components at once (as Taichi's copy kernels, whose stores
    of one word are fused: a shared exponent is then chosen from all the new values)."""

    def __init__(self, field: QuantField):
        self.field, self.element_shape = field, field.element_shape

    @property
    def slots(self) -> tuple:
        return placed_slots(self.field)

    @property
    def ptr(self):
        return self.slots[0].pack.words.storage.ptr

    @staticmethod
    def _words(slot, idx=...) -> np.ndarray:
        """The container words at `idx` (host memory read in place; device memory copied)."""
        storage = slot.pack.words.storage
        arr = getattr(storage, "array", None)
        return np.asarray((storage.to_numpy() if arr is None else arr)[idx]).astype(np.uint64)

    @staticmethod
    def _store(slot, words: np.ndarray, idx=...):
        f = slot.pack.words
        arr = getattr(f.storage, "array", None)
        if arr is None:  # device memory: a round trip through the host
            arr = f.storage.to_numpy()
            arr[idx] = words.astype(f.dtype.np)
            f.storage.from_numpy(arr)
        else:
            arr[idx] = words.astype(f.dtype.np)

    @property
    def shape(self) -> tuple:
        sizes = self.slots[0].lane_sizes
        return tuple(s * sizes.get(d, 1) for d, s in enumerate(self.slots[0].pack.words.shape))

    def _lanes(self, idx=None):
        """For a quant_array: (word index tuple, bit offsets, lane number) of the cells `idx`
        (default all), each shaped like the cells."""
        slot = self.slots[0]
        grid = np.indices(self.shape) if idx is None else \
            np.array(idx, dtype=np.int64).reshape((len(idx), 1))
        sizes = slot.lane_sizes
        word, lane = [], np.zeros(grid.shape[1:], dtype=np.int64)
        for d in range(len(self.shape)):
            n = sizes.get(d, 1)
            word.append(grid[d] // n)
            lane = lane * n + grid[d] % n
        return tuple(word), (lane * slot.qtype.bits).astype(np.uint64), lane

    def _array_read(self, idx=None):
        word, off, _ = self._lanes(idx)
        return decode(self.slots[0], self._words(self.slots[0])[word] >> off)

    def _array_write(self, values, idx=None):
        slot = self.slots[0]
        words = self._words(slot)
        word, off, lane = self._lanes(idx)
        bits = encode_many(np.zeros(np.shape(off), dtype=np.uint64), [(slot, values)])
        m = np.uint64((1 << slot.qtype.bits) - 1)
        for k in np.unique(lane):  # the cells of one lane are in distinct words
            sel = lane == k
            w = tuple(x[sel] for x in word)
            words[w] = (words[w] & ~(m << off[sel])) | (bits[sel] << off[sel])
        self._store(slot, words)

    def _decode(self, idx=...) -> np.ndarray:
        parts = [decode(s, self._words(s, idx)) for s in self.slots]
        if not self.element_shape:
            return parts[0]
        return np.stack(parts, axis=-1).reshape(np.shape(parts[0]) + self.element_shape)

    def _components(self, arr, shape) -> list:
        arr = np.broadcast_to(np.asarray(arr), tuple(shape) + self.element_shape)
        return [arr] if not self.element_shape else \
            list(np.moveaxis(arr.reshape(tuple(shape) + (-1,)), -1, 0))

    def _write(self, stores, idx=...):
        """Each container's slots of `stores` ((slot, values) pairs) stored at `idx` at once."""
        packs: dict = {}
        for slot, v in stores:
            packs.setdefault(id(slot.pack), []).append((slot, v))
        for group in packs.values():
            self._store(group[0][0], encode_many(self._words(group[0][0], idx), group), idx)

    def _entry_slot(self, idx):
        """(cell index, slot) when `idx` goes on past the cell to one component of a vector or
        matrix element (`v[i][k]` in Python scope reads and writes that entry alone), else
        None."""
        cell_dims = len(self.slots[0].pack.words.shape)
        if not self.element_shape or len(idx) <= cell_dims:
            return None
        k = int(np.ravel_multi_index(tuple(idx[cell_dims:]), self.element_shape))
        return tuple(idx[:cell_dims]), self.slots[k]

    def read_element(self, idx):
        if self.slots[0].lanes:
            return self._array_read(idx)[0]
        entry = self._entry_slot(idx)
        if entry is not None:
            return decode(entry[1], self._words(entry[1], entry[0]))[()]
        return self._decode(idx)[()]

    def write_element(self, idx, value):
        if self.slots[0].lanes:
            return self._array_write(np.asarray(value).reshape(1), idx)
        entry = self._entry_slot(idx)
        if entry is not None:
            return self._write([(entry[1], np.asarray(value))], entry[0])
        for slot, v in zip(self.slots, self._components(value, ())):
            self._write([(slot, v)], idx)

    def to_numpy(self):
        if self.slots[0].lanes:
            return self._array_read()
        return self._decode()

    def from_numpy(self, arr):
        if self.slots[0].lanes:
            return self._array_write(np.broadcast_to(np.asarray(arr), self.shape))
        shape = self.slots[0].pack.words.shape
        self._write(list(zip(self.slots, self._components(arr, shape))))

    def fill(self, value):
        self.from_numpy(value)

    def zero(self):
        self.fill(0)


class BitpackedFields:
    """Quantized fields packed into one container word per cell (Taichi's `ti.BitpackedFields`).

    >>> a = fs.field(fs.types.quant.int(5, True))
    >>> b = fs.field(fs.types.quant.int(7, False))
    >>> bp = fs.BitpackedFields(max_num_bits=16)
    >>> bp.place(a, b)
    >>> _ = fs.root.dense(fs.i, 4).place(bp)
    >>> a[1] = -16; b[1] = 200; (a[1], b[1])
    (-16, 72)
    """

    def __init__(self, max_num_bits):
        if max_num_bits not in (8, 16, 32, 64):
            raise FieldsimRuntimeError(f"BitpackedFields: No primitive int type has "
                                       f"{max_num_bits} bits (use 8, 16, 32 or 64)", user_loc())
        self.max_num_bits = max_num_bits
        self.fields: list[QuantField] = []
        self.members: list = []  # what `place` got: fields, or components (get_scalar_field)
        self.used = 0
        self.lone = False  # made for a quantized field placed on its own
        self._bit_struct: SNode | None = None
        self.words: Field | None = None
        self._snode = None  # placing it places its fields, not itself

    def place(self, *fields, shared_exponent=False):
        members = [_member(m) for m in fields]
        self.members.extend(fields)
        if shared_exponent:
            self._place_shared(members)
            return
        for m, comps in members:  # a float's exponent goes first, then its digits (as in Taichi)
            q = m.qtype
            for k in comps:
                exp_offset = self._take(q.exp) if isinstance(q, QuantFloat) else -1
                offset = self._take(q.frac if isinstance(q, QuantFloat) else q.bits)
                self._add(m, k, QuantSlot(q, self.max_num_bits, offset, exp_offset, pack=self))

    def _place_shared(self, members):
        qts = [m.qtype for m, comps in members for _ in comps]
        if len(qts) <= 1:
            raise FieldsimSyntaxError("At least 2 fields need to be placed when "
                                      "shared_exponent=True", user_loc())
        if not all(isinstance(q, QuantFloat) and q.exp == qts[0].exp for q in qts):
            raise FieldsimTypeError("shared_exponent=True needs quantized floats with the same "
                                    f"number of exponent bits, got {qts}", user_loc())
        exp_offset = self._take(qts[0].exp)
        group = tuple((q, self._take(q.frac)) for q in qts)
        slots = iter(QuantSlot(q, self.max_num_bits, off, exp_offset, group, k, pack=self)
                     for k, (q, off) in enumerate(group))
        for m, comps in members:
            for k in comps:
                self._add(m, k, next(slots))

    def bit_struct_node(self, parent: SNode) -> SNode:
        """The `bit_struct` node between `parent` and the fields (`x.parent()`), outside the
        layout tree: loops, activation and storage go by the tree's own nodes."""
        node = self._bit_struct
        if node is None or node._parent is not parent:
            node = self._bit_struct = SNode("bit_struct", parent)
        return node

    def _take(self, bits: int) -> int:
        start, self.used = self.used, self.used + bits
        if self.used > self.max_num_bits:
            raise FieldsimRuntimeError(f"BitStructType overflows: {self.used} bits used out of "
                                       f"{self.max_num_bits}.", user_loc())
        return start

    def _add(self, m: QuantField, comp: int, slot: QuantSlot):
        if self.words is not None:
            raise FieldsimRuntimeError("BitpackedFields.place: this bitpack is already placed",
                                       user_loc())
        m._set_slot(comp, slot)
        self.fields.append(m)

    def _place(self, shape, offset=None, snode=None):
        """`SNode.place(bitpack)`: the container, then each field (or component) placed with
        a place node of its own under the node."""
        parent = snode._parent if snode is not None else None
        self.container(tuple(shape), offset)
        for m in dict.fromkeys(self.members):
            node = SNode(PLACE, parent)
            node.field = m
            m._place(shape, offset=offset, snode=node if parent is not None else None)
            if parent is not None and m._snode is node:
                parent._live_children().append(node)

    def container(self, shape: tuple, offset) -> Field:
        """The container field (made and placed with the first field placed)."""
        if self.words is None:
            bits = {8: T.u8, 16: T.u16, 32: T.u32, 64: T.u64}[self.max_num_bits]
            names = "_".join(f.ir_name for f in self.fields)
            self.words = Field(bits, None, f"bitpack[{names}]", _role="hidden")
            self.words._place(shape, offset=offset)
        elif self.words.shape != shape:
            raise FieldsimRuntimeError(f"the fields of one BitpackedFields are placed together; "
                                       f"got shapes {self.words.shape} and {shape}", user_loc())
        return self.words


def _member(m) -> tuple:
    """(the quantized field, its component numbers) that `m`, a field or a component of one
    (`get_scalar_field`), stands for in a bitpack."""
    owner = getattr(m, "owner", None)
    if isinstance(owner, QuantField):
        return owner, [m.comp]
    if not isinstance(m, QuantField):
        raise FieldsimRuntimeError("Only a QuantType can be a member of a BitStructType "
                                   f"(ti.BitpackedFields.place got {m!r})", user_loc())
    return m, list(range(m.components))
