"""offload: a func loop bounded by a kernel variable reads it after its store (same cause as test_offload.py).

A loop at the top of an inlined func runs inside a SERIAL block; hoisting the LOAD of its
bound into the prologue made the block read it before its own earlier store, so the loop ran
to the previous launch's value (0 at the first launch).
"""
import numpy as np

import fieldsim as fs
from fieldsim.ir.ir import ForInfo, Op


def test_func_loop_bound_from_kernel_variable(arch):
    fs.init(arch=arch)
    b = fs.field(fs.i32, 64)

    @fs.func
    def mark(n):
        for i in range(n):
            b[i] += 1

    @fs.kernel
    def run(n: fs.i32):
        e = n
        mark(e)

    for n in (10, 20, 5):
        b.fill(0)
        run(n)
        want = np.zeros(64, np.int32)
        want[:n] = 1
        np.testing.assert_array_equal(b.to_numpy(), want)


def test_serial_loop_bound_load_stays_after_its_store():
    """IR level: `store e; n = load e; for range(n)` (a serial loop) keeps the LOAD in the
    SERIAL block, after the store; a parallel loop's bound LOAD goes to the prologue."""
    from support.ir_kit import KB, field

    from fieldsim.ir.passes.offload import offload
    from fieldsim.lang import types as T

    e, b = field("e", shape=(), dtype=T.i32), field("b", shape=(8,), dtype=T.i32)
    kb = KB()
    with kb.into(kb.body):
        kb.store(e, [], kb.arg())
        n = kb.load(e, [])
        loop = kb.for_(kb.i(0), n)  # a plain (serial) loop at top level
    with kb.into(loop.body):
        kb.store(b, [loop], kb.i(1))
    with kb.into(kb.body):
        m = kb.load(e, [])
    with kb.task_for(kb.i(0), m, ForInfo(True)) as par:
        kb.store(b, [par], kb.i(2))
    k = offload(kb.kernel())
    top = [s.op for s in k.body]
    assert top.count(Op.SERIAL) == 1 and top.count(Op.LOAD) == 1, top
    serial = next(s for s in k.body if s.op == Op.SERIAL)
    assert [s.op for s in serial.body] == [Op.STORE, Op.LOAD, Op.FOR]
