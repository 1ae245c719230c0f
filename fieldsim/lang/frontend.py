"""Frontend pass: a kernel's Python source (AST) to fieldsim IR.

Takes a Python function, its template bindings and scalar argument types; returns a `Kernel`
whose top-level statements are the kernel body in order (parallel `FOR`s marked, other
statements in between), before offloading. Guarantees: every statement has the `Loc` of the
source node it came from; vectors and matrices are scalarised; `@fs.func` calls are inlined;
`fs.static` loops are unrolled and constant conditions folded; variables are block scoped (as in
Taichi). Any failure raises a `FieldsimSyntaxError`/`FieldsimTypeError`/`FieldsimNameError`
located at the innermost offending node.
"""
from __future__ import annotations

import ast
import builtins
import collections
import contextlib
import inspect
import linecache
import numbers
import os
import textwrap
import types
import weakref
from typing import ClassVar

import numpy as np

from fieldsim.errors import (
    ArgumentCountError,
    CompileTypeError,
    FieldsimError,
    FieldsimSyntaxError,
    FieldsimTypeError,
    Loc,
    RuntimeValueError,
)
from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import ForInfo, Kernel, Op, Param, Stmt, walk
from fieldsim.ir.subnormals import FLUSHING_MACHINE
from fieldsim.lang import cross_task, ops, precision, sparse_kernel, struct, syntax_warnings
from fieldsim.lang import types as T
from fieldsim.lang.argpack import ArgPackType, PackValue
from fieldsim.lang.expr import Emitter, MatVal, describe, unbool
from fieldsim.lang.field import Field, placed_twin
from fieldsim.lang.frontend_expr import BINOP_AST, ExprMixin, constant_index_message, mangled
from fieldsim.lang.frontend_refs import (
    ConstantRef,
    FieldRef,
    ListRef,
    LocalRef,
    StaticRef,
    StructVar,
    SwizzleRef,
    ValueRef,
    atomic_operand,
    binding_for,
    slice_ref,
    to_matval,
)
from fieldsim.lang.kernel_objects import KernelObject
from fieldsim.lang.ndarray import BoundNdarray, check_func_args, make_slot
from fieldsim.lang.snode import SNode
from fieldsim.lang.task_bounds import task_safe_dims
from fieldsim.lang.triplets import TripletBuffer, TripletRef

# fn -> its Source; weak, so that a kernel or func defined in a function (a closure made per
# call) does not keep its AST, or the objects its closure holds, alive once it is dropped
_parsed: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


_NOT_A_NAME_CHAIN = object()  # `_name_chain_value` of anything but a name chain

def _parse_cached(fn):
    try:
        src = _parsed.get(fn)
    except TypeError:  # not weak-referenceable: parse every time
        return parse_function(fn)
    if src is None:
        src = _parsed[fn] = parse_function(fn)
    return src


_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
# augmented assignments that update a field element atomically (Taichi's), by their operator
_AUGMENTED_ATOMICS = {"+": "add", "-": "sub", "&": "and", "|": "or", "^": "xor"}


class Source:
    """The parsed source of one Python function and how to locate its nodes."""

    def __init__(self, fn):
        fn = inspect.unwrap(fn)
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        self.in_fieldsim = os.path.abspath(self.file).startswith(_PACKAGE_DIR)
        file_lines, first = _find_definition(fn, self.file)
        self.start = first + 1
        block = _indented_block(file_lines, first)
        try:
            tree = self._parse(block) if block is not None else None
        except SyntaxError:  # not a whole function: let inspect find the block
            tree = None
        if tree is None:
            block = inspect.getblock(file_lines[first:])
            try:
                tree = self._parse(block)
            except SyntaxError:  # an indented def with a line left of it (in brackets or a
                # string): textwrap.dedent removes nothing; parse it inside a block instead
                self.lines, self.start, self.indent = ["if 1:\n", *block], first, 0
                tree = ast.parse("".join(self.lines)).body[0]
        self.node = _matching_def(tree, fn.__code__)
        self.name = fn.__name__

    def _parse(self, lines):
        self.lines = lines
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        self.indent = len(text.splitlines()[0]) - len(dedented.splitlines()[0])
        return ast.parse(dedented)

    in_fieldsim = False  # one of fieldsim's own funcs (a texture's sample_lod, ...)
    # made when first asked (class defaults: a LambdaSource does not run this __init__)
    _assigned: frozenset | None = None
    _item_assigned: frozenset | None = None
    _receivers: frozenset | None = None
    _constants: frozenset | None = None
    _rebound: frozenset | None = None
    _locs: dict | None = None

    @property
    def assigned(self) -> frozenset:
        """The names the function assigns (found once per function: the source is cached)."""
        if self._assigned is None:
            self._assigned = frozenset(_assigned_names(self.node))
        return self._assigned

    @property
    def constant_locals(self) -> frozenset:
        """Names bound once, by a plain `name = value`, and never passed to a call: one whose
        value is a Python number is a typed constant, as Taichi forwards such a variable's value
        and folds what it meets (`a // b`, `a ** n`)."""
        if self._constants is None:
            self._constants = frozenset(_constant_locals(self.node))
        return self._constants

    @property
    def rebound(self) -> frozenset:
        """Names stored more than once (`flag = py_bool` then `flag = True` under an if): a
        Python bool bound to one is a variable, as Taichi's `expr_init` makes it."""
        if self._rebound is None:
            stores = collections.Counter(n.id for n in ast.walk(self.node)
                                         if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load))
            self._rebound = frozenset(n for n, count in stores.items() if count > 1)
        return self._rebound

    @property
    def method_receivers(self) -> frozenset:
        """The names the function calls a method on (`b.grow(k)`): a struct argument's method
        may write its `self`, so such an argument gets its own copy."""
        if self._receivers is None:
            self._receivers = frozenset(
                n.func.value.id for n in ast.walk(self.node)
                if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and isinstance(n.func.value, ast.Name))
        return self._receivers

    @property
    def item_assigned(self) -> frozenset:
        """The names whose items the function assigns (`a[k] = v`, `a[k] += v`)."""
        if self._item_assigned is None:
            self._item_assigned = frozenset(_item_assigned_names(self.node))
        return self._item_assigned

    def loc(self, node) -> Loc:
        """The user-source location of `node` (one Loc per source span, made once: every
        expression node asks for its own, and a func's nodes again at each inlining)."""
        try:
            key = (node.lineno, node.col_offset, node.end_lineno, node.end_col_offset)
        except AttributeError:  # a node without a position
            return self._make_loc(node)
        locs = self._locs
        if locs is None:
            locs = self._locs = {}
        loc = locs.get(key)
        if loc is None:
            loc = locs[key] = self._make_loc(node)
        return loc

    def _make_loc(self, node) -> Loc:
        line = getattr(node, "lineno", 1)
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        col = getattr(node, "col_offset", 0) + self.indent
        end = getattr(node, "end_col_offset", None)
        if end is not None and getattr(node, "end_lineno", line) == line:
            end += self.indent
        else:
            end = None
        return Loc(self.file, self.start + line - 1, col, end, self.name, text.rstrip("\n"))


def _matching_def(tree, code):
    """The `def` parsed for `code`, checked to be its own: code compiled from text under a file
    name that cannot be read (`exec(compile(text, "gen.py", "exec"))` in a script) has its lines
    looked up in another file (the running `__main__`), where the same line holds another
    function or none, which must not be compiled in its place."""
    node = next((n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))),
                None)
    if node is None or node.name != code.co_name or not _same_params(node.args, code):
        raise OSError(f"the lines at {code.co_filename}:{code.co_firstlineno} are not its "
                      "definition (code compiled from text whose file cannot be read?)")
    return node


def _same_params(args: ast.arguments, code) -> bool:
    written = [a.arg for a in [*args.posonlyargs, *args.args, *args.kwonlyargs]]
    compiled = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    # in a class body, Python stores a parameter `__p` as `_Class__p`
    return len(written) == len(compiled) and all(
        c == w or (w.startswith("__") and c.endswith(w)) for w, c in zip(written, compiled))


def _find_definition(fn, file):
    """(the lines of fn's file, the index of its first line: a decorator or the `def`), as
    inspect.findsource returns them, which inspect.getsourcelines starts from. The code object
    names that line; inspect searches for it with a regex and the owning module (about 0.4 ms
    the first time in a process), and is asked only when the line does not start a definition."""
    linecache.checkcache(file)
    lines = linecache.getlines(file, fn.__globals__)
    first = fn.__code__.co_firstlineno - 1
    if 0 <= first < len(lines) and lines[first].lstrip().startswith(("def ", "async ", "@")):
        return lines, first
    return inspect.findsource(fn)


def _indented_block(lines, first):
    """The lines of the function whose definition (decorators first) starts at `lines[first]`,
    found by indentation: up to the last code line before one at or left of the `def`'s
    indentation. `inspect.getblock` tokenizes instead, which costs about 20x more; a block this
    cuts short (a line of the function starting further left inside brackets or a string) does
    not parse, and the caller asks inspect then. None when `first` holds no definition."""
    head = lines[first] if 0 <= first < len(lines) else ""
    base = len(head) - len(head.lstrip())
    seen_def = False
    end = first
    for k in range(first, len(lines)):
        text = lines[k].strip()
        if not text or text[0] == "#":
            continue
        if len(lines[k]) - len(lines[k].lstrip()) > base or text[0] in ")]}":
            end = k
            continue
        if not seen_def and (text[0] == "@" or text.startswith(("def ", "async "))):
            seen_def = text[0] != "@"
            end = k
            continue
        break
    return lines[first:end + 1] if seen_def else None


def parse_function(fn) -> Source:
    if getattr(fn, "__name__", None) == "<lambda>":  # a lambda called in a kernel
        from fieldsim.lang.pyfuncs import LambdaSource
        return LambdaSource(fn)
    try:
        return Source(fn)
    except (OSError, TypeError, SyntaxError) as e:
        raise FieldsimSyntaxError(f"cannot read the source of {fn!r}: {e}") from None


class StaticScope(dict):
    """A block scope unrolled at compile time (an fs.static if branch, one fs.static loop
    iteration): rebinding a compile-time name in it rebinds the enclosing one, as Python does."""


class Frame:
    """Name resolution for one (kernel or inlined func) body: block scopes (name -> a
    reference of `frontend_refs`), then the function's closure, globals and Python builtins."""

    def __init__(self, fn, source: Source):
        self.fn, self.source = fn, source
        self.scopes: list[dict] = [{}]
        self.globals = fn.__globals__
        self.closure = {}
        if fn.__closure__:
            for name, cell in zip(fn.__code__.co_freevars, fn.__closure__):
                try:
                    self.closure[name] = cell.cell_contents
                except ValueError:
                    pass
        self.ret = None  # ReturnSlot for funcs
        self.plain = False

    @property
    def assigned(self) -> frozenset:
        return self.source.assigned  # (computed when first asked: most kernels never ask)

    def lookup(self, name):
        """The reference `name` resolves to, or None."""
        for scope in reversed(self.scopes):
            ref = scope.get(name)
            if ref is not None:
                return ref
        if name in self.closure:
            return StaticRef(self.closure[name])
        if name in self.globals:
            return StaticRef(self.globals[name])
        if hasattr(builtins, name):
            return StaticRef(getattr(builtins, name))
        return None

    def local(self, name):
        """The reference `name` has in the block scopes (not a global), or None."""
        for scope in reversed(self.scopes):
            ref = scope.get(name)
            if ref is not None:
                return ref
        return None

    def bind(self, name, ref):
        self.scopes[-1][name] = ref


# `ReturnSlot.direct` before its one tail return ran (not `True`: a func may return Python's True)
_PENDING = object()


class ReturnSlot:
    def __init__(self, block, position):
        self.block, self.position = block, position
        self.vars = None  # list of allocas (flattened) or None
        self.shape = None  # how to rebuild the value: ('scalar',) / ('mat', n, m, ndim) / ('tuple', [...])
        self.direct = None
        self.flag = None  # an i32 alloca set to 1 by a return that is not in tail position
        self.rtype = None  # the func's declared return type (values are cast to it)
        # a plain Python function's return outside any runtime branch is its value itself, a
        # constant where a constant is returned, as Taichi's Python call of it gives
        self.top_direct = False


class _Visitors(dict):
    """AST node type -> the `Frontend` method that visits it: the methods named
    `<prefix><NodeType>`, filled in once, when the class exists. `kind` names the nodes in
    errors."""

    def __init__(self, prefix: str, kind: str):
        super().__init__()
        self.prefix, self.kind = prefix, kind

    def fill(self, cls):
        for klass in reversed(cls.__mro__):  # (a subclass's method wins)
            for attr, method in vars(klass).items():
                if attr.startswith(self.prefix):
                    node_type = getattr(ast, attr[len(self.prefix):], None)
                    if isinstance(node_type, type):
                        self[node_type] = method


