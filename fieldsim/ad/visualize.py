"""`tape.visualize("tape.dot")`: the recorded program as a Graphviz graph.

Contract of `write_tape_dot(tape, path=None, violations=None) -> str`:

* one node per recorded entry, in order: a kernel launch (ellipse, "#k name(args)"), a
  Python-scope write (note shape) and a `grad_replaced` unit (component shape; its inside is not
  recorded, so it is linked to the fields among its arguments by dotted lines);
* one node per data field touched (box): filled when it has a gradient (`needs_grad`), dashed
  when it has none; grad and dual twins are left out;
* edges field -> launch for each field the kernel reads (a LOAD in its IR), launch -> field for
  each field it writes (STORE, or ATOMIC, drawn bold and labelled "+=" etc.);
* access-rule violations, given as `violations=[(kernel_name, field_name, message)]` and read
  from `tape.violations` when the Tape has that attribute, colour the kernel's nodes, the
  field's node and the edges between them red, with the message as the edge label (a violation
  naming nothing in the graph becomes a red note node);
* the text is returned, and written to `path` when given; when the `dot` program is installed,
  a PNG is also written next to it (same name, `.png`).
"""
from __future__ import annotations

import os
import shutil
import subprocess

from fieldsim.ad.check import format_args
from fieldsim.ad.checkpoint import atomic_kinds, is_data, kernel_fields
from fieldsim.ad.tape import CustomEntry, LaunchEntry, PythonWriteEntry

__all__ = ["write_tape_dot"]

_RED = 'color="red", fontcolor="red", penwidth=2'


def write_tape_dot(tape, path=None, violations=None) -> str:
    bad = _violations(tape, violations)
    g = _Graph(bad)
    for k, entry in enumerate(tape.entries):
        g.entry(k, entry)
    text = g.text()
    if path is not None:
        with open(path, "w") as fh:
            fh.write(text)
        _png(path)
    return text


def _violations(tape, given) -> list:
    out = []
    for v in list(given or []) + list(getattr(tape, "violations", None) or []):
        if isinstance(v, (tuple, list)):
            out.append((str(v[0]), str(v[1]), str(v[2]) if len(v) > 2 else "access-rule violation"))
        else:
            kernel = getattr(v, "kernel_name", None) or getattr(v, "kernel", "")
            field = getattr(v, "field_name", None) or getattr(v, "field", "")
            field = getattr(field, "ir_name", field)
            out.append((str(kernel), str(field), str(getattr(v, "message", v))))
    return out


class _Graph:
    def __init__(self, violations):
        self.violations = violations
        self.fields: dict = {}  # id -> field, in order of first appearance
        self.nodes: list[str] = []
        self.edges: list[str] = []
        self.used = set()  # violations drawn somewhere

    # ---- entries ----
    def entry(self, k, entry):
        if isinstance(entry, LaunchEntry):
            self.launch(k, entry)
        elif isinstance(entry, CustomEntry):
            self.custom(k, entry)
        elif isinstance(entry, PythonWriteEntry):
            self.python_write(k, entry)

    def launch(self, k, e):
        name = e.kernel.__name__
        bad = [v for v in self.violations if v[0] == name]
        attrs = f", {_RED}" if bad else ""
        self.nodes.append(f'  "e{k}" [label="{_q(f"#{k} {name}({format_args(e.args, e.kwargs)})")}", '
                          f'shape=ellipse{attrs}];')
        reads, writes = kernel_fields(e.ck)
        atomics = atomic_kinds(e.ck)
        for f in reads.values():
            self.edge(self.field(f), f"e{k}", name, f, "")
        for f in writes.values():
            style = f'style=bold, label="{_ATOMIC_TEXT.get(atomics[id(f)], "atomic")}"' \
                if id(f) in atomics else ""
            self.edge(f"e{k}", self.field(f), name, f, style)

    def custom(self, k, e):
        label = f"#{k} grad_replaced\\n{_q(e.fn.__name__)}({_q(format_args(e.args, e.kwargs))})"
        self.nodes.append(f'  "e{k}" [label="{label}", shape=component];')
        for a in list(e.args) + list((e.kwargs or {}).values()):
            if hasattr(a, "ir_name") and is_data(a):
                self.edges.append(f'  "{self.field(a)}" -> "e{k}" [style=dotted, dir=none];')

    def python_write(self, k, e):
        where = "" if e.idx is None else f"[{', '.join(str(i) for i in e.idx)}]"
        self.nodes.append(f'  "e{k}" [label="#{k} Python write\\n{_q(e.field.ir_name + where)}", '
                          'shape=note];')
        self.edge(f"e{k}", self.field(e.field), None, e.field, "")

    # ---- fields and edges ----
    def field(self, f) -> str:
        self.fields.setdefault(id(f), f)
        return f"f{f.uid}"

    def edge(self, a, b, kernel_name, f, style):
        hit = [v for v in self.violations if v[0] == kernel_name and v[1] == f.ir_name]
        attrs = [style] if style else []
        if hit:
            self.used.update(hit)
            attrs = [_RED, f'label="{_q(_short(hit[0][2]))}"'] + \
                (["style=bold"] if style else [])
        self.edges.append(f'  "{a}" -> "{b}"' + (f" [{', '.join(attrs)}]" if attrs else "") + ";")

    def field_node(self, f) -> str:
        shape = "x".join(str(n) for n in f.shape) if f.shape else "0-D"
        label = _q(f"{f.ir_name}\n{shape} {f.dtype}").replace("\n", "\\n")
        style = 'style="filled", fillcolor="#cfe2ff"' if f.adjoint is not None else 'style="dashed"'
        red = f", {_RED}" if any(v[1] == f.ir_name for v in self.violations) else ""
        return f'  "f{f.uid}" [label="{label}", shape=box, {style}{red}];'

    def text(self) -> str:
        lines = ["digraph tape {", "  rankdir=LR;", '  node [fontname="Helvetica"];',
                 '  edge [fontname="Helvetica", fontsize=10];']
        lines += [self.field_node(f) for f in self.fields.values()]
        lines += self.nodes + self.edges
        for n, v in enumerate(v for v in self.violations if v not in self.used):
            lines.append(f'  "violation{n}" [label="{_q(_short(f"{v[0]} / {v[1]}: {v[2]}", 160))}", '
                         f'shape=note, {_RED}];')
        lines.append("}")
        return "\n".join(lines) + "\n"


_ATOMIC_TEXT = {"add": "+=", "sub": "-=", "max": "max=", "min": "min=", "mul": "*="}


def _q(text: str) -> str:
    return str(text).replace("\\", "\\\\").replace('"', '\\"')


def _short(text: str, n=80) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= n else text[: n - 3] + "..."


def _png(path):
    dot = shutil.which("dot")
    if dot is None:
        return None
    png = os.path.splitext(path)[0] + ".png"
    try:
        subprocess.run([dot, "-Tpng", path, "-o", png], check=True, capture_output=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return png
