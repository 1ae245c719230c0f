"""Random kernels in the shapes the CPU code generator rewrites, and a plain-Python reference.

The optimisations of `fieldsim/codegen` (whole-row and triangular nests, per-row accumulators,
SIMD lanes with masks, shared divisors, demoted atomics, vectorized inner reductions) each
rewrite a loop of some shape. A generated kernel is one such loop around random arithmetic:

- `elementwise`: `for i in range(N)`, a local chain and `out[i] = ...` under data conditions;
- `pairs`: `for i, j in ti.ndrange(N, M)` with an `if` on the indices and/or the data around
  `out[i] += ...`, `out[j] -= ...` and `s[None] += ...` (a pairwise energy or force);
- `inner`: `for i in range(N)` over a serial `for j in range(M)` reduction into a local;
- `inner_exits`: the same with a `continue` and a `break` on conditions;
- `vectors`: a pair nest over 2-vector locals (`norm`, `dot`, `cross`, `ti.math.length`);
- `funcs`: `@ti.func`s with a `return` inside a runtime `if` and a loop, nested in calls;
- `grid`: a struct-for (or `ti.grouped`) over a 2-D field, a stencil with wrapped and clamped
  neighbours into a 2-D output, optionally reduced per row;
- `matrices`: 2x2 matrices near the identity (`@`, `transpose`, `inverse`, `determinant`,
  `outer_product`, `trace`, `ti.polar_decompose`), as MPM particle updates use them;
- `rows`: `for i in range(G)` over a serial `for j` adding into `out2[i, j]` (a new element
  each iteration) and `out[i]` (the same one: kept in a register across the loop);
- `loop`: `for i in range(N)` around a `while` with an index-dependent trip count;
- `stacks`: a local vector of 2 to 17 entries used as a stack (pushes, data-dependent pops,
  `+=` at a runtime index, reads at runtime indices), a stack array in the primal code from
  ARRAY_MIN_ENTRIES entries on (scalarize_arrays).

Expressions are random trees over `a[.]`, `b[.]`, `float(i)`, constants exact in f32, with
`+ - *`, divisions by `1 + e*e`, `sqrt`, `1/sqrt`, `sin`, `cos`, `tanh`, `exp(-e*e)`, `abs`,
`min`, `max`, `select`, conditional expressions and integer powers: bounded, defined everywhere.

`Case.source()` is a module defining the fields and the kernel `k` for fieldsim; `reference`
runs the same kernel body as plain Python over float64 NumPy arrays (a serial run is a valid
reference: the generated kernels only add into shared elements, so the order does not matter
beyond rounding). Inputs `a`, `b` (L) and `g` (G x G) are drawn from a seeded generator;
outputs `out` (L), `out2` (G x G) and `s` (0-D) start at zero.
"""
from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
from hypothesis import strategies as st
from support.source_modules import import_source

L = 41  # inputs and outputs; loop bounds stay at or below it
G = 21  # the side of the 2-D fields
INPUTS = {"a": (L,), "b": (L,), "g": (G, G)}
OUTPUTS = {"out": (L,), "out2": (G, G), "s": ()}
SIZES = (1, 3, 16, 17, 33, 41)  # below, at and past 16-lane vectors, with remainders
VALUE_CONDITIONS = ("x < y", "x > 0.0", "y >= 0.5", "(x < 0.25 or y < x)")
CONSTANTS = ("0.5", "1.5", "2.0", "-0.25", "3.0", "0.75")


@dataclass(frozen=True)
class Case:
    shape: str
    body: str  # the kernel's body, indented by 4
    n: int
    m: int
    threads: int
    seed: int
    funcs: str = ""  # module-level `def`s the body calls (`@ti.func`s in the kernel's module)

    def source(self, dtype: str) -> str:
        funcs = self.funcs.replace("def ", "@ti.func\ndef ")
        fields = "".join(f"{name} = ti.field(ti.{dtype}, shape={shape}, needs_grad=True)\n"
                         for name, shape in {**INPUTS, **OUTPUTS}.items())
        return (f"import fieldsim as ti\n\nN, M, G = {self.n}, {self.m}, {G}\n{fields}\n\n"
                f"{funcs}@ti.kernel\ndef k():\n{self.body}")

    def inputs(self) -> dict:
        rng = np.random.default_rng(self.seed)
        return {name: rng.uniform(-1.5, 1.5, shape) for name, shape in INPUTS.items()}


