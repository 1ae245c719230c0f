"""Lowering of flattened ndrange loops as vectorizable nests (a mixin of llvm.TaskLowering).

Takes a parallel loop that `loopnest.ndrange_split` accepted and the worker's chunk [lo, hi)
of its linear index. Emits `for q: for r:` (lin = q*c + r) and, inside it:

* loads of an `if` that are in bounds whatever the condition, before the branch
  (`loopnest.speculable_loads`), and small `if`s as predicated straight-line code
  (`loopnest.if_convertible`), so LLVM's loop vectorizer sees no control flow;
* atomic adds that depend on q only summed per row in a register, and those that depend on r
  only summed over the chunk in a stack array of c values (`loopnest.nest_accumulators`),
  each flushed with one atomic per element touched: the inner loop keeps no atomics (an
  adjoint's `x.grad[i] += ...; x.grad[j] -= ...` scatter vectorizes). Under fast math only:
  with `fast_math=False` every atomic runs in place, so one thread adds in program order.

Guarantees: the same values as the plain loop up to float summation order (which threads
already vary); an accumulator left at +0.0 (or integer 0) is not flushed, so untouched
elements are not written.
"""
from __future__ import annotations

from llvmlite import ir as L

from fieldsim.codegen.loop_hints import SCALAR, VECTOR
from fieldsim.codegen.loopnest import (
    NdSplit,
    nest_accumulators,
    row_bound,
    speculable_loads,
    written_fields,
)
from fieldsim.ir.ir import Op, Stmt, walk

I1, I8, I64 = L.IntType(1), L.IntType(8), L.IntType(64)


