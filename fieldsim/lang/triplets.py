"""The kernel side of sparse matrix builders: `fs.types.sparse_matrix_builder()` arguments and
`A[i, j] += v` inside kernels.

Takes a `TripletBuffer` (the base of `fs.linalg.SparseMatrixBuilder`, which adds the host-side
`build()`): it owns hidden fields holding up to `max_num_triplets` (row, col, value) triplets, a
0-D counter and a 0-D overflow marker. A kernel argument annotated
`fs.types.sparse_matrix_builder()` is bound at compile time like a `fs.template()` (one
specialisation per builder storage; the storage of a builder that was garbage collected goes to
the next builder of the same `max_num_triplets` and dtype, so a builder made per step reuses
the kernels compiled for the first). Inside the kernel, `A[i, j] += v` (or `-= v`) from any number of
threads lowers to existing IR: an atomic add on the counter reserves a slot, and the slot's row,
column, value and the statement's site number are stored there; duplicates are summed later, on
the host, when the matrix is built.

Guarantees: a launch with a builder argument on a `fs.ad.Tape` is refused (no gradient flows
through sparse matrices). A kernel that adds more triplets than `max_num_triplets` raises
`FieldsimRuntimeError` right after its launch, naming the builder, the kernel and the file:line of
an `+=` that overflowed (nothing past the buffers is written). Any other use of `A[i, j]` (a read,
a plain store, `*=`) is a compile error naming the builder; so is an index or value that is not a
scalar. Indices outside the matrix are reported by `triplets()` with the line that added them.
"""
from __future__ import annotations

import numbers
import weakref

import numpy as np

from fieldsim.errors import FieldsimRuntimeError, FieldsimSyntaxError, FieldsimTypeError
from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang import naming, runtime
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal, describe
from fieldsim.lang.field import Field


class sparse_matrix_builder:
    """Annotation of a kernel argument that is a `fs.linalg.SparseMatrixBuilder`; the kernel
    adds entries with `A[i, j] += v` (duplicates sum).

    >>> B = fs.linalg.SparseMatrixBuilder(3, 3, max_num_triplets=6)
    >>> @fs.kernel
    ... def fill(A: fs.types.sparse_matrix_builder()):
    ...     for i in range(6):
    ...         A[i % 3, i % 3] += 1.0
    >>> fill(B); B.build()[1, 1]
    2.0
    """

    def __repr__(self):
        return "sparse_matrix_builder()"


