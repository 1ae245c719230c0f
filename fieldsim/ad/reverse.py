"""Reverse-mode AD: `make_adjoint(kernel) -> Kernel`, IR to IR.

Input: an offloaded kernel (top level = pure prologue statements + tasks: parallel FOR,
serialize=True FOR, SERIAL; no local crosses a task). It is first put through `lower_break`,
so loops have no BREAK/CONTINUE but a LOOP's final `IF(flag) {BREAK}`. The input is untouched.

Output: a new kernel `<name>.grad` with the same params and no return value, verified-clean:

* its prologue is a copy of the primal's; its tasks are the primal's in reverse order: a
  parallel FOR stays a parallel FOR over the same range, a serialize=True FOR runs its range
  from end-1 down to begin (serially), a SERIAL stays SERIAL;
* each task body is: declarations (adjoint ALLOCAs, backups, STACK_ALLOCAs, zeros), then the
  *forward replay* of the primal body with every STORE/ATOMIC/RETURN dropped (RAND calls
  are kept, in order, so the runtime replays the same numbers given the same RNG key and thread
  index; a debug-mode ASSERT is kept, as Taichi's adjoints check their primal's asserts), then
  the *reverse sweep*;
* an SSA value's adjoint is read when the sweep reaches its definition. Contributions made
  in the sweep of the value's own block are summed as SSA values; those made in a nested
  block (an `if`, a loop) go to an ALLOCA, accumulated with LOCAL_LOAD/ADD/LOCAL_STORE (and,
  inside a loop, reset to 0 when read). A float local's adjoint lives in an ALLOCA, moved to
  the stored value, and reset, at each LOCAL_STORE;
* primal values the sweep needs: defined at the task's top level -> used directly; pure (incl.
  LOAD) -> recomputed; otherwise (LOCAL_LOAD, RAND, a LOOP's trip count) spilled: under IFs only
  to a backup ALLOCA, inside an inner loop to a per-value stack (STACK_PUSH right after the
  definition in the replay, STACK_TOP in the sweep, STACK_POP when the sweep reaches the
  definition). `meta["stack_capacities"][key]` is the `CapacityFormula` of stack `key`;
* global memory: LOAD x[i] -> atomic add of its adjoint into x.grad[i]; STORE x[i] = v ->
  v gets x.grad[i], which is then zeroed; atomic add/sub -> v gets +-x.grad[i]; atomic max/min
  -> v gets x.grad[i] only where v equals the final x[i]; other atomics and int data: nothing;
* a CUSTOM_GRAD region (fs.ad.func_grad): its forward block is replayed inline; in the sweep
  its adjoint block is copied in, CUSTOM_ADJ_IN k reading output k's adjoint, and the
  CUSTOM_ADJ_OUT values are accumulated into the region's inputs (outputs count as active
  whenever an input is, so a user adjoint may pass gradients the forward code cannot);
* prologue values a task uses are replayed (and differentiated) inside that task, so a
  top-level LOAD gets its gradient;
* only active values (float, depending on a field with a grad) get adjoints; dead code (unused
  pure values, spills never read, empty blocks and tasks) is removed at the end;
* every statement carries the loc of the primal statement it comes from.

An atomic whose returned old value is used (outside a func_replay) cannot be replayed: the
replay drops atomics, and the value depends on the threads' order. Where the adjoint needs
nothing that old value reaches (`adjoint_needs`: bookkeeping such as `slot =
ti.atomic_add(cnt[None], 1)`, `order[slot] = i` beside a differentiated store), the replay and
the sweep leave out every statement it reaches by value, through locals, or by control. Where
the adjoint needs it, raises `FieldsimCompilationError` at the atomic's loc; also (via
lower_break) for `break` out of a top-level loop.
"""
from __future__ import annotations

import contextlib

from fieldsim.ad.real_calls import refuse_real_calls
from fieldsim.ad.rules import EXACT_RULES, RULES
from fieldsim.ad.stack import CapacityFormula
from fieldsim.ad.zero_adjoint import Guards
from fieldsim.errors import FieldsimCompilationError
from fieldsim.ir import dtypes as T
from fieldsim.ir.activity import activity, adjoint_needs, stopped_loads, writes_derivatives
from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import (
    PURE,
    ForInfo,
    Kernel,
    Op,
    StackInfo,
    Stmt,
    has_user_adjoint,
    replayed_block,
    walk,
)
from fieldsim.ir.passes.lower_break import lower_break
from fieldsim.ir.passes.offload import is_task
from fieldsim.ir.passes.prune import prune
from fieldsim.ir.passes.run import run_pass

