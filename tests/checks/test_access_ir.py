"""IR-level tests of the access-rule checker (fieldsim.checks), with kernels built by hand.

Each `@accepted` / `@violating` function builds one kernel with `KB` (IRBuilder plus one `Loc` per
source line) and fake fields; the parametrized tests run `check_kernel` on it. The `TapeState`
tests at the end record several launches, as a Tape does.
"""
from __future__ import annotations

import math
import random

import pytest
from support.ir_interp import FakeField
from support.ir_kit import KB as SupportKB

from fieldsim.checks import Answer, TapeState, check_kernel, same_element_possible, summarize
from fieldsim.checks.access_rules import KernelCheck, findings
from fieldsim.errors import AccessRuleError, Loc
from fieldsim.ir.activity import activity
from fieldsim.ir.ir import ForInfo, Op, Param, Stmt, walk
from fieldsim.ir.printer import print_kernel
from fieldsim.lang import types as T

FILE = "sim.py"


def fake(name, shape=(), n=None, dtype=T.f32, needs_grad=True):
    """The tests' FakeField as these kernels use it: f32 with a gradient twin by default."""
    return FakeField(name, dtype, shape, grad=needs_grad, n=n)


class KB:
    """A terse vocabulary over the tests' kernel builder (support.ir_kit.KB, as `b`). `at(text)`
    starts a new source line: every statement emitted afterwards gets its `Loc` (file sim.py,
    increasing line numbers)."""

    def __init__(self, name="k", params=()):
        self.name, self.params = name, list(params)
        self.b = SupportKB(name, FILE, first_line=10, auto_lines=False)
        self.lines = self.b.lines

    def at(self, text):
        self.b.source_line(text)
        return self

    def kernel(self):
        self.b.params = [Param("field", None, template=True)] + [Param(p, T.i32) for p in self.params]
        return self.b.kernel()

    # values
    def i(self, v):
        return v if isinstance(v, Stmt) else self.b.const(v, T.i32)

    def f(self, v):
        return v if isinstance(v, Stmt) else self.b.const(v, T.f32)

    def arg(self, pos):
        return self.b.emit(Op.ARG, T.i32, attr=pos)

    def add(self, a, b):
        return self.b.add(self.i(a), self.i(b))

    def mul(self, a, b):
        return self.b.mul(self.i(a), self.i(b))

    def op(self, op, a, b):
        return self.b.binary(op, self.i(a), self.i(b))

    def fmul(self, a, b):
        return self.b.mul(self.f(a), self.f(b))

    # memory
    def load(self, field, *idx):
        return self.b.load(field, [self.i(i) for i in idx])

    def store(self, field, idx, v):
        return self.b.store(field, [self.i(i) for i in idx], self.f(v))

    def atomic(self, kind, field, idx, v):
        return self.b.atomic(kind, field, [self.i(i) for i in idx], self.f(v))

    # control flow (context managers yield the loop index)
    def loop(self, begin, end, parallel=False, serialize=False):
        s = self.b.for_(self.i(begin), self.i(end), ForInfo(parallel, serialize))
        return _Into(self.b, s.body, s)

    def pfor(self, end, begin=0):
        return self.loop(begin, end, parallel=True)

    def serial(self):
        s = self.b.emit(Op.SERIAL, None, blocks=[[]])
        return _Into(self.b, s.body, s)

    def while_(self):
        s = self.b.loop()
        return _Into(self.b, s.body, s)

    def if_(self, cond):
        s = self.b.if_(cond)
        return _Into(self.b, s.blocks[0], s), _Into(self.b, s.blocks[1], s)

    def digits(self, t, sizes, begins=None):
        """The frontend's linearisation of an ndrange index `t` into one index per dimension."""
        out = []
        for k, size in enumerate(sizes):
            stride = math.prod(sizes[k + 1:])
            q = t if stride == 1 else self.op(Op.FLOORDIV, t, stride)
            d = q if k == 0 else self.op(Op.MOD, q, size)
            out.append(self.add(d, begins[k]) if begins and begins[k] else d)
        return out


class _Into:
    def __init__(self, b, block, value):
        self.b, self.block, self.value = b, block, value

    def __enter__(self):
        self.b.blocks.append(self.block)
        return self.value

    def __exit__(self, *exc):
        self.b.blocks.pop()


ACCEPTED, VIOLATING = [], []


def accepted(fn):
    ACCEPTED.append(fn)
    return fn


def violating(rule, verdict="violation", first=None, second=None):
    """`first`/`second`: source text of the two lines the error must name."""
    def deco(fn):
        VIOLATING.append(pytest.param(fn, rule, verdict, first, second, id=fn.__name__))
        return fn
    return deco


N = 16
x, y, z = fake("x", (N,)), fake("y", (N,)), fake("z", (N,))
x2, y2 = fake("x2", (N, N)), fake("y2", (N, N))
xt = fake("x_t", (8, N))  # time-stepped state x[t, i]
idx = fake("idx", (N,), dtype=T.i32, needs_grad=False)
loss = fake("loss")
v2 = fake("v", (N,), n=2)  # a vector field: the component is the last index
grid_v, grid_m = fake("grid_v", (N, N), n=2), fake("grid_m", (N, N))
grid_v_out = fake("grid_v_out", (N, N), n=2)
count = fake("count", dtype=T.i32, needs_grad=False)


# ------------------------------------------------------------------------ accepted kernels
@accepted
def copy():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("y[i] = x[i]").store(y, [i], k.load(x, i))
    return k


def square_copy():
    # a read the Tape logs: `y[i] = x[i]` is free there (its adjoint uses no value of x)
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        v = k.at("y[i] = x[i] * x[i]").load(x, i)
        k.store(y, [i], k.fmul(v, v))
    return k


def square_gather():
    k = KB()
    with k.at("for i in y:").pfor(N) as i:
        j = k.at("y[i] = x[idx[i]] ** 2").load(idx, i)
        v = k.load(x, j)
        k.store(y, [i], k.fmul(v, v))
    return k


@accepted
def time_stepped():
    k = KB("advance", ["t"])
    t = k.arg(0)
    with k.at("for i in range(n):").pfor(N) as i:
        # squared: a linear read (`* 2`) is free on a Tape, and the rerun test needs a logged one
        v = k.at("x[t + 1, i] = x[t, i] * x[t, i]").load(xt, t, i)
        k.store(xt, [k.add(t, 1), i], k.fmul(v, v))
    return k


@accepted
def gather():
    k = KB()
    with k.at("for i in y:").pfor(N) as i:
        j = k.at("y[i] = x[idx[i]]").load(idx, i)
        k.store(y, [i], k.load(x, j))
    return k


@accepted
def scatter_atomic():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        j = k.at("y[idx[i]] += x[i]").load(idx, i)
        k.atomic("add", y, [j], k.load(x, i))
    return k


@accepted
def loss_accumulate():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        v = k.at("loss[None] += x[i] ** 2").load(x, i)
        k.atomic("add", loss, [], k.fmul(v, v))
    return k