_STATEMENTS = _Visitors("stmt_", "statement")
_EXPRESSIONS = _Visitors("expr_", "expression")


def _visit_with(table: _Visitors):
    """The one dispatch wrapper (`Frontend.stmt`, `Frontend.expr`): runs a node's visitor from
    `table` with the builder at the node's location. Any error leaves as a FieldsimError located
    at the innermost node (the Python errors a visitor may raise on bad input become
    FieldsimSyntaxError). A closure, not a method calling a method: deep nesting (funcs inlined
    64 deep) must not spend two Python frames per level."""
    statements = table.kind == "statement"

    def visit(self, node):
        method = table.get(type(node))
        if method is None:
            from fieldsim.lang import kernel_hints  # (errors only: kept out of the first import)
            raise self._located(FieldsimSyntaxError(kernel_hints.unsupported(node, table.kind)),
                                node)
        b = self.b
        outer, b.loc = b.loc, self.frame.source.loc(node)
        try:
            return self.kernel_value(method(self, node))
        except FieldsimError as err:
            raise self._located(err, node) from None
        except (ValueError, TypeError, IndexError, KeyError, ArithmeticError, AttributeError) as err:
            cls = CompileTypeError if isinstance(err, TypeError) else FieldsimSyntaxError
            raise self._located(cls(f"{type(err).__name__}: {err}"), node) from None
        except RecursionError:  # ArithmeticError above includes OverflowError (10**400)
            if not statements:  # the statement reports it, with stack to spare
                raise
            raise self._located(FieldsimSyntaxError(
                "this statement's expression is nested too deeply to compile; split it "
                "into several statements"), node) from None
        finally:
            b.loc = outer
    return visit


class SerialFuncLoops(Exception):
    """A value crosses the tasks that func loops made and cannot be passed between them
    (`cross_task.spill`): build the kernel again with func loops serial."""


