"""promote_locals: which locals become SSA values, golden IR, same results, idempotent.

Semantics are compared in the reference interpreter on hand-written cases and on random
structured programs (hypothesis) mixing locals written once and locals updated in place, reads
in nested IFs and loops, reads of a local's zero before its write, BREAK and CONTINUE; and
through the whole pipeline (fs kernels, forward values and reverse-AD gradients against
analytic ones).
"""
import copy

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from support.ir_kit import KB, RandomBlocks, accumulator_kernel, assert_same_outputs, check_grads, field

import fieldsim as fs
from fieldsim.ir.ir import CustomGradInfo, Op, fields_of, walk
from fieldsim.ir.passes.promote_locals import promote_locals
from fieldsim.ir.printer import print_kernel
from fieldsim.ir.verify import verify
from fieldsim.lang import types as T


def ops(k):
    return [s.op for s in walk(k.body)]


def copied(k):
    """A copy of kernel `k` with the same field objects (the pass changes its input)."""
    return copy.deepcopy(k, {id(f): f for f in fields_of(k)})


def same_results(k, outs, args=()):
    promoted = verify(promote_locals(copied(k)))
    assert_same_outputs(k, promoted, outs, args)
    assert print_kernel(promote_locals(copied(promoted))) == print_kernel(promoted), \
        "not idempotent"
    return promoted


def test_golden_a_local_written_once_is_its_value():
    b = KB()
    x, y = field("x"), field("y")
    with b.parallel(4) as i:
        r = b.alloca(T.f64)
        b.local_store(r, b.load(x, [i]))
        with b.loop_for(0, 2), b.if_then(b.binary(Op.GT, b.ld(r), b.c(0.5))):
            b.store(y, [i], b.mul(b.ld(r), b.ld(r)))
    k = b.kernel()
    before = print_kernel(k)
    assert before == """kernel k():
  %0 = const.i32 0
  %1 = const.i32 4
  %2 = for.i32 parallel %0, %1 {
    %3 = alloca.f64
    %4 = load.f64 x[%2]
    local_store %3, %4
    %5 = const.i32 0
    %6 = const.i32 2
    %7 = for.i32 %5, %6 {
      %8 = local_load.f64 %3
      %9 = const.f64 0.5
      %10 = gt.i32 %8, %9
      if %10 {
        %11 = local_load.f64 %3
        %12 = local_load.f64 %3
        %13 = mul.f64 %11, %12
        store y[%2], %13
      } else {
      }
    }
  }"""
    promoted = same_results(k, [y])
    assert print_kernel(k) == before, "same_results changed its input"
    assert print_kernel(promoted) == """kernel k():
  %0 = const.i32 0
  %1 = const.i32 4
  %2 = for.i32 parallel %0, %1 {
    %3 = load.f64 x[%2]
    %4 = const.i32 0
    %5 = const.i32 2
    %6 = for.i32 %4, %5 {
      %7 = const.f64 0.5
      %8 = gt.i32 %3, %7
      if %8 {
        %9 = mul.f64 %3, %3
        store y[%2], %9
      } else {
      }
    }
  }"""


def test_a_local_of_a_local_follows_the_chain():
    b = KB()
    x, y = field("x"), field("y")
    with b.parallel(4) as i:
        r, s = b.alloca(T.f64), b.alloca(T.f64)
        b.local_store(r, b.load(x, [i]))
        b.local_store(s, b.ld(r))
        b.store(y, [i], b.add(b.ld(s), b.ld(r)))
    promoted = same_results(b.kernel(), [y])
    assert Op.ALLOCA not in ops(promoted) and Op.LOCAL_LOAD not in ops(promoted)


def _kept(build):
    """The locals `build(b, i, y)` makes stay locals, and the results agree."""
    b = KB()
    y = field("y")
    with b.parallel(4) as i:
        build(b, i, y)
    k = b.kernel()
    same_results(k, [y])
    before = print_kernel(k)
    assert print_kernel(promote_locals(k)) == before


def test_a_local_written_twice_stays():
    def build(b, i, y):
        acc = b.alloca(T.f64)
        b.local_store(acc, b.c(1.0))
        b.local_store(acc, b.add(b.ld(acc), b.c(2.0)))
        b.store(y, [i], b.ld(acc))
    _kept(build)


def test_a_local_read_before_its_write_stays():
    def build(b, i, y):
        acc = b.alloca(T.f64)
        b.store(y, [i], b.ld(acc))  # its zero
        b.local_store(acc, b.c(3.0))
        b.atomic("add", y, [i], b.ld(acc))
    _kept(build)


def test_a_local_carried_around_a_loop_stays():
    def build(b, i, y):
        prev = b.alloca(T.f64)
        with b.loop_for(0, 3) as k:
            old = b.ld(prev)  # the previous iteration's value, not this one's
            b.local_store(prev, b.cast(k, T.f64))
            b.store(y, [i], b.add(old, b.ld(prev)))
    _kept(build)


def test_a_local_declared_outside_the_loop_it_is_written_in_stays():
    def build(b, i, y):
        r = b.alloca(T.f64)
        with b.loop_for(0, 2):
            b.local_store(r, b.c(2.0))
        b.store(y, [i], b.ld(r))
    _kept(build)