def _p2g(k, grid_reads=False):
    """mpm-style particle-to-grid: base = int(x[p] * inv_dx - 0.5); grid[base + offset] += ..."""
    with k.at("for p in x:").pfor(N) as p:
        xp = k.at("base = int(x[p] * inv_dx - 0.5)").load(v2, p, 0)
        yp = k.load(v2, p, 1)
        bx = k.b.cast(k.fmul(xp, 16.0), T.i32)
        by = k.b.cast(k.fmul(yp, 16.0), T.i32)
        for a in range(3):
            for b in range(3):
                gi, gj = k.at("grid_v[base + offset] += w * v[p]").add(bx, a), k.add(by, b)
                mass = 1.0
                if grid_reads:  # used (a load nothing uses reads nothing the adjoint needs)
                    mass = k.fmul(k.at("m = grid_m[base + offset]").load(grid_m, gi, gj), 0.5)
                for c in range(2):
                    k.at("grid_v[base + offset] += w * v[p]").atomic("add", grid_v, [gi, gj, c],
                                                                     k.load(v2, p, c))
                k.at("grid_m[base + offset] += w * p_mass").atomic("add", grid_m, [gi, gj], mass)
    return k


@accepted
def p2g():
    return _p2g(KB("p2g"))


@accepted
def grid_op_to_other_field():
    k = KB("grid_op")
    with k.at("for i, j in grid_m:").pfor(N * N) as t:
        i, j = k.digits(t, (N, N))
        m = k.at("m = grid_m[i, j]").load(grid_m, i, j)
        for c in range(2):
            v = k.at("grid_v_out[i, j] = grid_v[i, j] / m").load(grid_v, i, j, c)
            k.store(grid_v_out, [i, j, c], k.b.div(v, m))
    return k


@accepted
def g2p_time_indexed():
    k = KB("g2p", ["t"])
    t = k.arg(0)
    xs = fake("xs", (8, N))
    with k.at("for p in x:").pfor(N) as p:
        base = k.b.cast(k.fmul(k.at("base = int(x[t, p] * inv_dx - 0.5)").load(xs, t, p), 16.0), T.i32)
        acc = k.f(0.0)
        for a in range(3):
            g = k.at("new_v += w * grid_v[base + offset]").load(grid_v, k.add(base, a), base, 0)
            acc = k.b.add(acc, g)
        k.at("x[t + 1, p] = x[t, p] + dt * new_v").store(xs, [k.add(t, 1), p], acc)
    return k


@accepted
def serialize_prefix_sum():
    k = KB()
    with k.at("for i in range(1, n):  # serialize").loop(1, N, serialize=True) as i:
        prev = k.at("x[i] = x[i - 1] + z[i]").load(x, k.add(i, -1))
        k.store(x, [i], k.b.add(prev, k.load(z, i)))
    return k


@accepted
def write_then_read_same_thread():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("x[i] = z[i]").store(x, [i], k.load(z, i))
        k.at("y[i] = x[i] * 2").store(y, [i], k.fmul(k.load(x, i), 2.0))
    return k


@accepted
def write_then_read_next_task():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("x[i] = z[i]").store(x, [i], k.load(z, i))
    with k.at("for i in x:").pfor(N) as i:
        k.at("y[i] = x[N - 1 - i]").store(y, [i], k.load(x, k.add(N - 1, k.mul(i, -1))))
    return k


@accepted
def if_else_branches():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        c = k.b.binary(Op.GT, k.at("if x[i] > 0:").load(x, i), k.f(0.0))
        then, other = k.if_(c)
        with then:
            k.at("y[i] = 1.0").store(y, [i], 1.0)
        with other:
            k.at("y[i] = -1.0").store(y, [i], -1.0)
    return k


@accepted
def atomic_max_loss():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("fs.atomic_max(loss[None], x[i])").atomic("max", loss, [], k.load(x, i))
    return k


@accepted
def inner_loop_shift_forward():
    k = KB()
    with k.at("for i in range(n):").pfor(N) as i, k.at("for j in range(n - 1):").loop(0, N - 1) as j:
        v = k.at("s = x[i, j]").load(x2, i, j)
        k.at("x[i, j + 1] = s * 0.5").store(x2, [i, k.add(j, 1)], k.fmul(v, 0.5))
    return k


@accepted
def ndrange_2d():
    k = KB()
    with k.at("for i, j in ndrange(n, n):").pfor(N * N) as t:
        i, j = k.digits(t, (N, N))
        v = k.at("y[i, j] = x[i, j] ** 2").load(x2, i, j)
        k.store(y2, [i, j], k.fmul(v, v))
    return k


@accepted
def ndrange_offset_stencil_to_other_field():
    k = KB()
    with k.at("for i, j in ndrange((1, n - 1), (1, n - 1)):").pfor((N - 2) ** 2) as t:
        i, j = k.digits(t, (N - 2, N - 2), (1, 1))
        a = k.at("y[i, j] = x[i - 1, j] + x[i + 1, j]").load(x2, k.add(i, -1), j)
        k.store(y2, [i, j], k.b.add(a, k.load(x2, k.add(i, 1), j)))
    return k


@accepted
def disjoint_halves():
    k = KB()
    big = fake("big", (2 * N,))
    with k.at("for i in range(n):").pfor(N) as i:
        v = k.at("big[i + n] = big[i]").load(big, i)
        k.store(big, [k.add(i, N)], v)
    return k


@accepted
def even_odd():
    k = KB()
    big = fake("big", (2 * N,))
    with k.at("for i in range(n):").pfor(N) as i:
        v = k.at("big[2 * i + 1] = big[2 * i]").load(big, k.mul(i, 2))
        k.store(big, [k.add(k.mul(i, 2), 1)], v)
    return k


@accepted
def single_assignment_local_index():
    k = KB()
    big = fake("big", (2 * N,))
    with k.at("for i in range(n):").pfor(N) as i:
        j = k.at("j = 2 * i").b.alloca(T.i32)
        k.b.local_store(j, k.mul(i, 2))
        v = k.at("big[j + 1] = big[j]").load(big, k.b.local_load(j))
        k.store(big, [k.add(k.b.local_load(j), 1)], v)
    return k


@accepted
def vector_components():
    k = KB()
    with k.at("for i in v:").pfor(N) as i:
        a = k.at("v[i][1] = v[i][0] * 2").load(v2, i, 0)
        k.store(v2, [i, 1], k.fmul(a, 2.0))
    return k


@accepted
def serial_block_single_store():
    k = KB()
    with k.serial():
        a = k.at("loss[None] = x[0] + x[1]").load(x, 0)
        k.store(loss, [], k.b.add(a, k.load(x, 1)))
    return k


@accepted
def parallel_then_serial_task():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("y[i] = x[i]").store(y, [i], k.load(x, i))
    with k.serial():
        k.at("loss[None] = y[0]").store(loss, [], k.load(y, 0))
    return k