class Frontend(ExprMixin):
    def __init__(self, fn, rt, name=None, templates=None, arg_types=None, ret=None,
                 func_tasks=True):
        self.rt = rt
        self.kernel_name = name or fn.__name__
        self.b = IRBuilder()
        self.top_block = self.b.block  # the kernel's top level: a task is a loop placed here
        # whether a loop at the top of a func inlined at the kernel's top level is a parallel task
        # too, as in Taichi (see `lang.cross_task`; False: the fallback where it cannot be)
        self.func_tasks = func_tasks
        self.e = Emitter(self.b, rt.default_fp, rt.default_ip, rt.debug,
                         flush=FLUSHING_MACHINE and rt.arch == "cpu")
        self.source = _parse_cached(fn)
        self.frame = Frame(fn, self.source)
        self.kernel_frame = self.frame  # the body whose parameters are the kernel's arguments
        self.templates = templates or {}
        self.arg_types = arg_types or {}
        self.ret = ret
        self.depth = 0  # nesting of blocks inside the kernel body
        self.loop_depth = 0
        self.loop_config = {}
        self.static_loops: list = []  # (loop_depth, depth) at each enclosing fs.static loop
        self.static_args = 0  # nesting of fs.static(...) calls whose arguments are being built
        self.for_iter = None  # the iterable's AST node of the non-static for loop being built
        self.inline_stack: list = []
        # per inlined func: "loops" (it runs at the kernel's top level and has loops there, which
        # are tasks), "top" (it runs there, no loops of its own there), or "" (neither)
        self.task_funcs: list = []
        # AST node id -> the element a by-reference argument holding a call refers to, evaluated
        # once by expr_Call for the func call being made (see `caller_refs`)
        self.call_arg_refs: dict = {}
        self.hidden_fields: list = []
        self.kernel_variables: list = []  # the hidden fields of top-level variables
        self.nonneg: set = set()  # ids of runtime values known >= 0 (ndarray shapes)
        # a sparse struct-for's cell, active where its body runs: [(ids of the sparse nodes,
        # its storage index values)], and its user indices' storage values {id: (offset, value)}
        self.known_active: list = []
        self.storage_of: dict = {}
        self.parallel_depth = -1
        self.open_fors: list = []  # the non-static for loops around the statement being built
        self.funcs: list = []  # the kernel's real functions (lang.real_calls)
        self.local_arrays = False  # made an ARRAY_LOAD/ARRAY_STORE (frontend_refs.array_slots)
        self.real_funcs: dict = {}  # key -> (its Function, result shape), once built
        self.real_inlining: list = []  # keys of the real funcs being inlined

    # ---- entry --------------------------------------------------------------------------------
    def build(self) -> Kernel:
        node = self.source.node
        params = []
        with self.b.at(self.source.loc(node)):
            pos = 0  # ARG positions count runtime arguments only
            for a in node.args.args:
                value, pos = self._param(a.arg, self.source.loc(a), params, pos)
                self._bind_kernel_param(a.arg, value, self.source.loc(a))
            self.block(node.body)
        if self.ret is not None and not any(s.op == Op.RETURN for s in self.b.block):
            raise FieldsimSyntaxError(f"Kernel has a return type but does not have a return "
                                      f"statement: kernel {self.kernel_name!r} declares {self.ret} "
                                      f"but does not end with a return statement",
                                      self.source.loc(node))
        if not cross_task.spill(self, self.b.block) and self.func_tasks:
            raise SerialFuncLoops
        return Kernel(self.kernel_name, params, self.b.block, self.ret, self.source.loc(node),
                      meta={"local_arrays": True} if self.local_arrays else {}, funcs=self.funcs)

    def _param(self, name, loc, params, pos):
        """(what parameter `name` is in the body, the next ARG position); appends its Params."""
        if isinstance(self.templates.get(name), BoundNdarray):  # fieldsim.lang.ndarray
            slot, hidden, pos = make_slot(self, name, self.templates[name].spec, pos, loc)
            params.extend(hidden)
            return slot, pos
        if name in self.templates:
            params.append(Param(name, None, template=True))
            return self.templates[name], pos
        dt = self.arg_types[name]
        if isinstance(dt, ArgPackType):  # each member came as an argument `name.member`
            members = {}
            for k in dt.members:
                members[k], pos = self._param(f"{name}.{k}", loc, params, pos)
            return PackValue(name, dt, members), pos
        if isinstance(dt, T.MatrixType):  # entries came as scalar arguments
            entries = []
            for k in range(dt.n * dt.m):
                entries.append(self.b.emit(Op.ARG, dt.dtype, attr=pos, loc=loc))
                params.append(Param(f"{name}[{k}]", dt.dtype))
                pos += 1
            return MatVal(entries, dt.n, dt.m, dt.ndim), pos
        if isinstance(dt, struct.StructType):  # leaves came as scalar arguments
            return self._struct_arg(name, loc, dt, params, pos, pos)
        params.append(Param(name, dt))
        return self.b.emit(Op.ARG, dt, attr=pos, loc=loc), pos + 1

    def _bind_kernel_param(self, name, value, loc):
        if name in self.templates or isinstance(value, PackValue):
            self.frame.bind(name, StaticRef(value))
        elif isinstance(value, struct.StructVal):
            if name in self.frame.assigned:
                self.frame.bind(name, StructVar(struct.declare(self, name, value)))
            else:
                self.frame.bind(name, ValueRef(value))
        else:
            self.bind_value(name, value, loc)

    def _struct_arg(self, name, loc, spec, params, pos, base):
        """A struct kernel argument rebuilt from its scalar arguments (leaves in member order)."""
        members = {}
        for k, t in spec.members.items():
            if isinstance(t, struct.StructType):
                members[k], pos = self._struct_arg(name, loc, t, params, pos, base)
                continue
            dt, count = (t.dtype, t.n * t.m) if isinstance(t, T.MatrixType) else (t, 1)
            entries = []
            for _ in range(count):
                entries.append(self.b.emit(Op.ARG, dt, attr=pos, loc=loc))
                params.append(Param(f"{name}[{pos - base}]", dt))  # as kernel.bind names them
                pos += 1
            members[k] = MatVal(entries, t.n, t.m, t.ndim) if isinstance(t, T.MatrixType) \
                else entries[0]
        return struct.StructVal(spec, members), pos

    def bind_value(self, name, value, loc):
        if name in self.frame.assigned and isinstance(value, (Stmt, MatVal)):
            self.declare(name, value)
        else:
            self.frame.bind(name, binding_for(value))

    # ---- dispatch with located errors ------------------------------------------------------------
    def loc(self, node) -> Loc:
        return self.frame.source.loc(node)

    expr = _visit_with(_EXPRESSIONS)  # node -> its frontend value
    stmt = _visit_with(_STATEMENTS)

    def _located(self, err: FieldsimError, node):
        # an error inside one of fieldsim's own funcs is the user's call's: left unlocated
        # here, the visit of the call in the user's code locates it
        if err.loc is None and not (self.frame.source.in_fieldsim and self.inline_stack):
            err = type(err)(err.message, self.loc(node), err.related)
        return err

    def block(self, stmts, new_scope=False, static=False):
        if new_scope:
            self.frame.scopes.append(StaticScope() if static else {})
        try:
            stmts = list(stmts)
            for idx, node in enumerate(stmts):
                rest = stmts[idx + 1:]
                if self.frame.ret is not None and isinstance(node, ast.If) and rest \
                        and _always_returns(node.body) and not node.orelse:
                    # `if c: return a` followed by more code: the rest is the else branch
                    node = ast.If(test=node.test, body=node.body, orelse=rest,
                                  lineno=node.lineno, col_offset=node.col_offset)
                    self.stmt(node)
                    return
                self.stmt(node)
                slot = self.frame.ret
                if slot is not None and slot.flag is not None and rest and _contains_return(node):
                    # a return may have run inside `node`: what follows runs only if none did
                    if self.loop_depth > self.inline_stack[-1][1]:
                        stop = self.b.if_(self.b.local_load(slot.flag))
                        with self.b.into(stop.blocks[0]):
                            self.b.emit(Op.BREAK)
                        continue
                    go_on = self.b.if_(self.e.unop(Op.NOT, self.b.local_load(slot.flag)))
                    with self.b.into(go_on.blocks[0]):
                        self.block(rest)
                    return
                if isinstance(node, ast.Return):
                    return  # code after it never runs: Taichi discards it, and so do we
        finally:
            if new_scope:
                self.frame.scopes.pop()

    def at_kernel_top(self) -> bool:
        """Are statements made now at the kernel's top level? Those of a user's func inlined
        there are, as in Taichi (its loops are outermost loops); fieldsim's own funcs (written
        for serial loops) are not."""
        if self.depth or self.b.block is not self.top_block:
            return False
        return not self.inline_stack or (self.func_tasks and all(self.task_funcs))

    # ---- variables ------------------------------------------------------------------------------
    def declare(self, name, value, dtype=None):
        # a func's variables are kernel variables where its own loops are tasks (`+=` in them is
        # atomic, as at the kernel's top level); others stay locals (lang.cross_task moves those
        # a task boundary separates into fields)
        if self.at_kernel_top() and (not self.inline_stack or self.task_funcs[-1] == "loops"):
            self.declare_kernel_variable(name, value, dtype)
            return
        if isinstance(value, MatVal):
            # one dtype for all entries, as Taichi's matrices have: `ti.Vector([0, -9.8])`
            # is an f32 vector (its 0 must not make an i32 entry that `+=` then truncates)
            dt = dtype or T.promote_all([self.e.dtype_of(v) for v in value.entries])
            allocas = []
            for v in value.entries:
                var = self.b.alloca(dt)
                self.b.local_store(var, self.e.value(v, dt))
                allocas.append(var)
            self.frame.bind(name, LocalRef(allocas, MatVal(allocas, value.n, value.m, value.ndim),
                                           name))
            return
        dt = dtype or self.e.dtype_of(value)
        var = self.b.alloca(dt)
        self.b.local_store(var, self.e.value(value, dt))
        self.frame.bind(name, LocalRef([var], None, name))

    def declare_list(self, name, items):
        """`v = [a, b]` of vectors/matrices, later item-assigned: one variable per item (Taichi's
        `expr_init` of a list), bound under `name[k]` so that they cross tasks as any variable."""
        refs = []
        for k, item in enumerate(items):
            self.declare(f"{name}[{k}]", item)
            refs.append(self.frame.local(f"{name}[{k}]"))
        self.frame.bind(name, ListRef(refs, name))

    def item_assigned_sequence(self, name, value):
        """`v = [a, b]; v[1] = c` (or a tuple a func returned): as in Taichi's `expr_init`, the
        items are variables. Scalars of one type make a local vector (`i_v = [0, 0, 0, 0]` too:
        it was left a Python list, and `i_v[0] = e[i][0]` refused); scalars of mixed types
        (`[0, 0.5]`) one variable per item, each keeping its type, so `m[0] = 2.7` stores 2 as in
        Taichi; vectors/matrices one variable per item; a Python bool item is a u1, as Taichi's
        bool constant. Returns what to bind, or None when the items were declared."""
        if type(value) in (list, tuple):
            value = type(value)(self.e.value(int(v), T.u1) if isinstance(v, bool) else v for v in value)
        if _list_of_tensors(value):
            self.declare_list(name, value)
            return None
        vec = to_matval(value)
        if not isinstance(vec, MatVal) or vec.ndim != 1:
            return value
        if len({self.e.dtype_of(e) for e in vec.entries}) > 1:
            self.declare_list(name, value)
            return None
        return vec

    def declare_kernel_variable(self, name, value, dtype=None):
        """A variable at kernel top level lives in a hidden 0-D field (Taichi's global
        temporaries): it can cross tasks, and `+=` from a parallel loop is atomic. One that a
        single serial task alone uses is made a local again (`ir.passes.kernel_vars`)."""
        if isinstance(value, MatVal):
            dt = dtype or T.promote_all([self.e.dtype_of(v) for v in value.entries])
            hidden = Field(dt, (), f"{self.kernel_name}.{name}", needs_grad=dt.is_float,
                           n=value.n, m=value.m if value.ndim == 2 else None, ndim_el=value.ndim,
                           _role="hidden")
        else:
            dt = dtype or self.e.dtype_of(value)
            hidden = Field(dt, (), f"{self.kernel_name}.{name}", needs_grad=dt.is_float, _role="hidden")
        self.hidden_fields.append(hidden)
        self.kernel_variables.append(hidden)
        ref = FieldRef(hidden, [], None)
        ref.store(self, value)
        self.frame.bind(name, ref)

    def assign_name(self, name, value, node, annotation=None):
        """`name = value`: stores into the variable the name is in a block scope, else binds it."""
        self.refuse_argument_rebinding(name, node)
        ref = self.frame.local(name)
        if ref is None:
            self.bind_new(name, value, node, annotation)
        else:
            if annotation is None:
                precision.check(self, "Assign", precision.target_dtype(ref), value, node)
            ref.assign(self, name, value, node, annotation)

    def refuse_argument_rebinding(self, name, node):
        """As Taichi 1.7.4: a kernel's arguments are immutable (`re = re`, `n += 1` in the
        kernel body is a syntax error); a func's parameters are ordinary variables."""
        if self.frame is self.kernel_frame and any(a.arg == name for a in self.source.node.args.args):
            raise FieldsimSyntaxError(f'Kernel argument "{name}" is immutable in the kernel. If you '
                                      f'want to change its value, please create a new variable.',
                                      self.loc(node))

    def rebind_static(self, name, value, node, annotation):
        """`name = value` over a name holding a compile-time Python object: rebinds it in its
        own block, and through blocks unrolled at compile time (fs.static if/for) as Python
        would; through a runtime if/loop it is refused, as in Taichi (a runtime branch cannot
        choose between Python objects; the binding would silently end with the block)."""
        scopes = self.frame.scopes
        owner = max(k for k, scope in enumerate(scopes) if name in scopes[k])
        if any(not isinstance(scope, StaticScope) for scope in scopes[owner + 1:]):
            raise FieldsimSyntaxError(
                f"Variable {name!r} cannot be assigned. Maybe it is not a Taichi object? It holds "
                f"{describe(scopes[owner][name].obj)}, a compile-time Python value, and a runtime "
                "if/loop cannot rebind it (use ti.static(...) for the condition, or hold a "
                "Taichi value)")
        self.bind_new(name, value, node, annotation)
        if owner < len(scopes) - 1:
            scopes[owner][name] = scopes[-1].pop(name)

    def bind_new(self, name, value, node, annotation):
        """A first assignment (or one over a static name): a struct local for a struct, a kernel
        variable for a kernel value, a number or an annotated name; a static binding for any
        other Python object."""
        if struct.is_struct(value):  # a new struct local holding a copy
            self.frame.bind(name, StructVar(struct.declare(self, name, value)))
            return
        value = _python_number(self.typed_container_floats(value))
        if isinstance(value, (list, tuple)) and name in self.frame.source.item_assigned:
            value = self.item_assigned_sequence(name, value)
            if value is None:
                return
        # as in Taichi, `flag = False` makes a variable (a bool from Python code stays static
        # unless the name is stored again)
        literal_bool = isinstance(value, bool) and (
            isinstance(getattr(node, "value", None), ast.Constant) or name in self.frame.source.rebound)
        if annotation is None and type(value) in (int, float) and name in self.frame.source.constant_locals:
            self.frame.bind(name, ConstantRef(self.e.value(value)))  # a typed constant, as Taichi forwards it
            return
        if literal_bool and annotation is None:  # Taichi's bool constant is a u1: `hit = 2` holds 1
            self.declare(name, int(value), T.u1)
        elif isinstance(value, (Stmt, MatVal)) or (isinstance(value, (int, float)) and not isinstance(value, bool)) \
                or annotation is not None or literal_bool:
            self.declare(name, value if not isinstance(value, bool) else int(value), annotation)
        else:
            self.frame.bind(name, StaticRef(value))

    # ---- statements -----------------------------------------------------------------------------
    def stmt_Pass(self, node):
        pass

    def stmt_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.expr(node.value)

    def stmt_Assign(self, node: ast.Assign):
        value = self.expr(node.value)
        static = isinstance(node.value, ast.Call) and self._is(node.value.func, ops.static)
        for target in node.targets:
            if static and _names_only(target, value):
                self.bind_static(target, value)  # `n = ti.static(3)`: n is the Python value
            else:
                self.assign_target(target, value, node)

    def typed_container_floats(self, value):
        """A list/tuple/dict assigned in a kernel holds its Python floats as default_fp values,
        as Taichi makes each item a variable: `c = {"r": 203 / 255}; (1.0 - c["r"]) * x`
        subtracts in f32, not in Python's f64 (ints and other objects stay as they are); a
        struct item is a copy, so `t = (P[0], P[1]); P[0] = t[1]; P[1] = t[0]` swaps."""
        if type(value) in (list, tuple):
            return type(value)(self._typed_item(v) for v in value)
        if type(value) is dict:
            return {k: self._typed_item(v) for k, v in value.items()}
        return value

    def _typed_item(self, v):
        if isinstance(v, struct.StructValue):
            return v.load(self)
        return self.e.value(v) if type(v) is float else self.typed_container_floats(v)

    def bind_static(self, target, value):
        if isinstance(target, ast.Name):
            self.frame.bind(target.id, StaticRef(value))
        else:
            for t, v in zip(target.elts, value):
                self.bind_static(t, v)

    def expr_NamedExpr(self, node: ast.NamedExpr):
        """`(name := value)`: assigns as `name = value` does; its value is the variable's
        afterwards (a value stored into an existing float variable reads back as a float), as
        in Taichi."""
        self.assign_name(node.target.id, self.expr(node.value), node)
        return self.expr(ast.copy_location(ast.Name(node.target.id, ast.Load()), node.target))

    def stmt_AnnAssign(self, node: ast.AnnAssign):
        dt = self.e.resolve(self.expr(node.annotation))
        if node.value is None:
            raise FieldsimSyntaxError("an annotated variable needs a value")
        value = self.expr(node.value)
        if isinstance(dt, T.DataType) and isinstance(node.target, ast.Name):
            self.refuse_annotated_retype(node.target.id, dt, node)
        if not isinstance(dt, (T.DataType, T.MatrixType, struct.StructType)):
            self.check_class_annotation(node, dt, value)
            dt = None
        if isinstance(dt, T.MatrixType):
            value = self.matrix_type_ctor(dt, [value])
            dt = None
        elif isinstance(dt, struct.StructType):  # `s: my_struct = value`: cast to the type
            value = struct.kernel_cast(self, dt, value, node.target.id)
            dt = None
        self.assign_name(node.target.id, value, node, dt)

    def refuse_annotated_retype(self, name, dt, node):
        """`d: ti.f32 = ...` over an `i32` variable `d`: Taichi refuses it ("Static assign cannot
        have type overloading"); storing would silently truncate to the old type."""
        ref = self.frame.local(name)
        old = None if ref is None else precision.target_dtype(ref)
        if old is not None and old != dt:
            raise FieldsimSyntaxError(
                f"variable {name!r} is already {old.name}; the annotation {dt.name} cannot change "
                "its type (Taichi: static assign cannot have type overloading): use a new name, "
                f"or `{name} = ti.cast(value, ti.{dt.name})` without the annotation", self.loc(node))

    def check_class_annotation(self, node: ast.AnnAssign, ann, value):
        """`v: ti.Vector = ...` (pre-1.0 Taichi programs; 1.7.4 fails inside its frontend): the
        class says only "a vector/matrix", so a value of that kind keeps its own type; anything
        else is refused at the line rather than failing later on the class."""
        from fieldsim.lang.matrix import Matrix, Vector
        name = node.target.id if isinstance(node.target, ast.Name) else ast.unparse(node.target)
        if ann in (Matrix, Vector):
            if isinstance(value, MatVal) and (ann is Matrix or value.ndim == 1):
                return
            kind = "vector" if ann is Vector else "matrix"
            raise FieldsimTypeError(f"variable {name!r} is annotated ti.{ann.__name__}, but its value "
                                    f"is {describe(value)}, not a {kind}", self.loc(node))
        raise FieldsimTypeError(f"variable {name!r} is annotated {ann!r}, which is not a Taichi type "
                                "(use e.g. ti.f32, ti.types.vector(3, ti.f32), a ti.types.struct, "
                                "or no annotation)", self.loc(node))

    def assign_target(self, target, value, node):
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, node)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = self.unpacked(value, len(target.elts))
            for k, (t, v) in enumerate(zip(target.elts, values)):
                self.assign_target(t, v, _element_assign(node, k, len(values)))
        elif isinstance(target, ast.Subscript):
            self.store_subscript(target, value)
        elif isinstance(target, ast.Attribute):
            self.store_attribute(target, value)
        else:
            raise FieldsimSyntaxError(f"cannot assign to {type(target).__name__}")

    def unpacked(self, value, n: int) -> list:
        """The n items `a, b = value` assigns, every one read before the first store, as Python
        does: a struct item that is a field element or local (`P[0], P[1] = P[1], P[0]`) is
        snapshotted here, or storing `P[0]` would change the `P[0]` stored into `P[1]`."""
        if isinstance(value, MatVal) and value.ndim == 2:  # as Taichi: a matrix unpacks into rows
            values = [MatVal.vector([value.at(r, c) for c in range(value.m)]) for r in range(value.n)]
        else:
            values = value.entries if isinstance(value, MatVal) else list(value) \
                if isinstance(value, (tuple, list)) else None
        if values is None or len(values) != n:
            raise FieldsimTypeError(f"cannot unpack {describe(value)} into {n} names")
        return [v.load(self) if isinstance(v, struct.StructValue) else v for v in values]

    def store_subscript(self, target: ast.Subscript, value):
        with self.b.at(self.loc(target)):
            ref = self.lvalue(target)
            precision.check(self, "Assign", precision.target_dtype(ref), value, target)
            ref.store(self, value)

    def store_attribute(self, target: ast.Attribute, value):
        ref = self.lvalue(target)
        precision.check(self, "Assign", precision.target_dtype(ref), value, target)
        ref.store(self, value)

    def stmt_AugAssign(self, node: ast.AugAssign):
        if isinstance(node.target, ast.Name):
            self.refuse_argument_rebinding(node.target.id, node)
        op = BINOP_AST[type(node.op)]
        # Taichi runs the funcs a target's indices call before the value, but reads the fields
        # they load after it (its expressions load lazily): `a[f()] += g()` calls f first,
        # `a[b[i]] += g()` reads b[i] after g
        if self._calls_a_func(node.target):
            ref = self.lvalue(node.target)
            value = self.expr(node.value)
        else:
            value = self.expr(node.value)
            ref = self.lvalue(node.target)
        # Taichi: `+=`, `-=`, `&=`, `|=`, `^=` on a field element (a kernel variable a parallel
        # loop writes is one) are atomics; a load and a store would lose other threads' updates
        kind = _AUGMENTED_ATOMICS.get(op)
        dst = precision.target_dtype(ref)
        if kind is not None and (isinstance(ref, FieldRef) or (op in ("+", "-") and isinstance(ref, TripletRef))
                                 or (isinstance(ref, SwizzleRef) and ref.on_fields())):
            precision.check(self, kind, dst, value, node)
            ref.atomic(self, kind, value)
            return
        current = ref.load(self)
        if op in ("+", "-"):  # Taichi: an atomic add/sub on the variable
            precision.check(self, kind, dst, to_matval(value), node)
            value = atomic_operand(self, current, value)
        elif kind is not None and dst is T.u1:  # atomic too: `q ^= 2` on a true u1 is 1 ^ 1
            value = atomic_operand(self, current, value)
        elif isinstance(current, MatVal):
            value = to_matval(value)
        new = self.e.matmul(current, value) if op == "@" else self.e.binop(op, current, value)
        if op not in ("+", "-"):
            precision.check(self, "Assign", dst, new, node)
        ref.store(self, new)

    def _calls_a_func(self, node) -> bool:
        """Whether `node` calls anything but a fieldsim builtin (a func may write fields)."""
        for call in ast.walk(node):
            if isinstance(call, ast.Call) and not self._is_builtin(call.func):
                return True
        return False

    def _is_builtin(self, callee) -> bool:
        fn = self._name_chain_value(callee)
        if fn is _NOT_A_NAME_CHAIN:
            return False
        # a func is an object, not a function: only fieldsim's and Python's own functions pass
        plain = isinstance(fn, (types.FunctionType, types.BuiltinFunctionType, type))
        return fn in ops.KERNEL_BUILTINS or plain and getattr(fn, "__module__", "").startswith(
            ("fieldsim.", "builtins", "math"))

    def atomic_target(self, target_node, kind):
        if not isinstance(target_node, (ast.Name, ast.Subscript, ast.Attribute)):
            raise FieldsimSyntaxError(f"cannot use a non-writable target as the first operand of "
                                      f"'atomic_{kind}' (give a variable or a field element)")
        return self.lvalue(target_node)

    def atomic_on_target(self, ref, kind, value, node):
        precision.check(self, kind, precision.target_dtype(ref), to_matval(value), node)
        if isinstance(ref, (FieldRef, TripletRef)):
            return ref.atomic(self, kind, value)
        old = ref.load(self)  # a local: no other thread can see it
        value = atomic_operand(self, old, value)
        op = {"add": "+", "sub": "-", "min": "min", "max": "max", "and": "&", "or": "|",
              "xor": "^", "mul": "*"}[kind]
        ref.store(self, self.e.binop(op, old, value))
        return old

    def lvalue(self, node):
        ref = self._lvalue(node)
        if isinstance(ref, StaticRef):
            raise FieldsimSyntaxError(f"cannot assign to {_static_target(node, ref.obj)}")
        return ref

    def _lvalue(self, node):
        """What an assignment target refers to, without loading anything."""
        handler = self._LVALUE_BY_NODE.get(type(node))
        if handler is None:
            raise FieldsimSyntaxError(f"cannot assign to this expression ({type(node).__name__})")
        return handler(self, node)

    def _lvalue_name(self, node: ast.Name):
        ref = self.frame.lookup(node.id)
        if ref is None:
            raise FieldsimSyntaxError(f"name {node.id!r} is not defined")
        return ref.target(node.id)

    def _lvalue_subscript(self, node: ast.Subscript):
        inner = self._subscript_base(node.value)
        idx = self.subscript_indices(node.slice)
        if isinstance(inner, StaticRef):
            return self._static_item_ref(inner.obj, idx)
        if any(isinstance(i, slice) for i in idx):
            return slice_ref(self, inner, idx)
        return inner.component(self, idx)

    def _subscript_base(self, node):
        """The object `base[...] = v` writes into: an assignable expression, or any other
        expression whose value is a compile-time object (`getattr(self, "b")[i] = v`, a method
        returning a field), as Taichi evaluates it."""
        if type(node) in self._LVALUE_BY_NODE:
            return self._lvalue(node)
        value = self.expr(node)
        if isinstance(value, (Stmt, MatVal)) or struct.is_struct(value):
            raise FieldsimSyntaxError(f"cannot assign to this expression ({type(node).__name__})")
        return StaticRef(value)

    def _static_item_ref(self, obj, idx):
        """The element `obj[idx]` of a compile-time object: a field/struct-field element, or a
        Python container's item (constant indices only)."""
        if isinstance(obj, Field):
            return FieldRef(obj, self.field_indices(obj, idx), None)
        if isinstance(obj, struct.StructField):
            return struct.StructFieldRef(obj, self.struct_indices(obj, idx))
        if isinstance(obj, TripletBuffer):  # a sparse matrix builder: `A[i, j] += v`
            return TripletRef(obj, idx)
        if isinstance(obj, KernelObject):
            return obj.kernel_item(self, idx)
        if any(isinstance(i, (Stmt, MatVal)) for i in idx):
            raise FieldsimSyntaxError(constant_index_message(obj))
        return StaticRef(obj[idx[0]] if len(idx) == 1 else obj[tuple(idx)])

    def _lvalue_attribute(self, node: ast.Attribute):
        inner = self._lvalue(node.value)
        if isinstance(inner, StaticRef):
            obj = inner.obj
            if isinstance(obj, Field) and node.attr in ("grad", "dual"):
                return StaticRef(placed_twin(obj, node.attr))
            if isinstance(obj, KernelObject):
                return obj.kernel_attribute(self, node.attr)
            if isinstance(obj, PackValue):
                return StaticRef(obj.member_to_store(node.attr))
            return StaticRef(getattr(obj, mangled(self.frame.fn, node.attr)))
        if isinstance(inner, (struct.StructLocalRef, struct.StructFieldRef)):
            if node.attr not in inner.names():
                raise FieldsimTypeError(f"{inner.describe()} has no member {node.attr!r}")
            return inner.member_ref(self, node.attr)
        return self._swizzle_ref(inner, node)

    def _swizzle_ref(self, inner, node: ast.Attribute):
        """`v.x` / `v.xy` as an assignment target: one component, or a SwizzleRef."""
        from fieldsim.lang.matrix_ops import check_swizzle as swizzle_check
        from fieldsim.lang.matrix_ops import swizzle_indices
        sw = swizzle_indices(node.attr)
        if sw is None:
            raise FieldsimSyntaxError(f"cannot assign to this expression ({type(node).__name__})")
        n = _vector_length(inner)
        if n is not None:
            swizzle_check(node.attr, sw, n, f"a {n}-vector")
        if len(sw) == 1:
            return inner.component(self, [sw[0]])
        if len(set(sw)) != len(sw):
            raise FieldsimSyntaxError(f"cannot assign to the swizzle .{node.attr}: it "
                                      "repeats a component")
        return SwizzleRef([inner.component(self, [k]) for k in sw])

    _LVALUE_BY_NODE: ClassVar[dict] = {ast.Name: _lvalue_name, ast.Subscript: _lvalue_subscript,
                       ast.Attribute: _lvalue_attribute}

    def condition(self, test, integer_only=False):
        """The truth value of an `if`/`while`/`assert` test. The `u1` cast a comparison's value
        gets (`Emitter.as_bool`) is dropped when it was just emitted: only the truth is used.
        `integer_only`: a float is refused (Taichi's rule for `assert`, debug or not)."""
        v = self.expr(test)
        if integer_only and isinstance(v, Stmt) and v.dtype.is_float:
            raise FieldsimTypeError(f"`assert` conditions must be an integer; found {v.dtype}. Use "
                                    "`assert x != 0` instead of `assert x` for float values.")
        block = self.b.block
        if isinstance(v, Stmt) and block and block[-1] is v and unbool(v) is not v:
            block.pop()
        return self.e.truthy(v)

    def stmt_If(self, node: ast.If):
        cond = self.condition(node.test)
        if isinstance(cond, int):  # constant condition (fs.static or folded): one branch only
            # as in Taichi, only fs.static(...) splices the branch into the enclosing scope; a
            # plain `if True:` is a nested block (a loop in it is not a top-level, parallel loop)
            nested = not (isinstance(node.test, ast.Call) and self._is(node.test.func, ops.static))
            self.depth += nested
            try:
                self.block(node.body if cond else node.orelse, new_scope=True, static=True)
            finally:
                self.depth -= nested
            return
        syntax_warnings.check_plain_branch(self, "if", node)
        if_stmt = self.b.if_(cond)
        self.depth += 1
        with self.b.into(if_stmt.blocks[0]):
            self.block(node.body, new_scope=True)
        with self.b.into(if_stmt.blocks[1]):
            self.block(node.orelse, new_scope=True)
        self.depth -= 1

    def stmt_While(self, node: ast.While):
        if node.orelse:
            raise FieldsimSyntaxError("while/else is not supported")
        loop = self.b.loop()
        self.depth += 1
        self.loop_depth += 1
        with self.b.into(loop.body):
            cond = self.condition(node.test)
            if not isinstance(cond, int):
                syntax_warnings.check_plain_branch(self, "while", node)
            if not (isinstance(cond, int) and cond):
                stop = self.b.if_(self.e.value(self.e.unop(Op.NOT, self.e.value(cond))))
                with self.b.into(stop.blocks[0]):
                    self.b.emit(Op.BREAK)
            self.block(node.body, new_scope=True)
        self.loop_depth -= 1
        self.depth -= 1

    def _static_jump(self, node, kind):
        """`break`/`continue` aimed at the innermost fs.static loop: stop or skip unrolling."""
        if not self.static_loops or self.static_loops[-1][0] != self.loop_depth:
            return False
        if self.static_loops[-1][1] != self.depth:
            raise FieldsimSyntaxError(f"{kind} in an fs.static loop must be under fs.static "
                                      "conditions only (the loop is unrolled at compile time)")
        raise (_StaticBreak if kind == "break" else _StaticContinue)()

    def stmt_Break(self, node):
        self._static_jump(node, "break")
        if self.loop_depth == 0:
            raise FieldsimSyntaxError("break outside a loop (or inside an fs.static loop)")
        if self.parallel_depth == self.loop_depth:
            raise FieldsimSyntaxError("break is not allowed in a kernel's outermost (parallel) loop: "
                                      "its iterations run concurrently; use an if, or a serial "
                                      "loop with fs.loop_config(serialize=True)")
        if self.inline_stack and self.inline_stack[-1][1] == self.loop_depth:
            raise FieldsimSyntaxError("break inside a func must be inside a loop of that func")
        self.b.emit(Op.BREAK)

    def stmt_Continue(self, node):
        self._static_jump(node, "continue")
        if self.loop_depth == 0:
            raise FieldsimSyntaxError("continue outside a loop (or inside an fs.static loop)")
        self.b.emit(Op.CONTINUE)

    def stmt_Assert(self, node: ast.Assert):
        from fieldsim.lang import formatting
        cond = self.condition(node.test, integer_only=True)
        if not self.rt.debug:  # as in Taichi: asserts are checked with debug=True only
            return
        if isinstance(cond, int) and cond:
            return
        values, kinds = (), ()
        msg = ast.unparse(node.test)
        if node.msg is not None:
            text = self.expr(node.msg)
            if isinstance(text, str):
                msg = text
            else:
                msg, values, kinds = formatting.assert_message(self, text)
        attr = (msg, tuple(kinds)) if values else msg
        # a constant-false assert fails when reached, as in Taichi
        self.b.emit(Op.ASSERT, None, (self.e.value(cond, T.i32), *values), attr=attr)

    def stmt_Return(self, node: ast.Return):
        value = self.expr(node.value) if node.value is not None else None
        slot = self.frame.ret
        if slot is None:  # the kernel's own return
            if self.depth != 0:
                raise FieldsimSyntaxError("Return inside non-static if/for is not supported: a "
                                          "kernel may return only at the end of its body")
            if self.ret is None:
                if value is None:  # `return` / `return None` in a kernel without a return value
                    return
                raise FieldsimSyntaxError("this kernel returns a value but has no return annotation "
                                          "(e.g. `-> fs.f32`)")
            from fieldsim.lang.returns import flatten
            self.b.emit(Op.RETURN, None, tuple(flatten(self, self.ret, value, self.kernel_name)))
            return
        self.func_return(slot, value)

    def func_return(self, slot: ReturnSlot, value):
        from fieldsim.lang.func_args import coerce
        if value is not None and slot.rtype is not None:
            value = coerce(self, slot.rtype, value, "the return value", self.inline_stack[-1][0])
        if slot.direct is _PENDING or (slot.top_direct and slot.vars is None
                                       and self.b.block is slot.block):
            slot.direct = value
            return
        if value is not None:
            self._store_return_value(slot, value)
        if slot.flag is not None:
            self.b.local_store(slot.flag, self.b.const(1, T.i32))
            if self.loop_depth > self.inline_stack[-1][1]:
                self.b.emit(Op.BREAK)  # leave the func's loop; the code after it checks the flag
        elif self.loop_depth > self.inline_stack[-1][1]:
            raise FieldsimSyntaxError("internal: a return inside a loop of a func needs the return flag")

    def _store_return_value(self, slot: ReturnSlot, value):
        """Stores a returned value into the func's result variables, which the first return
        allocates (at the slot's position, so they dominate every use)."""
        if isinstance(value, struct.StructValue):  # a local or field element: its members now
            value = value.load(self)
        flat, shape = _flatten_value(value)
        if slot.vars is None:
            slot.shape = shape
            slot.vars = []
            declared = _declared_dtype(self, slot.rtype)  # `return 1.0` of an f64 func is f64
            for pos, v in enumerate(flat):
                var = Stmt(Op.ALLOCA, declared or self.e.dtype_of(v), loc=self.b.loc)
                slot.block.insert(slot.position + pos, var)
                slot.vars.append(var)
        if shape != slot.shape:
            raise FieldsimTypeError("all return statements of a func must return the same kind of value")
        for var, v in zip(slot.vars, flat):
            self.b.local_store(var, self.e.value(v, var.dtype))

    # ---- for loops ------------------------------------------------------------------------------
    def set_loop_config(self, serialize=False, block_dim=None, parallelize=None, **kw):
        self.loop_config = {"serialize": bool(serialize) or parallelize == 1, "block_dim": block_dim}

    def stmt_For(self, node: ast.For):
        if node.orelse:
            raise FieldsimSyntaxError("for/else is not supported")
        it = node.iter
        if isinstance(it, ast.Call) and self._is(it.func, ops.static):
            self.static_for(node, self.static_expr(it.args[0]))
            return
        config, self.loop_config = self.loop_config, {}
        outermost = self.at_kernel_top() and not (self.inline_stack and _leaves_early(node))
        self.for_iter = it  # `range(n)` here is the loop's own, not a Python call
        iterable = self.expr(it)
        dims, names, grouped = self.loop_dims(iterable, node)
        if outermost:
            dims = task_safe_dims(self, dims)
        target = iterable.target if grouped else iterable
        # a field under a dynamic node: its cells in parallel, each list up to its length
        whole = outermost and not _leaves_early(node)
        split = sparse_kernel.dynamic_axis(target) if whole else None
        # a field under pointer/bitmasked nodes: each block tested once, its cells in chunks
        blocks = sparse_kernel.sparse_blocks(target) if whole and split is None else None
        info = ForInfo(parallel=outermost and not config.get("serialize", False),
                       serialize=outermost and config.get("serialize", False),
                       block_dim=config.get("block_dim"), blocks=blocks is not None)
        outer_dims = dims if split is None else dims[:split[0]] + dims[split[0] + 1:]
        sizes, total = self._loop_sizes(outer_dims)
        if blocks is not None:
            total = blocks.loop_total
        # 64-bit iteration only where the range may pass 2^31 (a constant that large, or an
        # i64 bound); i32 elsewhere, where it is cheaper (divisions for multi-dim loops).
        ldt = T.i64 if _may_exceed_i32(total) else T.i32
        loop = self.b.for_(self.e.value(0, ldt), self.e.value(total, ldt), info)
        self.depth += 1
        self.loop_depth += 1
        if info.parallel:
            self.parallel_depth = self.loop_depth
        self.open_fors.append(loop)
        self.frame.scopes.append({})
        cell_guard = (None, None)
        with self.b.into(loop.body):
            if blocks is not None:
                self._sparse_block(lambda user, active, known: self._loop_cell(
                    node, iterable, names, grouped, user, active, known), blocks, loop)
            elif split is None:
                cell_guard = self._struct_for_cell(node, iterable, names, grouped, target, loop,
                                                   (outer_dims, sizes))
            else:
                indices = self.delinearize(loop, outer_dims, sizes)
                inner = self._dynamic_lists(node, iterable, names, grouped, split, dims[split[0]][0], indices)
                cell_guard = (inner, lambda t: sparse_kernel.dynamic_length(
                    self, split, self.delinearize(t, outer_dims, sizes)))
        self.frame.scopes.pop()
        self.open_fors.pop()
        self._list_at_launch(loop, blocks, cell_guard if whole else (None, None),
                             target if split is None else split[2], total, split is not None)
        if info.parallel:
            self.parallel_depth = -1
        self.loop_depth -= 1
        self.depth -= 1

    def _list_at_launch(self, loop, blocks, cell_guard, target, total, lists=False):
        """A sparse struct-for whose body changes the activity of the layout it walks runs
        over what was active at its launch, as Taichi's (see `sparse_kernel`); over dynamic
        `lists`, each list up to its length at launch."""
        if blocks is not None:
            sparse_kernel.list_if_activating(self, blocks, loop)
        elif lists:
            sparse_kernel.lengths_if_appending(self, target, loop, cell_guard, total)
        elif cell_guard[0] is not None:
            sparse_kernel.snapshot_if_changing(self, target, loop, cell_guard[0], total, cell_guard[1])

    def _struct_for_cell(self, node, iterable, names, grouped, target, loop, extents):
        """The body of a flat loop `loop` over `extents` (dims, sizes) at its cell; returns
        (the cell's activity condition or None, that condition emitted at a loop value)."""
        dims, sizes = extents
        tree = sparse_kernel.dense_tree_digits(target)
        indices = self._struct_for_indices(tree, loop, dims, sizes)
        made = len(loop.body) if tree is not None else 0
        active, indices = sparse_kernel.struct_for_guard(self, target, indices)
        self._loop_cell(node, iterable, names, grouped, indices, active,
                        sparse_kernel.known_cell(self, target, indices))
        if made and not loop.attr.serialize:
            self._row_major_if_order_free(loop, dims, sizes, indices, made)
        # a sparse layout is never a dense tree: its indices are row-major
        return active, lambda t, keep: sparse_kernel.struct_for_guard(
            self, target, self.delinearize(t, dims, sizes), keep)[0]

    def _struct_for_indices(self, tree, loop, dims, sizes):
        """The loop's indices from its linear value `loop`: row-major over `dims`, but over a
        layout of several dense levels in the layout tree's order (`tree`, its digits: see
        `sparse_kernel.dense_tree_digits`), as Taichi's, the loop's body then empty."""
        if tree is None:
            return self.delinearize(loop, dims, sizes)
        assert not loop.body
        cells = [c for _, c, _ in tree]
        found = [0] * len(dims)
        for (k, _, stride), d in zip(tree, self.delinearize(loop, [(0, c) for c in cells], cells)):
            term = d if stride == 1 else self.e.binop("*", d, stride)
            found[k] = term if isinstance(found[k], int) else self.e.binop("+", found[k], term)
        return [self.e.value(f if isinstance(b, int) and b == 0 else self.e.binop("+", f, b), T.i32)
                for f, (b, _) in zip(found, dims)]

    def _row_major_if_order_free(self, loop, dims, sizes, tree, made):
        """A tree-ordered struct-for (its index statements `loop.body[:made]`, the indices
        `tree`) whose body gives the same in any order (`sparse_kernel.order_free`) walks
        its cells row-major instead: its fields are stored row-major, and a map in the
        tree's order over them took 4x as long."""
        if not sparse_kernel.order_free(loop.body, tree):
            return
        end = len(loop.body)
        rows = self.delinearize(loop, dims, sizes)
        new = loop.body[end:]
        del loop.body[end:]
        swap = {id(t): r for t, r in zip(tree, rows)}
        for s in walk(loop.body[made:]):
            s.args = tuple(swap.get(id(a), a) for a in s.args)
        used = {id(a) for s in walk(loop.body[made:]) for a in s.args}
        for s in reversed(loop.body[:made]):  # (defined before their uses)
            if id(s) in used:
                used.update(id(a) for a in s.args)
        # the tree's index statements, unused now (the nest analysis reads every // and %)
        loop.body[:made] = [s for s in loop.body[:made] if id(s) in used] + new

    def _loop_cell(self, node, iterable, names, grouped, indices, active, known=None):
        """Binds a loop's names to `indices` and emits its body (only where `active` holds: a
        sparse struct-for visits active cells only; `known`: the cell it makes known active,
        see `sparse_kernel.known_cell`)."""
        if isinstance(iterable, KernelObject):  # a mesh-for: the name holds an element
            self.frame.bind(names[0], binding_for(iterable.kernel_loop_bind(self, indices[0])))
        else:
            self._bind_loop_indices(names, indices, grouped, _assigned_ndrange_names(node, iterable, names))
        with self._known_active(known):
            if active is None:
                self.block(node.body, new_scope=True)
            else:
                guard = self.b.if_(active)
                self.depth += 1
                with self.b.into(guard.blocks[0]):
                    self.block(node.body, new_scope=True)
                self.depth -= 1

    @contextlib.contextmanager
    def _known_active(self, known):
        """While emitting a sparse struct-for's body: `known` (`sparse_kernel.known_cell`, or
        None) is the cell its stores need not activate, until a `deactivate` clears it."""
        if known is not None:
            self.known_active.append(known)
        try:
            yield
        finally:
            if known is not None and self.known_active and self.known_active[-1] is known:
                self.known_active.pop()

    def _dynamic_lists(self, node, iterable, names, grouped, split, begin, outer):
        """The body of a struct-for over a field under a dynamic node, for the cell `outer`
        (user indices without the dynamic axis): a serial loop over the cell's list up to its
        length, as Taichi visits a dynamic node's elements (testing every slot of a
        million-slot axis took seconds where Taichi takes microseconds). Returns the serial
        loop."""
        pos, dyn, field = split
        length, ancestors = sparse_kernel.dynamic_cell(self, field, dyn, pos, outer)
        guard = self.b.if_(ancestors) if ancestors is not None else None
        self.depth += 1
        with self.b.into(guard.blocks[0] if guard is not None else self.b.block):
            inner = self.b.for_(self.e.value(0, T.i32), length,
                                ForInfo(parallel=False, serialize=False, block_dim=None))
            self.loop_depth += 1
            with self.b.into(inner.body):
                j = inner if isinstance(begin, int) and begin == 0 else self.e.value(
                    self.e.binop("+", inner, begin), T.i32)
                self._loop_cell(node, iterable, names, grouped, outer[:pos] + [j] + outer[pos:], None)
            self.loop_depth -= 1
        self.depth -= 1
        return inner

    def _sparse_block(self, cell, blocks, t):
        """The body of a blocked struct-for (`sparse_kernel.SparseBlocks`) for its iteration
        `t`: the block's sparse ancestors tested once, then its parts, each serial loops over
        the part's cells; `cell(user indices, condition or None, known)` emits the body at a
        cell (see `_loop_cell`). With `blocks.skip_top`, `t` is a cell of the top node: when
        it is active, a serial loop over its blocks (`ForInfo.parts` where a block is one
        part, so a sum still starts afresh per block); an inactive one costs one test, not one
        per block under it (a 4096^3 grid under two pointer levels: 2^30 blocks)."""
        if not blocks.skip_top:
            self._sparse_block_at(cell, blocks, sparse_kernel.block_digits(self, blocks, t))
            return
        top = sparse_kernel.block_digits(self, blocks, t, 0, blocks.top_digits)
        corner = sparse_kernel.block_origin(self, blocks, top)
        leaf = blocks.field._snode.axis_sizes
        guard = self.b.if_(sparse_kernel.active_condition(self, [blocks.top_node], leaf, corner))
        inner_total = blocks.total // blocks.top_total
        with self.b.into(guard.blocks[0]):
            loop = self.b.for_(self.e.value(0, T.i32), self.e.value(inner_total, T.i32),
                               ForInfo(parallel=False, serialize=False, block_dim=None,
                                       blocks=True, parts=blocks.part_count == 1))
            self.loop_depth += 1
            with self.b.into(loop.body):
                below = sparse_kernel.block_digits(self, blocks, loop, blocks.top_digits)
                digits = [a if k < blocks.top_digits else b
                          for k, (a, b) in enumerate(zip(top, below))]
                self._sparse_block_at(cell, blocks, digits)
            self.loop_depth -= 1

    def _sparse_block_at(self, cell, blocks, digits):
        """`_sparse_block` of the block with level digits `digits`."""
        first = sparse_kernel.block_origin(self, blocks, digits)
        leaf = blocks.field._snode.axis_sizes
        cond = sparse_kernel.active_condition(self, blocks.above, leaf, first)
        guard = self.b.if_(cond) if cond is not None else None
        blocks.guard = guard
        self.depth += 1
        with self.b.into(guard.blocks[0] if guard is not None else self.b.block):
            if blocks.part_count == 1:
                self._block_chunk(cell, blocks, first, [])
            else:
                self._block_parts(cell, blocks, first)
        self.depth -= 1

    def _block_parts(self, cell, blocks, first):
        """A serial loop over the block's parts (`ForInfo.parts`: each part's sums start
        afresh), each part's cells from `first` plus the part's offset."""
        loop = self.b.for_(self.e.value(0, T.i32), self.e.value(blocks.part_count, T.i32),
                           ForInfo(parallel=False, serialize=False, block_dim=None, blocks=True,
                                   parts=True))
        self.loop_depth += 1
        with self.b.into(loop.body):
            sizes = [d for d in blocks.parts if d > 1]
            found = iter(self.delinearize(loop, [(0, d) for d in sizes], sizes))
            digits = [next(found) if d > 1 else 0 for d in blocks.parts]
            starts = [f if p == 1 else self.e.value(self.e.binop("+", f, self.e.binop("*", d, k)), T.i32)
                      for f, d, p, k in zip(first, digits, blocks.parts, blocks.inner)]
            self._block_chunk(cell, blocks, starts, [])
        self.loop_depth -= 1

    def _block_chunk(self, cell, blocks, starts, done):
        """Serial loops over the chunk's axes from `len(done)` on (`done`: the storage indices
        of the axes before), then the body at the cell."""
        a = len(done)
        if a == len(starts):
            user = [v if o == 0 else self.e.value(self.e.binop("+", v, o), T.i32)
                    for v, o in zip(done, blocks.field._offset)]
            known = sparse_kernel.known_cell(self, blocks.field, user)
            active = sparse_kernel.active_condition(
                self, blocks.leaf_sparse, blocks.field._snode.axis_sizes, done)
            cell(user, active, known)
            return
        if blocks.inner[a] == 1:
            self._block_chunk(cell, blocks, starts, done + [self.e.value(starts[a], T.i32)])
            return
        inner = self.b.for_(self.e.value(0, T.i32), self.e.value(blocks.inner[a], T.i32),
                            ForInfo(parallel=False, serialize=False, block_dim=None, blocks=True))
        self.loop_depth += 1
        with self.b.into(inner.body):
            index = self.e.value(self.e.binop("+", starts[a], inner), T.i32)
            self._block_chunk(cell, blocks, starts, done + [index])
        self.loop_depth -= 1

    def _loop_sizes(self, dims):
        """Each dimension's extent and their product, the loop's iteration count."""
        total = None
        sizes = []
        for begin, end in dims:
            size = self.e.binop("-", end, begin)
            known_nonneg = (isinstance(size, int) and size >= 0) or id(size) in self.nonneg
            # an empty dimension empties the product (two negative sizes would not); an
            # ndarray's extent is never negative
            if len(dims) > 1 and not known_nonneg:
                size = self.e.binop("max", size, 0)
            sizes.append(size)
            total = size if total is None else self.e.binop("*", total, size)
        if total is None:  # a 0-D field or fs.ndrange(): one iteration, with an empty index
            total = 1
        return sizes, total

    def _bind_loop_indices(self, names, indices, grouped, variables=frozenset()):
        """Binds the loop's names to its indices; those in `variables` become variables
        holding them (an fs.ndrange target the body assigns, `di = di - r // 2`)."""
        values = [MatVal.vector(indices)] if grouped else indices  # fs.grouped: one vector index
        for name, value in zip(names, values):
            if name in variables:
                self.declare(name, value)
            else:
                self.frame.bind(name, ValueRef(value))

    def field_fill(self, field: Field, value):
        """`x.fill(v)` in a kernel: a loop over every cell (parallel when outermost) storing v;
        under pointer/bitmasked nodes a struct-for over the active blocks (on the CPU), as
        Taichi's fill is."""
        if field.shape is None:
            raise FieldsimTypeError(f"field {field.ir_name!r} is used before it has a shape "
                                    "(place it with fs.root.dense(...).place(...))")
        parallel = self.at_kernel_top()
        blocks = sparse_kernel.sparse_blocks(field) if parallel else None
        info = ForInfo(parallel=parallel, serialize=False, block_dim=None, blocks=blocks is not None)
        if info.parallel:
            value = self._fill_value_across_tasks(value)
        sizes = list(field.shape)
        total = 1
        for size in sizes:
            total *= size
        count = total if blocks is None else blocks.loop_total
        loop = self.b.for_(self.e.value(0, T.i32), self.e.value(count, T.i32), info)
        self.depth += 1
        self.loop_depth += 1
        if info.parallel:
            self.parallel_depth = self.loop_depth
        with self.b.into(loop.body):  # storage indices: the field's offset plays no part
            if blocks is not None:
                self._sparse_block(lambda user, active, known: self._fill_cell(
                    field, known[2], active, value, known), blocks, loop)
            else:
                indices = self.delinearize(loop, [(0, n) for n in sizes], sizes)
                user = [i if o == 0 else self.e.value(self.e.binop("+", i, o), T.i32)
                        for i, o in zip(indices, field._offset)]
                active, _ = sparse_kernel.struct_for_guard(self, field, user)
                self._fill_cell(field, indices, active, value)
        if info.parallel:
            self.parallel_depth = -1
        self.loop_depth -= 1
        self.depth -= 1

    def _fill_cell(self, field, indices, active, value, known=None):
        """`fill`'s store of `value` at storage `indices`, where `active` holds (active cells
        only, as Taichi's fill, a struct-for); `known`: the cell the loop found active."""
        if isinstance(value, FieldRef):
            value = value.load(self)
        with self._known_active(known):
            if active is None:
                FieldRef(field, indices, None).store(self, value)
            else:
                guard = self.b.if_(active)
                with self.b.into(guard.blocks[0]):
                    FieldRef(field, indices, None).store(self, value)

    def _fill_value_across_tasks(self, value):
        """A fill value computed in the kernel body (`m = ti.Vector([...]); x.fill(m)`) kept in a
        hidden kernel variable, read back inside the fill loop: that loop is a task of its own,
        which cannot use the body's values directly. Python numbers need no such variable."""
        value = to_matval(value)
        entries = value.entries if isinstance(value, MatVal) else [value]
        if not any(isinstance(e, Stmt) for e in entries):
            return value
        name = f"<fill value {len(self.hidden_fields)}>"
        self.declare_kernel_variable(name, value)
        return self.frame.local(name)

    def _is(self, original, obj) -> bool:
        return self._name_chain_value(original) is obj

    def _name_chain_value(self, node):
        """The value of `node` when it is a name chain (`static`, `ti.static`, `np.sin`), or
        `_NOT_A_NAME_CHAIN`: evaluating any other expression again would emit it twice, a
        func's side effects too (`a = f().transpose()`)."""
        base = node
        while isinstance(base, ast.Attribute):
            base = base.value
        if not isinstance(base, ast.Name):
            return _NOT_A_NAME_CHAIN
        try:
            return self.expr(node)
        except FieldsimError:
            return _NOT_A_NAME_CHAIN

    def loop_dims(self, iterable, node):
        targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
        names = [t.id if isinstance(t, ast.Name) else None for t in targets]
        if None in names:
            raise FieldsimSyntaxError("for-loop targets must be plain names")
        grouped = isinstance(iterable, ops.grouped)
        if grouped:
            iterable = iterable.target
        dims = self._iter_dims(iterable)
        if grouped:
            if len(names) != 1:
                raise FieldsimSyntaxError("fs.grouped(...) binds a single vector index")
        elif len(names) != len(dims):
            _raise_index_count(iterable, names, dims)
        return dims, names, grouped

    def _iter_dims(self, iterable):
        """The (begin, end) of each dimension a non-static for loop over `iterable` runs."""
        if isinstance(iterable, (struct.StructField, SNode)):
            return [(0, s) for s in iterable.shape]
        if isinstance(iterable, Field):
            if iterable.shape is None:
                raise FieldsimTypeError(f"field {iterable.ir_name!r} is used before it has a shape "
                                        "(place it with fs.root.dense(...).place(...))")
            # (an ndarray argument's extents are runtime values)
            return [(o, s if o == 0 else self.e.binop("+", s, o))
                    for s, o in zip(iterable.shape, iterable._offset)]
        if isinstance(iterable, ops.ndrange):
            return list(iterable.bounds)
        if isinstance(iterable, KernelObject):
            return iterable.kernel_loop_dims(self)
        if isinstance(iterable, RangeSpec):
            return [(iterable.begin, iterable.end)]
        if isinstance(iterable, range):
            if iterable.step != 1:
                raise FieldsimSyntaxError("range() with a step is only supported in fs.static loops")
            return [(iterable.start, iterable.stop)]
        raise FieldsimSyntaxError(f"cannot iterate over {describe(iterable)} in a kernel "
                                  "(use range, fs.ndrange, a field, or fs.static(...))")

    def delinearize(self, t: Stmt, dims, sizes):
        """Indices from the linear loop value: i_k = (t // stride_k) % size_k + begin_k."""
        out = []
        for k, (begin, _end) in enumerate(dims):
            stride = 1
            for s in sizes[k + 1:]:
                stride = self.e.binop("*", stride, s)
            q = t if isinstance(stride, int) and stride == 1 else self.e.binop("//", t, stride)
            d = q if k == 0 else self.e.binop("%", q, sizes[k])
            wide = _may_exceed_i32(_end) or _may_exceed_i32(begin)  # the index itself may
            if wide:
                d = self.e.value(d, T.i64)
            idx = d if isinstance(begin, int) and begin == 0 else self.e.binop("+", d, begin)
            out.append(self.e.value(idx, T.i64 if wide else T.i32))
        return out

    def static_for(self, node: ast.For, iterable):
        items = _static_items(iterable)
        slot = self.frame.ret
        guard = slot is not None and slot.flag is not None and _contains_return(node)
        for k, item in enumerate(items):
            syntax_warnings.check_unroll(self, k, node)
            if guard and k:  # an earlier iteration may have returned: the rest of the unrolled loop is skipped
                go_on = self.b.if_(self.e.unop(Op.NOT, self.b.local_load(slot.flag)))
                self.b.blocks.append(go_on.blocks[0])
            self.frame.scopes.append(StaticScope())
            self._bind_static_target(node.target, self.kernel_value(item))
            stop = self._unrolled_body(node.body)
            self.frame.scopes.pop()
            if stop:
                if guard:  # leave the guard blocks opened so far
                    for _ in range(k):
                        self.b.blocks.pop()
                    guard = False
                break
        if guard:
            for _ in range(len(items) - 1):
                self.b.blocks.pop()

    def _bind_static_target(self, target, item):
        """Binds one unrolled iteration's item (a Python Vector/Matrix keeps its values and
        shape) to the loop's name, or unpacks it over a tuple of names."""
        if isinstance(target, ast.Name):
            self.frame.bind(target.id, binding_for(item))
            return
        names = [t.id for t in target.elts]
        vals = list(item)
        if len(vals) != len(names):
            raise FieldsimSyntaxError("fs.static loop: cannot unpack the loop item")
        for n_, v in zip(names, vals):
            self.frame.bind(n_, StaticRef(v))

    def _unrolled_body(self, body) -> bool:
        """Emits one iteration of an fs.static loop; True when it ended in a break."""
        saved = self.loop_depth
        self.static_loops.append((self.loop_depth, self.depth))
        try:
            self.block(body, new_scope=True, static=True)
        except _StaticContinue:
            pass
        except _StaticBreak:
            return True
        finally:
            self.static_loops.pop()
            self.loop_depth = saved
        return False

    # ---- funcs ----------------------------------------------------------------------------------
    def inline_func(self, func, args, kwargs, node, method=False):
        """Inlines `func(*args, **kwargs)`; `method`: `args[0]` is the object a method is
        called on (`obj.f(...)`), whose call node lists the arguments after it."""
        if func.custom_grad is not None or func.replay is not None:
            return self.inline_custom_grad(func, args, kwargs, node)
        if getattr(func, "is_real", False):  # a real call where it recurses
            from fieldsim.lang import real_calls
            return real_calls.call(self, func, args, kwargs, node)
        refs = self.caller_refs(node)
        self_ref = None
        if method:
            refs = {k + 1 if isinstance(k, int) else k: r for k, r in refs.items()}
            self_ref = _struct_self_ref(args[0])
        try:
            return self.inline_plain(func, args, kwargs, node, refs=refs, self_ref=self_ref)
        except FieldsimError as err:
            self._note_call_site(err, node)
            raise

    def _note_call_site(self, err: FieldsimError, node) -> None:
        """An error located inside a func also names the user's line that called it (each
        level of a call chain, innermost first), as Taichi's traceback does."""
        if err.loc is None or self.frame.source.in_fieldsim or not hasattr(node, "lineno"):
            return
        call = self.loc(node)
        if (call.file, call.line) == (err.loc.file, err.loc.line):
            return
        err.related = (*err.related, ("called from", call))
        err.args = (err.render(),)

    def caller_refs(self, node) -> dict:
        """The caller's variables passed by name (`f(a, b=c)`): a `ti.template()` or `ti.ref`
        parameter of the func is that variable itself, so assignments reach the caller."""
        if not isinstance(node, ast.Call) or any(isinstance(a, ast.Starred) for a in node.args):
            return {}
        refs = {}
        pairs = list(enumerate(node.args)) + [(kw.arg, kw.value) for kw in node.keywords]
        for key, a in pairs:
            if isinstance(a, ast.Name):
                ref = self.frame.lookup(a.id)
                if ref is not None and ref.by_reference:
                    refs[key] = ref
            elif id(a) in self.call_arg_refs:  # `x[g(i)]`: evaluated once, by expr_Call
                refs[key] = self.call_arg_refs[id(a)]
            else:
                ref = self._field_element_ref(a)
                if ref is not None:
                    refs[key] = ref
        return refs

    def _field_element_ref(self, node, calls=False):
        """`x[i]`, `s[i].m`, `v[i][1]` of a field, `loc.m`, `vec[1]` of a variable, passed to a
        func: the element itself, which a `ti.template()` parameter aliases, as in Taichi.
        Without `calls`, None for an element whose indices call something (`x[g(i)]`): the
        caller evaluated them already, and again would repeat the call; expr_Call evaluates
        such an argument of a by-reference parameter as this element (`calls=True`) instead."""
        if not isinstance(node, (ast.Subscript, ast.Attribute)) \
                or (not calls and any(isinstance(n, ast.Call) for n in ast.walk(node))):
            return None
        chain = node
        while isinstance(chain, (ast.Subscript, ast.Attribute)):
            if isinstance(chain, ast.Subscript) and self._is_field_expr(chain.value):
                return self._element_lvalue(node)
            chain = chain.value
        if isinstance(chain, ast.Name):
            ref = self.frame.lookup(chain.id)
            if ref is not None and ref.by_reference:
                return self._element_lvalue(node)
        return None

    def _element_lvalue(self, node):
        try:
            ref = self._lvalue(node)
        except FieldsimError:
            return None
        if isinstance(ref, (struct.StructFieldRef, struct.StructLocalRef)):
            return StructVar(ref)
        return ref

    def _is_field_expr(self, node) -> bool:
        if not isinstance(node, (ast.Name, ast.Attribute)):
            return False
        try:
            base = self._lvalue(node)
        except FieldsimError:
            return False
        return isinstance(base, StaticRef) and isinstance(base.obj, (Field, struct.StructField))

    def inline_custom_grad(self, func, args, kwargs, node):
        """A func with a user adjoint and/or replay: a CUSTOM_GRAD region holding its forward
        code, the inlined adjoint func (reverse AD uses the user's derivative instead of its
        own) and the inlined replay func (what the adjoint recomputes in its place)."""
        from fieldsim.ir.ir import CustomGradInfo
        flat_args, arg_shape = _flatten_value(tuple(args))
        inputs = [self.e.value(v) for v in flat_args]
        replay = func.replay
        region = self.b.emit(Op.CUSTOM_GRAD, None, tuple(inputs),
                             blocks=[[], [], []] if replay is not None else [[], []])
        position = len(self.b.block) - 1
        rebuilt = _rebuild_value(inputs, arg_shape)
        with self.b.into(region.blocks[0]):
            result = self.inline_plain(func, list(rebuilt), kwargs, node)
            flat_out, out_shape = _flatten_value(result)
            outputs = []
            for v in flat_out:
                v = self.e.value(v)
                var = Stmt(Op.ALLOCA, v.dtype, loc=self.b.loc)
                self.b.blocks[-2].insert(position, var)
                position += 1
                outputs.append(var)
                self.b.local_store(var, v)
        region.attr = CustomGradInfo(func.fn.__name__, tuple(outputs))
        if replay is not None:
            with self.b.into(region.blocks[2]):
                again = _flatten_value(self.inline_plain(replay, list(rebuilt), kwargs, node))[0]
                if len(again) != len(outputs):
                    raise FieldsimTypeError(
                        f"func_replay of {func.fn.__name__!r} returned {len(again)} value(s) where "
                        f"the func returns {len(outputs)}: return the same values as the func")
                for var, v in zip(outputs, again):
                    self.b.local_store(var, self.e.value(v, var.dtype))
        if func.custom_grad is None:
            return _rebuild_value([self.b.local_load(o) for o in outputs], out_shape)
        with self.b.into(region.blocks[1]):
            adj_in = [self.b.emit(Op.CUSTOM_ADJ_IN, o.dtype, attr=k) for k, o in enumerate(outputs)]
            grads = self.inline_plain(func.custom_grad, list(rebuilt) + [_rebuild_value(adj_in, out_shape)],
                                      {}, node)
            flat_grads = _flatten_value(grads if isinstance(grads, tuple) else (grads,))[0]
            if len(flat_grads) != len(inputs):
                raise FieldsimTypeError(
                    f"func_grad of {func.fn.__name__!r} returned {len(flat_grads)} adjoint value(s) for "
                    f"{len(inputs)} input value(s): return one adjoint per input, in order")
            self.b.emit(Op.CUSTOM_ADJ_OUT, None, tuple(self.e.value(g, i.dtype) for g, i in zip(flat_grads, inputs)))
        return _rebuild_value([self.b.local_load(o) for o in outputs], out_shape)

    def inline_plain(self, func, args, kwargs, node, refs=None, self_ref=None):
        """`self_ref`: what the first parameter is bound to, by reference (a struct method's
        `self`, so that `self.member = v` writes the caller's struct, as in Taichi)."""
        from fieldsim.lang import func_args
        src = _parse_cached(func.fn)
        fdef = src.node
        params = [a.arg for a in fdef.args.args]
        if len(self.inline_stack) > 64:
            _raise_too_deep(func)
        bound = _bind_args(func.fn, params, fdef, args, kwargs)
        check_func_args(func.fn, bound)  # parameters annotated fs.types.ndarray(...)
        ann = func_args.annotations(func, fdef)
        frame = Frame(func.fn, src)
        frame.plain = func.plain  # Taichi runs a plain helper as Python: no warnings inside
        frame.ret = ret_slot = self._return_slot(func, fdef, ann)
        saved_frame = self.frame
        by_name = {}
        for k, p in enumerate(params):
            by_name[p] = (refs or {}).get(k) or (refs or {}).get(p)
        for name, value in bound.items():
            a = ann.get(name)
            if self_ref is not None and name == params[0]:
                frame.bind(name, self_ref)
                continue
            if func_args.is_by_reference(a) and by_name.get(name) is not None:
                frame.bind(name, by_name[name])  # the caller's own variable
                continue
            if func_args.is_by_reference(a) and isinstance(value, struct.StructFieldRef):
                frame.bind(name, StructVar(value))  # `f(cells[i])`: writes reach the field, as Taichi's
                continue
            if not isinstance(value, struct.StructValue):
                value = func_args.coerce(self, a, value, f"argument {name}", func)
            self._bind_param(frame, name, value)
        self.frame = frame
        self.task_funcs.append(self._task_func(src))
        self.inline_stack.append((func, self.loop_depth))
        try:
            self.block(fdef.body)
        finally:
            self.inline_stack.pop()
            self.task_funcs.pop()
            self.frame = saved_frame
        if ret_slot.direct is not None and ret_slot.direct is not _PENDING:
            return ret_slot.direct
        if ret_slot.vars is None:
            return None
        return _rebuild_value([self.b.local_load(v) for v in ret_slot.vars], ret_slot.shape)

    def _task_func(self, src) -> str:
        """What a func (its parsed source) about to be inlined is for `task_funcs`."""
        if not self.func_tasks or src.in_fieldsim or not self.at_kernel_top():
            return ""
        return "loops" if _has_top_loop(src.node.body) else "top"

    def _return_slot(self, func, fdef, ann) -> ReturnSlot:
        """Where an inlined func's returns go: the value itself (one tail return), result
        variables, and a returned-yet flag when a return may come before the end."""
        from fieldsim.lang import func_args
        slot = ReturnSlot(self.b.block, len(self.b.block))
        slot.rtype = func_args.return_type(self, func, fdef, ann)
        if _single_tail_return(fdef.body):
            slot.direct = _PENDING
        elif not _tail_returns_only(fdef.body):
            slot.flag = self.b.alloca(T.i32)  # zero: nothing returned yet
        else:
            slot.top_direct = getattr(func, "plain", False)  # custom grads may be bare functions
        return slot

    def _bind_param(self, frame, name, value):
        """Binds a by-value argument in the callee's frame: a kernel value or struct the func
        reassigns gets its own variable (declared in the callee's frame); others bind as is."""
        reassigned = name in frame.assigned
        if isinstance(value, struct.StructValue):
            if not reassigned and name not in frame.source.method_receivers:
                frame.bind(name, ValueRef(value))
                return
            saved_frame, self.frame = self.frame, frame  # a struct argument the func reassigns: its own copy
            frame.bind(name, StructVar(struct.declare(self, name, value)))
            self.frame = saved_frame
        elif isinstance(value, (Stmt, MatVal)) or (reassigned and _is_python_number(value)):
            # a Python number the func reassigns is a variable too, as Taichi's by-value copy
            if not reassigned:
                frame.bind(name, ValueRef(value))
                return
            saved_frame, self.frame = self.frame, frame
            self.declare(name, _as_python_number(value))
            self.frame = saved_frame
        else:
            frame.bind(name, StaticRef(value))


