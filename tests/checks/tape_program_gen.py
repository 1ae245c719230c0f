"""Random small Tape programs for the soundness property (test_property_tape.py).

A program is plain data (tuples of strings and ints, so a failing one can be pasted back as an
`@example`): 2-4 f64 fields of `N` elements with gradients, an i32 field `idx`, and 1-3 kernels,
each a parallel or serialized `for i in range(N)` loop over a few statements

    target[pattern] (= | += | -= | *= | atomic_max) value(loads of fields at patterns)

with index patterns i, i+1 and i-1 (guarded by an `if`), a constant, N-1-i, i+a (`a` is the
kernel's int argument, guarded) and idx[i] (data-dependent), optionally under one more condition
on i (`<`, `>=`, `not`, `or`, `!=`); kernels are launched (some twice, with other `a`), with
Python-scope writes between launches, and the program ends in `loss[None] += ...` (in the last
kernel or its own). `plan` normalizes a `Program`; `render` writes it as Python source; `load`
imports that from a real file (the frontend reads kernel source through `inspect`); `judge` runs
it under a Tape and, when the checker accepts it, returns the Tape gradients and float64 central
differences of the fields' initial values.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from hypothesis import strategies as st
from support.source_modules import import_source

import fieldsim as fs

N = 6
# weights by repetition: mostly `i`, mostly `=` and `+=`, so that enough programs keep the rules
# (Hypothesis favours the first and the last entry of a list: both are common, harmless ones)
PATTERNS = ("i", "i+1", "c", "i-1", "i", "rev", "i+a", "idx", "i")
TARGETS = ("i", "i+1", "i", "c", "i", "i-1", "i", "rev", "i", "i+a", "idx", "i")
KINDS = ("add", "store", "mul", "add", "store", "max", "store", "add", "sub", "store", "add")
SHAPES = ("lin", "sq", "sin")
# an extra `if` on the loop index around a statement: (kind, c) -> condition text
CONDITIONS = ("none", "lt", "none", "ge", "not_lt", "none", "or", "ne", "none")
CONDITION_TEXT = {"lt": "i < {c}", "ge": "i >= {c}", "not_lt": "not (i < {c})",
                  "or": "(i < {c} or i > {c} + 2)", "ne": "i != {c}"}


def condition_holds(cond: tuple, i: int) -> bool:
    kind, c = cond
    return {"none": True, "lt": i < c, "ge": i >= c, "not_lt": not i < c,
            "or": i < c or i > c + 2, "ne": i != c}[kind]

# ------------------------------------------------------------------------------ strategy
load_s = st.tuples(st.integers(0, 3), st.sampled_from(PATTERNS), st.integers(0, N - 1),
                   st.sampled_from(SHAPES))


def kernel_strategy(kinds=KINDS):
    stmt_s = st.tuples(st.sampled_from(kinds), st.integers(0, 3), st.sampled_from(TARGETS),
                       st.integers(0, N - 1), st.lists(load_s, min_size=1, max_size=3).map(tuple),
                       st.tuples(st.sampled_from(CONDITIONS), st.integers(0, N - 1)))
    return st.tuples(st.booleans(), st.lists(stmt_s, min_size=1, max_size=3).map(tuple))


class Program(NamedTuple):
    """A generated program, as plain data.

    `layered`: a statement writing field t (t >= 1) loads only fields below t, so that most such
    programs keep the rules; otherwise any field may be loaded and written. A kernel is
    (serialize, statements); a statement (kind, target, pattern, const, loads[, condition]); a
    load (field, pattern, const, shape); a condition (kind in CONDITIONS, const). `launches`: (kernel, value of `a`) in order, every kernel once and
    up to two launched again. `py_writes`: (field, index or -1 for `fill`, position among the
    launches) Python-scope writes on the Tape (before the first launch when `layered`). The loss statement ends the last launched kernel,
    or its own kernel `kl` launched last when `own_kernel`. `seed`: the fields' initial values.
    """

    n_fields: int
    layered: bool
    kernels: tuple
    launches: tuple
    py_writes: tuple
    loss_loads: tuple
    own_kernel: bool
    seed: int


@st.composite
def programs(draw, kinds=KINDS) -> Program:
    """Programs whose statements use the access `kinds` (a sub-tuple of KINDS)."""
    n_fields = draw(st.integers(2, 4))
    layered = draw(st.integers(0, 3)) != 1  # 3 in 4
    kernels = draw(st.lists(kernel_strategy(kinds), min_size=1, max_size=3).map(tuple))
    order = draw(st.permutations(range(len(kernels))))
    launches = tuple((k, draw(st.integers(0, 2))) for k in order)
    launches += tuple(draw(st.lists(st.tuples(st.integers(0, len(kernels) - 1),
                                              st.integers(0, 2)), max_size=2)))
    py_writes = tuple(draw(st.lists(st.tuples(st.integers(0, 3), st.integers(-1, N - 1),
                                              st.integers(0, 4)), max_size=1)))
    loss_loads = tuple(draw(st.lists(load_s, min_size=1, max_size=3)))
    return Program(n_fields, layered, kernels, launches, py_writes, loss_loads,
                   draw(st.booleans()), draw(st.integers(0, 2 ** 16)))


# ------------------------------------------------------------------------------- plan
class Statement(NamedTuple):
    """One normalized statement: `kind` in KINDS or 'loss' (`loss[None] += ...`), the target
    field number (-1: loss), its index (pattern, const), the loads (field number, pattern,
    const, shape) and an extra condition on `i` (see CONDITIONS)."""

    kind: str
    target: int
    index: tuple
    loads: tuple
    cond: tuple = ("none", 0)


class Plan(NamedTuple):
    """What `render` writes: kernels (name, serialize, statements) and the calls of `run()`,
    ('kernel', name, a) or ('python', field number, element or -1 for `fill`)."""

    n_fields: int
    kernels: tuple
    calls: tuple


def plan(program: Program) -> Plan:
    n_fields, layered, kernels, launches, py_writes, loss_loads, own_kernel, _ = program
    if layered:
        kernels, launches = _layer(kernels, launches, n_fields)
    last = None if own_kernel else launches[-1][0]
    loss_stmt = Statement("loss", -1, ("i", 0), _fields(loss_loads, n_fields))
    out = []
    for k, (serialize, stmts) in enumerate(kernels):
        body = [_normal(s, n_fields, layered) for s in stmts]
        out.append((f"k{k}", serialize, tuple(body + ([loss_stmt] if k == last else []))))
    calls = [("kernel", f"k{k}", a) for k, a in launches]
    if own_kernel:
        out.append(("kl", False, (loss_stmt,)))
        calls.append(("kernel", "kl", 0))
    for f, index, at in py_writes:
        calls.insert(0 if layered else at % len(calls), ("python", f % n_fields, index))
    return Plan(n_fields, tuple(out), tuple(calls))


def _fields(loads, fields: int) -> tuple:
    return tuple((f % fields, pattern, const, shape) for f, pattern, const, shape in loads)


def _normal(stmt, n_fields: int, layered: bool) -> Statement:
    kind, target, pattern, const, loads, *cond = stmt
    target = 1 + target % (n_fields - 1) if layered else target % n_fields
    return Statement(kind, target, (pattern, const), _fields(loads, target if layered else n_fields),
                     cond[0] if cond else ("none", 0))


def _layer(kernels, launches, n_fields: int):
    """Layered programs: every statement of a kernel writes the field its first one names
    (field t loads only fields below t); only that first write keeps its kind (`*=`, which
    always reads what it writes, becomes `-=`), the later ones accumulate (`+=`); kernels are
    launched in the order of the fields they write."""
    targets = [stmts[0][1] % (n_fields - 1) for _, stmts in kernels]
    out = []
    for (serialize, stmts), t in zip(kernels, targets):
        kinds = [{"mul": "sub"}.get(stmts[0][0], stmts[0][0])] + ["add"] * (len(stmts) - 1)
        out.append((serialize, tuple((kind, t) + tuple(stmt[2:]) for kind, stmt in zip(kinds, stmts))))
    return out, tuple(sorted(launches, key=lambda launch: targets[launch[0]]))


# ------------------------------------------------------------------------------- render
GUARDS = {"i+1": "i + 1 < N", "i-1": "i >= 1", "i+a": "i + a < N"}


def _index(pattern: str, const: int) -> str:
    return {"i": "i", "i+1": "i + 1", "i-1": "i - 1", "c": str(const), "rev": "N - 1 - i",
            "i+a": "i + a", "idx": "idx[i]"}[pattern]


def guards(s: Statement) -> list[str]:
    """The patterns whose guards the statement runs under (the `if` around it)."""
    patterns = [s.index[0]] + [p for _, p, _, _ in s.loads]
    return list(dict.fromkeys(p for p in patterns if p in GUARDS))


def _line(s: Statement) -> str:
    terms = []
    for k, (f, pattern, const, shape) in enumerate(s.loads):
        ref = f"f{f}[{_index(pattern, const)}]"
        term = {"lin": ref, "sq": f"{ref} * {ref}", "sin": f"fs.sin({ref})"}[shape]
        terms.append(f"{0.3 + 0.2 * k:.1f} * {term}")
    value = " + ".join(terms)
    lhs = "loss[None]" if s.kind == "loss" else f"f{s.target}[{_index(*s.index)}]"
    return {"store": f"{lhs} = {value}", "add": f"{lhs} += {value}", "loss": f"{lhs} += {value}",
            "sub": f"{lhs} -= {value}", "mul": f"{lhs} *= 1.0 + 0.1 * ({value})",
            "max": f"fs.atomic_max({lhs}, {value})"}[s.kind]


def _kernel(name: str, serialize: bool, stmts) -> list[str]:
    out = ["", "    @fs.kernel", f"    def {name}(a: int):"]
    if serialize:
        out.append("        fs.loop_config(serialize=True)")
    out.append("        for i in range(N):")
    for s in stmts:
        conds = [GUARDS[p] for p in guards(s)]
        if s.cond[0] != "none":
            conds.append(CONDITION_TEXT[s.cond[0]].format(c=s.cond[1]))
        lines = [f"if {' and '.join(conds)}:", f"    {_line(s)}"] if conds else [_line(s)]
        out += [f"            {line}" for line in lines]
    return out


def render(program: Program) -> str:
    p = plan(program)
    out = ["import fieldsim as fs", "", f"N = {N}", "", "", "def make():"]
    for f in range(p.n_fields):
        out.append(f"    f{f} = fs.field(fs.f64, shape=N, needs_grad=True, name='f{f}')")
    out += ["    idx = fs.field(fs.i32, shape=N, name='idx')",
            "    loss = fs.field(fs.f64, shape=(), needs_grad=True, name='loss')"]
    for name, serialize, stmts in p.kernels:
        out += _kernel(name, serialize, stmts)
    out += ["", "    def run():"]
    for call in p.calls:
        if call[0] == "kernel":
            out.append(f"        {call[1]}({call[2]})")
        else:
            _, f, index = call
            out.append(f"        f{f}.fill(0.75)" if index < 0 else f"        f{f}[{index}] = 0.75")
    fields = ", ".join(f"'f{f}': f{f}" for f in range(p.n_fields))
    out += ["", f"    return {{{fields}}}, idx, loss, run", ""]
    return "\n".join(out)


def load(source: str):
    """Import `source` from a fresh file; return its `make`."""
    return import_source(source, "fieldsim_tape_program").make


# -------------------------------------------------------------------------------- judge
@dataclass
class Verdict:
    accepted: bool
    source: str
    idx: np.ndarray  # the values of the index field
    error: Exception | None = None
    tape: dict | None = None  # {field name: Tape gradient}
    fd: dict | None = None  # {field name: central differences}
    scale: float = 1.0  # largest |loss| seen, for the absolute tolerance


def judge(program: Program, with_fd: bool = True) -> Verdict:
    source = render(program)
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    fields, idx, loss, run = load(source)()
    rng = np.random.default_rng(program.seed)
    base = {name: rng.uniform(0.5, 1.5, N) for name in fields}
    idx_values = rng.integers(0, N, N).astype(np.int32)
    idx.from_numpy(idx_values)
    _restore(fields, base)
    try:
        with fs.ad.Tape(loss=loss):
            run()
    except fs.AccessRuleError as err:
        return Verdict(False, source, idx_values, err)
    tape = {name: f.grad.to_numpy().copy() for name, f in fields.items()}
    verdict = Verdict(True, source, idx_values, tape=tape, scale=abs(float(loss[None])))
    if with_fd:
        verdict.fd = _central_differences(fields, base, loss, run, verdict)
    return verdict


def _restore(fields, base, name=None, flat=None, h=0.0):
    for n, f in fields.items():
        values = base[n].copy()
        if n == name:
            values[flat] += h
        f.from_numpy(values)


def _central_differences(fields, base, loss, run, verdict) -> dict:
    """d loss / d initial value of every element, by re-running the forward in float64."""
    out = {}
    for name in fields:
        grad = np.zeros(N)
        for flat in range(N):
            h = 1e-6 * max(1.0, abs(base[name][flat]))
            values = []
            for sign in (1, -1):
                _restore(fields, base, name, flat, sign * h)
                loss[None] = 0.0
                run()
                values.append(float(loss[None]))
                verdict.scale = max(verdict.scale, abs(values[-1]))
            grad[flat] = (values[0] - values[1]) / (2 * h)
        out[name] = grad
    _restore(fields, base)
    return out


def mismatches(verdict: Verdict, rtol: float = 1e-6, atol: float = 1e-8) -> list[str]:
    """Fields whose Tape gradient differs from the central differences."""
    bad = []
    for name, want in verdict.fd.items():
        got = verdict.tape[name]
        tol = rtol * np.abs(want) + atol * max(1.0, verdict.scale)
        if not np.all(np.abs(got - want) <= tol):
            bad.append(f"{name}.grad = {got.tolist()}\n   finite differences {want.tolist()}")
    return bad
