"""What is known about one compiled kernel, computed once and kept on it (`ck.analyses`).

Takes a `CompiledKernel` (its offloaded IR). `analyses_of(ck)` gives its `KernelAnalyses`:
`field_sets` (the fields it reads and writes, by id: the Tape's cut-chain warning, checkpoint
and the torch bridge's snapshots) and `check` (the access rules' `KernelCheck`: effect table and
symbolic findings, which the Tape and `kernel.grad` judge launches with). Each is made on first
use; nothing here changes the IR.
"""
from __future__ import annotations

from fieldsim.checks.access_rules import KernelCheck
from fieldsim.ir.ir import GLOBAL_WRITE, Op, walk


class KernelAnalyses:
    def __init__(self, ir):
        self.ir = ir
        self._check: KernelCheck | None = None
        self._field_sets: tuple[dict, dict] | None = None

    @property
    def check(self) -> KernelCheck:
        if self._check is None:
            self._check = KernelCheck(self.ir)
        return self._check

    @property
    def field_sets(self) -> tuple[dict, dict]:
        """(reads, writes): field id -> field."""
        if self._field_sets is None:
            reads, writes = {}, {}
            for s in walk(self.ir.body):
                if s.op == Op.LOAD:
                    reads[id(s.field)] = s.field
                elif s.op in GLOBAL_WRITE:
                    writes[id(s.field)] = s.field
            self._field_sets = (reads, writes)
        return self._field_sets


def analyses_of(ck) -> KernelAnalyses:
    if ck.analyses is None:
        ck.analyses = KernelAnalyses(ck.ir)
    return ck.analyses