def _is_python_number(value) -> bool:
    return isinstance(value, numbers.Number) and not isinstance(value, complex)


def _as_python_number(value):
    """A by-value argument as `declare` takes it: Stmt/MatVal as is, a bool as an int, a numpy
    scalar as the Python number."""
    if isinstance(value, (Stmt, MatVal)):
        return value
    if isinstance(value, bool):
        return int(value)
    return value.item() if hasattr(value, "item") else value


def _struct_self_ref(obj):
    """The binding of a struct method's `self` when it is called on a struct variable or a
    struct field element: that struct itself; None for a struct rvalue or any other object."""
    if isinstance(obj, (struct.StructLocalRef, struct.StructFieldRef)):
        return StructVar(obj)
    return None


_STATEMENTS.fill(Frontend)
_EXPRESSIONS.fill(Frontend)


class _StaticBreak(Exception):
    """`break` in an unrolled fs.static loop (under static conditions): stop unrolling."""


class _StaticContinue(Exception):
    """`continue` in an unrolled fs.static loop: go on with the next item."""


def _raise_too_deep(func):
    if getattr(func, "is_real", False):  # recursion on compile-time values (lang.real_calls)
        raise FieldsimSyntaxError(
            f"real function {func.fn.__name__!r} recurses too deeply (more than 64 nested "
            "calls) on compile-time arguments (constants or templates), which are inlined: "
            "pass the value that ends the recursion as a runtime value (e.g. a kernel "
            "argument) to make it a real call, or write it as a loop")
    raise FieldsimSyntaxError(
        f"func {func.fn.__name__!r} recurses too deeply (more than 64 nested calls): "
        "fieldsim inlines funcs into the kernel, so recursion must end through fs.static "
        "conditions; recursion whose depth depends on a runtime value (e.g. an argument) "
        "needs @fs.real_func (compiled as a real call), or a loop")


