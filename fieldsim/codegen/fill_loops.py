"""Recognise parallel loops that only zero whole fields (analysis only; llvm.py emits memsets).

Takes a parallel `FOR` over `lin` in `[0, N)`. Returns a `Fill` when its body does nothing but
recover row-major indices from `lin` (`floordiv` / `mod` by positive constants, what struct-fors
and `ti.ndrange` lower to) and store the constant zero to field elements at exactly those
indices, followed by constant component indices that together cover every component of the
element. Then the iterations `[lo, hi)` of any chunk set elements `[lo*K, hi*K)` of each such
field's storage (K: components per element) to zero and do nothing else, so the code generator
emits one `memset` per field and chunk instead of a loop.

Why: every MPM substep clears its grid, and a vectorized clear loop costs 10-20 ms of LLVM
optimisation and code generation (issue #13, BENCHMARKS.md "LLVM options and fill loops"); a
memset costs nothing to compile and runs at least as fast.

Guarantees: a `Fill` is returned only where this holds: each loop-derived index `t` of a field
of storage shape `S` (the first `d` axes spanning the loop, `prod(S[:d]) == N`) is proven to be
`(lin // prod(S[t+1:d])) % S[t]` by the rules (a % M) // c == (a // c) % (M // c) and
(a % M) % c == a % c for c dividing M and a >= 0; the leading index may omit its `% S[0]`
(lin < N). Anything else (an index offset, an ndarray argument, a value other than +0 or 0, a
component left unwritten, any other statement) gives None and the loop is lowered as before.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import product

from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang.ndarray import is_slot
from fieldsim.lang.quant import is_quant


@dataclass
class Fill:
    # (field, elements per loop iteration: the product of its component axes), in first-store order
    fields: list


def fill_plan(loop: Stmt) -> Fill | None:
    """The fields a parallel loop zeroes whole, or None where the loop does anything else."""
    begin, end = loop.args[0], loop.args[1]
    if not _int_const(begin) or begin.attr != 0 or not _int_const(end) or end.attr < 0:
        return None
    decoded = {id(loop): (1, None)}  # id(stmt) -> (D, M): the stmt is (lin // D) % M
    written: dict = {}  # id(field) -> [field, d, set of component tuples]
    for st in loop.body:
        if st.op == Op.CONST:
            continue
        if st.op in (Op.FLOORDIV, Op.MOD):
            form = _decode(st, decoded)
            if form is None:
                return None
            decoded[id(st)] = form
        elif st.op == Op.STORE and not is_quant(st.field):  # no memset into a shared word
            if not _zero_store(st, end.attr, decoded, written):
                return None
        else:
            return None
    fields = []
    for field, d, components in written.values():
        axes = field.storage_shape[d:]
        if components != set(product(*(range(n) for n in axes))):
            return None
        fields.append((field, math.prod(axes)))
    return Fill(fields) if fields else None


def _int_const(s: Stmt) -> bool:
    return s.op == Op.CONST and isinstance(s.attr, int) and not isinstance(s.attr, bool)


def _decode(st: Stmt, decoded: dict):
    """(D, M) of a floordiv/mod of a decoded value by a positive constant, else None."""
    x, c = st.args
    if id(x) not in decoded or not _int_const(c) or c.attr <= 0:
        return None
    D, M = decoded[id(x)]
    c = c.attr
    if M is not None and M % c:
        return None
    if st.op == Op.FLOORDIV:
        return (D * c, None if M is None else M // c)
    return (D, c)


def _zero_store(st: Stmt, n: int, decoded: dict, written: dict) -> bool:
    """Records a store of zero at the row-major decode of the loop index; False otherwise."""
    field, value = st.field, st.value
    if is_slot(field) or value.op != Op.CONST or value.attr != 0 \
            or math.copysign(1.0, value.attr) < 0:
        return False
    indices = st.indices
    d = next((k for k, ix in enumerate(indices) if id(ix) not in decoded), len(indices))
    shape = field.storage_shape
    if d == 0 or len(shape) != len(indices) or math.prod(shape[:d]) != n \
            or not all(_int_const(ix) for ix in indices[d:]):
        return False
    for t in range(d):
        D, M = decoded[id(indices[t])]
        if D != math.prod(shape[t + 1:d]) or (M != shape[t] and not (t == 0 and M is None)):
            return False
    entry = written.setdefault(id(field), [field, d, set()])
    if entry[1] != d:
        return False
    entry[2].add(tuple(ix.attr for ix in indices[d:]))
    return True