# ------------------------------------------------------------------------------ expressions
def _leaves(indices: tuple) -> list[str]:
    out = [f"{f}[{i}]" for i in indices for f in ("a", "b")]
    return out + [f"float({i})" for i in indices[:1]] + list(CONSTANTS)


@st.composite
def expressions(draw, indices: tuple, depth: int = 3, extra: tuple = ()) -> str:
    leaves = _leaves(indices) + list(extra)
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(leaves))
    sub = expressions(indices, depth - 1, extra)
    x = draw(sub)
    form = draw(st.sampled_from(("+", "-", "*", "div", "sqrt", "rsqrt", "sin", "cos", "tanh",
                                 "gauss", "abs", "min", "max", "select", "ifexp", "pow")))
    if form in "+-*":
        return f"({x} {form} {draw(sub)})"
    if form == "div":
        y = draw(sub)
        return f"({x} / (1.0 + {y} * {y}))"
    unary = {"sqrt": "ti.sqrt(1.0 + {x} * {x})", "rsqrt": "(1.0 / ti.sqrt({x} * {x} + 0.25))",
             "sin": "ti.sin({x})", "cos": "ti.cos({x})", "tanh": "ti.tanh({x})",
             "gauss": "ti.exp(-{x} * {x})", "abs": "ti.abs({x})"}
    if form in unary:
        return unary[form].format(x=x)
    if form == "pow":
        return f"({x} ** {draw(st.sampled_from((2, 3)))})"
    y = draw(sub)
    if form in ("min", "max"):
        return f"ti.{form}({x}, {y})"
    cond = draw(conditions(indices) if indices else st.sampled_from(VALUE_CONDITIONS))
    return f"ti.select({cond}, {x}, {y})" if form == "select" else f"({x} if {cond} else {y})"


@st.composite
def conditions(draw, indices: tuple) -> str:
    i = indices[0]
    j = indices[-1]
    options = [f"a[{i}] < b[{j}]", f"a[{j}] > 0.0", f"{i} % 3 == 0", f"b[{i}] >= a[{j}]"]
    if len(indices) > 1:
        options += [f"{i} < {j}", f"{i} <= {j}", f"({i} + {j}) % 2 == 1", f"{i} != {j}"]
    first = draw(st.sampled_from(options))
    if draw(st.integers(0, 3)) == 0:
        return f"({first} and {draw(st.sampled_from(options))})"
    return first


# ------------------------------------------------------------------------------ kernel shapes
@st.composite
def _elementwise(draw) -> str:
    x = draw(expressions(("i",)))
    y = draw(expressions(("i",), extra=("x",)))
    cond = draw(conditions(("i",)))
    return ("    for i in range(N):\n"
            f"        x = {x}\n"
            f"        if {cond}:\n"
            f"            x = {y}\n"
            "        out[i] = x\n")


@st.composite
def _pairs(draw) -> str:
    guard = draw(st.sampled_from(("i < j", "i != j", "j < i", "i <= j", None, "data")))
    if guard == "data":
        guard = draw(conditions(("i", "j")))
    e = draw(expressions(("i", "j")))
    lines = [f"r = {e}", "out[i] += r"]
    if draw(st.booleans()):
        lines.append("out[j] -= r")
    if draw(st.booleans()):
        lines.append(f"s[None] += {draw(expressions(('i', 'j'), depth=2))}")
    pad = "        " if guard is None else "            "
    head = "    for i, j in ti.ndrange(N, M):\n" + ("" if guard is None else f"        if {guard}:\n")
    return head + "".join(pad + line + "\n" for line in lines)


@st.composite
def _inner(draw) -> str:
    e = draw(expressions(("i", "j")))
    cond = draw(st.one_of(st.none(), conditions(("i", "j"))))
    # into a local, or straight into the loop's own element (which the code generator may
    # keep in a register across the inner loop)
    add = draw(st.sampled_from((f"acc += {e}", f"out[i] += {e}", f"out[i] -= {e}")))
    body = (f"            if {cond}:\n                {add}\n" if cond else f"            {add}\n")
    store = draw(st.sampled_from(("out[i] += acc", "s[None] += acc", "out[i] = acc"
                                  if add.startswith("acc") else "out[i] += acc")))
    return ("    for i in range(N):\n"
            "        acc = 0.0\n"
            "        for j in range(M):\n"
            f"{body}"
            f"        {store}\n")