@accepted
def int_field_without_grad_stored_twice():
    k = KB()
    with k.serial():
        k.at("count[None] = 0").b.store(count, [], k.i(0))
        k.at("count[None] = 1").b.store(count, [], k.i(1))
    return k


@accepted
def atomic_sub_after_store():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("y[i] = x[i]").store(y, [i], k.load(x, i))
        k.at("y[i] -= z[i]").atomic("sub", y, [i], k.load(z, i))
    return k


@accepted
def two_accumulations():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("loss[None] += x[i]").atomic("add", loss, [], k.load(x, i))
        k.at("loss[None] += z[i]").atomic("add", loss, [], k.load(z, i))
    return k


@accepted
def while_loop_reads_only():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        s = k.at("s = 0.0").b.alloca(T.f32)
        with k.at("while True:").while_():
            k.at("s += x[i]").b.local_store(s, k.b.add(k.b.local_load(s), k.load(x, i)))
            k.at("break").b.emit(Op.BREAK)
        k.at("y[i] = s").store(y, [i], k.b.local_load(s))
    return k


@accepted
def triangular_inner_loop():
    k = KB()
    with k.at("for i in range(n):").pfor(N) as i:
        s = k.at("s = 0.0").b.alloca(T.f32)
        with k.at("for j in range(i):").loop(0, i) as j:
            k.at("s += A[i, j]").b.local_store(s, k.b.add(k.b.local_load(s), k.load(x2, i, j)))
        k.at("y[i] = s").store(y, [i], k.b.local_load(s))
    return k


@accepted
def transpose_into_other_field():
    k = KB()
    with k.at("for i, j in x:").pfor(N * N) as t:
        i, j = k.digits(t, (N, N))
        k.at("y[j, i] = x[i, j]").store(y2, [j, i], k.load(x2, i, j))
    return k


@accepted
def manual_div_mod_is_injective():
    k = KB()
    with k.at("for t in range(2 * n):").pfor(2 * N) as t:
        q, r = k.op(Op.FLOORDIV, t, 2), k.op(Op.MOD, t, 2)
        k.at("v[t // 2][t % 2] = 1.0").store(v2, [q, r], 1.0)
    return k


@accepted
def loop_from_one_writes_past_read():
    k = KB()
    with k.at("for i in range(1, n):").pfor(N, begin=1) as i:
        a = k.at("x[i] = x[0] * z[i]").load(x, 0)
        k.store(x, [i], k.b.mul(a, k.load(z, i)))
    return k


@accepted
def digits_from_disjoint_threads_are_distinct():
    k = KB()
    with k.at("for i, j in ndrange(n, n):").pfor(N * N) as t:
        i, j = k.digits(t, (N, N))
        k.at("y[i, j] = 0.0").store(y2, [i, j], 0.0)
        k.at("y[i, j] += x[i, j]").atomic("add", y2, [i, j], k.load(x2, i, j))
    return k


@accepted
def atomic_result_unused_is_not_a_read():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("fs.atomic_add(y[0], x[i])").atomic("add", y, [0], k.load(x, i))
    return k


@accepted
def one_thread_parallel_loop():
    k = KB("first")
    with k.at("for i in range(1):").pfor(1):
        k.at("y[0] = x[0]").store(y, [0], k.load(x, 0))
        k.at("y[0] += x[1]").atomic("add", y, [0], k.load(x, 1))
    return k


# ----------------------------------------------------------------------- violating kernels
@violating(1, first="a[i] = b[i] * b[i]", second="b[i] += 100")
def doc_rule1():
    k = KB("doc_rule1")
    a = fake("a", (N,))
    with k.at("for i in b:").pfor(N) as i:
        v = k.at("a[i] = b[i] * b[i]").load(x, i)
        k.at("a[i] = b[i] * b[i]").store(a, [i], k.fmul(v, v))
        k.at("b[i] += 100").atomic("add", x, [i], 100.0)
    return k


@accepted
def doc_rule1_linear_copy():
    # the copy's adjoint (`b.grad[i] += a.grad[i]`) uses no value of b[i]
    k = KB("doc_rule1_linear_copy")
    a = fake("a", (N,))
    with k.at("for i in b:").pfor(N) as i:
        k.at("a[i] = b[i]").store(a, [i], k.load(x, i))
        k.at("b[i] += 100").atomic("add", x, [i], 100.0)
    return k


@violating(2, first="loss[None] += x[i] ** 2", second="loss[None] *= x[i]")
def doc_rule2():
    k = KB("compute_loss")
    with k.at("for i in x:").pfor(N) as i:
        v = k.at("loss[None] += x[i] ** 2").load(x, i)
        k.atomic("add", loss, [], k.fmul(v, v))
        old = k.at("loss[None] *= x[i]").load(loss)
        k.store(loss, [], k.b.mul(old, k.load(x, i)))
    return k


@violating(1, first="x[i] = x[i] * x[i]", second="x[i] = x[i] * x[i]")
def rmw_in_place():  # not linear: the adjoint needs the old x[i]
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        v = k.at("x[i] = x[i] * x[i]").load(x, i)
        k.store(x, [i], k.b.mul(v, v))
    return k


@accepted  # linear, constant factor: the adjoint (x.grad[i] *= 2) needs no value of x
def scale_in_place():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        v = k.at("x[i] *= 2").load(x, i)
        k.store(x, [i], k.fmul(v, 2.0))
    return k


@accepted  # affine, the factor from a field without gradient, the offset from another field
def affine_in_place():
    k = KB()
    plain = fake("plain", (N,), needs_grad=False)
    with k.at("for i in x:").pfor(N) as i:
        v = k.at("x[i] = plain[i] * x[i] + y[i]").load(x, i)
        k.store(x, [i], k.b.add(k.b.mul(k.load(plain, i), v), k.load(y, i)))
    return k


@violating(1, first="x[i] = x[i] * z[i]", second="x[i] = x[i] * z[i]")
def rmw_by_active_factor():  # z's adjoint needs the old x[i]
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        v = k.at("x[i] = x[i] * z[i]").load(x, i)
        k.store(x, [i], k.b.mul(v, k.load(z, i)))
    return k


@violating(1, first="t = x[i]", second="x[i] = t * 2")
def rmw_old_value_also_read():  # y's adjoint needs the old x[i]
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        t = k.at("t = x[i]").load(x, i)
        k.at("x[i] = t * 2").store(x, [i], k.fmul(t, 2.0))
        k.at("y[i] = t * t").store(y, [i], k.b.mul(t, t))
    return k


@accepted
def two_updates_in_place():  # the second update's adjoint scales the gradient the first takes
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("x[i] *= 2").store(x, [i], k.fmul(k.load(x, i), 2.0))
        k.at("x[i] *= 3").store(x, [i], k.fmul(k.load(x, i), 3.0))
    return k


@violating(2, first="x[0] *= 3", second="x[0] *= 3")
def updates_from_every_thread():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("x[i] *= 2").store(x, [i], k.fmul(k.load(x, i), 2.0))
        k.at("x[0] *= 3").store(x, [0], k.fmul(k.load(x, 0), 3.0))
    return k


