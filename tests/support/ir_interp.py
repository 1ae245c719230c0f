"""A reference interpreter for fieldsim IR, for tests of passes and AD (no LLVM involved).

`run(kernel, args, ...)` executes any `Kernel` (frontend form, offloaded, lowered, adjoint with
STACK ops) over `FakeField`s, whose data are numpy arrays. Values are numpy scalars of the
statement's dtype, so f32 and f64 round as they would compiled; ints wrap; FLOORDIV and MOD
follow Python; integer DIV truncates toward zero. Parallel FOR iterations run one after the
other, optionally in a shuffled order (`shuffle=np.random.Generator`) to expose order
dependence. RAND mirrors the codegen's keying: a hash of (seed, thread, counter) where the
thread is the index of the task's outermost loop (0 for SERIAL) and the counter restarts at
every outermost iteration. AD stacks are sized from `meta["stack_capacities"]` with
`ad_stack_size` as the default; an overflow raises `ADStackOverflowError` and the peak depth
of every stack is kept in `Interp.stack_peak` (by capacity key).
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import ADStackOverflowError
from fieldsim.ir.ir import Kernel, Op, Stmt
from fieldsim.lang import types as T

_M64 = (1 << 64) - 1


class FakeField:
    """What the IR (and the access-rule checker, and the GUI) needs of a field, backed by a
    numpy array `arr`. The one fake field of the tests. `n`: a vector field's component count,
    the last storage axis (as placed fields store it) beyond the index `shape`."""

    def __init__(self, name, dtype=T.f64, shape=(), grad=False, dual=False, n=None):
        self.name, self.dtype, self.shape = name, dtype, tuple(shape)
        self.storage_shape = self.shape + ((n,) if n else ())
        self.arr = np.zeros(self.storage_shape, dtype=dtype.np)
        self.grad = FakeField(name + ".grad", dtype, shape, n=n) if grad else None
        self.dual = FakeField(name + ".dual", dtype, shape, n=n) if dual else None

    @classmethod
    def of(cls, values, name="a"):
        """A fake field holding `values` (its dtype and shape)."""
        a = np.asarray(values)
        f = cls(name, T.from_numpy(a.dtype), a.shape)
        f.arr[...] = a
        return f

    def to_numpy(self):
        return self.arr.copy()

    @property
    def adjoint(self):  # fieldsim's name for the placed grad twin (None when there is none)
        return self.grad

    @property
    def tangent(self):
        return self.dual

    def __repr__(self):
        return f"FakeField({self.name})"


def _mix(z: int) -> int:
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _width_mask(x) -> int:
    return (1 << (8 * np.asarray(x).itemsize)) - 1


def _cdiv(a, b):
    if isinstance(a, np.floating):
        return a / b
    q = abs(int(a)) // abs(int(b))
    return q if (a < 0) == (b < 0) else -q


_UN = {Op.NEG: np.negative, Op.ABS: np.abs, Op.SQRT: np.sqrt, Op.SIN: np.sin, Op.COS: np.cos,
       Op.TAN: np.tan, Op.ASIN: np.arcsin, Op.ACOS: np.arccos, Op.ATAN: np.arctan,
       Op.TANH: np.tanh, Op.EXP: np.exp, Op.LOG: np.log, Op.FLOOR: np.floor, Op.CEIL: np.ceil,
       Op.ROUND: np.round, Op.NOT: lambda x: x == 0, Op.BIT_NOT: np.invert, Op.CAST: lambda x: x,
       Op.POPCNT: lambda x: type(x)(bin(int(x) & _width_mask(x)).count("1")),
       Op.CLZ: lambda x: type(x)(8 * x.itemsize - (int(x) & _width_mask(x)).bit_length())}
_BIN = {Op.ADD: np.add, Op.SUB: np.subtract, Op.MUL: np.multiply, Op.DIV: _cdiv,
        Op.FLOORDIV: np.floor_divide, Op.MOD: np.mod, Op.POW: np.power, Op.ATAN2: np.arctan2,
        Op.MIN: np.minimum, Op.MAX: np.maximum, Op.BIT_AND: np.bitwise_and,
        Op.BIT_OR: np.bitwise_or, Op.BIT_XOR: np.bitwise_xor, Op.SHL: np.left_shift,
        Op.SHR: np.right_shift, Op.LT: np.less, Op.LE: np.less_equal, Op.GT: np.greater,
        Op.GE: np.greater_equal, Op.EQ: np.equal, Op.NE: np.not_equal}
_ATOM = {"add": np.add, "sub": np.subtract, "min": np.minimum, "max": np.maximum,
         "and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor, "mul": np.multiply,
         "xchg": lambda old, new: new}


class _Signal(Exception):
    def __init__(self, op):
        self.op = op


class Interp:
    def __init__(self, kernel: Kernel, args=(), seed=0, shuffle=None, ad_stack_size=64):
        self.k, self.args, self.seed = kernel, list(args), seed
        self.shuffle, self.default = shuffle, ad_stack_size
        self.env: dict[int, object] = {}
        self.thread, self.counter, self.ret = 0, 0, None
        self.stack_peak: dict[int, int] = {}

    def run(self):
        with np.errstate(all="ignore"):
            for s in self.k.body:
                self.top(s)
        return self.ret

    def top(self, s: Stmt):
        if s.op == Op.SERIAL:
            self.thread, self.counter = 0, 0
            self.guarded(s.body)
        elif s.op == Op.FOR:
            b, e = (int(self.env[id(a)]) for a in s.args)
            order = list(range(b, e))
            if getattr(s.attr, "reverse", False):
                order.reverse()
            if s.attr.parallel and self.shuffle is not None:
                self.shuffle.shuffle(order)
            for t in order:
                self.thread, self.counter = t, 0
                self.env[id(s)] = np.int32(t)
                self.guarded(s.body)
        else:
            self.stmt(s)

    def guarded(self, block):
        try:
            self.block(block)
        except _Signal as sig:  # RETURN ends the task; CONTINUE, one top-level iteration
            if sig.op == Op.BREAK:
                raise AssertionError("BREAK escaped its task")

    def block(self, block):
        for s in block:
            self.stmt(s)

    def val(self, s: Stmt):
        return self.env[id(s)]

    def stmt(self, s: Stmt):
        handler = getattr(self, "op_" + s.op.name.lower(), None)
        if handler is not None:
            v = handler(s)
        elif s.op in _UN:
            v = _UN[s.op](self.val(s.args[0]))
        else:
            v = _BIN[s.op](*(self.val(a) for a in s.args))
        if v is not None and s.dtype is not None:
            self.env[id(s)] = s.dtype.np.type(v)

    # ---- leaves and locals --------------------------------------------------------------------
    def op_const(self, s):
        return s.attr

    def op_arg(self, s):
        return self.args[s.attr]

    def op_rand(self, s):
        self.counter += 1
        z = self.seed ^ ((self.thread * 0x9E3779B97F4A7C15) & _M64)
        z = _mix(_mix((z + self.counter * 0xD1B54A32D192ED03) & _M64))
        if s.dtype is T.f64:
            return (z >> 11) * 2.0 ** -53
        if s.dtype.is_float:
            return (z >> 40) * 2.0 ** -24
        return (z >> 33) & ((1 << s.dtype.bits) - 1)

    def op_select(self, s):
        c, a, b = (self.val(x) for x in s.args)
        return a if c else b

    def op_alloca(self, s):
        self.env[id(s)] = [s.dtype.np.type(0)]

    def op_local_load(self, s):
        return self.val(s.args[0])[0]

    def op_local_store(self, s):
        var, v = s.args
        self.val(var)[0] = v.dtype.np.type(self.val(v))

    # ---- global memory ------------------------------------------------------------------------
    def index(self, s: Stmt):
        shape = s.field.storage_shape
        idx = tuple(int(self.val(a)) for a in s.indices)
        if any(not 0 <= i < n for i, n in zip(idx, shape)):
            raise IndexError(f"{s.field.name}{list(idx)} out of range {shape} at {s.loc}")
        return idx

    def op_load(self, s):
        return s.field.arr[self.index(s)]

    def op_store(self, s):
        s.field.arr[self.index(s)] = self.val(s.value)

    def op_atomic(self, s):
        field, kind = s.attr
        idx = self.index(s)
        old = field.arr[idx]
        field.arr[idx] = _ATOM[kind](old, self.val(s.value))
        return old

    # ---- control flow -------------------------------------------------------------------------
    def op_for(self, s):
        b, e = (int(self.val(a)) for a in s.args)
        for t in (range(e - 1, b - 1, -1) if getattr(s.attr, "reverse", False) else range(b, e)):
            self.env[id(s)] = np.int32(t)
            try:
                self.block(s.body)
            except _Signal as sig:
                if sig.op == Op.BREAK:
                    break
                if sig.op != Op.CONTINUE:
                    raise

    def op_loop(self, s):
        while True:
            try:
                self.block(s.body)
            except _Signal as sig:
                if sig.op == Op.BREAK:
                    break
                if sig.op != Op.CONTINUE:
                    raise

    def op_if(self, s):
        self.block(s.blocks[0] if self.val(s.args[0]) else s.blocks[1])

    def op_serial(self, s):
        self.block(s.body)

    def op_custom_grad(self, s):
        self.block(s.blocks[0])  # forward code; the adjoint block is for reverse AD only

    def op_break(self, s):
        raise _Signal(Op.BREAK)

    def op_continue(self, s):
        raise _Signal(Op.CONTINUE)

    def op_return(self, s):
        self.ret = self.val(s.args[0])
        raise _Signal(Op.RETURN)

    def op_assert(self, s):
        if not self.val(s.args[0]):
            raise AssertionError(s.attr)

    # ---- AD stacks ----------------------------------------------------------------------------
    def op_stack_alloca(self, s):
        formula = self.k.meta["stack_capacities"][s.attr.capacity_key]
        cap = formula.evaluate(self.args, self.default)
        self.env[id(s)] = (s.attr, cap, [], formula.loc or s.attr.loc)

    def op_stack_push(self, s):
        info, cap, items, loc = self.val(s.args[0])
        if len(items) >= cap:
            raise ADStackOverflowError(f"AD stack for {info.name} overflowed {cap} entries", loc)
        items.append(self.val(s.args[1]))
        key = info.capacity_key
        self.stack_peak[key] = max(self.stack_peak.get(key, 0), len(items))

    def op_stack_top(self, s):
        items = self.val(s.args[0])[2]
        assert items, f"STACK_TOP of an empty stack at {s.loc}"
        return items[-1]

    def op_stack_pop(self, s):
        items = self.val(s.args[0])[2]
        assert items, f"STACK_POP of an empty stack at {s.loc}"
        items.pop()


def run(kernel: Kernel, args=(), **options) -> Interp:
    """Execute `kernel` once; returns the interpreter (its `ret`, `stack_peak`)."""
    it = Interp(kernel, args, **options)
    it.run()
    return it