class TripletBuffer:
    """Up to `max_num_triplets` (row, col, value) triplets that kernels append to in parallel."""

    def __init__(self, num_rows, num_cols=None, max_num_triplets=0, dtype=T.f32,
                 storage_format="col_major"):
        rt = runtime.get()
        if num_rows is None or int(num_rows) < 0 or int(max_num_triplets) < 0:
            raise FieldsimRuntimeError("SparseMatrixBuilder needs num_rows >= 0 and "
                                       f"max_num_triplets >= 0, got num_rows={num_rows!r}, "
                                       f"max_num_triplets={max_num_triplets!r}", naming.user_loc())
        self.num_rows = int(num_rows)
        self.num_cols = int(num_cols) if num_cols else self.num_rows  # as Taichi: 0/None -> square
        self.max_num_triplets = int(max_num_triplets)
        self.dtype = T.concrete_dtype(float if dtype is None else dtype, rt.default_fp, rt.default_ip)
        if not (isinstance(self.dtype, T.DataType) and self.dtype.is_float):
            raise FieldsimTypeError(f"SparseMatrixBuilder: dtype must be a float type, got {dtype!r}",
                                    naming.user_loc())
        self.storage_format = storage_format
        self.name = naming.assigned_name() or f"builder{len(rt.fields)}"
        self.generation = rt.generation
        store = _acquire(rt, self.max_num_triplets, self.dtype, self.name)
        # the storage (and its uid, the compile key) of a builder nobody holds any more is
        # reused: a program making a builder per step compiles its kernels once, as Taichi
        # passes builders at run time
        weakref.finalize(self, _release, rt.generation, store)
        self.uid = store.uid  # with the generation: unique among live builders
        self._rows, self._cols, self._vals = store.rows, store.cols, store.vals
        self._sites, self._count, self._overflow = store.sites, store.count, store.overflow
        self._site_locs = store.site_locs  # site number -> (kernel name, Loc) of an `A[i, j] += v`

    # ---- host side ------------------------------------------------------------------------------
    def num_triplets(self) -> int:
        return int(self._count.to_numpy())

    def check_overflow(self):
        """Raise if a kernel added more than `max_num_triplets` triplets."""
        site = int(self._overflow.to_numpy())
        if site == 0:
            return
        count = self.num_triplets()
        kname, loc = self._site_locs[site - 1]
        raise FieldsimRuntimeError(
            f"sparse matrix builder {self.name!r}: kernel {kname!r} added more triplets than "
            f"max_num_triplets={self.max_num_triplets} ({count} in all); the triplets past the "
            "limit were dropped. Make the builder with a larger max_num_triplets", loc)

    def triplets(self):
        """(rows, cols, values) numpy arrays of the triplets added so far, in slot order."""
        self.check_overflow()
        count = self.num_triplets()
        rows = self._rows.to_numpy()[:count]
        cols = self._cols.to_numpy()[:count]
        bad = np.flatnonzero((rows < 0) | (rows >= self.num_rows) | (cols < 0) | (cols >= self.num_cols))
        if bad.size:
            k = int(bad[0])
            kname, loc = self._site_locs[int(self._sites.to_numpy()[k])]
            raise FieldsimRuntimeError(
                f"sparse matrix builder {self.name!r} ({self.num_rows} x {self.num_cols}): kernel "
                f"{kname!r} added an entry at ({rows[k]}, {cols[k]}), outside the matrix", loc)
        return rows, cols, self._vals.to_numpy()[:count]

    def clear(self):
        """Forget the triplets (as Taichi's build() does once it has read them)."""
        self._count.fill(0)
        self._overflow.fill(0)

    # ---- kernel side ----------------------------------------------------------------------------
    def site(self, kname: str, loc) -> int:
        """The number of an `A[i, j] += v` statement (the same one each time it is compiled)."""
        key = (kname, loc.file if loc else None, loc.line if loc else None)
        for k, (name, old) in enumerate(self._site_locs):
            if (name, old.file if old else None, old.line if old else None) == key:
                return k
        self._site_locs.append((kname, loc))
        return len(self._site_locs) - 1


class _Storage:
    """A builder's hidden fields, uid and statement sites: what its kernels are compiled for."""

    def __init__(self, rt, limit: int, dtype, name: str):
        self.uid = len(rt.fields)
        self.limit, self.dtype = limit, dtype  # both compiled into the kernels' `+=`
        size = max(limit, 1)
        # fieldsim's own fields ("mask": not in fs.root, no gradient twins), named after the builder
        self.rows = Field(T.i32, (size,), f"{name}.rows", _role="mask")
        self.cols = Field(T.i32, (size,), f"{name}.cols", _role="mask")
        self.vals = Field(dtype, (size,), f"{name}.values", _role="mask")
        self.sites = Field(T.i32, (size,), f"{name}.sites", _role="mask")
        self.count = Field(T.i32, (), f"{name}.count", _role="mask")
        self.overflow = Field(T.i32, (), f"{name}.overflow", _role="mask")
        self.site_locs: list = []


# (generation, max_num_triplets, dtype) -> storages of builders that were garbage collected
_FREE: dict = {}


def _acquire(rt, limit: int, dtype, name: str) -> _Storage:
    for key in [k for k in _FREE if k[0] != rt.generation]:  # freed by fs.init()
        del _FREE[key]
    free = _FREE.get((rt.generation, limit, dtype))
    if not free:
        return _Storage(rt, limit, dtype, name)
    store = free.pop()
    store.count.fill(0)
    store.overflow.fill(0)
    return store


def _release(generation: int, store: _Storage):
    _FREE.setdefault((generation, store.limit, store.dtype), []).append(store)


