"""The frontend finds a function's source by indentation (fieldsim/lang/frontend.py,
`_indented_block`) instead of tokenizing it: for every layout, the parsed function and its line
numbers are what `inspect.getsourcelines` gives, and layouts the indentation scan cannot read
fall back to inspect; an indented kernel with a line left of its `def` (which textwrap.dedent
cannot dedent) is parsed too."""
import ast
import inspect
import textwrap

import pytest

import fieldsim as fs
from fieldsim.lang.frontend import Source, _indented_block


def _deco(*args):
    def wrap(fn):
        return fn
    return wrap


@_deco(
    1,
2)  # a decorator argument left of the def: the scan stops early, inspect reads it
def multi_line_decorator(x):
    return x


def black_signature(
    a,
    b,
) -> int:
    return a + b


def string_at_column_zero(x):
    s = """text
def not_a_function():
    pass
"""
    return s + x


def backslash_continuation(x):
    y = x + \
1
    return y


def comment_at_column_zero(x):
    y = x
# a comment left of the body
    return y


def one_liner(x): return x


class Holder:
    @staticmethod
    def method(x):
        if x:
            return 1
        else:
            return 2
    # a comment after the method


def bracket_at_column_zero(x):
    y = [
        x,
]
    return y


LAYOUTS = [multi_line_decorator, black_signature, string_at_column_zero, backslash_continuation,
           comment_at_column_zero, one_liner, Holder.method, bracket_at_column_zero]


@pytest.mark.parametrize("fn", LAYOUTS, ids=lambda f: f.__name__)
def test_source_matches_inspect(fn):
    lines, start = inspect.getsourcelines(fn)
    expected = ast.dump(ast.parse(textwrap.dedent("".join(lines))).body[0])
    src = Source(fn)
    assert ast.dump(src.node) == expected
    assert src.start == start
    assert src.lines == lines[:len(src.lines)]  # (inspect may add trailing comment lines)


def test_the_scan_stops_at_the_next_definition():
    lines, first = inspect.findsource(black_signature)
    block = _indented_block(lines, first)
    assert block[0].startswith("def black_signature(")
    assert block[-1].strip() == "return a + b"


def test_a_kernel_with_an_unusual_layout_compiles_and_locates_errors():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=2)

    @fs.kernel
    def k(
        a: fs.f32,
    ):
        for i in x:
            x[i] = a + \
1.0

    k(2.0)
    assert x.to_numpy().tolist() == [3.0, 3.0]

    @fs.kernel
    def bad(
        a: fs.f32,
    ):
        s = """
"""
        x[0] = undefined_name  # noqa: F821
    with pytest.raises(fs.FieldsimNameError) as info:
        bad(1.0)
    line = inspect.getsourcelines(bad.fn)[1] + 6  # (the first line is the decorator's)
    msg = str(info.value)
    assert f"line {line}" in msg, msg
    assert "\n           ^^^^^^^^^^^^^^\n" in msg, msg  # the caret under undefined_name