@st.composite
def _loop(draw) -> str:
    step = draw(expressions(("i",), depth=2, extra=("x",)))
    trips = draw(st.sampled_from(("i % 4", "i % 3 + 1", "2")))
    return ("    for i in range(N):\n"
            "        x = a[i]\n"
            "        t = 0\n"
            f"        while t < {trips}:\n"
            f"            x = 0.5 * ti.sin({step}) + 0.5 * x\n"
            "            t += 1\n"
            "        out[i] = x\n")


@st.composite
def _inner_exits(draw) -> str:
    skip = draw(conditions(("i", "j")))
    stop = draw(conditions(("i", "j")))
    e = draw(expressions(("i", "j")))
    return ("    for i in range(N):\n"
            "        acc = 0.0\n"
            "        for j in range(M):\n"
            f"            if {skip}:\n"
            "                continue\n"
            f"            acc += {e}\n"
            f"            if {stop}:\n"
            "                break\n"
            "        out[i] = acc\n")


@st.composite
def _vectors(draw) -> str:
    ij = ("i", "j")
    dx, dy, qx = (draw(expressions(ij, depth=2)) for _ in range(3))
    vector_terms = ("d.norm_sqr()", "d.dot(q)", "d.norm(0.25)", "d[0]", "q[1]",
                    "(d.cross(q))", "ti.math.length(q - d)")
    r = draw(expressions(ij, depth=2, extra=vector_terms))
    guard = draw(st.sampled_from(("i < j", "i != j", "True")))
    return ("    for i, j in ti.ndrange(N, M):\n"
            f"        if {guard}:\n"
            f"            d = ti.Vector([{dx}, {dy}])\n"
            f"            q = ti.Vector([{qx}, 0.5])\n"
            f"            f = d * ({r}) + q\n"
            "            out[i] += f[0]\n"
            "            out[j] -= f[1]\n"
            "            s[None] += f.dot(d)\n")


@st.composite
def _funcs(draw) -> tuple[str, str]:
    xy = {"indices": (), "extra": ("x", "y")}
    early, late = draw(expressions(**xy)), draw(expressions(**xy))
    step = draw(expressions((), depth=2, extra=("t", "y")))
    funcs = ("def pick(x, y):\n"
             f"    if {draw(st.sampled_from(VALUE_CONDITIONS))}:\n"
             f"        return {early}\n"
             f"    return {late}\n\n\n"
             "def iterate(x, y):\n"
             "    t = x\n"
             f"    for _ in range({draw(st.integers(0, 3))}):\n"
             f"        t = 0.5 * ti.sin({step}) + 0.5 * t\n"
             "    return t\n\n\n")
    body = ("    for i in range(N):\n"
            "        out[i] = pick(a[i], b[i]) + iterate(pick(b[i], a[i]), b[i])\n"
            "        s[None] += iterate(pick(float(i), a[i]), a[i])\n")
    return funcs, body


@st.composite
def _grid(draw) -> str:
    neighbours = ("c", "e", "w", "n")
    value = draw(expressions(("i", "j"), extra=neighbours))
    head = ("    for i, j in g:\n" if draw(st.booleans()) else
            "    for I in ti.grouped(g):\n        i, j = I[0], I[1]\n")
    lines = ["c = g[i, j]", "e = g[(i + 1) % G, j]", "w = g[i, ti.max(j - 1, 0)]",
             "n = g[ti.min(i + 1, G - 1), (j + 2) % G]", f"out2[i, j] = {value}"]
    if draw(st.booleans()):
        lines.append(f"out[i] += {draw(expressions(('i', 'j'), depth=2, extra=neighbours))}")
    return head + "".join(f"        {line}\n" for line in lines)


@st.composite
def _matrices(draw) -> str:
    small = [draw(expressions(("i",), depth=2)) for _ in range(4)]
    v0, v1 = draw(expressions(("i",), depth=2)), draw(expressions(("i",), depth=2))
    entries = [f"0.2 * ti.tanh({e})" for e in small]  # F near the identity: det(F) > 0.6
    use = draw(st.sampled_from(("F.inverse() @ v", "R @ v", "S @ v", "C @ v * J")))
    return ("    for i in range(N):\n"
            f"        F = ti.Matrix([[1.0 + {entries[0]}, {entries[1]}], "
            f"[{entries[2]}, 1.0 + {entries[3]}]])\n"
            f"        v = ti.Matrix([{v0}, {v1}])\n"
            "        R, S = ti.polar_decompose(F)\n"
            "        J = F.determinant()\n"
            "        C = F @ F.transpose() + v.outer_product(v) * 0.5\n"
            f"        r = {use} + (R @ S - F) @ v\n"
            "        out[i] = r[0] + C.trace() * J\n"
            "        s[None] += r.norm_sqr() + C[0, 1] * S[1, 1]\n")