def nbytes(ty) -> int:
    if isinstance(ty, L.IntType):
        return max(1, ty.width // 8)
    return {"half": 2, "float": 4, "double": 8}[str(ty)]


def reduce_start(dt, ty, kind: str):
    """Where a worker's `kind` accumulator starts: 0 for add/sub; for max the dtype's lowest
    value (-inf), for min its highest (+inf; all ones for unsigned), which leave every value."""
    if kind in ("add", "sub"):
        return L.Constant(ty, 0)
    if dt.is_float:
        return L.Constant(ty, float("-inf") if kind == "max" else float("inf"))
    if not dt.is_signed:
        return L.Constant(ty, 0 if kind == "max" else -1)
    top = 1 << (ty.width - 1)
    return L.Constant(ty, -top if kind == "max" else top - 1)


def combine_extreme(b: L.IRBuilder, module: L.Module, dt, kind: str, cur, v):
    """max/min of an accumulator and a value as the atomic computes it (maxnum/minnum for
    floats: a NaN never wins), so the order of combination cannot change the result."""
    if dt.is_float:
        fn = module.declare_intrinsic("llvm.maxnum" if kind == "max" else "llvm.minnum", [cur.type],
                                      L.FunctionType(cur.type, [cur.type, cur.type]))
        return b.call(fn, [cur, v])
    cmp = b.icmp_signed if dt.is_signed else b.icmp_unsigned
    return b.select(cmp(">" if kind == "max" else "<", cur, v), cur, v)


def _neutral(v, add: bool):
    """What a masked-off lane adds: -0.0 (x + -0.0 == x for every x) or subtracts (+0.0)."""
    if isinstance(v.type, L.IntType):
        return L.Constant(v.type, 0)
    return L.Constant(v.type, -0.0 if add else 0.0)


class NestLowering:
    """Methods of TaskLowering for nested ndrange loops; see the module docstring."""

    # ---- the nest -----------------------------------------------------------------------------
    def nested_for(self, s: Stmt, lo, hi, split: NdSplit, hint=VECTOR, by_rows=False):
        """A worker's chunk of a flattened ndrange loop as `for q: for r:` with lin = q*c + r
        (fieldsim.codegen.loopnest): the inner loop has a plain induction variable, so LLVM
        can vectorize it (unless `hint` is loop_hints.SCALAR), and q's index expressions are
        computed once per row. The chunk is [lo, hi) of lin, or with `by_rows` the whole rows
        [lo, hi) of q (loopnest.whole_rows): then no row is cut, and the inner loop's bounds
        are c or the triangle's edge, not clamped to the chunk (which costs LLVM's loop
        passes more compile time than the rest of a small kernel)."""
        from fieldsim.codegen.llvm import ll_type
        b, c = self.b, split.c
        cc = L.Constant(I64, c)
        self.ranges = split.ranges
        ity = ll_type(s.dtype)
        outside = {id(p) for p in self.cg.prologue}
        # deferred sums reorder one thread's additions: fast-math only, so that exact mode adds
        # in program order (Taichi's bits on one thread)
        kinds = nest_accumulators(s, split, outside, set(self.reductions)) if self.cg.fmf else {}
        atomics = [st for st in walk(s.body) if id(st) in kinds]
        rows = [st for st in atomics if kinds[id(st)] == "row"]
        cols = [st for st in atomics if kinds[id(st)] == "col"]
        for st in atomics:
            ty = ll_type(st.field.dtype)
            # a column: c elements, addressed as gep(ty, slot, r)
            slot = self.alloca_b.alloca(ty, size=L.Constant(I64, c) if st in cols else None,
                                        name="nest_acc")
            self.nest_acc[id(st)] = (kinds[id(st)], slot, ty)
            if st in cols:  # +0.0 (all bits zero) in every lane: nothing to flush yet
                self.memset_zero(slot, c * nbytes(ty))
        triangle = row_bound(s, split)
        if by_rows:
            q_lo, q_hi = lo, hi
        else:
            q_lo = b.sdiv(lo, cc)  # lo >= 0 (ndrange_split checked the begin)
            q_hi = b.sdiv(b.add(hi, L.Constant(I64, c - 1)), cc)

        def row(q):
            base = b.mul(q, cc, flags=("nsw",))
            # q, r and lin stay within the loop's index type: the i64 counters are their
            # widened forms (narrow_index)
            qv = self.narrow_index(q, ity)
            for sid, (kind, k) in split.uses.items():
                if kind == "q":
                    self.preset[sid] = qv if k == 1 else b.sdiv(qv, L.Constant(ity, k))
            for st in rows:
                _, slot, ty = self.nest_acc[id(st)]
                b.store(L.Constant(ty, 0), slot)
            r_lo, r_hi = self.row_columns(None if by_rows else (lo, hi), base, q, c, triangle)
            self.plain_loop(r_lo, r_hi, lambda r: self.cell(s, split, qv, base, r, ity), hint)
            env = {sid: self.preset[sid] for sid, (kind, _) in split.uses.items() if kind == "q"}
            for st in rows:
                _, slot, ty = self.nest_acc[id(st)]
                self.flush_one(st, self.b.load(slot, typ=ty), env)
        # a trimmed row runs only columns where the triangle's `if` holds: no test left in them
        self.holds = frozenset() if triangle is None else frozenset({id(triangle.cond)})
        self.plain_loop(q_lo, q_hi, row, SCALAR)  # not innermost: nothing to vectorize
        self.holds = frozenset()
        if cols:
            self.flush_columns(cols, split, ity)
        self.ranges = {}

    def row_columns(self, chunk, base, q, c: int, triangle):
        """[r_lo, r_hi) (i64): the columns of row q (starting at lin = base), inside the
        chunk (lo, hi) of lin when one is given, and, in a triangular nest
        (loopnest.row_bound), where its `if` holds."""
        b, zero, cc = self.b, L.Constant(I64, 0), L.Constant(I64, c)
        r_lo, r_hi = zero, cc
        if chunk is not None:
            lo, hi = chunk
            r_lo = b.sub(lo, base)
            r_lo = b.select(b.icmp_signed("<", r_lo, zero), zero, r_lo)
            r_hi = b.sub(hi, base)
            r_hi = b.select(b.icmp_signed("<", r_hi, cc), r_hi, cc)
        if triangle is not None:
            side, delta = triangle.side, triangle.delta
            edge = b.add(q, L.Constant(I64, delta), flags=("nsw",))
            if side == "lo":
                r_lo = b.select(b.icmp_signed("<", r_lo, edge), edge, r_lo)
            else:
                r_hi = b.select(b.icmp_signed("<", edge, r_hi), edge, r_hi)
        return r_lo, r_hi

    def cell(self, s: Stmt, split: NdSplit, qv, base, r64, ity):
        """One iteration of a nested ndrange loop: the body at lin = q*c + r."""
        b = self.b
        r = self.narrow_index(r64, ity)
        lin = b.add(base, r64, flags=("nsw",))
        self.vals[id(s)] = self.narrow_index(lin, ity)
        for sid, (kind, k) in split.uses.items():
            if kind == "r":
                self.preset[sid] = r if k == 1 else b.add(
                    b.mul(b.srem(qv, L.Constant(ity, k)), L.Constant(ity, split.c), flags=("nsw",)),
                    r, flags=("nsw",))
        self.nest_r = r64
        self.tid = lin
        b.store(L.Constant(I64, 0), self.rng_counter)
        self.block(s.body)

    def plain_loop(self, lo, hi, body, hint=VECTOR):
        """`for i in range(lo, hi): body(i)` with an `nsw` increment (LLVM then knows the index
        does not wrap); `continue` in the body goes to the increment. `hint`: its
        loop_hints kind."""
        b = self.b
        idx = self.alloca_b.alloca(lo.type, name="n")
        b.store(lo, idx)
        cond_bb = self.fn.append_basic_block("nest.cond")
        body_bb = self.fn.append_basic_block("nest.body")
        step_bb = self.fn.append_basic_block("nest.step")
        exit_bb = self.fn.append_basic_block("nest.exit")
        b.branch(cond_bb)
        b.position_at_end(cond_bb)
        i = b.load(idx, typ=lo.type)
        b.cbranch(b.icmp_signed("<", i, hi), body_bb, exit_bb)
        b.position_at_end(body_bb)
        self.loops.append((step_bb, exit_bb))
        body(i)
        self.loops.pop()
        if not self.b.block.is_terminated:
            self.b.branch(step_bb)
        b.position_at_end(step_bb)
        b.store(b.add(b.load(idx, typ=lo.type), L.Constant(lo.type, 1), flags=("nsw",)), idx)
        self.cg.hints.mark(b.branch(cond_bb), hint)
        b.position_at_end(exit_bb)

    # ---- if-conversion ------------------------------------------------------------------------
    def speculate_loads(self, s: Stmt):
        """Loads of an `if` that are in bounds whatever the condition, done before the branch
        (fieldsim.codegen.loopnest.speculable_loads): the `if` then if-converts to selects."""
        if self.written is None:
            self.written = written_fields(self.task)
        for st in speculable_loads(s, self.ranges, self.written):
            for ix in st.indices:
                if ix.op == Op.CONST and id(ix) not in self.vals:
                    self.vals[id(ix)] = self.op_const(ix)
            self.preset[id(st)] = self.op_load(st)

    def hoisted_loads(self, if_stmt: Stmt) -> set:
        """ids of the loads op_if speculates before `if_stmt` (speculate_loads)."""
        if not self.ranges or self.cg.debug:
            return set()
        if self.written is None:
            self.written = written_fields(self.task)
        return {id(st) for st in speculable_loads(if_stmt, self.ranges, self.written)}

    def predicated_if(self, s: Stmt):
        """An if-convertible `if` (fieldsim.codegen.loopnest.if_convertible) as straight-line
        code: both blocks run, their local stores and reductions guarded by selects, so LLVM
        vectorizes the loop around it without masked loads."""
        b = self.b
        c = self.v(s.args[0])
        cond = b.icmp_signed("!=", c, L.Constant(c.type, 0))
        outer = self.pred
        for blk, p in ((s.blocks[0], cond), (s.blocks[1], b.not_(cond))):
            if not blk:
                continue
            self.pred = p if outer is None else b.and_(outer, p)
            self.block(blk)
        self.pred = outer
        if outer is None:
            self.pred_locals = {}

    # ---- local accumulation -------------------------------------------------------------------
    def reduce_into(self, s: Stmt):
        """An atomic add/sub taken by a task-wide reduction, a nest or loop accumulator: added to
        the accumulator instead (under the predicate when if-converted)."""
        if id(s) in self.reductions:
            acc = self.reductions[id(s)][0]
        elif id(s) in self.loop_acc:
            acc = self.loop_acc[id(s)]
        else:
            kind, slot, ty = self.nest_acc[id(s)]
            acc = slot if kind == "row" else self.b.gep(slot, [self.nest_r], source_etype=ty)
        b, v = self.b, self.v(s.value)
        cur = b.load(acc, typ=v.type)
        kind = s.attr[1]
        if kind in ("min", "max"):  # only task-wide reductions take these
            if self.pred is not None:
                v = b.select(self.pred, v, reduce_start(s.field.dtype, v.type, kind))
            b.store(combine_extreme(b, self.cg.module, s.field.dtype, kind, cur, v), acc)
            return L.Constant(v.type, 0)
        add = kind == "add"
        if self.pred is not None:
            # if-converted: where the predicate fails, add -0.0 (or subtract +0.0), which
            # leaves every value as it is. (Selecting between cur+v and cur is not a pattern
            # LLVM's vectorizer takes as a reduction without full fast-math.)
            v = b.select(self.pred, v, _neutral(v, add))
        if s.field.dtype.is_float:
            new = b.fadd(cur, v, flags=self.fmf) if add else b.fsub(cur, v, flags=self.fmf)
        else:
            new = b.add(cur, v) if add else b.sub(cur, v)
        b.store(new, acc)
        return L.Constant(v.type, 0)

    def flush_one(self, st: Stmt, total, env: dict):
        """One atomic add of an accumulated `total` into `st`'s element, its indices computed
        again from `env` (q or r values); skipped when the total's bits are all zero."""
        b = self.b
        bits = total if isinstance(total.type, L.IntType) else \
            b.bitcast(total, L.IntType(nbytes(total.type) * 8))
        with b.if_then(b.icmp_unsigned("!=", bits, L.Constant(bits.type, 0))):
            saved = {id(ix): self.vals.get(id(ix)) for ix in st.indices}
            for ix in st.indices:
                self.vals[id(ix)] = self.remat(ix, env)
            ptr = self.element_ptr(st)
            for k, v in saved.items():
                if v is None:
                    self.vals.pop(k, None)
                else:
                    self.vals[k] = v
            op = "fadd" if st.field.dtype.is_float else "add"
            b.atomic_rmw(op, ptr, total, "monotonic")

    def flush_columns(self, cols, split: NdSplit, ity):
        """After the chunk: each column accumulator's c values into their elements."""
        def one(r64):
            r = self.narrow_index(r64, ity)
            env = {sid: r for sid, (kind, k) in split.uses.items() if kind == "r" and k == 1}
            for st in cols:
                _, slot, ty = self.nest_acc[id(st)]
                p = self.b.gep(slot, [r64], source_etype=ty)
                self.flush_one(st, self.b.load(p, typ=ty), env)
        # one conditional atomic per element: unrolled or vectorized it only costs compile time
        self.plain_loop(L.Constant(I64, 0), L.Constant(I64, split.c), one, SCALAR)

    def remat(self, st: Stmt, env: dict):
        """The value of a pure index expression computed again here, with `env`'s values for
        the q/r statements (loopnest._support admitted only such expressions)."""
        if id(st) in env:
            return env[id(st)]
        if st.op == Op.CONST:
            return self.op_const(st)
        if st.op == Op.ARG:
            return self.op_arg(st)
        if any(id(st) == id(p) for p in self.cg.prologue):
            return self.vals[id(st)]
        saved = {id(a): self.vals.get(id(a)) for a in st.args}
        for a in st.args:
            self.vals[id(a)] = self.remat(a, env)
        handler = getattr(self, "op_" + st.op.name.lower(), None)
        v = handler(st) if handler is not None else self.arith(st)
        for k, old in saved.items():
            if old is None:
                self.vals.pop(k, None)
            else:
                self.vals[k] = old
        return v

    def memset_zero(self, ptr, count):
        """Zero `count` (an int, or an i64 value) bytes at `ptr`."""
        fn = self.cg.module.declare_intrinsic("llvm.memset", [L.PointerType(), I64])
        size = L.Constant(I64, count) if isinstance(count, int) else count
        self.b.call(fn, [ptr, L.Constant(I8, 0), size, L.Constant(I1, 0)])