def _declared_dtype(fe, rtype):
    """The element dtype a func's declared return type gives every returned scalar (None for
    an undeclared one, a tuple or a struct)."""
    rtype = fe.e.resolve(rtype)
    if isinstance(rtype, T.DataType):
        return rtype
    dt = getattr(rtype, "dtype", None) if isinstance(rtype, T.MatrixType) else None
    return _declared_dtype(fe, dt) if dt is not None else None


def _static_target(node, obj) -> str:
    """An assignment target that is a compile-time Python value, for the error saying so."""
    if isinstance(node, ast.Name):  # a module-level Python number or list a kernel captured
        return (f"{node.id!r}: it is a Python value ({describe(obj)}) captured when the kernel "
                "was compiled, and a kernel cannot change it; keep values a kernel changes in a "
                "field (e.g. a 0-D field, x[None])")
    # e.g. `A[i, 0] = ...` on a Python-scope matrix passed as a template (Taichi issue #4331)
    return (f"{ast.unparse(node)!r}: it is part of a Python value ({describe(obj)}) fixed when "
            "the kernel was compiled; copy the value into a local first (`B = A`, then change "
            "B) or keep values a kernel changes in a field")


def _static_items(iterable) -> list:
    """The items an fs.static loop unrolls over (fs.ndrange/fs.grouped expanded, a kernel
    matrix by its entries); a field or a non-iterable is an error."""
    if isinstance(iterable, Field):
        raise FieldsimSyntaxError("fs.static cannot unroll a loop over a field")
    if isinstance(iterable, RangeSpec):  # range() of a runtime value: nothing to unroll
        raise RuntimeValueError(
            "fs.static(range(...)) needs compile-time bounds, but a bound here is a runtime value "
            "(a kernel argument or a field element): make it a Python constant or a "
            "fs.template() argument, or drop fs.static for a runtime loop")
    if isinstance(iterable, (ops.ndrange, ops.grouped)):
        iterable = list(iter(iterable))
    if isinstance(iterable, MatVal):
        iterable = list(iterable.entries)
    try:
        return list(iterable)
    except TypeError:
        raise FieldsimSyntaxError(f"fs.static loop over {describe(iterable)}: not iterable") from None


