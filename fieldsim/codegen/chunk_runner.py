"""Native chunk scheduling for parallel CPU launches: a mailbox, spinning helpers, a spin-wait.

Takes: a compiled task function's address (`void(ptr ctx, i64 chunk, i64 chunks)`), its
context pointer and the chunk count of one launch. `Mailbox.launch` publishes the launch as a
numbered job, takes chunks itself (an atomic compare-and-swap on a word holding the job number
and the next chunk) and spins (x86 `pause`) until every chunk taken by any thread has finished.
`Mailbox.worker(budget)` is a pool thread's job: it takes the chunks of each job it sees
published and, between jobs, polls for the next one for `budget` polls before returning.

Why: the Python chunk loop (codegen.cpu) re-acquired the GIL between chunks, the pool thread
slept until woken by a futex (50-140 us later on the benchmark VM) and the launching thread
slept on a future until the pool thread handed it back. mpm88's grid_to_particle (8 chunks of
20-25 us) ran no faster on 2 threads than on one. A helper that keeps polling for a while
takes a chunk within microseconds of the launch, as OpenMP runtimes' spinning workers do.

Guarantees: every chunk in [0, chunks) of a launch runs exactly once, on the caller or on a
helper, and `launch` returns only after all of them finished (their stores visible: seq_cst
on the counters). A chunk is claimed only with its job's number, so a helper that read a stale
job never runs a chunk with another job's function or context; a helper is never needed for
progress (the caller takes whatever is left). One launch at a time per mailbox: `busy` is a
non-blocking lock the caller must hold around `launch`.
"""
from __future__ import annotations

import ctypes
import threading

# mailbox words (i64): 0 job number, 1 (job << 32 | next chunk), 2 chunks finished,
# 3 function address, 4 context, 5 chunk count
# pointers to the mailbox words both fs_take and fs_launch use
_WORDS = """  %pnext = getelementptr i64, ptr %mb, i64 1
  %pfin = getelementptr i64, ptr %mb, i64 2
  %pfn = getelementptr i64, ptr %mb, i64 3
  %pctx = getelementptr i64, ptr %mb, i64 4
  %pch = getelementptr i64, ptr %mb, i64 5
"""

_IR = """
define void @fs_take(ptr %mb, i64 %s) {
entry:
WORDS
  %fna = load atomic i64, ptr %pfn seq_cst, align 8
  %ctxa = load atomic i64, ptr %pctx seq_cst, align 8
  %ch = load atomic i64, ptr %pch seq_cst, align 8
  %fn = inttoptr i64 %fna to ptr
  %ctx = inttoptr i64 %ctxa to ptr
  %tag = shl i64 %s, 32
  br label %loop
loop:
  %cur = load atomic i64, ptr %pnext seq_cst, align 8
  %curtag = and i64 %cur, -4294967296
  %idx = and i64 %cur, 4294967295
  %same = icmp eq i64 %curtag, %tag
  %left = icmp slt i64 %idx, %ch
  %ok = and i1 %same, %left
  br i1 %ok, label %claim, label %exit
claim:
  %nxt = add i64 %cur, 1
  %pair = cmpxchg ptr %pnext, i64 %cur, i64 %nxt seq_cst seq_cst
  %won = extractvalue { i64, i1 } %pair, 1
  br i1 %won, label %body, label %loop
body:
  call void %fn(ptr %ctx, i64 %idx, i64 %ch)
  %old = atomicrmw add ptr %pfin, i64 1 seq_cst
  br label %loop
exit:
  ret void
}

define void @fs_launch(ptr %mb, i64 %fna, i64 %ctxa, i64 %chunks) {
entry:
WORDS
  %s0 = load atomic i64, ptr %mb seq_cst, align 8
  %s = add i64 %s0, 1
  ; close the finished job first: a helper that saw job s0 late may load this job's words
  ; below, but then (seq_cst) it also sees the closed index and takes no chunk with them
  %tag0 = shl i64 %s0, 32
  %closed = or i64 %tag0, 4294967295
  store atomic i64 %closed, ptr %pnext seq_cst, align 8
  store atomic i64 %fna, ptr %pfn seq_cst, align 8
  store atomic i64 %ctxa, ptr %pctx seq_cst, align 8
  store atomic i64 %chunks, ptr %pch seq_cst, align 8
  store atomic i64 0, ptr %pfin seq_cst, align 8
  %tag = shl i64 %s, 32
  store atomic i64 %tag, ptr %pnext seq_cst, align 8
  store atomic i64 %s, ptr %mb seq_cst, align 8
  call void @fs_take(ptr %mb, i64 %s)
  br label %spin
spin:
  %k = phi i64 [ 0, %entry ], [ %k1, %wait ], [ 0, %yield ]
  %n = load atomic i64, ptr %pfin seq_cst, align 8
  %done = icmp sge i64 %n, %chunks
  br i1 %done, label %exit, label %wait
wait:
  PAUSE
  %k1 = add i64 %k, 1
  %long = icmp sge i64 %k1, SPINS
  br i1 %long, label %yield, label %spin
yield:
  YIELD
  br label %spin
exit:
  ret void
}

define void @fs_worker(ptr %mb, i64 %budget) {
entry:
  br label %poll
poll:
  %seen = phi i64 [ -1, %entry ], [ %s, %run ], [ %seen, %wait ], [ %seen, %yield ]
  %n = phi i64 [ 0, %entry ], [ 0, %run ], [ %n1, %wait ], [ %n1, %yield ]
  %s = load atomic i64, ptr %mb seq_cst, align 8
  %new = icmp ne i64 %s, %seen
  br i1 %new, label %run, label %idle
run:
  call void @fs_take(ptr %mb, i64 %s)
  br label %poll
idle:
  %n1 = add i64 %n, 1
  %expired = icmp sge i64 %n1, %budget
  br i1 %expired, label %exit, label %wait
wait:
  PAUSE
  %r = and i64 %n1, MASK
  %turn = icmp eq i64 %r, 0
  br i1 %turn, label %yield, label %poll
yield:
  YIELD
  br label %poll
exit:
  ret void
}
"""