_DROPPED = frozenset({Op.STORE, Op.ATOMIC, Op.RETURN, Op.STOP_GRAD,
                      Op.PRINT})  # PRINT: the primal printed
_SPILL_NAMES = {Op.LOCAL_LOAD: "a local variable", Op.RAND: "an fs.random() value",
                Op.LOOP: "a while loop's trip count"}


def make_adjoint(kernel: Kernel, exact: bool = False, flushing: frozenset = frozenset()) -> Kernel:
    """`exact`: `fast_math=False`'s rules, rounding as Taichi's (rules.EXACT_RULES). `flushing`:
    the float widths whose subnormals the target flushes (`ir.subnormals.flushing_widths`)."""
    refuse_real_calls(kernel, "reverse")
    k = run_pass("lower_break", lower_break, kernel)
    if not writes_derivatives(k.body) and _uses_atomic_result(k):
        # nothing to differentiate (a binning kernel's `slot = ti.atomic_add(count[c], 1)`
        # into integer fields): an empty adjoint, rather than refusing a value it never needs
        return Kernel(f"{k.name}.grad", list(k.params), [], None, k.loc,
                      {**k.meta, "stack_capacities": [], "adjoint_of": k.name})
    ad = _KernelAD(k, EXACT_RULES if exact else RULES, _unreplayed(k), flushing)
    body = ad.build()
    prune(body)
    capacities = _renumber_stacks(body, ad.capacities)
    meta = {**k.meta, "stack_capacities": capacities, "adjoint_of": k.name}
    return Kernel(f"{k.name}.grad", list(k.params), body, None, k.loc, meta)


def refuse_unreplayable(kernel: Kernel) -> None:
    """Raises, at the atomic's line, where `make_adjoint` would refuse an atomic's used old
    value, without making the adjoint: a Tape asks at a kernel's first recorded launch, so the
    refusal comes before the launch changes any field, not at the backward."""
    if not _used_atomics(kernel):
        return
    k = run_pass("lower_break", lower_break, kernel)
    if writes_derivatives(k.body):
        _unreplayed(k)


def _renumber_stacks(body, capacities) -> list[CapacityFormula]:
    """Give the stacks that survived pruning the keys 0, 1, ...; returns their formulas."""
    kept = []
    for s in walk(body):
        if s.op == Op.STACK_ALLOCA:
            kept.append(capacities[s.attr.capacity_key])
            s.attr = StackInfo(s.attr.name, len(kept) - 1, s.attr.loc)
    return kept


def _replayed_code(body):
    """Every statement the adjoint replays (a func_replay region's forward code is not)."""
    for s in body:
        yield s
        blocks = [replayed_block(s)] if s.op == Op.CUSTOM_GRAD else s.blocks
        for blk in blocks:
            yield from _replayed_code(blk)


def _used_atomics(k: Kernel) -> list[Stmt]:
    """The replayed atomics whose old value some statement uses."""
    used = {id(a) for s in walk(k.body) for a in s.args}
    return [s for s in _replayed_code(k.body) if s.op == Op.ATOMIC and id(s) in used]


def _uses_atomic_result(k: Kernel) -> bool:
    return bool(_used_atomics(k))


def _unreplayed(k: Kernel) -> set[int]:
    """ids of the statements the adjoint leaves out: the used old values of atomics and what
    they reach. Refuses the kernel, at the atomic, when the adjoint needs one of them (an
    index or value of a differentiated access, a branch around one, a local it reads)."""
    roots = _used_atomics(k)
    if not roots:
        return set()
    needed = adjoint_needs(k.body)
    for s in roots:
        if id(s) in needed:  # needed is closed backwards: whatever it reaches that is needed
            raise FieldsimCompilationError(
                f"the old value returned by atomic_{s.attr[1]} is used where the adjoint needs "
                "it; it cannot be replayed in the adjoint, so this kernel cannot be "
                "differentiated (use the atomic as a statement, or compute the value in a "
                "kernel outside the Tape)", s.loc)
    return _reached_from({id(s) for s in roots}, k.body)