@violating(1, first="x[i] = x[i + 1]", second="x[i] = x[i + 1]")
def neighbour_read_parallel():
    k = KB()
    with k.at("for i in range(n - 1):").pfor(N - 1) as i:
        k.at("x[i] = x[i + 1]").store(x, [i], k.load(x, k.add(i, 1)))
    return k


@violating(1)
def serialize_reads_ahead():
    k = KB()
    with k.at("for i in range(n - 1):  # serialize").loop(0, N - 1, serialize=True) as i:
        k.at("x[i] = x[i + 1] * 0.5").store(x, [i], k.fmul(k.load(x, k.add(i, 1)), 0.5))
    return k


@violating(1)
def stencil_in_place():
    k = KB()
    with k.at("for i, j in ndrange((1, n - 1), (1, n - 1)):").pfor((N - 2) ** 2) as t:
        i, j = k.digits(t, (N - 2, N - 2), (1, 1))
        a = k.at("x[i, j] = 0.5 * (x[i - 1, j] + x[i + 1, j])").load(x2, k.add(i, -1), j)
        b = k.load(x2, k.add(i, 1), j)
        k.store(x2, [i, j], k.fmul(k.b.add(a, b), 0.5))
    return k


@accepted  # an in-order plain overwrite: its adjoint takes and zeroes the gradient
def two_stores_to_loss():
    k = KB()
    with k.serial():
        k.at("loss[None] = x[0]").store(loss, [], k.load(x, 0))
        k.at("loss[None] = x[1]").store(loss, [], k.load(x, 1))
    return k


@violating(2)
def plain_store_from_every_thread():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("loss[None] = x[i]").store(loss, [], k.load(x, i))
    return k


@violating(1, first="grid_v[i, j] = grid_v[i, j] / m", second="grid_v[i, j] = grid_v[i, j] / m")
def grid_op_in_place():
    k = KB("grid_op")
    with k.at("for i, j in grid_m:").pfor(N * N) as t:
        i, j = k.digits(t, (N, N))
        m = k.at("m = grid_m[i, j]").load(grid_m, i, j)
        for c in range(2):
            v = k.at("grid_v[i, j] = grid_v[i, j] / m").load(grid_v, i, j, c)
            k.store(grid_v, [i, j, c], k.b.div(v, m))
    return k


@violating(2, "undecided")
def scatter_plain_store():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        j = k.at("y[idx[i]] = x[i]").load(idx, i)
        k.store(y, [j], k.load(x, i))
    return k


@violating(1, "undecided", first="s = x[idx[i]]", second="x[i] = s")
def data_dependent_read_and_write():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        s = k.at("s = x[idx[i]]").load(x, k.load(idx, i))
        k.at("x[i] = s").store(x, [i], s)
    return k


@violating(1, first="y[i] = x[i]", second="x[i] = 0.0")
def later_task_overwrites_read():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("y[i] = x[i]").store(y, [i], k.load(x, i))
    with k.at("for i in x:").pfor(N) as i:
        k.at("x[i] = 0.0").store(x, [i], 0.0)
    return k


@accepted  # an in-order plain overwrite: its adjoint takes and zeroes the gradient
def later_task_stores_again():
    k = KB()
    with k.at("for i in y:").pfor(N) as i:
        k.at("y[i] = x[i]").store(y, [i], k.load(x, i))
    with k.at("for i in y:").pfor(N) as i:
        k.at("y[i] = 2.0").store(y, [i], 2.0)
    return k


@violating(1, first="s = x[i]", second="x[i] += 1.0")
def read_then_accumulate():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        s = k.at("s = x[i]").load(x, i)
        k.at("y[i] = s * s").store(y, [i], k.fmul(s, s))
        k.at("x[i] += 1.0").atomic("add", x, [i], 1.0)
    return k


@accepted
def read_then_accumulate_linear():
    # `y[i] = s` is a copy: its adjoint adds y.grad[i] to x.grad[i] and uses no value of x[i]
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        s = k.at("s = x[i]").load(x, i)
        k.at("y[i] = s").store(y, [i], s)
        k.at("x[i] += 1.0").atomic("add", x, [i], 1.0)
    return k


@violating(2)
def atomic_mul_from_every_thread():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("fs.atomic_mul(loss[None], x[i])").atomic("mul", loss, [], k.load(x, i))
    return k


@accepted  # an in-order plain overwrite: its adjoint takes and zeroes the gradient
def store_after_accumulate():
    k = KB()
    with k.serial():
        with k.at("for i in range(n):").loop(0, N) as i:
            k.at("loss[None] += x[i]").atomic("add", loss, [], k.load(x, i))
        k.at("loss[None] = 0.0").store(loss, [], 0.0)
    return k


@violating(2, first="y[i] = x[i]", second="fs.atomic_max(y[i], 0.0)")
def atomic_max_after_store():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("y[i] = x[i]").store(y, [i], k.load(x, i))
        k.at("fs.atomic_max(y[i], 0.0)").atomic("max", y, [i], 0.0)
    return k


@violating(2)
def atomic_max_then_min():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("fs.atomic_max(loss[None], x[i])").atomic("max", loss, [], k.load(x, i))
        k.at("fs.atomic_min(loss[None], z[i])").atomic("min", loss, [], k.load(z, i))
    return k


@accepted  # an in-order plain overwrite: its adjoint takes and zeroes the gradient
def inner_loop_overwrites():
    k = KB()
    with k.at("for i in range(n):").pfor(N) as i, k.at("for j in range(n):").loop(0, N) as j:
        k.at("y[i] = x[i, j]").store(y, [i], k.load(x2, i, j))
    return k


@violating(1, first="s = x[i, j + 1]", second="x[i, j] = s")
def inner_loop_reads_ahead():
    k = KB()
    with k.at("for i in range(n):").pfor(N) as i, k.at("for j in range(n - 1):").loop(0, N - 1) as j:
        s = k.at("s = x[i, j + 1]").load(x2, i, k.add(j, 1))
        k.at("x[i, j] = s").store(x2, [i, j], s)
    return k


@accepted  # an in-order plain overwrite: its adjoint takes and zeroes the gradient
def while_loop_stores_repeatedly():
    k = KB()
    with k.at("for i in x:").pfor(N) as i, k.at("while True:").while_():
        k.at("y[i] = x[i]").store(y, [i], k.load(x, i))
        c = k.b.binary(Op.GT, k.at("if x[i] > 0:").load(x, i), k.f(0.0))
        then, _ = k.if_(c)
        with then:
            k.at("break").b.emit(Op.BREAK)
    return k


@violating(2)
def ndrange_store_ignores_a_digit():
    k = KB()
    with k.at("for i, j in ndrange(n, n):").pfor(N * N) as t:
        i, j = k.digits(t, (N, N))
        k.at("y[i] = x[i, j]").store(y, [i], k.load(x2, i, j))
    return k


