"""`tape.visualize(path)` / `fs.ad.write_tape_dot`: the recorded program as Graphviz text."""
import re
import shutil
import subprocess
from types import SimpleNamespace

import numpy as np
import pytest

import fieldsim as fs


def _program():
    x = fs.field(float, shape=4, needs_grad=True, name="x")
    w = fs.field(float, shape=4, name="w")  # no gradient: dashed
    y = fs.field(float, shape=4, needs_grad=True, name="y")
    loss = fs.field(float, shape=(), needs_grad=True, name="loss")
    x.from_numpy(np.arange(4.0))
    w.fill(2.0)

    @fs.kernel
    def scale(s: float):
        for i in x:
            y[i] = s * w[i] * x[i]

    @fs.kernel
    def total():
        for i in y:
            loss[None] += y[i] * y[i]

    @fs.ad.grad_replaced
    def twice(f: fs.template()):
        total()

    @fs.ad.grad_for(twice)
    def twice_grad(f):
        total.grad()

    return SimpleNamespace(x=x, w=w, y=y, loss=loss, scale=scale, total=total, twice=twice)


def _check_syntax(text):
    assert text.lstrip().startswith("digraph")
    assert text.count("{") == text.count("}")
    depth = 0
    for ch in text:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0
    assert text.count('"') % 2 == 0


def _node(text, label_part):
    """The id of the node whose label contains `label_part`."""
    m = re.search(r'"(\w+)" \[label="[^"]*' + re.escape(label_part), text)
    assert m, f"no node labelled {label_part!r} in:\n{text}"
    return m.group(1)


def _attrs(text, node):
    return re.search(rf'^\s*"{node}" \[(.*)\];$', text, re.MULTILINE).group(1)


def test_dot_text_has_kernels_fields_and_edge_directions(tmp_path):
    p = _program()
    with fs.ad.Tape(p.loss) as tape:
        p.scale(0.5)
        p.y[2] = 1.0  # a Python-scope write, recorded
        p.twice(p.y)
    path = tmp_path / "tape.dot"
    text = tape.visualize(str(path))
    assert path.read_text() == text
    _check_syntax(text)

    k0, k1, k2 = _node(text, "#0 scale(0.5)"), _node(text, "#1 Python write"), \
        _node(text, "#2 grad_replaced")
    assert "twice(y)" in text and "y[2]" in text
    fx, fw, fy = _node(text, "x\\n4 f64"), _node(text, "w\\n"), _node(text, "y\\n")
    assert f'"{fx}" -> "{k0}"' in text and f'"{fw}" -> "{k0}"' in text  # reads
    assert f'"{k0}" -> "{fy}"' in text  # write
    assert f'"{k1}" -> "{fy}"' in text  # the Python write
    assert re.search(rf'"{fy}" -> "{k2}" \[style=dotted', text)  # a unit's field argument
    assert "filled" in _attrs(text, fx) and "dashed" in _attrs(text, fw)
    assert "shape=ellipse" in _attrs(text, k0) and "shape=note" in _attrs(text, k1)
    assert "shape=component" in _attrs(text, k2)
    assert ".grad" not in text  # gradient twins are not drawn
    if shutil.which("dot"):
        png = tmp_path / "tape.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_atomic_writes_are_marked():
    p = _program()
    with fs.ad.Tape(p.loss) as tape:
        p.scale(1.0)
        p.total()
    text = fs.ad.write_tape_dot(tape)
    k1, fl = _node(text, "#1 total()"), _node(text, "loss\\n0-D")
    assert re.search(rf'"{k1}" -> "{fl}" \[style=bold, label="\+="\]', text)


def test_violations_are_highlighted_in_red():
    p = _program()
    with fs.ad.Tape(p.loss) as tape:
        p.scale(1.0)
        p.total()
    violations = [("total", "y", 'rule 1: "y" read then written'), ("ghost", "z", "elsewhere")]
    text = fs.ad.write_tape_dot(tape, violations=violations)
    _check_syntax(text)
    k1, fy = _node(text, "#1 total()"), _node(text, "y\\n")
    assert 'color="red"' in _attrs(text, k1) and 'color="red"' in _attrs(text, fy)
    edge = re.search(rf'"{fy}" -> "{k1}" \[(.*)\];', text).group(1)
    assert 'color="red"' in edge and 'rule 1: \\"y\\" read then written' in edge
    assert 'color="red"' not in _attrs(text, _node(text, "#0 scale"))
    assert re.search(r'"violation0" \[label="ghost / z: elsewhere".*red', text)  # nothing to mark

    tape.violations = [("scale", "x", "from the checker")]
    text = fs.ad.write_tape_dot(tape)
    assert 'color="red"' in _attrs(text, _node(text, "#0 scale"))


@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz `dot` is not installed")
def test_dot_accepts_the_text(tmp_path):
    p = _program()
    with fs.ad.Tape(p.loss) as tape:
        p.scale(0.5)
        p.twice(p.y)
    text = fs.ad.write_tape_dot(tape, violations=[("scale", "y", "a \\ backslash and \"quotes\"")])
    out = subprocess.run(["dot", "-Tsvg"], input=text, capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