def _reached_from(roots: set[int], body) -> set[int]:
    """`roots` and the statements depending on them: by operand, by an enclosing block's
    statement, through a local (a store of one makes its ALLOCA, so every load, reached), or
    through a loop's exit (a reached `break` makes its loop reached: left out whole, never run
    without the exit)."""
    reached = set(roots)
    triples = list(_with_parents(body, None, None))
    changed = True
    while changed:
        changed = False
        for s, up, loop in triples:
            if id(s) in reached or not (
                    (up is not None and id(up) in reached) or any(id(a) in reached for a in s.args)):
                continue
            reached.add(id(s))
            changed = True
            if s.op == Op.LOCAL_STORE:
                reached.add(id(s.args[0]))
            elif s.op in (Op.BREAK, Op.CONTINUE) and loop is not None:
                reached.add(id(loop))
    return reached


def _with_parents(block, up, loop):
    """(statement, enclosing statement, enclosing loop) for every statement of `block`."""
    for s in block:
        yield s, up, loop
        inner = s if s.op in (Op.FOR, Op.LOOP) else loop
        for blk in s.blocks:
            yield from _with_parents(blk, s, inner)


class _KernelAD:
    """The adjoint kernel's top level: prologue copy, then the tasks' adjoints reversed."""

    def __init__(self, k: Kernel, rules=RULES, unreplayed: frozenset | set = frozenset(),
                 flushing: frozenset = frozenset()):
        self.k = k
        self.rules = rules
        self.unreplayed = unreplayed  # `_unreplayed`: left out of the replay and the sweep
        self.stopped = stopped_loads(k.body)  # LOADs under fs.stop_grad, kernel-wide
        self.guards = Guards(flushing)  # the zero-adjoint guards of non-finite slopes
        self.b = IRBuilder()
        self.capacities: list[CapacityFormula] = []
        self.prologue: dict[int, Stmt] = {}

    def build(self) -> list[Stmt]:
        out: list[Stmt] = []
        tasks = [s for s in self.k.body if is_task(s)]
        with self.b.into(out):
            for s in self.k.body:
                if not is_task(s):
                    self.copy_prologue(s)
            for k in reversed(range(len(tasks))):
                task = tasks[k]
                if task.op == Op.FOR and task.attr.listing:
                    continue  # run again before its loop's adjoint, below
                with self.b.at(task.loc):
                    if k and tasks[k - 1].op == Op.FOR and tasks[k - 1].attr.listing:
                        self.relist(tasks[k - 1])
                    self.task(task)
        return out

    def relist(self, task: Stmt):
        """A listing task (`ForInfo.listing`: the blocks a sparse struct-for visits), stores
        and all: the list the last forward launch left may be another launch's."""
        remap = dict(self.prologue)

        def copy(block):
            for s in block:
                c = self.b.clone(s, remap)
                for old, new in zip(s.blocks, c.blocks):
                    with self.b.into(new):
                        copy(old)
        copy([task])

    def copy_prologue(self, s: Stmt):
        if s.op not in PURE:
            raise FieldsimCompilationError(f"unexpected {s.op.name} outside a task", s.loc)
        self.b.clone(s, self.prologue)

    def task(self, task: Stmt):
        ad = _TaskAD(self)
        body = self.prologue_used_by(task.body) + task.body
        if task.op == Op.SERIAL:
            new = self.b.emit(Op.SERIAL, None, blocks=[[]])
            new.body.extend(ad.build(body, {}))
            return
        begin, end = (self.prologue[id(a)] for a in task.args)
        if task.attr.parallel:
            new = self.b.for_(begin, end, task.attr)
            new.body.extend(ad.build(body, {id(task): new}))
            return
        self.descending_task(task, ad, body, begin, end)

    def descending_task(self, task: Stmt, ad, body, begin, end):
        """A serialize=True FOR, run from end-1 down to begin."""
        new = self.b.for_(begin, end, ForInfo(False, True, task.attr.block_dim, reverse=True))
        new.body.extend(ad.build(body, {id(task): new}))

    def prologue_used_by(self, body) -> list[Stmt]:
        """The prologue statements a task body reads (transitively), in order: the task replays
        and differentiates them itself (a prologue LOAD may need its gradient)."""
        need = {id(a) for s in walk(body) for a in s.args if id(a) in self.prologue}
        used = []
        for s in reversed([s for s in self.k.body if id(s) in self.prologue]):
            if id(s) in need:
                used.append(s)
                need.update(id(a) for a in s.args)
        return used[::-1]