def is_builder_annotation(a) -> bool:
    return isinstance(a, sparse_matrix_builder) or a is sparse_matrix_builder


def bind_builder(value, kname: str, pname: str, loc=None):
    """The compile-cache key of a builder passed to an argument annotated
    `fs.types.sparse_matrix_builder()`."""
    if not isinstance(value, TripletBuffer):
        raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} expects a "
                                f"fs.linalg.SparseMatrixBuilder, got {type(value).__name__}", loc)
    rt = runtime.get()
    if value.generation != rt.generation:
        raise FieldsimRuntimeError(f"kernel {kname!r}: argument {pname!r}: sparse matrix builder "
                                   f"{value.name!r} was made before the last fs.init()", loc)
    if rt.tape is not None and rt.no_grad_depth == 0:
        raise FieldsimRuntimeError(f"kernel {kname!r} fills sparse matrix builder {value.name!r}: "
                                   "sparse matrices are not differentiable, so it cannot run on a "
                                   "Tape; launch it before the Tape or through fs.ad.no_grad(kernel)", loc)
    return ("smb", value.uid, value.generation)


def after_launch(templates: dict):
    """After a launch: a builder argument that overflowed raises (see `check_overflow`)."""
    for t in templates.values():
        if isinstance(t, TripletBuffer):
            t.check_overflow()


class TripletRef:
    """`A[i, j]` of a builder inside a kernel: only `+=` and `-=` are allowed."""

    by_reference = False

    def __init__(self, builder: TripletBuffer, idx: list):
        self.builder = builder
        if len(idx) != 2:
            raise FieldsimSyntaxError(f"sparse matrix builder {builder.name!r} is indexed with "
                                      f"two indices, A[i, j] (got {len(idx)})")
        for v in idx:
            bad = isinstance(v, (MatVal, float)) or (isinstance(v, Stmt) and v.dtype.is_float) \
                or not isinstance(v, (Stmt, numbers.Integral))
            if bad:
                raise FieldsimTypeError(f"sparse matrix builder {builder.name!r}: an index must be "
                                        f"an integer, got {describe(v)}")
        self.idx = idx

    def only_accumulate(self):
        return FieldsimSyntaxError(f"sparse matrix builder {self.builder.name!r}: A[i, j] can only "
                                   "be accumulated (A[i, j] += v or A[i, j] -= v)")

    def load(self, fe):
        raise self.only_accumulate()

    def store(self, fe, value):
        raise self.only_accumulate()

    def component(self, fe, idx):
        raise self.only_accumulate()

    def atomic(self, fe, kind, value):
        """Reserve a slot with an atomic add on the counter; store the triplet there, or mark
        the overflow with this statement's site number."""
        if kind not in ("add", "sub"):
            raise self.only_accumulate()
        b = self.builder
        if isinstance(value, MatVal) or not isinstance(value, (Stmt, numbers.Number)):
            raise FieldsimTypeError(f"sparse matrix builder {b.name!r}: A[i, j] += v needs a "
                                    f"scalar v, got {describe(value)}")
        site = b.site(fe.kernel_name, fe.b.loc)
        v = fe.e.value(value, b.dtype)
        if kind == "sub":  # negated, not 0 - v, so `-= 0.0` stores -0.0 as Taichi does
            v = fe.e.unop(Op.NEG, v)
        rows, cols = (fe.e.value(i, T.i32) for i in self.idx)
        slot = fe.b.atomic("add", b._count, [], fe.b.const(1, T.i32))
        branch = fe.b.if_(fe.e.compare("<", slot, b.max_num_triplets))
        with fe.b.into(branch.blocks[0]):
            fe.b.store(b._rows, [slot], rows)
            fe.b.store(b._cols, [slot], cols)
            fe.b.store(b._vals, [slot], v)
            fe.b.store(b._sites, [slot], fe.b.const(site, T.i32))
        with fe.b.into(branch.blocks[1]):
            fe.b.store(b._overflow, [], fe.b.const(site + 1, T.i32))