@st.composite
def _rows(draw) -> str:
    cond = draw(st.one_of(st.none(), conditions(("i", "j"))))
    pad = "                " if cond else "            "
    lines = [f"out2[i, j] += {draw(expressions(('i', 'j')))}",
             f"out[i] += {draw(expressions(('i', 'j'), depth=2))}"]
    return ("    for i in range(G):\n"
            "        for j in range(G):\n"
            + (f"            if {cond}:\n" if cond else "")
            + "".join(pad + line + "\n" for line in lines))


@st.composite
def _stacks(draw) -> str:
    size = draw(st.sampled_from((2, 3, 8, 17)))  # below and past ARRAY_MIN_ENTRIES
    push = draw(expressions(("i", "j")))
    update = draw(expressions(("i",), depth=2, extra=("x",)))
    pop = draw(st.one_of(conditions(("i", "j")), st.sampled_from(("j % 3 == 2", "False"))))
    reach = draw(st.integers(1, size - 1))
    return ("    for i in range(N):\n"
            f"        st = ti.Vector([0.0] * {size})\n"
            "        sp = i % 2\n"
            "        for j in range(M):\n"
            f"            st[sp] = {push}\n"
            f"            sp = (sp + 1) % {size}\n"
            f"            if {pop}:\n"
            f"                sp = (sp + {size - 1}) % {size}\n"
            "                x = st[sp]\n"
            f"                st[(sp + {reach}) % {size}] += {update}\n"
            "        acc = 0.0\n"
            f"        for j in range({size}):\n"
            f"            acc += st[(j * 5 + i) % {size}] * (j + 1)\n"
            "        out[i] = acc\n"
            f"        s[None] += st[(i * 3) % {size}]\n")


SHAPES = {"elementwise": _elementwise, "pairs": _pairs, "inner": _inner, "loop": _loop,
          "inner_exits": _inner_exits, "vectors": _vectors, "funcs": _funcs,
          "grid": _grid, "matrices": _matrices, "rows": _rows, "stacks": _stacks}


@st.composite
def cases(draw, shape: str) -> Case:
    made = draw(SHAPES[shape]())
    funcs, body = made if isinstance(made, tuple) else ("", made)
    return Case(shape, body, draw(st.sampled_from(SIZES)), draw(st.sampled_from(SIZES)),
                draw(st.sampled_from((1, 2))), draw(st.integers(0, 2**16)), funcs)


# ------------------------------------------------------------------------------ running
class _Vec2:
    """The 2-vector operations the `vectors` bodies use, on Python floats."""

    def __init__(self, items):
        self.x, self.y = items

    def __getitem__(self, k):
        return (self.x, self.y)[k]

    def __setitem__(self, k, value):  # (the `stacks` bodies write entries)
        if k == 0:
            self.x = value
        else:
            self.y = value

    def __add__(self, o):
        return _Vec2((self.x + o.x, self.y + o.y))

    def __sub__(self, o):
        return _Vec2((self.x - o.x, self.y - o.y))

    def __mul__(self, c):
        return _Vec2((self.x * c, self.y * c))

    def dot(self, o):
        return self.x * o.x + self.y * o.y

    def norm_sqr(self):
        return self.dot(self)

    def norm(self, eps=0.0):
        return math.sqrt(self.dot(self) + eps)

    def cross(self, o):
        return self.x * o.y - self.y * o.x