@violating(1)
def transpose_in_place():
    k = KB()
    with k.at("for i, j in x:").pfor(N * N) as t:
        i, j = k.digits(t, (N, N))
        k.at("x[i, j] = x[j, i]").store(x2, [i, j], k.load(x2, j, i))
    return k


@violating(2)
def floordiv_merges_threads():
    k = KB()
    with k.at("for t in range(n):").pfor(N) as t:
        k.at("y[t // 2] = x[t]").store(y, [k.op(Op.FLOORDIV, t, 2)], k.load(x, t))
    return k


@violating(1)
def offset_by_unknown_argument():
    k = KB("shift", ["a"])
    big = fake("big", (2 * N,))
    with k.at("for i in range(n):").pfor(N) as i:
        k.at("big[i + a] = big[i]").store(big, [k.add(i, k.arg(0))], k.load(big, i))
    return k


@violating(1, first="slot = fs.atomic_add(count[None], 1)", second="slot = fs.atomic_add(count[None], 1)")
def atomic_old_value_used():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        slot = k.at("slot = fs.atomic_add(count[None], 1)").b.atomic("add", count, [], k.i(1))
        k.at("y[slot] = x[i]").store(y, [slot], k.load(x, i))
    return k


@violating(1, first="s += x[j]", second="x[j] = 0.0")
def serial_sum_then_clear():
    k = KB()
    with k.serial():
        s = k.at("s = 0.0").b.alloca(T.f32)
        with k.at("for j in range(n):").loop(0, N) as j:
            k.at("s += x[j]").b.local_store(s, k.b.add(k.b.local_load(s), k.load(x, j)))
        with k.at("for j in range(n):").loop(0, N) as j:
            k.at("x[j] = 0.0").store(x, [j], 0.0)
        k.at("loss[None] = s").store(loss, [], k.b.local_load(s))
    return k


@violating(1, "undecided")
def multiply_assigned_local_index():
    k = KB()
    with k.at("for i in range(n - 1):").pfor(N - 1) as i:
        j = k.at("j = i").b.alloca(T.i32)
        k.b.local_store(j, i)
        then, _ = k.if_(k.b.binary(Op.GT, k.at("if z[i] > 0:").load(z, i), k.f(0.0)))
        with then:
            k.at("j = i + 1").b.local_store(j, k.add(i, 1))
        s = k.at("s = x[j]").load(x, k.b.local_load(j))
        k.at("x[i] = s").store(x, [i], s)
    return k


@violating(2, "undecided")
def random_index_store():
    k = KB()
    with k.at("for i in x:").pfor(N):
        r = k.at("x[int(fs.random() * n)] = 1.0").b.emit(Op.RAND, T.f32)
        k.store(y, [k.b.cast(k.fmul(r, float(N)), T.i32)], 1.0)
    return k


@violating(2, first="y[i] = x[i]", second="fs.atomic_mul(y[i], z[i])")
def store_then_atomic_mul():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("y[i] = x[i]").store(y, [i], k.load(x, i))
        k.at("fs.atomic_mul(y[i], z[i])").atomic("mul", y, [i], k.load(z, i))
    return k


@accepted  # an in-order plain overwrite: its adjoint takes and zeroes the gradient
def same_thread_stores_twice():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        k.at("y[i] = x[i]").store(y, [i], k.load(x, i))
        k.at("y[i] = z[i]").store(y, [i], k.load(z, i))
    return k


@violating(1, first="s = x[i]", second="x[i] = s")
def rmw_through_local():
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        s = k.at("s = x[i]").b.alloca(T.f32)
        k.b.local_store(s, k.load(x, i))
        k.at("s *= 2").b.local_store(s, k.fmul(k.b.local_load(s), 2.0))
        k.at("x[i] = s").store(x, [i], k.b.local_load(s))
    return k


@violating(1)
def vector_component_in_place():
    k = KB()
    with k.at("for i in v:").pfor(N) as i:
        a = k.at("v[i][0] = v[i][0] * v[i][1]").load(v2, i, 0)
        k.store(v2, [i, 0], k.b.mul(a, k.load(v2, i, 1)))
    return k


@accepted  # linear in v[i][0]; v[i][1] is another element, read and never written
def vector_component_shift_in_place():
    k = KB()
    with k.at("for i in v:").pfor(N) as i:
        a = k.at("v[i][0] = v[i][0] + v[i][1]").load(v2, i, 0)
        k.store(v2, [i, 0], k.b.add(a, k.load(v2, i, 1)))
    return k


@accepted  # an in-order plain overwrite: its adjoint takes and zeroes the gradient
def serialize_loop_stores_each_iteration():
    k = KB()
    with k.at("for i in range(n):  # serialize").loop(0, N, serialize=True) as i:
        k.at("loss[None] = x[i]").store(loss, [], k.load(x, i))
    return k


@violating(1)
def strided_overlap():
    k = KB()
    big = fake("big", (4 * N,))
    with k.at("for i in range(n):").pfor(N) as i:
        v = k.at("big[4 * i] = big[2 * i]").load(big, k.mul(i, 2))
        k.store(big, [k.mul(i, 4)], v)
    return k


# the read only scales the add (linear), so Rule 1 lets it go; the add becomes an update of the
# element, which other particles' threads also update: Rule 2
@violating(2, "undecided", first="grid_m[base + offset] += w * p_mass",
           second="grid_m[base + offset] += w * p_mass")
def p2g_reading_grid():
    return _p2g(KB("p2g"), grid_reads=True)


@violating(1, first="y[j] = x[0] * x[0]", second="x[0] += 1.0")
def read_in_one_branch_written_in_other_in_later_iteration():
    k = KB()
    with k.serial(), k.at("for j in range(n):").loop(0, N) as j:
        then, other = k.if_(k.b.binary(Op.EQ, k.at("if j == 0:").i(j), k.i(0)))
        with then:
            v = k.at("y[j] = x[0] * x[0]").load(x, 0)
            k.at("y[j] = x[0] * x[0]").store(y, [j], k.fmul(v, v))
        with other:
            k.at("x[0] += 1.0").atomic("add", x, [0], 1.0)
    return k


# ---------------------------------------------------------------------------- rule checks
@pytest.mark.parametrize("build", ACCEPTED, ids=lambda f: f.__name__)
def test_accepted(build):
    kernel = build().kernel()
    assert check_kernel(kernel) == []


@pytest.mark.parametrize("build, rule, verdict, first, second", VIOLATING)
def test_violating(build, rule, verdict, first, second):
    k = build()
    kernel = k.kernel()
    worst = findings(summarize(kernel), kernel=kernel.name)[0]
    assert (worst.rule, worst.verdict) == (rule, verdict), worst.message
    with pytest.raises(AccessRuleError) as info:
        check_kernel(kernel)
    text = str(info.value)
    assert f"Rule {rule} " in text and f"'{kernel.name}'" in text
    assert "first access:" in text and "offending access:" in text and "earlier access:" in text
    for src in filter(None, (first, second)):
        assert f"{FILE}:{k.lines[src]}" in text and src in text
    if verdict == "undecided":
        assert "validation=True" in text
        assert check_kernel(kernel, allow_undecided=True)


