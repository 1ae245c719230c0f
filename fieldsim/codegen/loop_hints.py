"""Loop hints: `!llvm.loop` metadata saying which of the loops we emit LLVM should vectorize.

Takes the back-edge branch of a loop the lowering emitted and what the loop is. Attaches a
distinct, self-referencing loop id (LLVM's format) carrying:

* `SCALAR`: `llvm.loop.vectorize.enable false` (no vectorizing, no interleaving) and
  `llvm.loop.unroll.disable`. For loops whose vector or unrolled form does not pay for its
  compile time: the row loop of a nest, the flush of a nest's column accumulators (one
  conditional atomic per element), and parallel loops whose body reads or writes fields at
  data-dependent elements (particle-to-grid gathers: LLVM vectorizes diffmpm's g2p with
  16-lane gathers, which runs no faster than the scalar loop and costs 45 ms of compile time),
  and parallel loops that store to a field under an `if` (masked stores: mpm88's update_grid
  ran 36 us vectorized, 23 us scalar), and inner loops that read a field under an `if` the
  lowering does not if-convert (`loopnest.conditional_loads`: masked reads of a vector field
  are gathers; an all-pairs SPH force loop ran 6x slower vectorized than scalar).
* `LANES`: `llvm.loop.interleave.count 1`: vectorized as LLVM's cost model decides, one
  group of lanes per iteration. For bodies with a division, square root or transcendental
  (loopnest.long_latency), where interleaving only adds code.
* `CELLS`: `llvm.loop.unroll.disable`: the innermost loop over a block's cells in a blocked
  struct-for (`ForInfo.blocks`). Unrolled whole first (16 cells), its row loop vectorized into
  16-lane gathers down the block's columns: 14x slower than one vector load per row.
* `VECTOR`: nothing (LLVM's cost model decides, as before).

Guarantees: hints change the speed of the code only, never its results; the IR text (which
keys the compile cache) depends only on the loops' kinds and order.
"""
from __future__ import annotations

from llvmlite import ir as L
from llvmlite.ir.values import MDValue

SCALAR, LANES, VECTOR, CELLS = "scalar", "lanes", "vector", "cells"


class _LoopID(MDValue):
    """`distinct !{!self, hints...}`: LLVM recognises a loop id only by its self-reference."""

    def descr(self, buf):
        ops = [self.get_reference()] + [op.get_reference() for op in self.operands]
        buf += ("distinct !{ " + ", ".join(ops) + " }", "\n")


class LoopHints:
    """Makes the metadata of one module (the hint nodes are shared by its loops)."""

    def __init__(self, module: L.Module):
        self.module = module
        self._hints = {}  # kind -> its metadata nodes, made at first use

    def mark(self, backedge, kind: str):
        """Attach `kind`'s hints to a loop's back-edge branch (VECTOR: none)."""
        if kind == VECTOR:
            return backedge
        m = self.module
        if kind not in self._hints:
            self._hints[kind] = [
                m.add_metadata([L.MetaDataString(m, "llvm.loop.vectorize.enable"),
                                L.Constant(L.IntType(1), 0)]),
                m.add_metadata([L.MetaDataString(m, "llvm.loop.unroll.disable")]),
            ] if kind == SCALAR else [
                m.add_metadata([L.MetaDataString(m, "llvm.loop.unroll.disable")]),
            ] if kind == CELLS else [
                m.add_metadata([L.MetaDataString(m, "llvm.loop.interleave.count"),
                                L.Constant(L.IntType(32), 1)]),
            ]
        loop_id = _LoopID(m, self._hints[kind], name=str(len(m.metadata)))
        backedge.set_metadata("llvm.loop", loop_id)
        return backedge