def _assigned_ndrange_names(node, iterable, names) -> frozenset:
    """The targets of a loop over fs.ndrange (or fs.grouped of one) that its body assigns. Taichi
    makes an ndrange loop's targets variables initialised from the loop counter, so assigning
    one changes that iteration's value, not the iteration; a range or struct-for index stays
    a value (Taichi 1.7.4 fails on an internal assertion assigning one)."""
    target = iterable.target if isinstance(iterable, ops.grouped) else iterable
    if not isinstance(target, ops.ndrange):
        return frozenset()
    stored = {n.id for stmt in node.body for n in ast.walk(stmt)
              if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return frozenset(stored.intersection(names))


def _raise_index_count(iterable, names, dims):
    """A for loop whose index names do not match the dimensions it iterates."""
    if isinstance(iterable, ops.ndrange):
        raise FieldsimSyntaxError(
            f"Ndrange for loop with number of the loop variables not equal to the "
            f"dimension of the ndrange is not supported ({len(names)} loop variable(s), "
            f"{len(dims)} dimension(s))")
    raise FieldsimSyntaxError(f"the loop has {len(names)} index name(s) but iterates "
                              f"{len(dims)} dimension(s)")


class RangeSpec:
    """`range(a, b)` with runtime bounds, as a kernel for loop iterates it."""

    def __init__(self, begin, end):
        self.begin, self.end = begin, end


def _element_assign(node, k: int, n: int):
    """For `a, b = x, False`: the assignment of item k alone (`b = False`), so that a literal
    item is judged as its own assignment would be; `node` itself when the value is no literal
    tuple of n items."""
    value = getattr(node, "value", None)
    if isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == n \
            and not any(isinstance(e, ast.Starred) for e in value.elts):
        return ast.copy_location(ast.Assign(targets=[], value=value.elts[k]), node)
    return node


def _names_only(target, value) -> bool:
    """`target` is a name, or a tuple of names matching `value` (Taichi's static assignment)."""
    if isinstance(target, ast.Name):
        return True
    return isinstance(target, (ast.Tuple, ast.List)) and isinstance(value, (tuple, list)) \
        and len(value) == len(target.elts) \
        and all(_names_only(t, v) for t, v in zip(target.elts, value))


def _assigned_names(fdef) -> set:
    names = set()
    for n in ast.walk(fdef):
        targets = []
        if isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign, ast.NamedExpr)):
            targets = [n.target]
        for t in targets:
            _add_target_names(t, names)
    return names