def test_a_local_written_in_a_branch_stays():
    def build(b, i, y):
        r = b.alloca(T.f64)
        with b.if_then(b.binary(Op.GT, i, b.i(1))):
            b.local_store(r, b.c(5.0))
        b.store(y, [i], b.ld(r))
    _kept(build)


def test_a_custom_grad_output_stays():
    b = KB()
    x, y = field("x"), field("y")
    with b.parallel(4) as i:
        v = b.load(x, [i])
        out = b.alloca(T.f64)
        region = b.emit(Op.CUSTOM_GRAD, None, (v,), CustomGradInfo("f", (out,)), [[], []])
        with b.into(region.blocks[0]):
            b.local_store(out, b.mul(v, v))
        b.store(y, [i], b.ld(out))
    k = b.kernel()
    before = print_kernel(k)
    assert print_kernel(promote_locals(k)) == before


def test_gradients_through_promoted_locals():
    b = KB()
    x, w, y = field("x", rng=np.random.default_rng(3)), field("w", values=[0.4, 0.9, 1.3, 0.7]), \
        field("y")
    with b.parallel(4) as i:
        r = b.alloca(T.f64)
        b.local_store(r, b.mul(b.load(x, [i]), b.load(w, [i])))
        with b.loop_for(0, 3):
            b.atomic("add", y, [i], b.f1(Op.SIN, b.ld(r)))
    promoted = promote_locals(b.kernel())
    assert Op.ALLOCA not in ops(promoted)
    check_grads(promoted, [x, w, y])


# ---- random programs ---------------------------------------------------------------------------------

class _Gen(RandomBlocks):
    """Random structured integer programs over an accumulator and `let` locals (written once,
    then read anywhere after), with bounded loops, exits and reads of unwritten locals."""

    def block(self, acc, lets, depth, in_loop):
        lets = list(lets)  # a block's own lets are not visible after it
        kinds = ["update", "let", "let", "early", "if"] + ["for"] * (depth < 3)
        kinds += ["exit_if"] * in_loop
        for _ in range(self.draw(st.integers(1, 4))):
            kind = self.draw(st.sampled_from(kinds))
            getattr(self, "gen_" + kind)(acc, lets, depth, in_loop)

    def value(self, acc, lets):
        b = self.b
        pick = self.draw(st.integers(0, len(lets)))
        v = b.ld(acc) if pick == len(lets) else b.ld(lets[pick])
        return b.binary(Op.MOD, b.add(b.mul(v, b.i(31)), b.i(self.draw(st.integers(0, 9)))),
                        b.i(1000003))

    def gen_update(self, acc, lets, depth, in_loop):
        self.b.local_store(acc, self.value(acc, lets))

    def gen_let(self, acc, lets, depth, in_loop):
        local = self.b.alloca(T.i32)
        self.b.local_store(local, self.value(acc, lets))
        lets.append(local)

    def gen_early(self, acc, lets, depth, in_loop):
        """A local read (its zero) before it is written: it must stay a local."""
        local = self.b.alloca(T.i32)
        self.b.local_store(acc, self.b.add(self.b.ld(acc), self.b.ld(local)))
        self.b.local_store(local, self.value(acc, lets))
        lets.append(local)

    def gen_if(self, acc, lets, depth, in_loop):
        s = self.b.if_(self.cond(acc))
        for blk in s.blocks:
            with self.b.into(blk):
                self.block(acc, lets, depth + 1, in_loop)

    def gen_for(self, acc, lets, depth, in_loop):
        with self.b.loop_for(0, self.draw(st.integers(0, 3))):
            self.block(acc, lets, depth + 1, True)

    def gen_exit_if(self, acc, lets, depth, in_loop):
        self.exit_if(acc)


@settings(max_examples=80, deadline=None)
@given(st.data())
def test_random_programs_keep_their_meaning(data):
    k, y = accumulator_kernel(lambda b, acc: _Gen(data, b).block(acc, [], 0, False))
    same_results(k, [y])


# ---- through the pipeline ------------------------------------------------------------------------------

def test_pipeline_kernels_compile_without_the_locals_and_differentiate():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    n = 6
    x = fs.Vector.field(2, dtype=fs.f64, shape=n, needs_grad=True)
    energy = fs.field(dtype=fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def pair_energy():
        for i, j in fs.ndrange(n, n):
            if i < j:
                r = x[i] - x[j]
                d2 = r.norm_sqr() + 0.25
                energy[None] += 1.0 / fs.sqrt(d2)

    rng = np.random.default_rng(7)
    pos = rng.uniform(-1, 1, (n, 2))
    x.from_numpy(pos)
    with fs.ad.Tape(loss=energy):
        pair_energy()
    diff = pos[:, None, :] - pos[None, :, :]
    inv = 1.0 / np.sqrt((diff ** 2).sum(-1) + 0.25)
    upper = np.triu(np.ones((n, n)), 1)
    assert np.isclose(energy[None], (inv * upper).sum(), rtol=1e-12)
    # d/dx_i of sum_{i<j} (|x_i - x_j|^2 + 0.25)^(-1/2) = -sum_{j != i} (x_i - x_j) inv^3
    grad = -((diff * (inv ** 3)[..., None]) * (upper + upper.T)[..., None]).sum(1)
    np.testing.assert_allclose(x.grad.to_numpy(), grad, rtol=1e-10, atol=1e-12)