def _widens_float(s: Stmt) -> bool:
    x = s.args[0] if s.op == Op.CAST else None
    return x is not None and x.dtype.is_float and s.dtype.is_float and s.dtype.bits > x.dtype.bits


class _TaskAD:
    """Forward replay and reverse sweep of one task body."""

    def __init__(self, kad: _KernelAD):
        self.kad = kad
        self.b = IRBuilder()
        self.decls: list[Stmt] = []
        self.copy: dict[int, Stmt] = dict(kad.prologue)  # primal -> replay value
        self.direct: dict[int, Stmt] = dict(kad.prologue)  # usable anywhere in the sweep
        self.site: dict[int, tuple] = {}  # nested primal -> (replay block, replay value)
        self.loops: dict[int, tuple] = {}  # nested primal -> enclosing primal loops
        self.adj: dict[int, Stmt] = {}  # primal value or ALLOCA -> its adjoint ALLOCA
        # primal SSA value -> the sum of the contributions made in the sweep of its own block,
        # which dominate its definition's sweep there: no ALLOCA, no load/add/store per use
        self.ssa: dict[int, Stmt] = {}
        self.home: dict[int, int] = {}  # primal statement -> id of the block holding it
        # a CAST repeating an earlier one of its block (same operand, same type) -> that
        # earlier one: Taichi's pre-AD simplification merges them, so their adjoints add up in
        # the wide type and are narrowed once (f16 `-3.0 * x * x` casts x twice)
        self.twin: dict[int, Stmt] = {}
        self.sweep_out: dict[int, list] = {}  # id(primal block) -> the block its sweep emits into
        self.spills: dict[int, tuple] = {}  # primal -> ("stack" | "backup", holder)
        self.scopes: list[dict[int, Stmt]] = [{}]
        self.zeros: dict = {}
        self.active: set[int] = set()
        # Adjoint slots known to hold 0 at the current point of the sweep's top level (depth
        # 1): the first contribution is stored, not added to a loaded 0, and reading one gives
        # the constant. `fadd 0.0, x` is not x in IEEE arithmetic (x = -0.0), so LLVM keeps
        # every such add; an MPM kernel's adjoint had hundreds. Nested blocks (ifs, loops) run
        # conditionally or repeatedly: there nothing is assumed, and a slot written there is
        # dropped from the set.
        self.fresh: set[int] = set()
        self.depth = 0

    def build(self, body, index_map) -> list[Stmt]:
        self.direct.update(index_map)
        self.copy.update(index_map)
        self.active = activity(body, self.kad.stopped)
        self.note_homes(body)
        replay: list[Stmt] = []
        sweep: list[Stmt] = []
        with self.b.into(replay):
            self.replay_block(body, ())
        with self.b.into(sweep):
            self.reverse_block(body)
        return self.decls + replay + sweep

    def note_homes(self, body):
        """`home`: the block each statement of the task body sits in, nested ones included."""
        work = [body]
        while work:
            block = work.pop()
            first_cast: dict[tuple, Stmt] = {}
            for s in block:
                self.home[id(s)] = id(block)
                work.extend(s.blocks)
                if s.op == Op.CAST:
                    self.twin[id(s)] = first_cast.setdefault((id(s.args[0]), s.dtype), s)

    # ---- forward replay -----------------------------------------------------------------------
    def replay_block(self, block, where: tuple):
        for s in block:
            if s.op in _DROPPED or id(s) in self.kad.unreplayed:
                continue
            with self.b.at(s.loc):
                if s.op == Op.CUSTOM_GRAD:  # its forward (or replay) code, inline; its adjoint: in the sweep
                    self.replay_block(replayed_block(s), where)
                else:
                    self.record(s, self.replay(s, where), where)

    def replay(self, s: Stmt, where: tuple) -> Stmt:
        if s.op == Op.LOOP:
            return self.replay_loop(s, where)
        new = self.b.clone(s, self.copy)  # a FOR is its own index inside its body
        for blk, new_blk in zip(s.blocks, new.blocks):
            with self.b.into(new_blk):
                self.replay_block(blk, where + (s,))
        return new

    def replay_loop(self, s: Stmt, where: tuple) -> Stmt:
        """The LOOP, counting its iterations; returns the count (the LOOP's 'value')."""
        b = self.b
        count = b.alloca(T.i32)
        new = b.loop()
        with b.into(new.body):
            b.local_store(count, b.add(b.local_load(count), b.const(1, T.i32)))
            self.replay_block(s.body, where + (s,))
        return b.local_load(count)

    def record(self, s: Stmt, new: Stmt, where: tuple):
        self.copy[id(s)] = new
        if not where:
            self.direct[id(s)] = new
            return
        self.site[id(s)] = (self.b.block, new)
        self.loops[id(s)] = tuple(w for w in where if w.op in (Op.FOR, Op.LOOP))

    # ---- primal values in the sweep ---------------------------------------------------------------
    def primal(self, v: Stmt) -> Stmt:
        """The value of primal `v` here: direct, recomputed (pure), or read back (spilled)."""
        work = [(v, False)]
        while work:  # post-order without recursion: pure chains can be thousands long
            u, operands_ready = work.pop()
            if self.available(u) is not None:
                continue
            if u.op in PURE and not operands_ready:
                work.append((u, True))
                work.extend((a, False) for a in u.args)
                continue
            if u.op in PURE:
                args = tuple(self.available(a) for a in u.args)
                new = self.b.emit(u.op, u.dtype, args, u.attr, loc=u.loc)
            else:
                new = self.read_spill(u)
            self.scopes[-1][id(u)] = new
        return self.available(v)

    def available(self, v: Stmt) -> Stmt | None:
        for scope in reversed(self.scopes):
            if id(v) in scope:
                return scope[id(v)]
        return self.direct.get(id(v))

    @contextlib.contextmanager
    def scope(self):
        self.scopes.append({})
        try:
            yield
        finally:
            self.scopes.pop()

    def read_spill(self, v: Stmt) -> Stmt:
        kind, holder = self.spills.get(id(v)) or self.make_spill(v)
        with self.b.at(v.loc):
            if kind == "stack":
                return self.b.emit(Op.STACK_TOP, holder.dtype, (holder,))
            return self.b.local_load(holder)

    def make_spill(self, v: Stmt) -> tuple:
        block, value = self.site[id(v)]
        loops = self.loops[id(v)]
        tmp: list[Stmt] = []
        with self.b.into(self.decls), self.b.at(v.loc):
            if loops:
                key = len(self.kad.capacities)
                self.kad.capacities.append(CapacityFormula.for_site(loops))
                name = _SPILL_NAMES.get(v.op, f"a {v.op.name.lower()} value")
                if v.loc is not None:
                    name += f" (line {v.loc.line})"
                holder = self.b.emit(Op.STACK_ALLOCA, value.dtype, attr=StackInfo(name, key, v.loc))
                with self.b.into(tmp):
                    self.b.emit(Op.STACK_PUSH, None, (holder, value))
                spill = ("stack", holder)
            else:
                holder = self.b.alloca(value.dtype)
                with self.b.into(tmp):
                    self.b.local_store(holder, value)
                spill = ("backup", holder)
        at = next(n for n, x in enumerate(block) if x is value)
        block.insert(at + 1, tmp[0])
        self.spills[id(v)] = spill
        return spill

    def pop_spill(self, s: Stmt):
        spill = self.spills.get(id(s))
        if spill is not None and spill[0] == "stack":
            self.b.emit(Op.STACK_POP, None, (spill[1],))

    # ---- adjoint storage --------------------------------------------------------------------------
    def zero(self, dtype) -> Stmt:
        if dtype not in self.zeros:
            with self.b.into(self.decls):
                self.zeros[dtype] = self.b.const(0, dtype)
        return self.zeros[dtype]

    def adj_slot(self, v: Stmt) -> Stmt:
        if id(v) not in self.adj:
            with self.b.into(self.decls), self.b.at(v.loc):
                self.adj[id(v)] = self.b.alloca(v.dtype)
            if self.depth == 1:  # zero-initialised per iteration, and nothing wrote it yet
                self.fresh.add(id(self.adj[id(v)]))
        return self.adj[id(v)]

    def accumulate(self, v: Stmt, contribution: Stmt):
        if id(v) not in self.active:
            return
        v = self.twin.get(id(v), v)
        if v.op != Op.ALLOCA and self.sweep_out.get(self.home.get(id(v))) is self.b.block:
            prev = self.ssa.get(id(v))
            self.ssa[id(v)] = self.summed(prev, contribution, v.dtype)
            return
        slot = self.adj_slot(v)
        if self.depth == 1 and id(slot) in self.fresh:
            # 0 + c == c (up to the sign of a zero, which only ever reaches a field through
            # another add)
            self.b.local_store(slot, self.summed(None, contribution, v.dtype))
        else:
            self.b.local_store(slot, self.summed(self.b.local_load(slot), contribution, v.dtype))
        self.fresh.discard(id(slot))

    def summed(self, prev: Stmt | None, contribution: Stmt, dtype) -> Stmt:
        """`prev + contribution` as an adjoint of type `dtype`. A wider contribution (a widening
        cast's adjoint: f16 -> f32) is added in its own type and the sum narrowed once, as
        Taichi adds it to the narrow adjoint: f16(acc + g), not f16(acc + f16(g))."""
        if contribution.dtype == dtype:
            return contribution if prev is None else self.b.add(prev, contribution)
        if prev is not None:
            contribution = self.b.add(self.b.cast(prev, contribution.dtype), contribution)
        return self.b.cast(contribution, dtype)

    def read_slot(self, slot: Stmt) -> Stmt:
        if self.depth == 1 and id(slot) in self.fresh:
            return self.zero(slot.dtype)
        return self.b.local_load(slot)

    def reset_slot(self, slot: Stmt):
        if self.depth == 1 and id(slot) in self.fresh:
            return
        self.b.local_store(slot, self.zero(slot.dtype))
        if self.depth == 1:
            self.fresh.add(id(slot))
        else:
            self.fresh.discard(id(slot))

    def has_adjoint(self, s: Stmt) -> bool:
        return id(s) in self.adj or id(s) in self.ssa

    def consume(self, s: Stmt) -> Stmt:
        """Read the adjoint of `s` (and reset its slot when `s` may run again: in a loop)."""
        summed = self.ssa.pop(id(s), None)
        slot = self.adj.get(id(s))
        if slot is None:
            return summed
        g = self.read_slot(slot)
        if self.loops.get(id(s)):
            self.reset_slot(slot)
        return g if summed is None else self.b.add(g, summed)

    def take(self, slot: Stmt) -> Stmt:
        g = self.read_slot(slot)
        self.reset_slot(slot)
        return g

    # ---- reverse sweep ----------------------------------------------------------------------------
    def reverse_block(self, block):
        self.sweep_out[id(block)] = self.b.block
        self.depth += 1
        try:
            self._reverse_block(block)
        finally:
            self.depth -= 1

    def _reverse_block(self, block):
        for s in reversed(block):
            if id(s) in self.kad.unreplayed:
                continue
            with self.b.at(s.loc):
                handler = _REVERSE.get(s.op)
                if handler is not None:
                    handler(self, s)
                elif s.op in self.kad.rules and self.has_adjoint(s):
                    self.rev_rule(s)
                self.pop_spill(s)

    def rev_rule(self, s: Stmt):
        g = self.consume(s)
        if _widens_float(s):
            self.accumulate(s.args[0], g)
            return
        guard, is_zero = self.kad.guards.guarded(s), None
        for i, contribution in self.kad.rules[s.op].vjp(self.b, s, g, self.primal):
            if i < len(guard) and guard[i] and id(s.args[i]) in self.active:
                # 0 * inf is NaN: a zero adjoint contributes 0 (ad.zero_adjoint)
                if is_zero is None:
                    is_zero = self.b.binary(Op.EQ, g, self.zero(g.dtype))
                zero = self.zero(contribution.dtype)
                contribution = self.b.select(is_zero, zero, contribution)
            self.accumulate(s.args[i], contribution)

    def rev_local_load(self, s: Stmt):
        if self.has_adjoint(s):
            self.accumulate(s.args[0], self.consume(s))

    def rev_local_store(self, s: Stmt):
        var = s.args[0]
        if id(var) in self.active:
            self.accumulate(s.value, self.take(self.adj_slot(var)))

    def rev_alloca(self, s: Stmt):
        if id(s) in self.adj:
            self.reset_slot(self.adj[id(s)])

    def indices(self, s: Stmt) -> list[Stmt]:
        return [self.primal(i) for i in s.indices]

    def rev_load(self, s: Stmt):
        if self.has_adjoint(s):
            g = self.consume(s)
            self.b.atomic("add", s.field.adjoint, self.indices(s), g)

    def rev_store(self, s: Stmt):
        grad = s.field.adjoint
        if grad is None or not grad.dtype.is_float:
            return
        idx = self.indices(s)
        g = self.b.load(grad, idx)
        self.b.store(grad, idx, self.zero(grad.dtype))
        self.accumulate(s.value, g)

    def rev_atomic(self, s: Stmt):
        field, kind = s.attr
        if field.adjoint is None:
            return
        if kind in ("max", "min"):
            # even a value that carries no derivative takes the gradient from the old value
            # where it wins (`atomic_max(x[i], 0.3)` over x[i] = 0.1: d/dx[i] = 0)
            self.rev_atomic_extremum(s)
        elif kind in ("add", "sub") and id(s.value) in self.active:
            g = self.b.load(field.adjoint, self.indices(s))
            self.accumulate(s.value, g if kind == "add" else self.b.neg(g))

    def rev_atomic_extremum(self, s: Stmt):
        """Winner-only: the value that equals the element's final value takes the element's
        gradient, leaving 0 (the old value lost). An atomic exchange, so that of equal
        winners exactly one takes it; with no winner the gradient stays with the old value."""
        idx = self.indices(s)
        won = self.b.if_(self.b.binary(Op.EQ, self.primal(s.value), self.b.load(s.field, idx)))
        with self.b.into(won.blocks[0]):
            grad = s.field.adjoint
            self.accumulate(s.value, self.b.atomic("xchg", grad, idx, self.zero(grad.dtype)))

    def rev_if(self, s: Stmt):
        new = self.b.if_(self.primal(s.args[0]))
        for k, (blk, new_blk) in enumerate(zip(s.blocks, new.blocks)):
            # what `m > 0` proves holds where its block's sweep runs
            with self.b.into(new_blk), self.scope(), self.kad.guards.branch(s.args[0], k == 0):
                self.reverse_block(blk)

    def rev_for(self, s: Stmt):
        b = self.b
        begin, end = self.primal(s.args[0]), self.primal(s.args[1])
        last = b.sub(b.add(begin, end), b.const(1, begin.dtype))
        new = b.for_(begin, end, ForInfo(False))
        with b.into(new.body), self.scope():
            self.scopes[-1][id(s)] = b.sub(last, new)
            self.reverse_block(s.body)

    def rev_custom_grad(self, s: Stmt):
        """The user's adjoint block, with CUSTOM_ADJ_IN k = the adjoint of output k; its
        CUSTOM_ADJ_OUT values are accumulated into the region's inputs. Without a user adjoint
        (a func_replay alone): the reverse of the replayed code."""
        if not has_user_adjoint(s):
            self.reverse_block(replayed_block(s))
            return
        adj_in = [self.take(self.adj_slot(o)) if id(o) in self.active else self.zero(o.dtype)
                  for o in s.attr.outputs]
        grads = self.transplant(s.blocks[1], adj_in, {})
        for x, g in zip(s.args, grads or ()):
            self.accumulate(x, g)

    def transplant(self, block, adj_in, m: dict):
        """Copy user adjoint code here; returns the mapped CUSTOM_ADJ_OUT operands."""
        out = None
        for s in block:
            if s.op == Op.CUSTOM_ADJ_IN:
                m[id(s)] = adj_in[s.attr]
            elif s.op == Op.CUSTOM_ADJ_OUT:
                out = tuple(m[id(a)] if id(a) in m else self.primal(a) for a in s.args)
            else:
                new = self.b.clone(s, m, operand=self.primal)
                for blk, new_blk in zip(s.blocks, new.blocks):
                    with self.b.into(new_blk), self.scope():
                        out = self.transplant(blk, adj_in, m) or out
        return out

    def rev_loop(self, s: Stmt):
        count = self.primal(s)
        new = self.b.for_(self.zero(count.dtype), count, ForInfo(False))
        with self.b.into(new.body), self.scope():
            self.reverse_block(s.body)


_REVERSE = {
    Op.LOCAL_LOAD: _TaskAD.rev_local_load,
    Op.LOCAL_STORE: _TaskAD.rev_local_store,
    Op.ALLOCA: _TaskAD.rev_alloca,
    Op.LOAD: _TaskAD.rev_load,
    Op.STORE: _TaskAD.rev_store,
    Op.ATOMIC: _TaskAD.rev_atomic,
    Op.IF: _TaskAD.rev_if,
    Op.FOR: _TaskAD.rev_for,
    Op.LOOP: _TaskAD.rev_loop,
    Op.CUSTOM_GRAD: _TaskAD.rev_custom_grad,
}