class _Mat:
    """The vector and matrix operations the `matrices` bodies use, on NumPy float64 arrays."""

    def __init__(self, rows):
        self.v = np.array(rows, dtype=np.float64)

    def __getitem__(self, k):
        return self.v[k]

    def __matmul__(self, o):
        return _Mat(self.v @ o.v)

    def __add__(self, o):
        return _Mat(self.v + o.v)

    def __sub__(self, o):
        return _Mat(self.v - o.v)

    def __mul__(self, c):
        return _Mat(self.v * c)

    def transpose(self):
        return _Mat(self.v.T)

    def determinant(self):
        return float(np.linalg.det(self.v))

    def inverse(self):
        return _Mat(np.linalg.inv(self.v))

    def trace(self):
        return float(np.trace(self.v))

    def outer_product(self, o):
        return _Mat(np.outer(self.v, o.v))

    def dot(self, o):
        return float(self.v @ o.v)

    def norm_sqr(self):
        return float(self.v @ self.v.ravel() if self.v.ndim == 1 else (self.v ** 2).sum())


def _polar_decompose(m):
    u, _, vt = np.linalg.svd(m.v)
    rotation = u @ vt  # det(F) > 0 in the generated bodies: R is a rotation, unique
    return _Mat(rotation), _Mat(rotation.T @ m.v)


class _PlainMath:
    @staticmethod
    def length(v):
        return v.norm()


class _PlainTi:
    """What the kernel bodies call on `ti`, for the plain-Python reference."""

    sqrt, sin, cos, tanh, exp = math.sqrt, math.sin, math.cos, math.tanh, math.exp
    abs, min, max = abs, min, max
    math, Matrix = _PlainMath, _Mat

    @staticmethod
    def Vector(items):
        """A 2-vector of the `vectors` bodies, or a list (the local stacks of `stacks`)."""
        return _Vec2(items) if len(items) == 2 else list(items)
    polar_decompose = staticmethod(_polar_decompose)

    @staticmethod
    def ndrange(*shape):
        return itertools.product(*(range(n) for n in shape))

    @staticmethod
    def select(cond, x, y):
        return x if cond else y

    @staticmethod
    def grouped(field):
        return np.ndindex(field.shape)


def reference(case: Case, inputs: dict) -> dict:
    """The outputs of the kernel body run serially in float64 Python."""
    outputs = {name: np.zeros(shape) for name, shape in OUTPUTS.items()}
    scope = {"ti": _PlainTi, **inputs, **outputs, "N": case.n, "M": case.m, "G": G}
    body = case.body.replace("for i, j in g:", "for i, j in ti.ndrange(G, G):")
    exec(f"{case.funcs}def k():\n{body}", scope)  # noqa: S102 - the test's own generated source
    scope["k"]()
    return outputs




def load(case: Case, dtype: str):
    """The module of `case.source(dtype)` (the frontend reads kernel source through
    `inspect`, so it is imported from a file)."""
    return load_source(case.source(dtype))


# ------------------------------------------------------------------------------ integer kernels
# i32 inputs `c` in [-20, 20], outputs `iout` (L) and `t` (0-D); depth-2 expressions stay far
# from overflow (the reference wraps like i32 anyway: it computes in NumPy int32).
INT_CONSTANTS = ("1", "3", "7", "-3", "5")


@st.composite
def int_expressions(draw, indices: tuple, depth: int = 2) -> str:
    leaves = [f"c[{i}]" for i in indices] + list(indices) + list(INT_CONSTANTS)
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(leaves))
    sub = int_expressions(indices, depth - 1)
    x, y = draw(sub), draw(sub)
    form = draw(st.sampled_from(("+", "-", "*", "//", "%", "&", "|", "^", "<<", ">>", "min",
                                 "max", "abs", "neg", "select", "popcnt", "clz")))
    if form in ("//", "%"):  # a divisor in 1..7 under floored semantics
        return f"({x} {form} ({y} % 7 + 1))"
    if form in ("<<", ">>"):
        return f"({x} {form} ({y} & 3))"
    if form in ("min", "max"):
        return f"ti.{form}({x}, {y})"
    if form == "abs":
        return f"ti.abs({x})"
    if form == "neg":
        return f"(-{x})"
    if form in ("popcnt", "clz"):  # bit counts of the i32 pattern (negatives: high bits set)
        return f"ti.math.{form}({x})"
    if form == "select":
        return f"ti.select({x} < {y}, {x}, {y} * 2)"
    return f"({x} {form} {y})"


@st.composite
def _int_elementwise(draw) -> str:
    x, y = draw(int_expressions(("i",))), draw(int_expressions(("i",)))
    return ("    for i in range(N):\n"
            f"        x = {x}\n"
            f"        if x % 2 == 0 or {draw(st.sampled_from(('i < 9', 'c[i] > 0', 'False')))}:\n"
            f"            x = {y} - x\n"
            "        iout[i] = x\n"
            f"        t[None] += {draw(int_expressions(('i',)))}\n")


