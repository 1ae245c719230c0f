"""Adaptive splitting: whether a launch big enough to split across the pool's threads runs
faster split or on the launching thread alone, learned per task from the launches' wall times.

Why: a split launch waits at its end for the helper threads' chunks. On a machine whose cores
are busy with other processes the OS runs a woken helper (and, after it, the waiting launcher)
late, so a time-stepped simulation that launches thousands of split kernels spends much of its
wall time waiting: diffmpm at 6400 particles, 2 cores at load 4-5, took about twice its CPU
time in wall time. On an idle machine splitting wins. Neither can be known in advance.

Takes: per launch, the thread count the size rules chose (codegen.cpu). Gives: the thread
count to use. Guarantees: a task's first WARMUP launches keep the size rules' choice (so a
test that launches a few times still runs split); after that, the mode with the lower average
wall time per iteration (an exponential moving average), re-measuring the other mode once
every PROBE launches so a change of load is noticed. The choice changes only which thread
runs which iterations, never what a launch computes, except the order in which scatter and
atomic float additions happen (which threads already leave unspecified).
"""
from __future__ import annotations

WARMUP = 8  # launches that keep the size rules' choice
PROBE = 16  # every PROBE launches each mode is measured once more
WEIGHT = 0.25  # of a new measurement in the moving average


class SplitStats:
    """One task's launch history: launches so far, and seconds per iteration split / alone."""

    __slots__ = ("alone", "launches", "split")

    def __init__(self):
        self.launches = 0
        self.split: float | None = None
        self.alone: float | None = None

    def choose(self, workers: int) -> int:
        """The thread count for the next launch (the size rules chose `workers` > 1)."""
        self.launches += 1
        n = self.launches
        if n <= WARMUP:
            return workers
        if self.alone is None or n % PROBE == 0:
            return 1
        if self.split is None or n % PROBE == PROBE // 2:
            return workers
        return 1 if self.alone < self.split else workers

    def record(self, workers: int, seconds_per_iteration: float):
        x = seconds_per_iteration
        if workers > 1:
            self.split = x if self.split is None else self.split + WEIGHT * (x - self.split)
        else:
            self.alone = x if self.alone is None else self.alone + WEIGHT * (x - self.alone)