def test_case_counts():
    assert len(ACCEPTED) >= 30 and len(VIOLATING) >= 30


def test_argument_value_proves_disjoint():
    kernel = offset_by_unknown_argument().kernel()
    assert check_kernel(kernel, arg_values=[N]) == []
    assert check_kernel(kernel, arg_values={0: -N}) == []
    for a in (0, 1, -3):
        with pytest.raises(AccessRuleError):
            check_kernel(kernel, arg_values=[a])


def test_doc_rule2_message_explains_the_fix():
    with pytest.raises(AccessRuleError) as info:
        check_kernel(doc_rule2().kernel())
    text = str(info.value)
    assert "Rule 2 (accumulate only)" in text and "field 'loss'" in text
    assert "updates loss in place" in text and "atomically adds to loss" in text
    assert "compute the whole value in a local" in text
    assert text.index("loss[None] *= x[i]") < text.index("Rule 2")  # offending line comes first


def test_neighbour_message_names_threads():
    with pytest.raises(AccessRuleError) as info:
        check_kernel(neighbour_read_parallel().kernel())
    text = str(info.value)
    assert "another thread of the parallel loop at line 11" in text and "double-buffer" in text


def test_rmw_is_labelled():
    kinds = [a.kind for a in summarize(rmw_in_place().kernel())]
    assert kinds == ["load", "rmw"]
    kinds = [a.kind for a in summarize(rmw_through_local().kernel())]
    assert kinds == ["load", "rmw"]
    kinds = [a.kind for a in summarize(scale_in_place().kernel())]
    assert kinds == ["rmw"]  # its read feeds no adjoint value


def test_summary_fields():
    accesses = summarize(time_stepped().kernel())
    load, store = accesses
    assert (load.kind, store.kind, load.thread_mode) == ("load", "store", "parallel")
    assert load.task_index == store.task_index == len(time_stepped().kernel().body) - 1
    assert load.position < store.position and load.loc.line == store.loc.line == 12
    assert str(store.indices[0] - load.indices[0]) == "1"


def test_same_element_possible_directly():
    read, write = summarize(neighbour_read_parallel().kernel())
    assert same_element_possible(read, write, same_thread=True) == Answer.NEVER
    assert same_element_possible(read, write, same_thread=False) == Answer.MAYBE
    load, rmw = summarize(rmw_in_place().kernel())
    assert same_element_possible(load, rmw, same_thread=True) == Answer.SAME
    assert same_element_possible(load, rmw, same_thread=False) == Answer.NEVER
    gathered = summarize(data_dependent_read_and_write().kernel())
    assert same_element_possible(gathered[1], gathered[2], True) == Answer.UNDECIDED


# ---------------------------------------------------------------------------- TapeState
def _advance():
    return time_stepped().kernel()


def test_tape_time_stepped_is_accepted():
    state, kernel = TapeState(), _advance()
    summary = summarize(kernel)
    for t in range(6):
        assert state.launch(kernel, "advance", summary, [t]) == []


def test_tape_rerun_on_read_row_is_refused():
    state, kernel = TapeState(), _advance()
    for t in range(3):
        state.launch(kernel, arg_values=[t])
    state.launch(kernel, arg_values=[2])  # writes x_t[3] again: nobody read it yet
    with pytest.raises(AccessRuleError) as info:
        state.launch(kernel, arg_values=[1])  # writes x_t[2], read by the launch with t=2
    text = str(info.value)
    assert "kernel 'advance' (launch 3, t=2) reads x_t" in text
    assert "kernel 'advance' (launch 5, t=1) stores to x_t" in text
    assert "elements in both: x_t[2, 0:16]" in text and f"{FILE}:12" in text


def test_tape_overwrite_of_unread_loss_is_accepted():
    state = TapeState()
    xs = fake("x")
    for scale, name in ((1.0, "compute_1"), (2.0, "compute_2"), (4.0, "compute_3")):
        k = KB(name)
        with k.serial():
            k.at(f"loss[None] = {scale} * x[None]").store(loss, [], k.fmul(k.load(xs), scale))
        state.launch(k.kernel())
    k = KB("use_loss")
    with k.serial():
        v = k.at("y[0] = loss[None] ** 2").load(loss)
        k.store(y, [0], k.fmul(v, v))
    state.launch(k.kernel())
    k = KB("compute_4")
    with k.serial():
        k.at("loss[None] = x[None]").store(loss, [], k.load(xs))
    with pytest.raises(AccessRuleError, match="kernel 'use_loss'"):
        state.launch(k.kernel())


def test_tape_python_write_after_read():
    state = TapeState()
    loc = Loc(FILE, 99, 4, None, "main", "    x.fill(0)")
    state.python_write(x, None, loc, "x.fill(0)")  # nothing read yet: fine
    state.launch(square_copy().kernel())
    state.python_write(y, 3, loc, "y[3] = 1")  # y was only written
    with pytest.raises(AccessRuleError) as info:
        state.python_write(x, 3, loc, "x[3] = 1")
    assert "Python-scope `x[3] = 1` writes x" in str(info.value) and "x[3]" in str(info.value)


def test_tape_unit_is_checked_as_a_whole():
    state, kernel = TapeState(), rmw_in_place().kernel()
    with state.unit("step", None):
        state.launch(kernel)  # in-place update inside a grad_replaced function: its own business
        state.launch(kernel)
    state.launch(square_copy().kernel())  # reads x
    with pytest.raises(AccessRuleError, match="inside `step`, kernel 'k'"), state.unit("step", None):
        state.launch(kernel)


def test_tape_data_dependent_read_is_undecided():
    gather_k, clear = square_gather().kernel(), KB("clear_x")
    with clear.at("for i in x:").pfor(N) as i:
        clear.at("x[i] = 0.0").store(x, [i], 0.0)
    state = TapeState()
    state.launch(gather_k)
    with pytest.raises(AccessRuleError, match="Rule 1"):  # whole field written: surely overlaps
        state.launch(clear.kernel())
    one = KB("set_one")
    with one.serial():
        one.at("x[3] = 0.0").store(x, [3], 0.0)
    state = TapeState(validation=True)
    state.launch(gather_k)
    found = state.launch(one.kernel())
    assert [f.verdict for f in found] == ["undecided"] and "validation=True" in found[0].message
    with pytest.raises(AccessRuleError, match="validation=True"):
        strict = TapeState()
        strict.launch(gather_k)
        strict.launch(one.kernel())


def test_tape_runs_the_in_kernel_check_with_arguments():
    state, kernel = TapeState(), offset_by_unknown_argument().kernel()
    state.launch(kernel, arg_values=[N])
    with pytest.raises(AccessRuleError, match="Rule 1"):
        TapeState().launch(kernel, arg_values=[1])
    assert TapeState(validation=True).launch(scatter_plain_store().kernel())


