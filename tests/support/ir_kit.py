"""Helpers to build kernels by hand and check their adjoints against finite differences.

`compiled_ir(kernel, *args)` is the IR of a `@fs.kernel`'s specialisation for `args` (frontend
and offload done, compiled on first use), for tests that inspect what the pipeline made.
`KB` is an IRBuilder that gives every statement a `Loc` of its own (line 1, 2, ...), so tests
can check that adjoint statements inherit primal locations. `parallel`/`serial_for`/`serial`
open the top-level tasks of an offloaded kernel. `check_grads` runs forward + adjoint in the
reference interpreter and compares every gradient field with central differences of a random
weighted sum of the outputs.
"""
from __future__ import annotations

import contextlib

import numpy as np
from hypothesis import strategies as st

from fieldsim.ad.reverse import make_adjoint
from fieldsim.errors import Loc
from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import ForInfo, Kernel, Op, Param, walk
from fieldsim.ir.verify import verify
from fieldsim.lang import types as T

from .ir_interp import FakeField, run


def compiled_ir(kernel, *args) -> Kernel:
    """The IR of `kernel`'s specialisation for `args`, as the backend and reverse AD get it."""
    templates, key, _, dtypes, ret = kernel.bind(args, {})
    return kernel.compiled(templates, key, dtypes, ret).ir


class KB(IRBuilder):
    """The tests' kernel builder. Each statement gets a `Loc` line of its own (none when
    `auto_lines` is False), until `source_line(text)`: from then on statements share that line's
    `Loc` (its text, indented as in a kernel body) until the next call, as statements built from
    one source line do."""

    def __init__(self, name="k", file="kern.py", first_line=0, auto_lines=True):
        self.body = []
        super().__init__(self.body)
        self.name, self.file, self.line, self.params = name, file, first_line, []
        self.auto_lines = auto_lines
        self.lines: dict[str, int] = {}  # source_line text -> its line number (the first)

    def emit(self, op, dtype=None, args=(), attr=None, blocks=None, loc=None):
        if loc is None and self.loc is None and self.auto_lines:
            self.line += 1
            loc = Loc(self.file, self.line, 0, None, self.name, f"line {self.line}")
        return super().emit(op, dtype, args, attr, blocks, loc)

    def source_line(self, text, indent=8):
        self.line += 1
        self.lines.setdefault(text, self.line)
        self.loc = Loc(self.file, self.line, indent, indent + len(text), self.name,
                       " " * indent + text)
        return self

    def arg(self, dtype=T.i32, name=None):
        pos = len(self.params)
        self.params.append(Param(name or f"a{pos}", dtype))
        with self.into(self.body):
            return self.emit(Op.ARG, dtype, attr=pos)

    def c(self, v, dtype=T.f64):
        return self.const(v, dtype)

    def i(self, v):
        return self.const(v, T.i32)

    def kernel(self) -> Kernel:
        return verify(Kernel(self.name, list(self.params), self.body))

    @contextlib.contextmanager
    def task_for(self, begin, end, info):
        with self.into(self.body):
            lo = begin if not isinstance(begin, int) else self.i(begin)
            hi = end if not isinstance(end, int) else self.i(end)
            f = self.for_(lo, hi, info)
        with self.into(f.body):
            yield f

    def parallel(self, begin, end=None):
        begin, end = (0, begin) if end is None else (begin, end)
        return self.task_for(begin, end, ForInfo(True))

    def serial_for(self, begin, end):
        return self.task_for(begin, end, ForInfo(False, serialize=True))

    @contextlib.contextmanager
    def serial(self):
        with self.into(self.body):
            s = self.emit(Op.SERIAL, None, blocks=[[]])
        with self.into(s.body):
            yield s

    @contextlib.contextmanager
    def loop_for(self, begin, end):
        lo = begin if not isinstance(begin, int) else self.i(begin)
        hi = end if not isinstance(end, int) else self.i(end)
        f = self.for_(lo, hi)
        with self.into(f.body):
            yield f

    @contextlib.contextmanager
    def if_then(self, cond):
        s = self.if_(cond)
        with self.into(s.blocks[0]):
            yield s

    def f1(self, op, x):
        return self.unary(op, x)

    def ld(self, var):
        return self.local_load(var)


def field(name, shape=(4,), dtype=T.f64, grad=True, values=None, rng=None, lo=0.2, hi=1.0):
    f = FakeField(name, dtype, shape, grad=grad and dtype.is_float)
    if values is not None:
        f.arr[...] = values
    elif rng is not None:
        f.arr[...] = rng.uniform(lo, hi, f.arr.shape)
    return f


