"""lower_break: same results as the input, the promised form, idempotent, input untouched.

Semantics are compared in the reference interpreter, on hand-written cases and on random
structured programs (hypothesis) mixing IF, FOR, LOOP, BREAK, CONTINUE and RAND.
"""
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.ir_kit import KB, RandomBlocks, accumulator_kernel, assert_same_outputs, field

from fieldsim.errors import FieldsimCompilationError
from fieldsim.ir.ir import Op, walk
from fieldsim.ir.passes.lower_break import lower_break
from fieldsim.ir.printer import print_kernel
from fieldsim.ir.verify import verify
from fieldsim.lang import types as T


def check_form(block, in_loop_body=None):
    """No BREAK/CONTINUE except a LOOP body's final `IF(f) {BREAK} else {}`."""
    for n, s in enumerate(block):
        assert s.op not in (Op.BREAK, Op.CONTINUE), f"stray {s.op.name}"
        final = in_loop_body is not None and n == len(block) - 1 and s.op == Op.IF
        if final and [x.op for x in s.blocks[0]] == [Op.BREAK] and not s.blocks[1]:
            continue
        for blk in s.blocks:
            check_form(blk, s if s.op == Op.LOOP else None)


def same_results(k, outs, args=()):
    low = verify(lower_break(k))
    check_form(low.body)
    assert_same_outputs(k, low, outs, args)
    assert print_kernel(lower_break(low)) == print_kernel(low), "not idempotent"
    return low


def update(b, acc, c):
    """acc = (acc * 31 + c) % 1000003: order-sensitive."""
    v = b.add(b.mul(b.ld(acc), b.i(31)), c if not isinstance(c, int) else b.i(c))
    b.local_store(acc, b.binary(Op.MOD, v, b.i(1000003)))


def test_break_and_continue_in_an_inner_for():
    b = KB()
    y = field("y", dtype=T.i32, grad=False)
    with b.parallel(4) as i:
        acc = b.alloca(T.i32)
        b.local_store(acc, i)
        with b.loop_for(0, 9) as k:
            with b.if_then(b.binary(Op.EQ, b.binary(Op.MOD, k, b.i(3)), b.i(1))):
                b.emit(Op.CONTINUE)
            update(b, acc, k)
            with b.if_then(b.binary(Op.GT, b.binary(Op.MOD, b.ld(acc), b.i(7)), b.i(4))):
                update(b, acc, 5)
                b.emit(Op.BREAK)
            update(b, acc, 2)
        b.store(y, [i], b.ld(acc))
    low = same_results(b.kernel(), [y])
    inner = next(s for s in walk(low.body) if s.op == Op.FOR and not s.attr.parallel)
    assert [s.op for s in inner.body] == [Op.LOCAL_LOAD, Op.NOT, Op.IF]  # the break guard


def test_while_loop_in_frontend_form_with_continue():
    b = KB()
    y = field("y", dtype=T.i32, grad=False)
    with b.parallel(3) as i:
        acc, j = b.alloca(T.i32), b.alloca(T.i32)
        b.local_store(acc, i)
        lp = b.loop()
        with b.into(lp.body):
            with b.if_then(b.unary(Op.NOT, b.binary(Op.LT, b.ld(j), b.i(6)))):
                b.emit(Op.BREAK)
            b.local_store(j, b.add(b.ld(j), b.i(1)))
            with b.if_then(b.binary(Op.EQ, b.binary(Op.MOD, b.ld(j), b.i(2)), b.i(0))):
                b.emit(Op.CONTINUE)
            update(b, acc, b.ld(j))
        b.store(y, [i], b.ld(acc))
    same_results(b.kernel(), [y])


def test_canonical_loop_is_kept_and_task_level_continue_is_lowered():
    b = KB()
    y = field("y", dtype=T.i32, grad=False)
    with b.parallel(4) as i:
        with b.if_then(b.binary(Op.EQ, i, b.i(2))):
            b.emit(Op.CONTINUE)
        acc = b.alloca(T.i32)
        lp = b.loop()
        with b.into(lp.body):
            update(b, acc, 3)
            with b.if_then(b.binary(Op.GT, b.ld(acc), b.i(1000))):
                b.emit(Op.BREAK)
        b.store(y, [i], b.ld(acc))
    k = b.kernel()
    low = same_results(k, [y])
    loops = [s for s in walk(low.body) if s.op == Op.LOOP]
    assert len(loops[0].body) == len(next(s for s in walk(k.body) if s.op == Op.LOOP).body)


def test_break_out_of_a_top_level_loop_is_refused():
    b = KB()
    with b.serial_for(0, 4) as i, b.if_then(b.binary(Op.EQ, i, b.i(2))):
        brk = b.emit(Op.BREAK)
    with pytest.raises(FieldsimCompilationError, match="break") as err:
        lower_break(b.kernel())
    assert err.value.loc == brk.loc


def test_input_is_untouched():
    b = KB()
    with b.parallel(2), b.loop_for(0, 3):
        b.emit(Op.BREAK)
    k = b.kernel()
    before = print_kernel(k)
    lower_break(k)
    assert print_kernel(k) == before


# ---- random programs ---------------------------------------------------------------------------------

class _Gen(RandomBlocks):
    """Random structured integer programs over one accumulator, with bounded loops."""

    def block(self, acc, depth, in_loop):
        kinds = ["update", "update", "rand", "if"] + ["for", "loop"] * (depth < 3)
        kinds += ["break", "continue", "exit_if"] * in_loop
        for _ in range(self.draw(st.integers(1, 4))):
            getattr(self, "gen_" + self.draw(st.sampled_from(kinds)))(acc, depth, in_loop)

    def gen_update(self, acc, depth, in_loop):
        update(self.b, acc, self.draw(st.integers(0, 9)))

    def gen_rand(self, acc, depth, in_loop):
        update(self.b, acc, self.b.binary(Op.MOD, self.b.emit(Op.RAND, T.i32), self.b.i(97)))

    def gen_if(self, acc, depth, in_loop):
        s = self.b.if_(self.cond(acc))
        for blk in s.blocks:
            with self.b.into(blk):
                self.block(acc, depth + 1, in_loop)

    def gen_for(self, acc, depth, in_loop):
        with self.b.loop_for(0, self.draw(st.integers(0, 3))) as k:
            update(self.b, acc, k)
            self.block(acc, depth + 1, True)

    def gen_loop(self, acc, depth, in_loop):
        count = self.b.alloca(T.i32)
        lp = self.b.loop()
        with self.b.into(lp.body):
            self.b.local_store(count, self.b.add(self.b.ld(count), self.b.i(1)))
            limit = self.b.i(self.draw(st.integers(1, 4)))
            with self.b.if_then(self.b.binary(Op.GT, self.b.ld(count), limit)):
                self.b.emit(Op.BREAK)
            self.block(acc, depth + 1, True)

    def gen_break(self, acc, depth, in_loop):
        self.b.emit(Op.BREAK)

    def gen_continue(self, acc, depth, in_loop):
        self.b.emit(Op.CONTINUE)

    def gen_exit_if(self, acc, depth, in_loop):
        self.exit_if(acc)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_random_programs_keep_their_meaning(data):
    k, y = accumulator_kernel(lambda b, acc: _Gen(data, b).block(acc, 0, False))
    same_results(k, [y])