def _add_target_names(t, names: set):
    """The names an assignment target writes; each item of `a.x, b[0] = ...` on its own, so a
    member or component stored through a tuple makes its argument a copy as `a.x = v` does."""
    if isinstance(t, (ast.Tuple, ast.List)):
        for e in t.elts:
            _add_target_names(e, names)
        return
    if isinstance(t, ast.Starred):
        t = t.value
    while isinstance(t, (ast.Subscript, ast.Attribute)):  # `a[0] = v` writes a's copy
        t = t.value
    for sub in ast.walk(t):
        if isinstance(sub, ast.Name) and (isinstance(sub.ctx, ast.Store) or sub is t):
            names.add(sub.id)


def _constant_locals(fdef) -> set:
    """Names every store of which is a plain `name = value` in one block (a statement list),
    never passed to a call but Taichi's math: straight-line stores Taichi forwards to the loads
    after them (a store in a nested if/loop is not forwarded past it)."""
    stores: dict[str, int] = {}
    passed = set()
    for n in ast.walk(fdef):
        if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load):
            stores[n.id] = stores.get(n.id, 0) + 1
        elif isinstance(n, ast.Call) and not _taichi_math_call(n):
            passed.update(a.id for a in [*n.args, *(k.value for k in n.keywords)]
                          if isinstance(a, ast.Name))
    plain = _plain_assignments(fdef)
    return {name for name, blocks in plain.items()
            if len(blocks) == 1 and stores.get(name) == sum(blocks.values()) and name not in passed}


