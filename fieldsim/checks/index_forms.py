"""Index forms of one kernel's IR values, for the access-rule checker (see index_expr).

Contract: analysis only; reads IR, never mutates it. `Forms(sites, stores).form(stmt)` is the
`Affine` of an integer value (loop indices and their digits, kernel arguments, constants, and
affine arithmetic over them; anything else an `Opaque` atom). `Forms.guards(path)` is what the
`if`s on a statement's path guarantee where it runs: integer comparisons of such forms, through
`and`, `or` and `not`, as forms g >= 0 (the rest is dropped: guards only ever narrow).
"""
from __future__ import annotations

from typing import NamedTuple

from fieldsim.checks.index_expr import Affine, Arg, Guard, Opaque, Var, guard_limits
from fieldsim.ir.ir import Op, Stmt


# ------------------------------------------------------------------------------------ forms
class Site(NamedTuple):
    """Where a statement sits: program order, top-level task, enclosing blocks and loops."""

    position: int
    task: int
    path: tuple  # ((control stmt, block index), ...), outermost first
    loops: tuple  # enclosing FOR/LOOP statements, outermost first


class Forms:
    """Index forms of the IR values of one kernel.

    `sites` maps id(stmt) to its `Site`; `stores` maps id(alloca) to its LOCAL_STOREs. A local is
    followed to its stored value only when it has one store and that store dominates the load.
    """

    def __init__(self, sites: dict, stores: dict):
        self.sites, self.stores, self.memo = sites, stores, {}

    def form(self, s: Stmt) -> Affine:
        key = id(s)
        if key not in self.memo:
            self.memo[key] = self._form(s)
        return self.memo[key]

    def opaque(self, s: Stmt, bounds: tuple | None = None) -> Affine:
        return Affine.of(Opaque(s, self.sites[id(s)].loops if id(s) in self.sites else (), bounds))

    def _form(self, s: Stmt) -> Affine:
        integral = s.dtype is None or s.dtype.is_int
        if s.op == Op.CONST and integral:
            return Affine(s.attr)
        if s.op == Op.ARG and integral:
            return Affine.of(Arg(s.attr))
        if s.op == Op.FOR:
            return Affine.of(self.loop_var(s))
        if s.op in (Op.ADD, Op.SUB, Op.NEG, Op.MUL) and integral:
            return self._unwrapped(s, self._arith(s), None)
        if s.op == Op.CAST and integral and s.args[0].dtype is not None and s.args[0].dtype.is_int:
            return self._unwrapped(s, self.form(s.args[0]), _int_range(s.args[0].dtype))
        if s.op in (Op.FLOORDIV, Op.MOD) and integral:
            return self._digit(s)
        if s.op == Op.LOCAL_LOAD:
            return self._local(s)
        special = self._special(s) if integral else None
        if special is not None:
            return special
        return self.opaque(s, self._interval(s) if integral else None)

    def _unwrapped(self, s: Stmt, f: Affine, source: tuple | None) -> Affine:
        """`f` where the machine value is the exact one: else (it may leave `s`'s type and
        wrap, `a * 2**32`, or a cast may truncate, `ti.cast(a * 128, ti.u8)`) opaque, lest
        `if a * 2**32 == 0:` read as `a == 0` (all values of a pass). `source`: the range of a
        cast's operand type, enough when the target holds it."""
        target = _int_range(s.dtype)
        if target is None:
            return f
        r = f.bounds()
        if r is None:
            r = source
        if r is None:  # unknown atoms (kernel arguments): at least the constants must fit
            known = (f.const, *f.terms.values())
            r = (min(known), max(known))
        if target[0] <= r[0] and r[1] <= target[1]:
            return f
        return self.opaque(s)

    def _special(self, s: Stmt) -> Affine | None:
        """Integer ops whose form a condition or their operands still pin down: a clamp the
        `if`s make redundant, a select of two equal forms, `x ^ c`."""
        if s.op in (Op.MIN, Op.MAX):
            side = self._guarded_side(s)
            return None if side is None else self.form(side)
        if s.op == Op.SELECT and self.form(s.args[1]) == self.form(s.args[2]):
            return self.form(s.args[1])
        if s.op == Op.BIT_XOR:
            return self._xor(s)
        return None

    def _xor(self, s: Stmt) -> Affine | None:
        """`x ^ c` (a constant c >= 0) permutes the integers: one-to-one in x's loop index
        (`y[n + (i ^ 1)]` swaps neighbours), and in 0..2^k-1 for x in 0..hi (k: the bits of
        max(hi, c))."""
        const = next((a for a in s.args if a.op == Op.CONST and a.attr >= 0), None)
        if const is None:
            return None
        x = self.form(s.args[1] if s.args[0] is const else s.args[0])
        r = x.bounds()
        bounds = (0, (1 << max(r[1], const.attr).bit_length()) - 1) if r and r[0] >= 0 else None
        site = self.sites.get(id(s))
        return Affine.of(Opaque(s, site.loops if site else (), bounds, _injective_in(x)))

    def _limits(self, s: Stmt, extra: list | tuple = ()) -> dict | None:
        """The loop-index intervals where `s` runs (its `if`s, and `extra` guards)."""
        site = self.sites.get(id(s))
        return guard_limits(tuple(extra) + (self.guards(site.path) if site else ()), None)

    def _guarded_side(self, s: Stmt) -> Stmt | None:
        """`ti.max(a, b)` is `a` wherever the `if`s around it make a >= b (`ti.min`, `b`): the
        clamp an `if i >= n:` makes redundant leaves the index affine (one element a thread)."""
        limits = self._limits(s) if len(s.args) == 2 else None
        r = (self.form(s.args[0]) - self.form(s.args[1])).bounds(None, limits) if limits else None
        if r is None:
            return None
        if r[0] >= 0:
            return s.args[0] if s.op == Op.MAX else s.args[1]
        if r[1] <= 0:
            return s.args[1] if s.op == Op.MAX else s.args[0]
        return None

    def _select_spans(self, s: Stmt) -> list:
        """`ti.select(c, a, b)` takes `a` only where c holds, and `b` where it does not: each
        branch's interval under that condition (a branch never taken adds nothing)."""
        spans = []
        for truth, branch in ((True, s.args[1]), (False, s.args[2])):
            limits = self._limits(s, self.condition(s.args[0], truth))
            if limits is not None:
                spans.append(self.form(branch).bounds(None, limits))
        return spans

    def _interval(self, s: Stmt) -> tuple | None:
        """Where an integer op the forms cannot follow still stays: a clamp
        `ti.max(i - 1, 0)`, `ti.min(i + 1, n - 1)`, `abs`, `select`, `i & 3`, `i >> 1` of
        bounded operands (so a stencil's clamped read is told apart from a write past it)."""
        if s.op == Op.BIT_AND:
            masks = [a.attr for a in s.args if a.op == Op.CONST and a.attr >= 0]
            return (0, min(masks)) if masks else None
        spans = self._select_spans(s) if s.op == Op.SELECT else [
            self.form(a).bounds() for a in s.args]
        if not spans or None in spans:
            return None
        return _INTERVALS[s.op](spans) if s.op in _INTERVALS else None

    def _arith(self, s: Stmt) -> Affine:
        a = self.form(s.args[0])
        if s.op == Op.NEG:
            return a.scale(-1)
        b = self.form(s.args[1])
        if s.op == Op.ADD:
            return a + b
        if s.op == Op.SUB:
            return a - b
        if a.is_const():
            return b.scale(a.const)
        if b.is_const():
            return a.scale(b.const)
        return self._arg_product(s, a, b)

    def _arg_product(self, s: Stmt, a: Affine, b: Affine) -> Affine:
        """`a * b` of two forms of kernel arguments only: an atom each launch makes constant."""
        machine = _int_range(s.dtype)
        if machine is None or not all(isinstance(t, Arg) for t in (*a.terms, *b.terms)):
            return self.opaque(s)
        site = self.sites.get(id(s))
        return Affine.of(Opaque(s, site.loops if site else (), product=(a, b, machine)))

    def loop_var(self, loop: Stmt, stride: int = 1, size: int | None = None) -> Var:
        """The atom of a FOR's index (or of one of its digits), with the loop's bounds."""
        site = self.sites.get(id(loop))
        scope = (site.loops if site else ()) + (loop,)
        bounds = (self.form(loop.args[0]), self.form(loop.args[1])) if loop.args else None
        return Var(loop, stride, size, scope, bounds)

    def _digit(self, s: Stmt) -> Affine:
        """`i // c` and `i % c` of a loop index (or of one of its digits): a new digit atom."""
        x, c = self.form(s.args[0]), self.form(s.args[1])
        if s.op == Op.MOD and c.terms and all(isinstance(a, Arg) for a in c.terms):
            site = self.sites.get(id(s))
            return Affine.of(Opaque(s, site.loops if site else (), modulus=c))
        if not c.is_const() or c.const <= 0:
            return self.opaque(s)
        c = c.const
        if x.is_const():
            return Affine(x.const // c if s.op == Op.FLOORDIV else x.const % c)
        x = self.merge_digits(x)
        atom = next(iter(x.terms)) if len(x.terms) == 1 else None
        if not isinstance(atom, Var) or x.terms[atom] != 1 or x.const != 0:
            return self._bounded(s, c, _rotated_loop(x, c) if s.op == Op.MOD else None)
        if s.op == Op.FLOORDIV and (atom.size is None or atom.size % c == 0):
            # `(i % 8) // 4` of an ndrange's digit is `(i // 4) % 2`
            size = None if atom.size is None else atom.size // c
            return Affine.of(self.loop_var(atom.loop, atom.stride * c, size))
        if s.op == Op.MOD and (atom.size is None or atom.size % c == 0):
            return Affine.of(self.loop_var(atom.loop, atom.stride, c))
        return self._bounded(s, c)

    def _bounded(self, s: Stmt, c: int, one_to_one: Var | None = None) -> Affine:
        """`x % c` of any integer x lies in 0..c-1 (Python's modulo), so `y[(i + 1) % 4]` is
        never `y[i + 4]`, even though which element it is stays unknown."""
        if s.op != Op.MOD:
            return self.opaque(s)
        site = self.sites.get(id(s))
        return Affine.of(Opaque(s, site.loops if site else (), (0, c - 1), one_to_one))

    def merge_digits(self, x: Affine) -> Affine:
        """Recombine digits of one loop index: `(i//s)%c + c*((i//(s*c))%m)` is `(i//s)%(c*m)`
        (with m None: no modulo), for integer `i` and positive `s`, `c` (floor semantics). So the
        flat component index `2*j + k` of `m[i][j, k]`, with j, k the digits of an ndrange loop,
        is the loop index again, and `(2*j + k) // 2`, `(2*j + k) % 2` are j and k."""
        terms = dict(x.terms)
        merged = True
        while merged:
            merged = False
            for a, ca in terms.items():
                if not isinstance(a, Var) or a.size is None:
                    continue
                for b, cb in terms.items():
                    if (isinstance(b, Var) and b is not a and b.loop is a.loop
                            and b.stride == a.stride * a.size and cb == ca * a.size):
                        size = None if b.size is None else a.size * b.size
                        del terms[a], terms[b]
                        whole = self.loop_var(a.loop, a.stride, size)
                        terms[whole] = terms.get(whole, 0) + ca
                        merged = True
                        break
                if merged:
                    break
        return Affine(x.const, terms)

    def _local(self, s: Stmt) -> Affine:
        stores = self.stores.get(id(s.args[0]), [])
        if len(stores) == 1 and self._dominates(stores[0], s):
            return self.form(stores[0].value)
        return self.opaque(s)

    def guards(self, path: tuple) -> tuple[Affine, ...]:
        """What the `if`s on `path` guarantee where a statement under them runs: forms g with
        g >= 0 (integer comparisons of index forms, through `and`, `or` and `not`)."""
        out: list[Affine] = []
        for stmt, block in path:
            if stmt.op == Op.IF:
                out += self.condition(stmt.args[0], block == 0)
        return tuple(out)

    def condition(self, c: Stmt, truth: bool) -> list[Affine]:
        """Forms g >= 0 that hold wherever `c` is true (`truth`) or false; [] if unknown."""
        if c.op in (Op.NE, Op.EQ) and _is_zero(c.args[1]) and _boolean(c.args[0]):
            return self.condition(c.args[0], truth == (c.op == Op.NE))  # `cond != 0`
        if c.op == Op.NOT:
            return self.condition(c.args[0], not truth)
        if c.op in (Op.BIT_AND, Op.BIT_OR) and all(_boolean(a) for a in c.args):
            both = (c.op == Op.BIT_AND) == truth  # `and` true, or `or` false: both operands
            return [g for a in c.args for g in self.condition(a, truth)] if both else []
        if c.op in COMPARE and all(a.dtype is not None and a.dtype.is_int for a in c.args):
            x, y = (self.form(a) for a in c.args)
            operands = tuple((f, _int_range(a.dtype)) for f, a in zip((x, y), c.args))
            gs = COMPARE[c.op](x, y) if truth else COMPARE[NEGATE[c.op]](x, y)
            return [Guard(g, operands) for g in gs]
        return []

    def _dominates(self, a: Stmt, b: Stmt) -> bool:
        sa, sb = self.sites.get(id(a)), self.sites.get(id(b))
        if sa is None or sb is None or sa.position >= sb.position:
            return False
        return sb.path[:len(sa.path)] == sa.path


def _int_range(dtype) -> tuple | None:
    """Inclusive value range of an integer type (None: not a known integer type)."""
    if dtype is None or not dtype.is_int:
        return None
    if dtype.is_signed:
        return -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1
    return 0, (1 << dtype.bits) - 1


def _rotated_loop(x: Affine, c: int) -> Var | None:
    """The loop index (or digit) `v` that makes `(v + k) % c` one-to-one (k: constants and
    kernel arguments): `v` the whole index, with constant bounds spanning at most c values (a
    rotation: `y[(i + 1) % n]` over range(n)), or a digit of an ndrange of size c
    (`z[i, (j + 1) % n]` over ndrange(m, n))."""
    loops = [a for a in x.terms if not isinstance(a, Arg)]
    atom = loops[0] if len(loops) == 1 else None
    if not isinstance(atom, Var) or x.terms[atom] != 1:
        return None
    if atom.size is not None:
        return atom if atom.size == c else None
    if not atom.full or atom.bounds is None:
        return None
    begin, end = atom.bounds
    if not (begin.is_const() and end.is_const()) or end.const - begin.const > c:
        return None
    return atom


def _injective_in(x: Affine) -> Var | None:
    """The loop index (or digit) that `x` (an affine form with kernel arguments) is a
    one-to-one function of, if any."""
    loops = [a for a in x.terms if not isinstance(a, Arg)]
    return loops[0] if len(loops) == 1 and isinstance(loops[0], Var) else None


def _shift(spans):
    (lo, hi), (k, k2) = spans
    return (lo >> k, hi >> k) if lo >= 0 and k == k2 and k >= 0 else None


def _abs(spans):
    (lo, hi), = spans
    return (0 if lo <= 0 <= hi else min(abs(lo), abs(hi)), max(abs(lo), abs(hi)))


_INTERVALS = {  # inclusive operand intervals -> the result's
    Op.MIN: lambda spans: (min(r[0] for r in spans), min(r[1] for r in spans)),
    Op.MAX: lambda spans: (max(r[0] for r in spans), max(r[1] for r in spans)),
    Op.SELECT: lambda spans: (min(r[0] for r in spans), max(r[1] for r in spans)),
    Op.ABS: _abs,
    Op.SHR: _shift,
}


# ----------------------------------------------------------------------------- conditions
COMPARE = {  # (x, y) -> forms g >= 0 equivalent to `x op y` on integers
    Op.LT: lambda x, y: [y - x - Affine(1)], Op.LE: lambda x, y: [y - x],
    Op.GT: lambda x, y: [x - y - Affine(1)], Op.GE: lambda x, y: [x - y],
    Op.EQ: lambda x, y: [x - y, y - x], Op.NE: lambda x, y: [],
}
NEGATE = {Op.LT: Op.GE, Op.LE: Op.GT, Op.GT: Op.LE, Op.GE: Op.LT, Op.EQ: Op.NE, Op.NE: Op.EQ}
_BOOLEAN = frozenset(COMPARE) | {Op.NOT}


def _is_zero(s: Stmt) -> bool:
    return s.op == Op.CONST and s.attr == 0


def _boolean(s: Stmt) -> bool:
    """Is `s` always 0 or 1 (so that bitwise and/or are the logical ones)?"""
    if s.op in (Op.BIT_AND, Op.BIT_OR):
        return all(_boolean(a) for a in s.args)
    return s.op in _BOOLEAN