def adjoint(k: Kernel) -> Kernel:
    adj = verify(make_adjoint(k))
    assert all(s.loc is not None for s in walk(adj.body)), "adjoint statement without a loc"
    return adj


class GradCase:
    """A kernel, its fields (name -> FakeField), launch args; forward/adjoint in the interpreter."""

    def __init__(self, k: Kernel, fields, args=(), outputs=None, seed=1):
        self.k, self.fields, self.args = k, {f.name: f for f in fields}, list(args)
        self.init = {n: f.arr.copy() for n, f in self.fields.items()}
        outs = outputs or [n for n, f in self.fields.items() if f.grad is not None]
        rng = np.random.default_rng(seed)
        self.weights = {n: rng.uniform(0.5, 1.5, self.fields[n].arr.shape) for n in outs}
        self.adj = adjoint(k)

    def reset(self):
        for n, f in self.fields.items():
            f.arr[...] = self.init[n]
            if f.grad is not None:
                f.grad.arr[...] = 0

    def loss(self) -> float:
        self.reset()
        run(self.k, self.args)
        return float(sum((self.fields[n].arr * w).sum() for n, w in self.weights.items()))

    def ad_grads(self, shuffle=None, ad_stack_size=64):
        self.loss()
        for n, w in self.weights.items():
            self.fields[n].grad.arr[...] = w
        self.last = run(self.adj, self.args, shuffle=shuffle, ad_stack_size=ad_stack_size)
        return {n: f.grad.arr.copy() for n, f in self.fields.items() if f.grad is not None}

    def fd_grads(self, h=1e-6):
        out = {}
        for n, f in self.fields.items():
            if f.grad is None:
                continue
            g = np.zeros(f.arr.shape)
            for flat in range(f.arr.size):
                base = self.init[n].flat[flat]
                step = h * max(1.0, abs(base))
                self.init[n].flat[flat] = base + step
                plus = self.loss()
                self.init[n].flat[flat] = base - step
                minus = self.loss()
                self.init[n].flat[flat] = base
                g.flat[flat] = (plus - minus) / (2 * step)
            out[n] = g
        self.reset()
        return out


def check_grads(k, fields, args=(), rtol=1e-5, atol=1e-6, outputs=None, shuffle=True):
    """AD gradients == central differences (and == AD with shuffled parallel iterations)."""
    case = GradCase(k, fields, args, outputs)
    ad = case.ad_grads()
    fd = case.fd_grads()
    for n in ad:
        np.testing.assert_allclose(ad[n], fd[n], rtol=rtol, atol=atol, err_msg=f"d/d{n}")
    if shuffle:
        again = case.ad_grads(shuffle=np.random.default_rng(7))
        for n in ad:
            np.testing.assert_allclose(again[n], ad[n], rtol=1e-12, atol=1e-12)
    return case, ad


# ---- random structured programs (hypothesis) ----------------------------------------------------

class RandomBlocks:
    """What the random-program generators of the pass tests share: hypothesis draws, a
    condition on the i32 accumulator, and an `if` that leaves the current loop early."""

    def __init__(self, data, b):
        self.data, self.b = data, b

    def draw(self, strategy):
        return self.data.draw(strategy)

    def cond(self, acc):
        m = self.b.binary(Op.MOD, self.b.ld(acc), self.b.i(3))
        return self.b.binary(Op.EQ, m, self.b.i(self.draw(st.integers(0, 2))))

    def exit_if(self, acc):
        with self.b.if_then(self.cond(acc)):
            self.b.emit(self.draw(st.sampled_from([Op.BREAK, Op.CONTINUE])))


def accumulator_kernel(fill, n=3):
    """(kernel, y): `n` parallel iterations, each with an i32 accumulator that starts at the
    iteration's index, is changed by `fill(b, acc)` and is stored to `y[i]`."""
    b = KB()
    y = field("y", (n,), dtype=T.i32, grad=False)
    with b.parallel(n) as i:
        acc = b.alloca(T.i32)
        b.local_store(acc, i)
        fill(b, acc)
        b.store(y, [i], b.ld(acc))
    return b.kernel(), y


def assert_same_outputs(before, after, outs, args=()):
    """Kernels `before` and `after` write the same values into the fields `outs` (each run in
    the interpreter from zeroed outputs)."""
    results = []
    for kern in (before, after):
        for f in outs:
            f.arr[...] = 0
        run(kern, args)
        results.append([f.arr.copy() for f in outs])
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)
