"""Per-thread AD stack sizing: `CapacityFormula`s, evaluated at launch.

Reverse AD (`fieldsim.ad.reverse`) keeps a value defined inside an inner loop on a per-thread
stack of its own (`STACK_ALLOCA` with `StackInfo.capacity_key` = its index in the adjoint
kernel's `meta["stack_capacities"]`, a list of `CapacityFormula`).

A formula bounds the number of pushes one thread makes to that stack before it is popped
empty: a sum over push sites of the product of the trip counts of the inner loops enclosing
the site. A trip count is known at launch when the loop's bounds are expressions of CONST and
ARG statements only (`lang.intexpr`: `max(0, end - begin)`); otherwise (a `while` loop, bounds read from a
field or depending on the parallel loop index) it is the `default` passed to `evaluate`: the
user's `ad_stack_size`. Analysis only; nothing here touches IR.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from fieldsim.errors import Loc
from fieldsim.ir.intexpr import evaluate, launch_expr
from fieldsim.ir.ir import Op, Stmt


@dataclass(frozen=True)
class TripCount:
    """How many times one loop runs its body: known from `begin`/`end`, or unknown (None)."""

    begin: tuple | None
    end: tuple | None
    loc: Loc | None = None

    @staticmethod
    def of_loop(loop: Stmt) -> TripCount:
        if loop.op != Op.FOR:
            return TripCount(None, None, loop.loc)
        return TripCount(launch_expr(loop.args[0]), launch_expr(loop.args[1]), loop.loc)

    @property
    def known(self) -> bool:
        return self.begin is not None and self.end is not None

    def evaluate(self, args: list, default: int) -> int:
        if not self.known:
            return int(default)
        return max(0, evaluate(self.end, args) - evaluate(self.begin, args))


@dataclass(frozen=True)
class CapacityFormula:
    """Sum over push sites of the product of enclosing loops' trip counts (outermost first)."""

    terms: tuple[tuple[TripCount, ...], ...]

    def evaluate(self, arg_values: list, default: int) -> int:
        return sum(math.prod(t.evaluate(arg_values, default) for t in term) for term in self.terms)

    @property
    def loc(self) -> Loc | None:
        """The loop to blame for an overflow: the innermost one with an unknown trip count,
        else the innermost loop."""
        loops = [t for term in self.terms for t in term]
        unknown = [t for t in loops if not t.known]
        pick = (unknown or loops or [None])[-1]
        return pick.loc if pick is not None else None

    @staticmethod
    def for_site(loops) -> CapacityFormula:
        """The formula of one push site nested in the primal loops `loops` (outermost first)."""
        return CapacityFormula((tuple(TripCount.of_loop(lp) for lp in loops),))
