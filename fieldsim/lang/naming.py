"""Names for fields from the user's code: `x = fs.field(...)` makes a field called 'x'.

`assigned_name()` is called while a field (or ndarray, struct field) is being constructed. It
finds the first frame outside the fieldsim package, the exact call expression that frame is
running (Python 3.11's instruction positions), and the assignment that call is the whole
right-hand side of, in that file's AST:

    x = fs.field(...)                      -> 'x'
    self.x = fs.Vector.field(3, ...)       -> 'self.x'
    x, y = fs.field(...), fs.field(...)    -> 'x', 'y' (matched by position)
    x: fs.Field = fs.field(...)            -> 'x'

A factory that returns the call (DiffTaichi's `scalar = lambda: ti.field(dtype=real)`, or a
`def vec(): return ti.Vector.field(...)`) passes the question to its caller's call site, so
`x, v = vec(), vec()` names 'x' and 'v'. Anything else (a call nested in another call, a
comprehension, code without source such as `python -c`) gives None, and the caller falls back to `field<N>`. A file's parsed index
is cached per file and the answer per call site, so a repeated call costs a frame walk and a
dict look-up (a first one about 30 us). A file edited after it was imported can give no name
(or, rarely, a stale one): names are a courtesy, never used for identity. Never raises.
"""
from __future__ import annotations

import ast
import itertools
import linecache
import sys

from fieldsim.errors import Loc

# filename -> (the linecache lines object it was built from, {(line, end_line, col, end_col): name})
_INDEX: dict[str, tuple[list, dict]] = {}
# (code object, instruction offset) -> the name found for that call site
_SITES: dict = {}
_UP = object()  # the call is what a lambda or `return` yields: the name is the caller's


def user_frame():
    """The innermost frame outside the fieldsim package (the user's code), or None."""
    frame = sys._getframe(1)
    while frame is not None and _is_ours(frame):
        frame = frame.f_back
    return frame


def user_loc() -> Loc | None:
    """The user's line as a Loc (for errors raised deep inside a Python-scope call)."""
    frame = user_frame()
    if frame is None:
        return None
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).rstrip("\n")
    return Loc(frame.f_code.co_filename, frame.f_lineno, 0, None, frame.f_code.co_name, line)


def assigned_name() -> str | None:
    try:
        frame = user_frame()
        for _ in range(3):  # through at most two factories
            if frame is None:
                return None
            name = _site_name(frame)
            if name is not _UP:
                return name
            frame = frame.f_back
        return None
    except (OSError, ValueError, TypeError, AttributeError, RecursionError, MemoryError):
        # naming is a courtesy: it never breaks field creation
        return None


def _site_name(frame):
    """The name the call `frame` is running is assigned to, `_UP`, or None."""
    code, site = frame.f_code, frame.f_lasti
    key = (code, site)
    if key in _SITES:  # a call site seen before (fields made in a loop)
        return _SITES[key]
    pos = next(itertools.islice(code.co_positions(), site // 2, None), None)
    name = None if pos is None or None in pos else _index(code.co_filename).get(tuple(pos))
    if len(_SITES) < 100_000:
        _SITES[key] = name
    return name


def _is_ours(frame) -> bool:
    mod = frame.f_globals.get("__name__", "")
    return mod == "fieldsim" or mod.startswith("fieldsim.")


def _index(filename: str) -> dict:
    lines = linecache.getlines(filename)
    if not lines:
        return {}
    hit = _INDEX.get(filename)
    if hit is not None and hit[0] is lines:
        return hit[1]
    spans: dict = {}
    try:
        tree = ast.parse("".join(lines), filename)
    except (SyntaxError, ValueError):
        tree = None
    if tree is not None:
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                _pair(node.targets[0], node.value, spans)
            elif isinstance(node, ast.AnnAssign) and node.value is not None:
                _pair(node.target, node.value, spans)
            elif isinstance(node, (ast.Lambda, ast.Return)):
                _returned(node.body if isinstance(node, ast.Lambda) else node.value, spans)
    _INDEX[filename] = (lines, spans)
    return spans


def _pair(target, value, spans: dict) -> None:
    if isinstance(target, (ast.Tuple, ast.List)):
        if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(target.elts):
            for t, v in zip(target.elts, value.elts):
                _pair(t, v, spans)
        return
    if not isinstance(value, ast.Call) or not isinstance(target, (ast.Name, ast.Attribute,
                                                                   ast.Subscript)):
        return
    spans[(value.lineno, value.end_lineno, value.col_offset, value.end_col_offset)] = \
        ast.unparse(target)


def _returned(value, spans: dict) -> None:
    if isinstance(value, ast.Call):
        spans[(value.lineno, value.end_lineno, value.col_offset, value.end_col_offset)] = _UP