# ------------------------------------------------------- soundness against concrete execution
_VALUE = {Op.ADD: lambda a, b: a + b, Op.SUB: lambda a, b: a - b, Op.MUL: lambda a, b: a * b,
          Op.FLOORDIV: lambda a, b: a // b, Op.MOD: lambda a, b: a % b,
          Op.GT: lambda a, b: int(a > b)}


class _Run:
    """Executes a kernel's index arithmetic and field accesses in Python. `events` gets one
    (field name, element, kind, task, thread, step) per access; `thread` is None in serial tasks."""

    def __init__(self, args, data, linear=frozenset(), companion=frozenset()):
        self.args, self.data, self.env, self.events = args, data, {}, []
        self.linear = linear  # loads whose value no adjoint uses: no read to protect
        # loads whose value reaches only field writes, linearly: their adjoint adds to the
        # element's gradient, so only another thread's write (in no fixed order) can break them
        self.companion = companion

    def kernel(self, kernel):
        self.active = activity(kernel.body)
        self.used = {id(a) for s in walk(kernel.body) for a in s.args}
        for task, s in enumerate(kernel.body):
            if s.op == Op.FOR and s.attr.parallel:
                for t in range(self.env[id(s.args[0])], self.env[id(s.args[1])]):
                    self.env[id(s)], self.where = t, [task, t, 0]
                    self.block(s.body)
            else:
                self.where = [task, None, 0]
                self.block([s])
        return self.events

    def block(self, block):
        for s in block:
            if s.op == Op.FOR:
                for v in range(self.env[id(s.args[0])], self.env[id(s.args[1])]):
                    self.env[id(s)] = v
                    self.block(s.body)
            elif s.op in (Op.IF, Op.SERIAL):
                self.block(s.blocks[0] if s.op == Op.SERIAL or self.env[id(s.args[0])] else s.blocks[1])
            elif s.op in (Op.LOAD, Op.STORE, Op.ATOMIC):
                self.access(s)
            else:
                self.env[id(s)] = self.value(s)

    def value(self, s):
        get = [self.env.get(id(a)) for a in s.args]
        if s.op == Op.LOCAL_STORE:
            self.env[id(s.args[0])] = get[1]
        return {Op.CONST: lambda: s.attr, Op.ARG: lambda: self.args[s.attr],
                Op.LOCAL_LOAD: lambda: get[0], Op.ALLOCA: lambda: 0,
                Op.CAST: lambda: int(get[0])}.get(s.op, lambda: _VALUE.get(s.op, max)(*get))()

    def access(self, s):
        element = tuple(self.env[id(a)] for a in s.indices)
        kind = {Op.LOAD: "linload" if id(s) in self.companion else "load",
                Op.STORE: "store"}.get(s.op) or s.attr[1]
        self.where[2] += 1
        inert = s.op != Op.LOAD and id(s.value) not in self.active  # it writes no derivative
        if s.op != Op.LOAD or (id(s) in self.used and id(s) not in self.linear):
            # a load nothing uses (or only a linear in-place update) feeds no adjoint
            self.events.append((s.field.name, element, kind, *self.where, inert))
        self.env[id(s)] = self.data.get(element[0] % 8, 0) if s.field.dtype is T.i32 else 1.0


_LOADS = ("load", "linload")


def _truth(events) -> set:
    """The rules broken by an execution: per element, a write after a read (rule 1), a write
    other than an add after a write, or any but a max or store after a max (rule 2) unless the
    first write carries no derivative (and is no max) or the second is a plain store, and the
    second follows it in order (same thread, or a later task);
    'after' is unordered between threads."""
    broken, by_element = set(), {}
    for e in events:
        by_element.setdefault(e[:2], []).append(e)
    for evs in by_element.values():
        for a, b in ((a, b) for a in evs for b in evs if a is not b):
            later = b[3] > a[3] if a[3] != b[3] else (a[4] != b[4] or b[5] > a[5])
            if later and b[2] not in _LOADS and (a[2] == "load" or (
                    a[2] == "linload" and a[3] == b[3] and a[4] != b[4])):
                broken.add(1)
            ordered = a[3] != b[3] or a[4] == b[4]
            if later and a[2] not in _LOADS and b[2] not in _LOADS \
                    and (b[2] != "add" or a[2] == "max") and not a[2] == b[2] == "max" \
                    and not (((a[6] and a[2] != "max") or b[2] == "store") and ordered):
                broken.add(2)
    return broken


class _RandomKernel:
    """Small random kernels over fields fx, fx2 (indices from loop digits, inner loops, an
    argument, loaded data, locals) with branches, nested loops, and all access kinds."""

    fx, fx2 = fake("fx", (64,)), fake("fx2", (64, 64))
    fidx = fake("fidx", (8,), dtype=T.i32, needs_grad=False)
    fsink = fake("fsink", (1,))  # loaded values go here: a load nothing uses is no read
    fw = fake("fw", (1,))  # only read: a factor that needs a gradient (`x[i] *= fw[0]`)

    def __init__(self, rng):
        self.rng, self.k = rng, KB("fuzz", ["a"])
        self.linear: set[int] = set()  # the loads of `x[i] *= 2`: no adjoint uses their value
        self.companion: set[int] = set()  # loads added to fsink (linearly, factor 1)
        self.a = self.k.arg(0)
        for _ in range(rng.randint(1, 2)):
            self.task(rng.choice(["parallel", "parallel", "ndrange", "serialize", "serial"]))

    def task(self, mode):
        k, rng = self.k, self.rng
        if mode == "serial":
            with k.serial():
                self.stmts([], 0)
        elif mode == "ndrange":
            with k.pfor(12) as t:
                self.stmts(k.digits(t, (3, 4), (rng.choice([0, 1]), 0)), 0)
        else:
            with k.loop(rng.choice([0, 1]), rng.choice([5, 6]), mode == "parallel",
                        mode == "serialize") as i:
                self.stmts([i], 0)

    def stmts(self, variables, depth):
        for _ in range(self.rng.randint(1, 3)):
            self.stmt(variables, depth)

    def stmt(self, variables, depth):
        k, r = self.k, self.rng.random()
        if r < 0.15 and depth < 2:
            with k.loop(self.rng.choice([0, 1]), self.rng.choice([3, 4])) as j:
                self.stmts(variables + [j], depth + 1)
        elif r < 0.22 and variables:
            then, other = k.if_(k.b.binary(Op.GT, self.rng.choice(variables), k.i(2)))
            for branch in (then, other):
                with branch:
                    self.stmt(variables, depth + 1)
        else:
            self.access(variables)

    def access(self, variables):
        k, rng = self.k, self.rng
        f = self.fx2 if rng.random() < 0.3 else self.fx
        ix = [self.index(variables) for _ in f.storage_shape]
        kind = rng.choice(["load", "load", "store", "add", "max", "rmw", "scale"])
        if kind == "load":
            old = k.load(f, *ix)
            self.companion.add(id(old))
            k.atomic("add", self.fsink, [k.i(0)], old)
        elif kind == "rmw":
            k.store(f, ix, k.b.mul(k.load(f, *ix), k.load(self.fw, k.i(0))))
        elif kind == "scale":
            old = k.load(f, *ix)
            self.linear.add(id(old))
            k.store(f, ix, k.fmul(old, 2.0))
        elif kind == "store":
            k.store(f, ix, 1.0)
        else:
            k.atomic(kind, f, ix, 1.0)

    def index(self, variables):
        k, rng = self.k, self.rng
        c, form = rng.choice([0, 0, 1, -1, 2, 3]), rng.choice(
            ["v", "v", "c", "2v", "v//2", "v%3", "v+a", "load", "v+w", "local"])
        if not variables or form == "c":
            return k.i(c + 5)
        v, w = rng.choice(variables), rng.choice(variables)
        simple = {"v": lambda: k.add(v, c), "2v": lambda: k.add(k.mul(v, 2), c),
                  "v//2": lambda: k.op(Op.FLOORDIV, v, 2), "v%3": lambda: k.op(Op.MOD, v, 3),
                  "v+a": lambda: k.add(v, self.a), "v+w": lambda: k.add(v, w),
                  "load": lambda: k.load(self.fidx, k.op(Op.MOD, v, 8))}
        return simple[form]() if form in simple else self.local(v, c)

    def local(self, v, c):
        k = self.k
        var = k.b.alloca(T.i32)
        k.b.local_store(var, k.add(v, c))
        if self.rng.random() < 0.3:
            then, _ = k.if_(k.b.binary(Op.GT, v, k.i(2)))
            with then:
                k.b.local_store(var, v)
        return k.b.local_load(var)