_LAUNCH = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64)
_WORKER = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64)
SYMBOLS = ("fs_launch", "fs_worker")


# Spins (of a few tens of ns) between yields of the processor. On a machine with more runnable
# threads than cores a helper holding a chunk may be descheduled: a caller that only spun kept
# its core until the scheduler's tick, and a 2-thread cloth step ran at half the speed of one
# thread at load 5-8 on 2 cores; a spinning idle helper likewise held a core the caller's
# Python between launches needed. sched_yield hands the core over, and returns at once when
# nothing else waits for it.
SPINS_BEFORE_YIELD = 1024


def ir_text(triple: str) -> str:
    """The module defining SYMBOLS, for a target triple (x86 gets `pause` in its spins; POSIX
    systems yield the processor every SPINS_BEFORE_YIELD spins)."""
    x86 = triple.startswith(("x86_64", "i686", "i386"))
    posix = "windows" not in triple and "win32" not in triple
    text = _IR.replace("WORDS\n", _WORDS).replace("PAUSE", "call void @llvm.x86.sse2.pause()" if x86 else "")
    text = text.replace("YIELD", "%y = call i32 @sched_yield()" if posix else "")
    text = text.replace("SPINS", str(SPINS_BEFORE_YIELD)).replace("MASK", str(SPINS_BEFORE_YIELD - 1))
    return (text + ("declare void @llvm.x86.sse2.pause()\n" if x86 else "")
            + ("declare i32 @sched_yield()\n" if posix else ""))


class Mailbox:
    """One CPU backend's job mailbox. `code` holds SYMBOLS' machine code (codegen.jit_memory
    `Code`: it keeps the engine alive); the backend must join its pool before freeing it."""

    def __init__(self, code):
        self.code = code
        self._launch, self._worker = _LAUNCH(code.addresses[0]), _WORKER(code.addresses[1])
        self.words = (ctypes.c_int64 * 6)()  # lives while a helper job refers to `self`
        self.busy = threading.Lock()  # held by the one thread launching through this mailbox
        self._alive = 0  # helper jobs submitted and not yet returned
        self._count = threading.Lock()

    def launch(self, fn_addr: int, ctx_ptr: int, chunks: int, pool, helpers: int, budget: int):
        with self._count:
            wake = max(0, helpers - self._alive)
            self._alive += wake
        for _ in range(wake):
            pool.submit(self._work, budget)
        self._launch(ctypes.addressof(self.words), fn_addr, ctx_ptr, chunks)

    def _work(self, budget):
        try:
            self._worker(ctypes.addressof(self.words), budget)
        finally:
            with self._count:
                self._alive -= 1