def _plain_assignments(fdef) -> dict:
    """name -> {id of the statement list: plain `name = value` statements in it}."""
    found: dict[str, dict] = {}
    for n in ast.walk(fdef):
        for body in (getattr(n, f, None) for f in ("body", "orelse", "finalbody")):
            if not isinstance(body, list):
                continue
            for st in body:
                if isinstance(st, ast.Assign) and len(st.targets) == 1 and isinstance(st.targets[0], ast.Name):
                    blocks = found.setdefault(st.targets[0].id, {})
                    blocks[id(body)] = blocks.get(id(body), 0) + 1
    return found


# `ti.tan(c)` of a local bound once to a number: Taichi forwards the constant and its folder
# evaluates the function in double precision (`half = ti.tan(fov / 2)`), so the local stays a
# constant through these calls; Python's own `math.tan(c)` needs the number itself
_FOLDED_MATH_CALLS = frozenset(("sin", "cos", "tan", "asin", "acos", "atan2", "tanh", "exp", "log",
                                "sqrt", "rsqrt",
                                # pure too: `ti.abs(a)` cannot store to `a`, Taichi still forwards it
                                "abs", "floor", "ceil", "round", "cast", "min", "max"))


def _taichi_math_call(call: ast.Call) -> bool:
    f = call.func
    return isinstance(f, ast.Attribute) and f.attr in _FOLDED_MATH_CALLS and not (
        isinstance(f.value, ast.Name) and f.value.id in ("math", "np", "numpy", "cmath"))


def _list_of_tensors(value) -> bool:
    """A list of kernel values at least one of which is a vector or matrix."""
    return isinstance(value, list) and any(isinstance(e, MatVal) for e in value) and \
        all(isinstance(e, (Stmt, MatVal, numbers.Number)) for e in value)


def _item_assigned_names(fdef) -> set:
    names = set()
    for n in ast.walk(fdef):
        targets = n.targets if isinstance(n, ast.Assign) else \
            [n.target] if isinstance(n, ast.AugAssign) else []
        for t in targets:
            if isinstance(t, ast.Subscript) and isinstance(t.value, ast.Name):
                names.add(t.value.id)
    return names


def _always_returns(stmts) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    if isinstance(last, ast.If):
        return _always_returns(last.body) and _always_returns(last.orelse)
    return False


def _contains_return(node) -> bool:
    return any(isinstance(n, ast.Return) for n in ast.walk(node))


def _has_top_loop(stmts) -> bool:
    """Does a func body have a loop at its own top level (through fs.static ifs and loops)?"""
    for n in stmts:
        if isinstance(n, ast.For) and not _is_static_call(n.iter):
            return True
        if isinstance(n, ast.For) and _has_top_loop(n.body):
            return True
        if isinstance(n, ast.If) and _is_static_call(n.test) \
                and (_has_top_loop(n.body) or _has_top_loop(n.orelse)):
            return True
    return False


def _is_static_call(node) -> bool:
    """`ti.static(...)` / `static(...)` by its spelling (a loop or if unrolled at compile time)."""
    f = node.func if isinstance(node, ast.Call) else None
    return (isinstance(f, ast.Attribute) and f.attr == "static") or \
        (isinstance(f, ast.Name) and f.id == "static")


def _leaves_early(loop: ast.For) -> bool:
    """Does a func's loop hold a `return`, or a `break` of its own? Such a loop at the kernel's
    top level stays serial (Taichi refuses both in an outermost loop; fieldsim runs them)."""
    stack = list(loop.body)
    while stack:
        n = stack.pop()
        if isinstance(n, (ast.Return, ast.Break)):
            return True
        if isinstance(n, (ast.For, ast.While)):
            stack.extend(n.orelse)
            stack.extend(x for x in ast.walk(n) if isinstance(x, ast.Return))
            continue
        if not isinstance(n, (ast.FunctionDef, ast.Lambda)):
            stack.extend(ast.iter_child_nodes(n))
    return False


def _tail_returns_only(stmts) -> bool:
    """Is every return the last thing its func runs (so it needs no flag)? True for returns
    that end their block, in ifs that end theirs, and `if c: return a` followed by more code
    (made an if/else); False for a return inside a loop or before more code."""
    for idx, s in enumerate(stmts):
        last = idx == len(stmts) - 1
        if isinstance(s, ast.Return):
            return True  # code after it is reported as unreachable
        if not _contains_return(s):
            continue
        if not isinstance(s, ast.If):
            return False
        if last:
            return _tail_returns_only(s.body) and _tail_returns_only(s.orelse)
        if _always_returns(s.body) and not s.orelse:
            return _tail_returns_only(s.body) and _tail_returns_only(stmts[idx + 1:])
        return False
    return True


def _single_tail_return(body) -> bool:
    returns = [n for n in ast.walk(ast.Module(body=body, type_ignores=[])) if isinstance(n, ast.Return)]
    return len(returns) == 1 and isinstance(body[-1], ast.Return) or not returns


def _flatten_value(value):
    if isinstance(value, MatVal):
        return list(value.entries), ("mat", value.n, value.m, value.ndim)
    if isinstance(value, tuple):
        flat, shapes = [], []
        for v in value:
            f, s = _flatten_value(v)
            flat.extend(f)
            shapes.append((len(f), s))
        return flat, ("tuple", tuple(shapes))
    if isinstance(value, (Stmt, numbers.Number)):
        return [value], ("scalar",)
    if isinstance(value, struct.StructVal):  # members in order, nested structs loaded (`load`)
        names = value.names()
        flat, shape = _flatten_value(tuple(value.members[k] for k in names))
        return flat, ("struct", value.stype, tuple(names), shape)
    raise FieldsimTypeError(f"a func cannot return {describe(value)} from inside a branch")


def _rebuild_value(flat, shape):
    if shape[0] == "scalar":
        return flat[0]
    if shape[0] == "mat":
        return MatVal(flat, shape[1], shape[2], shape[3])
    if shape[0] == "struct":
        _, stype, names, members = shape
        return struct.StructVal(stype, dict(zip(names, _rebuild_value(flat, members))))
    out, pos = [], 0
    for count, s in shape[1]:
        out.append(_rebuild_value(flat[pos:pos + count], s))
        pos += count
    return tuple(out)


def _vector_length(ref):
    """The length of the vector a swizzle target `ref` holds (a local or a field element), or
    None where it is not known here (the component access then checks)."""
    mat = getattr(ref, "mat", None)
    if mat is not None and getattr(mat, "ndim", 0) == 1:
        return mat.n
    field = getattr(ref, "field", None)
    if field is not None and field.ndim_el == 1 and getattr(ref, "comp", None) is None:
        return field.n
    return None


def _refuse_special_params(fn, a: ast.arguments) -> None:
    # Taichi 1.7.4 refuses these when the func is defined; binding by position alone misnamed them
    kinds = [("*" + a.vararg.arg) if a.vararg else None,
             ("**" + a.kwarg.arg) if a.kwarg else None,
             *(f"keyword-only {k.arg!r}" for k in a.kwonlyargs),
             *(f"positional-only {k.arg!r}" for k in a.posonlyargs)]
    kinds = [k for k in kinds if k]
    if kinds:
        raise FieldsimSyntaxError(f"func {fn.__name__!r} has the parameter(s) {', '.join(kinds)}: "
                                  "a func takes plain parameters only (as in Taichi)")


def _bind_args(fn, params, fdef, args, kwargs) -> dict:
    _refuse_special_params(fn, fdef.args)
    defaults = fdef.args.defaults
    bound = {}
    if len(args) > len(params):
        raise ArgumentCountError(f"func {fn.__name__!r}: Too many arguments: it takes "
                                 f"{len(params)}, got {len(args)}")
    for name, v in zip(params, args):
        bound[name] = v
    for name, v in kwargs.items():
        if name not in params:  # a TaichiSyntaxError in Taichi, as a wrong argument count
            raise ArgumentCountError(f"func {fn.__name__!r}: Unexpected argument {name!r} "
                                     f"(its parameters: {', '.join(params)})")
        if name in bound:  # Python refuses it; the keyword's value silently won before
            raise ArgumentCountError(f"func {fn.__name__!r}: Multiple values for argument "
                                     f"{name!r}")
        bound[name] = v
    py_defaults = fn.__defaults__ or ()
    for name, d in zip(params[len(params) - len(defaults):], py_defaults):
        bound.setdefault(name, d)
    missing = [p for p in params if p not in bound]
    if missing:
        raise ArgumentCountError(f"func {fn.__name__!r}: Parameter {missing[0]!r} missing "
                                 f"(missing: {', '.join(missing)})")
    return bound


def _may_exceed_i32(v) -> bool:
    """Whether a loop bound (a Python int or an IR value) may lie outside the i32 range."""
    if isinstance(v, int):
        return not -(1 << 31) <= v < (1 << 31)
    return getattr(v, "dtype", None) in (T.i64, T.u64, T.u32)


def _python_number(value):
    """A NumPy scalar as the Python number it holds. Taichi makes `esp = np.float32(m)` a variable
    of the default type, as it does `esp = 1.0`; kept as a static binding, a later store from a
    runtime loop was refused."""
    return value.item() if isinstance(value, np.generic) and isinstance(value, numbers.Number) else value
