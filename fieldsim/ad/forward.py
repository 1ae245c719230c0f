"""Forward-mode AD pass: a kernel to its fused primal + tangent (JVP) kernel.

Takes an offloaded `Kernel`; returns a new one that does everything the primal does and, beside
each float value, computes its tangent with the `jvp` half of `ad.rules.RULES` (one table, two
directions). Fields carry tangents in their `.dual` twins: a LOAD's tangent is a LOAD of the dual;
a STORE also stores the tangent into the dual (overwriting it, where Taichi accumulates); an atomic
add/sub also adds the tangent; an atomic max/min's tangent follows the winning value. The old
value an atomic returns has the dual's old value as its tangent (Taichi 1.7.4 gives it none). Locals get
tangent locals. Integer values and non-differentiable ops have zero tangent. Control flow, RNG
draws and task structure are copied unchanged, so the primal results are bit-identical.

Only values active with respect to the fields whose duals may be nonzero (`seeded`, given by the
FwdMode block; every float field by default) get tangents: a value that does not depend on one
has a zero tangent, and a rule evaluated for it anyway would turn it into NaN where the value's
own derivative is singular (`v.norm()` of a zero `v`: dot(v, dv) / 0). `dual_writes` says which
fields' duals a kernel may then make nonzero.

A tangent of exactly 0 through a slope that may be inf or NaN at finite operands (sqrt or log at
0, a division by 0, `v * (1 / |v|)`...) contributes exactly 0, where IEEE's 0 * inf gives NaN:
the direction does not move that operand. The same `ad.zero_adjoint.Guards` as reverse mode's
decide where (`loss = x0**2 + sqrt(x1 - 1)` at (1, 1) along e0: 2, not NaN); a provably finite
slope gets no guard, and a nonzero tangent through an infinite slope stays IEEE (inf).
"""
from __future__ import annotations

from fieldsim.ad.real_calls import refuse_real_calls
from fieldsim.ad.rules import RULES
from fieldsim.ad.zero_adjoint import Guards
from fieldsim.ir.activity import activity, stopped_loads
from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import Kernel, Op, Stmt, walk


def make_tangent(kernel: Kernel, seeded=None, flushing: frozenset = frozenset()) -> Kernel:
    """`seeded(field)`: whether `field`'s dual may be nonzero when the kernel runs. `flushing`:
    the float widths whose subnormals the target flushes (`ir.subnormals.flushing_widths`)."""
    refuse_real_calls(kernel, "forward")
    t = _Tangent(flushing)
    t.stopped = stopped_loads(kernel.body)
    t.active = activity(kernel.body, t.stopped, _seeded(seeded), old_values=True)
    body = t.block(kernel.body)
    return Kernel(kernel.name + ".jvp", kernel.params, body, kernel.ret, kernel.loc, dict(kernel.meta))


def dual_writes(kernel: Kernel, seeded=None) -> set:
    """The primal fields whose duals the tangent kernel may leave nonzero: those it stores or
    atomically updates an active value into, and those whose dual the kernel's code writes."""
    active = activity(kernel.body, None, _seeded(seeded), old_values=True)
    out = set()
    for s in walk(kernel.body):
        if s.op not in (Op.STORE, Op.ATOMIC):
            continue
        field = s.field
        if field.role == "dual":
            out.add(field.primal)
        elif id(s.args[-1]) in active:
            out.add(field)
    return out


def _seeded(seeded):
    return (lambda f: True) if seeded is None else seeded