@st.composite
def _int_pairs(draw) -> str:
    guard = draw(st.sampled_from(("i < j", "i != j", "(i + j) % 3 == 0", "c[i] < c[j]")))
    return ("    for i, j in ti.ndrange(N, M):\n"
            f"        if {guard}:\n"
            f"            iout[i] += {draw(int_expressions(('i', 'j')))}\n"
            f"            t[None] += {draw(int_expressions(('i', 'j')))}\n")


@st.composite
def _int_atomics(draw) -> str:
    fn = draw(st.sampled_from(("atomic_max", "atomic_min", "atomic_or", "atomic_and",
                               "atomic_xor")))
    return ("    for i, j in ti.ndrange(N, M):\n"
            f"        v = {draw(int_expressions(('i', 'j')))}\n"
            f"        ti.{fn}(iout[j], v)\n"
            f"        ti.{fn}(t[None], v + i)\n")


INT_SHAPES = {"int_elementwise": _int_elementwise, "int_pairs": _int_pairs,
              "int_atomics": _int_atomics}
_ATOMIC_PYTHON = {"atomic_max": "max({0}, {1})", "atomic_min": "min({0}, {1})",
                  "atomic_or": "{0} | {1}", "atomic_and": "{0} & {1}", "atomic_xor": "{0} ^ {1}"}


@st.composite
def int_cases(draw, shape: str) -> Case:
    return Case(shape, draw(INT_SHAPES[shape]()), draw(st.sampled_from(SIZES)),
                draw(st.sampled_from(SIZES)), draw(st.sampled_from((1, 2))),
                draw(st.integers(0, 2**16)))


def int_source(case: Case) -> str:
    return (f"import fieldsim as ti\n\nN, M = {case.n}, {case.m}\n"
            f"c = ti.field(ti.i32, shape={L})\n"
            f"iout = ti.field(ti.i32, shape={L})\n"
            "t = ti.field(ti.i32, shape=())\n\n\n"
            f"@ti.kernel\ndef k():\n{case.body}")


def int_inputs(case: Case) -> np.ndarray:
    return np.random.default_rng(case.seed).integers(-20, 21, L).astype(np.int32)


def _python_atomics(body: str) -> str:
    """`ti.atomic_op(target, v)` lines as `target = op(target, v)`."""
    def rewrite(line):
        stripped = line.strip()
        for fn, form in _ATOMIC_PYTHON.items():
            if stripped.startswith(f"ti.{fn}("):
                target, value = stripped[len(fn) + 4:-1].split(", ", 1)
                indent = line[:len(line) - len(line.lstrip())]
                return f"{indent}{target} = {form.format(target, value)}"
        return line
    return "\n".join(rewrite(line) for line in body.split("\n"))


def int_reference(case: Case, c: np.ndarray) -> tuple[np.ndarray, int]:
    """(iout, t) of the body run serially in NumPy int32 (wrapping, floored `//` and `%`)."""
    iout, t = np.zeros(L, np.int32), np.zeros((), np.int32)
    i32 = np.int32

    class Ti:
        min, max, abs = min, max, abs

        @staticmethod
        def ndrange(*shape):
            return ((i32(i), i32(j)) for i, j in itertools.product(*(range(n) for n in shape)))

        @staticmethod
        def select(cond, x, y):
            return x if cond else y

        class math:  # stands for ti.math
            @staticmethod
            def popcnt(x):
                return i32((int(x) & 0xFFFFFFFF).bit_count())

            @staticmethod
            def clz(x):
                return i32(32 - (int(x) & 0xFFFFFFFF).bit_length())

    body = _python_atomics(case.body).replace("range(N)", "map(i32, range(N))")
    scope = {"ti": Ti, "c": c, "iout": iout, "t": t, "N": case.n, "M": case.m, "i32": i32}
    exec(f"def k():\n{body}", scope)  # noqa: S102 - the test's own generated source
    with np.errstate(over="ignore"):
        scope["k"]()
    return iout, int(t)


def load_source(source: str):
    """The module of `source`, imported from a file of its own (the frontend reads kernel
    source through `inspect`)."""
    return import_source(source, "fieldsim_random_kernel")
