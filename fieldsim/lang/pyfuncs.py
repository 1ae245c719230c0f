"""Plain Python functions called with kernel values, as Taichi runs them: inlined like an
`@fs.func` (Taichi executes them at compile time on its expressions; inlining gives the same
code for the arithmetic such helpers hold).

Takes a Python function or lambda; `lambda_source(fn)` parses a lambda's defining file and
returns a `Source` whose node is the lambda rewritten as `def <lambda>(args): return body`, with
the user's file and line numbers kept for error messages. Raises FieldsimSyntaxError when the
source cannot be found or the lambda cannot be told apart from others on its line.
"""
from __future__ import annotations

import ast
import linecache
from functools import cache

from fieldsim.errors import FieldsimSyntaxError
from fieldsim.lang.frontend import Source


@cache
def _module_tree(filename: str):
    text = "".join(linecache.getlines(filename))
    if not text:
        return None, []
    return ast.parse(text), linecache.getlines(filename)


class LambdaSource(Source):
    def __init__(self, fn):  # no super().__init__(): a lambda has no `def` for it to parse
        code = fn.__code__
        tree, lines = _module_tree(code.co_filename)
        if tree is None:
            raise FieldsimSyntaxError(f"cannot read the source of {fn!r} (called in a kernel)")
        lam = _find_lambda(tree, code)
        if lam is None:
            raise FieldsimSyntaxError(
                f"cannot tell which lambda on {code.co_filename}:{code.co_firstlineno} is called "
                "in the kernel: give it a name with `def` (or @fs.func)")
        ret = ast.copy_location(ast.Return(value=lam.body), lam.body)
        fdef = ast.FunctionDef(name="<lambda>", args=lam.args, body=[ret], decorator_list=[],
                               returns=None, type_comment=None)
        ast.copy_location(fdef, lam)
        ast.fix_missing_locations(fdef)
        self.file, self.lines, self.start, self.indent = code.co_filename, lines, 1, 0
        self.node, self.name = fdef, fn.__name__


def _find_lambda(tree, code):
    found = [n for n in ast.walk(tree)
             if isinstance(n, ast.Lambda) and n.lineno == code.co_firstlineno]
    if len(found) > 1:  # several on one line: match the argument names, then the column
        names = code.co_varnames[:code.co_argcount]
        found = [n for n in found if tuple(a.arg for a in n.args.args) == names]
    if len(found) > 1:
        cols = {p[2] for p in code.co_positions() if p[2] is not None and p[0] == code.co_firstlineno}
        found = [n for n in found if n.body.col_offset in cols]
    return found[0] if len(found) == 1 else None