class _Tangent:
    def __init__(self, flushing: frozenset = frozenset()):
        self.new: dict[int, Stmt] = {}  # primal stmt -> its copy
        self.tan: dict[int, Stmt | None] = {}  # primal stmt -> tangent of its copy
        self.stopped: set[int] = set()  # LOADs under fs.stop_grad
        self.active: set[int] = set()  # ir.activity: the values that get a tangent
        self.guards = Guards(flushing)  # the zero-tangent guards of non-finite slopes

    def block(self, stmts) -> list[Stmt]:
        out: list[Stmt] = []
        b = IRBuilder(out)
        for s in stmts:
            with b.at(s.loc):
                self.stmt(b, s)
        return out

    def arg(self, a: Stmt) -> Stmt:
        return self.new[id(a)]

    def tangent(self, a: Stmt):
        return self.tan.get(id(a))

    def copy(self, b: IRBuilder, s: Stmt) -> Stmt:
        return b.clone(s, self.new, operand=self.arg)

    def stmt(self, b: IRBuilder, s: Stmt):
        handler = getattr(self, "op_" + s.op.name.lower(), None)
        if handler is not None:
            handler(b, s)
            return
        c = self.copy(b, s)
        if s.dtype is None or not s.dtype.is_float or s.op not in RULES:
            return
        tangents = [self.tangent(a) for a in s.args]
        if all(tv is None for tv in tangents):
            return
        self.tan[id(s)] = self._jvp(b, s, c, tangents)

    def _jvp(self, b, s, c, tangents):
        # the rule reads primal values from its statement: give it the copy, whose operands are copies
        guard = self.guards.guarded(s)
        if any(guard):
            return RULES[s.op].jvp(b, c, tangents, guard)
        return RULES[s.op].jvp(b, c, tangents)

    # ---- structure ----------------------------------------------------------------------------
    def _nested(self, b, s):
        c = self.copy(b, s)
        for blk, new_blk in zip(s.blocks, c.blocks):
            new_blk.extend(self.block(blk))
        return c

    op_for = op_loop = op_serial = _nested

    def op_if(self, b, s):
        c = self.copy(b, s)
        for k, (blk, new_blk) in enumerate(zip(s.blocks, c.blocks)):
            with self.guards.branch(s.args[0], taken=k == 0):  # what `m > 0` proves inside
                new_blk.extend(self.block(blk))

    def op_custom_grad(self, b, s):
        # forward mode differentiates the func's own code; the user adjoint is reverse-only
        for inner in s.blocks[0]:
            with b.at(inner.loc):
                self.stmt(b, inner)

    # ---- locals -------------------------------------------------------------------------------
    def op_alloca(self, b, s):
        self.copy(b, s)
        if id(s) in self.active:
            self.tan[id(s)] = b.alloca(s.dtype)

    def op_local_load(self, b, s):
        self.copy(b, s)
        tvar = self.tangent(s.args[0])
        if tvar is not None:
            self.tan[id(s)] = b.local_load(tvar)

    def op_local_store(self, b, s):
        self.copy(b, s)
        tvar = self.tangent(s.args[0])
        if tvar is not None:
            b.local_store(tvar, self._tan_or_zero(b, s.value))

    def _tan_or_zero(self, b, v: Stmt) -> Stmt:
        tv = self.tangent(v)
        return tv if tv is not None else b.const(0, v.dtype)

    # ---- global memory --------------------------------------------------------------------------
    def op_load(self, b, s):
        c = self.copy(b, s)
        dual = _dual(s.field)  # attached even where inactive: a program may read it after
        if dual is not None and id(s) in self.active:  # (under fs.stop_grad: inactive)
            self.tan[id(s)] = b.load(dual, c.args)

    def op_store(self, b, s):
        c = self.copy(b, s)
        dual = _dual(s.field)
        if dual is not None:
            b.store(dual, c.args[:-1], self._tan_or_zero(b, s.value))

    def op_atomic(self, b, s):
        c = self.copy(b, s)
        field, kind = s.attr
        dual = _dual(field)
        if dual is None:
            return
        idx = c.args[:-1]
        tv = self._tan_or_zero(b, s.value)
        if kind in ("add", "sub"):
            old = b.atomic(kind, dual, idx, tv)
        elif kind in ("max", "min"):
            # the old value is the element before this update: its tangent is the dual before
            old = b.load(dual, idx)
            # the element now holds the winner; where this value won, its tangent is the dual
            won = b.binary(Op.EQ, b.load(field, idx), c.args[-1])
            iff = b.if_(won)
            with b.into(iff.blocks[0]):
                b.store(dual, idx, tv)
        else:
            return
        if id(s) in self.active:
            self.tan[id(s)] = old


def _dual(field):
    if not field.dtype.is_float:
        return None
    if field.tangent is None and field.role in ("primal", "hidden"):
        field._attach("dual")
    return field.tangent