def test_random_kernels_are_judged_soundly():
    """Whenever an execution breaks a rule, the checker reports it (violation or undecided)."""
    rng = random.Random(1234)
    broken = reported = 0
    for _ in range(200):
        gen = _RandomKernel(rng)
        kernel, args = gen.k.kernel(), [rng.choice([0, 1, 3, 7])]
        events = _Run(args, {q: rng.randint(0, 9) for q in range(8)}, gen.linear,
                      gen.companion).kernel(kernel)
        check = KernelCheck(kernel)
        found = check.judge(args)
        rules = {f.rule for f in found}
        assert _truth(events) <= rules, print_kernel(kernel)
        broken += bool(_truth(events))
        reported += bool(rules)
        # judging only the pairs flagged with symbolic arguments loses nothing
        every_pair = findings(check.accesses, {0: args[0]}, kernel.name)
        assert {(f.rule, f.first, f.second, f.verdict) for f in every_pair} == \
            {(f.rule, f.first, f.second, f.verdict) for f in found}
    assert 60 < broken <= reported < 200


def test_random_launch_sequences_are_judged_soundly():
    """On a Tape of statically clean random kernels, a launch that writes an element an earlier
    launch read is always refused before it runs."""
    rng, refused = random.Random(99), 0
    for _ in range(50):
        kernels = []
        while len(kernels) < 3:
            gen = _RandomKernel(rng)
            kernel = gen.k.kernel()
            kernels += [(kernel, gen)] if not KernelCheck(kernel).symbolic else []
        data, state, reads = {q: rng.randint(0, 9) for q in range(8)}, TapeState(), set()
        for _ in range(6):
            (kernel, gen), args = rng.choice(kernels), [rng.choice([0, 1, 2, 3])]
            events = _Run(args, data, gen.linear, gen.companion).kernel(kernel)
            broken = bool(_truth(events)) or any(e[2] not in _LOADS and e[:2] in reads for e in events)
            try:
                state.launch(kernel, arg_values=args)
            except AccessRuleError:
                refused += 1
                break
            assert not broken, print_kernel(kernel)
            reads |= {e[:2] for e in events if e[2] == "load"}
    assert refused > 10


def test_tape_ndrange_time_steps_name_the_rows():
    x3 = fake("x3", (8, 4, 4))
    k = KB("diffuse", ["t"])
    t = k.arg(0)
    with k.at("for i, j in ndrange(4, 4):").pfor(16) as q:
        i, j = k.digits(q, (4, 4))
        v = k.at("x3[t + 1, i, j] = x3[t, i, j] ** 2").load(x3, t, i, j)
        k.store(x3, [k.add(t, 1), i, j], k.fmul(v, v))
    kernel, state = k.kernel(), TapeState(validation=True)
    for step in (0, 1, 2):
        assert state.launch(kernel, arg_values={0: step}) == []
    with pytest.raises(AccessRuleError) as info:  # exact boxes: a violation even with validation
        state.launch(kernel, arg_values={0: 1})
    assert "elements in both: x3[2, 0:4, 0:4]" in str(info.value)
    assert "launch 3, t=2) reads x3" in str(info.value)


def test_float_arguments_are_not_substituted():
    kernel = offset_by_unknown_argument().kernel()
    with pytest.raises(AccessRuleError):
        check_kernel(kernel, arg_values=[16.0])


def test_thread_count_from_the_argument():
    k = KB("first", ["n"])
    with k.at("for i in range(n):").pfor(k.arg(0)):
        k.at("y[0] = x[0]").store(y, [0], k.load(x, 0))
    kernel = k.kernel()
    assert check_kernel(kernel, arg_values=[1]) == []
    for n in (None, [2]):
        with pytest.raises(AccessRuleError, match="another thread"):
            check_kernel(kernel, arg_values=n)


def _scaled_copy(squared: bool):
    k = KB()
    with k.at("for i in x:").pfor(N) as i:
        v = k.at("y[i] += x[i] * c").load(x, i)
        k.b.atomic("add", y, [k.i(i)], k.fmul(v, v if squared else 2.0))
    return k


def test_free_reads_are_marked_and_not_logged_on_a_tape():
    # gh-refused2: `y[i] += x[i] * 2` reads x linearly with a constant factor: no adjoint uses
    # the value, so a later launch may overwrite x; `x[i] * x[i]`, or a factor that needs a
    # gradient (`x[i] * loss[None]`), keeps the read
    clear = KB("clear_x")
    with clear.at("for i in x:").pfor(N) as i:
        clear.at("x[i] = 0.0").store(x, [i], 0.0)
    k = _scaled_copy(False)
    loads = [a for a in summarize(k.kernel()) if a.kind == "load"]
    assert [a.free for a in loads] == [True]
    state = TapeState()
    state.launch(k.kernel())
    assert state.launch(clear.kernel()) == []
    for other in (_scaled_copy(True), None):
        if other is None:
            other = KB()
            with other.at("for i in x:").pfor(N) as i:
                v = other.at("y[i] += x[i] * loss[None]").load(x, i)
                other.b.atomic("add", y, [other.i(i)], other.fmul(v, other.load(loss)))
        kern = other.kernel()
        assert not [a for a in summarize(kern) if a.kind == "load" and a.field is x][0].free
        state = TapeState()
        state.launch(kern)
        with pytest.raises(AccessRuleError, match="Rule 1"):
            state.launch(clear.kernel())
