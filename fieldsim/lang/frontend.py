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
import inspect
import numbers
import textwrap
from functools import cache

from fieldsim.errors import FieldsimError, FieldsimSyntaxError, FieldsimTypeError, Loc
from fieldsim.ir.builder import IRBuilder
from fieldsim.ir.ir import ForInfo, Kernel, Op, Param, Stmt
from fieldsim.lang import ops
from fieldsim.lang import types as T
from fieldsim.lang.expr import Emitter, MatVal, describe
from fieldsim.lang.field import Field
from fieldsim.lang.frontend_expr import ExprMixin


@cache
def _parse_cached(fn):
    return parse_function(fn)


class Source:
    """The parsed source of one Python function and how to locate its nodes."""

    def __init__(self, fn):
        lines, start = inspect.getsourcelines(fn)
        self.file = inspect.getsourcefile(fn) or "<unknown>"
        self.lines, self.start = lines, start
        text = "".join(lines)
        dedented = textwrap.dedent(text)
        self.indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
        self.indent = len(text.splitlines()[0]) - len(dedented.splitlines()[0])
        tree = ast.parse(dedented)
        self.node = next(n for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
        self.name = fn.__name__

    def loc(self, node) -> Loc:
        line = getattr(node, "lineno", 1)
        text = self.lines[line - 1] if 0 < line <= len(self.lines) else ""
        col = getattr(node, "col_offset", 0) + self.indent
        end = getattr(node, "end_col_offset", None)
        if end is not None and getattr(node, "end_lineno", line) == line:
            end += self.indent
        else:
            end = None
        return Loc(self.file, self.start + line - 1, col, end, self.name, text.rstrip("\n"))


def parse_function(fn) -> Source:
    try:
        return Source(fn)
    except (OSError, TypeError) as e:
        raise FieldsimSyntaxError(f"cannot read the source of {fn!r}: {e}") from None


class Frame:
    """Name resolution for one (kernel or inlined func) body: block scopes, then Python globals."""

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
        self.assigned = _assigned_names(source.node)
        self.ret = None  # ReturnSlot for funcs

    def lookup(self, name):
        for scope in reversed(self.scopes):
            if name in scope:
                return True, scope[name]
        if name in self.closure:
            return True, ("static", self.closure[name])
        if name in self.globals:
            return True, ("static", self.globals[name])
        import builtins
        if hasattr(builtins, name):
            return True, ("static", getattr(builtins, name))
        return False, None

    def bind(self, name, binding):
        self.scopes[-1][name] = binding


class ReturnSlot:
    def __init__(self, block, position):
        self.block, self.position = block, position
        self.vars = None  # list of allocas (flattened) or None
        self.shape = None  # how to rebuild the value: ('scalar',) / ('mat', n, m, ndim) / ('tuple', [...])
        self.direct = None


class Frontend(ExprMixin):
    def __init__(self, fn, rt, name=None, templates=None, arg_types=None, ret=None):
        self.rt = rt
        self.kernel_name = name or fn.__name__
        self.b = IRBuilder()
        self.e = Emitter(self.b, rt.default_fp, rt.default_ip)
        self.source = _parse_cached(fn)
        self.frame = Frame(fn, self.source)
        self.frames = [self.frame]
        self.templates = templates or {}
        self.arg_types = arg_types or {}
        self.ret = ret
        self.depth = 0  # nesting of blocks inside the kernel body
        self.loop_depth = 0
        self.loop_config = {}
        self.static_loop_depth = 0
        self.inline_stack: list = []
        self.hidden_fields: list = []
        self.parallel_depth = -1

    # ---- entry --------------------------------------------------------------------------------
    def build(self) -> Kernel:
        node = self.source.node
        params = []
        with self.b.at(self.source.loc(node)):
            pos = 0  # ARG positions count runtime arguments only
            for a in node.args.args:
                if a.arg in self.templates:
                    self.frame.bind(a.arg, ("static", self.templates[a.arg]))
                    params.append(Param(a.arg, None, template=True))
                    continue
                dt = self.arg_types[a.arg]
                arg = self.b.emit(Op.ARG, dt, attr=pos, loc=self.source.loc(a))
                self.bind_value(a.arg, arg, self.source.loc(a))
                params.append(Param(a.arg, dt))
                pos += 1
            self.block(node.body)
        if self.ret is not None and not any(s.op == Op.RETURN for s in self.b.block):
            raise FieldsimSyntaxError(f"kernel {self.kernel_name!r} declares a return type "
                                      f"({self.ret}) but does not end with a return statement",
                                      self.source.loc(node))
        return Kernel(self.kernel_name, params, self.b.block, self.ret, self.source.loc(node))

    def bind_value(self, name, value, loc):
        if name in self.frame.assigned and isinstance(value, (Stmt, MatVal)):
            self.declare(name, value)
        else:
            self.frame.bind(name, ("val", value) if isinstance(value, (Stmt, MatVal)) else ("static", value))

    # ---- dispatch with located errors ------------------------------------------------------------
    def loc(self, node) -> Loc:
        return self.frame.source.loc(node)

    def expr(self, node):
        visit = getattr(self, "expr_" + type(node).__name__, None)
        if visit is None:
            raise self._located(FieldsimSyntaxError(
                f"unsupported expression in a kernel: {type(node).__name__}"), node)
        with self.b.at(self.loc(node)):
            try:
                return visit(node)
            except FieldsimError as err:
                raise self._located(err, node) from None
            except (ValueError, TypeError, IndexError, KeyError, ArithmeticError, AttributeError) as err:
                raise self._located(FieldsimSyntaxError(f"{type(err).__name__}: {err}"), node) from None

    def stmt(self, node):
        visit = getattr(self, "stmt_" + type(node).__name__, None)
        if visit is None:
            raise self._located(FieldsimSyntaxError(
                f"unsupported statement in a kernel: {type(node).__name__}"), node)
        with self.b.at(self.loc(node)):
            try:
                visit(node)
            except FieldsimError as err:
                raise self._located(err, node) from None
            except (ValueError, TypeError, IndexError, KeyError, ArithmeticError, AttributeError) as err:
                raise self._located(FieldsimSyntaxError(f"{type(err).__name__}: {err}"), node) from None
            except RecursionError:  # ArithmeticError above includes OverflowError (10**400)
                raise self._located(FieldsimSyntaxError(
                    "this statement's expression is nested too deeply to compile; split it "
                    "into several statements"), node) from None

    def _located(self, err: FieldsimError, node):
        if err.loc is None:
            err = type(err)(err.message, self.loc(node), err.related)
        return err

    def block(self, stmts, new_scope=False):
        if new_scope:
            self.frame.scopes.append({})
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
                if isinstance(node, ast.Return):
                    if rest:
                        raise self._located(FieldsimSyntaxError("code after return is unreachable"), rest[0])
                    return
        finally:
            if new_scope:
                self.frame.scopes.pop()

    # ---- variables ------------------------------------------------------------------------------
    def declare(self, name, value, dtype=None):
        if self.depth == 0 and not self.inline_stack:
            self.declare_kernel_variable(name, value, dtype)
            return
        if isinstance(value, MatVal):
            allocas = []
            for v in value.entries:
                dt = dtype or self.e.dtype_of(v)
                var = self.b.alloca(dt)
                self.b.local_store(var, self.e.value(v, dt))
                allocas.append(var)
            self.frame.bind(name, ("mat", MatVal(allocas, value.n, value.m, value.ndim)))
            return
        dt = dtype or self.e.dtype_of(value)
        var = self.b.alloca(dt)
        self.b.local_store(var, self.e.value(value, dt))
        self.frame.bind(name, ("var", var))

    def declare_kernel_variable(self, name, value, dtype=None):
        """A variable at kernel top level lives in a hidden 0-D field (Taichi's global
        temporaries): it can cross tasks, and `+=` from a parallel loop is atomic."""
        if isinstance(value, MatVal):
            dt = dtype or T.promote_all([self.e.dtype_of(v) for v in value.entries])
            hidden = Field(dt, (), f"{self.kernel_name}.{name}", needs_grad=dt.is_float,
                           n=value.n, m=value.m if value.ndim == 2 else None, ndim_el=value.ndim,
                           _role="hidden")
        else:
            dt = dtype or self.e.dtype_of(value)
            hidden = Field(dt, (), f"{self.kernel_name}.{name}", needs_grad=dt.is_float, _role="hidden")
        self.hidden_fields.append(hidden)
        FieldRef(hidden, [], None).store(self, value)
        self.frame.bind(name, ("gvar", hidden))

    def assign_name(self, name, value, node, annotation=None):
        found, binding = False, None
        if name in self.frame.scopes[-1] or any(name in s for s in self.frame.scopes):
            found, binding = self.frame.lookup(name)
        if not found or binding[0] == "static":
            if isinstance(value, (Stmt, MatVal)) or (isinstance(value, (int, float)) and not isinstance(value, bool)) \
                    or annotation is not None:
                self.declare(name, value if not isinstance(value, bool) else int(value), annotation)
            else:
                self.frame.bind(name, ("static", value))
            return
        kind, var = binding
        if kind == "val":
            raise FieldsimSyntaxError(f"cannot assign to {name!r}: it is a loop index or constant")
        if kind == "gvar":
            FieldRef(var, [], None).store(self, value)
            return
        if kind == "var":
            if isinstance(value, MatVal) or not isinstance(value, (Stmt, numbers.Number)):
                raise FieldsimTypeError(f"cannot assign {describe(value)} to the scalar variable {name!r}")
            self.b.local_store(var, self.e.value(value, var.dtype))
            return
        if not isinstance(value, MatVal) or value.shape != var.shape:
            raise FieldsimTypeError(f"cannot assign {describe(value)} to {name!r}, "
                                    f"a {'vector' if var.ndim == 1 else 'matrix'} of shape {var.shape}")
        for slot, v in zip(var.entries, value.entries):
            self.b.local_store(slot, self.e.value(v, slot.dtype))

    # ---- statements -----------------------------------------------------------------------------
    def stmt_Pass(self, node):
        pass

    def stmt_Expr(self, node):
        if isinstance(node.value, ast.Constant) and isinstance(node.value.value, str):
            return  # docstring
        self.expr(node.value)

    def stmt_Assign(self, node: ast.Assign):
        value = self.expr(node.value)
        for target in node.targets:
            self.assign_target(target, value, node)

    def stmt_AnnAssign(self, node: ast.AnnAssign):
        dt = self.expr(node.annotation)
        dt = self.e.fp if dt is float else self.e.ip if dt is int else dt
        if node.value is None:
            raise FieldsimSyntaxError("an annotated variable needs a value")
        value = self.expr(node.value)
        if isinstance(dt, T.MatrixType):
            value = self.matrix_type_ctor(dt, [value])
            dt = None
        self.assign_name(node.target.id, value, node, dt)

    def assign_target(self, target, value, node):
        if isinstance(target, ast.Name):
            self.assign_name(target.id, value, node)
        elif isinstance(target, (ast.Tuple, ast.List)):
            values = value.entries if isinstance(value, MatVal) else list(value) \
                if isinstance(value, (tuple, list)) else None
            if values is None or len(values) != len(target.elts):
                raise FieldsimTypeError(f"cannot unpack {describe(value)} into {len(target.elts)} names")
            for t, v in zip(target.elts, values):
                self.assign_target(t, v, node)
        elif isinstance(target, ast.Subscript):
            self.store_subscript(target, value)
        elif isinstance(target, ast.Attribute):
            self.store_attribute(target, value)
        else:
            raise FieldsimSyntaxError(f"cannot assign to {type(target).__name__}")

    def store_subscript(self, target: ast.Subscript, value):
        with self.b.at(self.loc(target)):
            ref = self.lvalue(target)
            ref.store(self, value)

    def store_attribute(self, target: ast.Attribute, value):
        ref = self.lvalue(target)
        ref.store(self, value)

    def stmt_AugAssign(self, node: ast.AugAssign):
        from fieldsim.lang.frontend_expr import _BINOP_AST
        op = _BINOP_AST[type(node.op)]
        value = self.expr(node.value)
        ref = self.lvalue(node.target)
        if isinstance(ref, FieldRef) and op in ("+", "-"):
            ref.atomic(self, "add" if op == "+" else "sub", value)
            return
        current = ref.load(self)
        new = self.e.matmul(current, value) if op == "@" else self.e.binop(op, current, value)
        ref.store(self, new)

    def atomic_on_target(self, target_node, kind, value, node):
        ref = self.lvalue(target_node)
        if isinstance(ref, FieldRef):
            return ref.atomic(self, kind, value)
        old = ref.load(self)  # a local: no other thread can see it
        op = {"add": "+", "sub": "-", "min": "min", "max": "max", "and": "&", "or": "|",
              "xor": "^", "mul": "*"}[kind]
        ref.store(self, self.e.binop(op, old, value))
        return old

    def lvalue(self, node):
        ref = self._lvalue(node)
        if isinstance(ref, StaticRef):
            raise FieldsimSyntaxError(f"cannot assign to {describe(ref.obj)}")
        return ref

    def _lvalue(self, node):
        """What an assignment target refers to, without loading anything."""
        if isinstance(node, ast.Name):
            found, binding = self.frame.lookup(node.id)
            if not found:
                raise FieldsimSyntaxError(f"name {node.id!r} is not defined")
            kind, v = binding
            if kind == "var":
                return LocalRef([v], None)
            if kind == "mat":
                return LocalRef(v.entries, v)
            if kind == "gvar":
                return FieldRef(v, [], None)
            if kind == "static":
                return StaticRef(v)
            raise FieldsimSyntaxError(f"cannot assign to {node.id!r}: it is a loop index or constant")
        if isinstance(node, ast.Subscript):
            inner = self._lvalue(node.value)
            idx = self.subscript_indices(node.slice)
            if isinstance(inner, StaticRef):
                if isinstance(inner.obj, Field):
                    return FieldRef(inner.obj, self.field_indices(inner.obj, idx), None)
                if any(isinstance(i, (Stmt, MatVal)) for i in idx):
                    raise FieldsimSyntaxError("a Python container can only be indexed with constants")
                return StaticRef(inner.obj[idx[0]] if len(idx) == 1 else inner.obj[tuple(idx)])
            return inner.component(self, idx)
        if isinstance(node, ast.Attribute):
            from fieldsim.lang.matrix_ops import SWIZZLE
            inner = self._lvalue(node.value)
            if isinstance(inner, StaticRef):
                obj = inner.obj
                if isinstance(obj, Field) and node.attr in ("grad", "dual"):
                    twin = getattr(obj, node.attr)
                    if twin is None:
                        raise FieldsimTypeError(f"field {obj.ir_name!r} has no {node.attr}")
                    return StaticRef(twin)
                return StaticRef(getattr(obj, node.attr))
            if node.attr in SWIZZLE:
                return inner.component(self, [SWIZZLE[node.attr]])
        raise FieldsimSyntaxError(f"cannot assign to this expression ({type(node).__name__})")

    def stmt_If(self, node: ast.If):
        cond = self.e.truthy(self.expr(node.test))
        if isinstance(cond, int):  # constant condition (fs.static or folded): one branch only
            self.block(node.body if cond else node.orelse, new_scope=True)
            return
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
            cond = self.e.truthy(self.expr(node.test))
            if not (isinstance(cond, int) and cond):
                stop = self.b.if_(self.e.value(self.e.unop(Op.NOT, self.e.value(cond))))
                with self.b.into(stop.blocks[0]):
                    self.b.emit(Op.BREAK)
            self.block(node.body, new_scope=True)
        self.loop_depth -= 1
        self.depth -= 1

    def stmt_Break(self, node):
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
        if self.loop_depth == 0:
            raise FieldsimSyntaxError("continue outside a loop (or inside an fs.static loop)")
        self.b.emit(Op.CONTINUE)

    def stmt_Assert(self, node: ast.Assert):
        cond = self.e.truthy(self.expr(node.test))
        msg = ast.unparse(node.msg) if node.msg is not None else ast.unparse(node.test)
        if isinstance(node.msg, ast.Constant):
            msg = str(node.msg.value)
        if isinstance(cond, int):
            if not cond:
                raise FieldsimSyntaxError(f"assertion is always false: {msg}")
            return
        if self.rt.debug:
            self.b.emit(Op.ASSERT, None, (cond,), attr=msg)

    def stmt_Return(self, node: ast.Return):
        value = self.expr(node.value) if node.value is not None else None
        slot = self.frame.ret
        if slot is None:  # the kernel's own return
            if self.ret is None:
                raise FieldsimSyntaxError("this kernel returns a value but has no return annotation "
                                          "(e.g. `-> fs.f32`)")
            if self.depth != 0:
                raise FieldsimSyntaxError("a kernel may return only at the end of its body")
            self.b.emit(Op.RETURN, None, (self.e.value(value, self.ret),))
            return
        self.func_return(slot, value)

    def func_return(self, slot: ReturnSlot, value):
        if self.loop_depth > self.inline_stack[-1][1]:
            raise FieldsimSyntaxError("return inside a loop of a func is not supported")
        if slot.direct is True:
            slot.direct = value
            return
        flat, shape = _flatten_value(value)
        if slot.vars is None:
            slot.shape = shape
            slot.vars = []
            for pos, v in enumerate(flat):
                var = Stmt(Op.ALLOCA, self.e.dtype_of(v), loc=self.b.loc)
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
            self.static_for(node, self.expr(it.args[0]))
            return
        config, self.loop_config = self.loop_config, {}
        outermost = self.depth == 0 and not self.inline_stack
        iterable = self.expr(it)
        dims, names, grouped = self.loop_dims(iterable, node)
        info = ForInfo(parallel=outermost and not config.get("serialize", False),
                       serialize=outermost and config.get("serialize", False),
                       block_dim=config.get("block_dim"))
        total = None
        sizes = []
        for begin, end in dims:
            size = self.e.binop("-", end, begin)
            if len(dims) > 1:  # an empty dimension empties the product (two negatives would not)
                size = self.e.binop("max", size, 0)
            sizes.append(size)
            total = size if total is None else self.e.binop("*", total, size)
        # 64-bit iteration only where the range may pass 2^31 (a constant that large, or an
        # i64 bound); i32 elsewhere, where it is cheaper (divisions for multi-dim loops).
        ldt = T.i64 if _may_exceed_i32(total) else T.i32
        loop = self.b.for_(self.e.value(0, ldt), self.e.value(total, ldt), info)
        self.depth += 1
        self.loop_depth += 1
        if info.parallel:
            self.parallel_depth = self.loop_depth
        self.frame.scopes.append({})
        with self.b.into(loop.body):
            indices = self.delinearize(loop, dims, sizes)
            if grouped:
                self.frame.bind(names[0], ("val", MatVal.vector(indices)))
            else:
                for name, idx in zip(names, indices):
                    self.frame.bind(name, ("val", idx))
            self.block(node.body, new_scope=True)
        self.frame.scopes.pop()
        if info.parallel:
            self.parallel_depth = -1
        self.loop_depth -= 1
        self.depth -= 1

    def _is(self, node, obj) -> bool:
        try:
            return self.expr(node) is obj
        except FieldsimError:
            return False

    def loop_dims(self, iterable, node):
        targets = node.target.elts if isinstance(node.target, ast.Tuple) else [node.target]
        names = [t.id if isinstance(t, ast.Name) else None for t in targets]
        if None in names:
            raise FieldsimSyntaxError("for-loop targets must be plain names")
        grouped = isinstance(iterable, ops.grouped)
        if grouped:
            iterable = iterable.target
        if isinstance(iterable, Field):
            dims = [(0, s) for s in iterable.shape]
        elif isinstance(iterable, ops.ndrange):
            dims = list(iterable.bounds)
        elif isinstance(iterable, RangeSpec):
            dims = [(iterable.begin, iterable.end)]
        elif isinstance(iterable, range):
            if iterable.step != 1:
                raise FieldsimSyntaxError("range() with a step is only supported in fs.static loops")
            dims = [(iterable.start, iterable.stop)]
        else:
            raise FieldsimSyntaxError(f"cannot iterate over {describe(iterable)} in a kernel "
                                      "(use range, fs.ndrange, a field, or fs.static(...))")
        if grouped:
            if len(names) != 1:
                raise FieldsimSyntaxError("fs.grouped(...) binds a single vector index")
        elif len(names) != len(dims):
            raise FieldsimSyntaxError(f"the loop has {len(names)} index name(s) but iterates "
                                      f"{len(dims)} dimension(s)")
        return dims, names, grouped

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
        if isinstance(iterable, (ops.ndrange, ops.grouped, Field)):
            iterable = list(iter(iterable)) if not isinstance(iterable, Field) else None
            if iterable is None:
                raise FieldsimSyntaxError("fs.static cannot unroll a loop over a field")
        if isinstance(iterable, MatVal):
            iterable = list(iterable.entries)
        try:
            items = list(iterable)
        except TypeError:
            raise FieldsimSyntaxError(f"fs.static loop over {describe(iterable)}: not iterable") from None
        for item in items:
            self.frame.scopes.append({})
            from fieldsim.lang.matrix import Matrix
            if isinstance(item, Matrix):
                item = MatVal.vector([int(x) for x in item.entries])
            if isinstance(node.target, ast.Name):
                self.frame.bind(node.target.id, ("val", item) if isinstance(item, (Stmt, MatVal))
                                else ("static", item))
            else:
                names = [t.id for t in node.target.elts]
                vals = list(item)
                if len(vals) != len(names):
                    raise FieldsimSyntaxError("fs.static loop: cannot unpack the loop item")
                for n_, v in zip(names, vals):
                    self.frame.bind(n_, ("static", v))
            saved = self.loop_depth
            self.loop_depth = 0 if not self.loop_depth else self.loop_depth
            self.block(node.body, new_scope=True)
            self.loop_depth = saved
            self.frame.scopes.pop()

    # ---- funcs ----------------------------------------------------------------------------------
    def inline_func(self, func, args, kwargs, node):
        if func.custom_grad is not None or func.replay is not None:
            return self.inline_custom_grad(func, args, kwargs, node)
        return self.inline_plain(func, args, kwargs, node)

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

    def inline_plain(self, func, args, kwargs, node):
        src = _parse_cached(func.fn)
        fdef = src.node
        params = [a.arg for a in fdef.args.args]
        if len(self.inline_stack) > 64:
            raise FieldsimSyntaxError(f"func {func.fn.__name__!r} recurses too deeply "
                                      "(recursion must terminate through fs.static conditions)")
        bound = _bind_args(func.fn, params, fdef, args, kwargs)
        frame = Frame(func.fn, src)
        ret_slot = ReturnSlot(self.b.block, len(self.b.block))
        if _single_tail_return(fdef.body):
            ret_slot.direct = True
        frame.ret = ret_slot
        saved_frame = self.frame
        for name, value in bound.items():
            if isinstance(value, (Stmt, MatVal)) and name in frame.assigned:
                self.frame = frame
                self.declare(name, value)
                self.frame = saved_frame
            elif isinstance(value, (Stmt, MatVal)):
                frame.bind(name, ("val", value))
            else:
                frame.bind(name, ("static", value))
        self.frames.append(frame)
        self.frame = frame
        self.inline_stack.append((func, self.loop_depth))
        try:
            self.block(fdef.body)
        finally:
            self.inline_stack.pop()
            self.frames.pop()
            self.frame = saved_frame
        if ret_slot.direct is not None and ret_slot.direct is not True:
            return ret_slot.direct
        if ret_slot.vars is None:
            return None
        return _rebuild_value([self.b.local_load(v) for v in ret_slot.vars], ret_slot.shape)


class StaticRef:
    def __init__(self, obj):
        self.obj = obj


class RangeSpec:
    def __init__(self, begin, end):
        self.begin, self.end = begin, end


class LocalRef:
    """An assignable local: one scalar alloca, or the allocas of a local vector/matrix."""

    def __init__(self, allocas, mat: MatVal | None):
        self.allocas, self.mat = allocas, mat

    def load(self, fe):
        if self.mat is None:
            return fe.b.local_load(self.allocas[0])
        return self.mat.map(fe.b.local_load)

    def store(self, fe, value):
        if self.mat is None:
            if isinstance(value, MatVal) or not isinstance(value, (Stmt, numbers.Number)):
                raise FieldsimTypeError(f"cannot assign {describe(value)} to a scalar variable")
            fe.b.local_store(self.allocas[0], fe.e.value(value, self.allocas[0].dtype))
            return
        if not isinstance(value, MatVal) or value.shape != self.mat.shape:
            raise FieldsimTypeError(f"cannot assign {describe(value)} to a "
                                    f"{'vector' if self.mat.ndim == 1 else 'matrix'} of shape {self.mat.shape}")
        for slot, v in zip(self.allocas, value.entries):
            fe.b.local_store(slot, fe.e.value(v, slot.dtype))

    def component(self, fe, idx):
        if self.mat is None:
            raise FieldsimTypeError("cannot index a scalar variable")
        r = idx[0]
        c = idx[1] if len(idx) > 1 else 0
        if len(idx) == 1 and self.mat.ndim == 2 and self.mat.m > 1:
            if isinstance(r, Stmt):
                raise FieldsimSyntaxError("a matrix row assignment needs a constant row index")
            row = [self.mat.at(r, k) for k in range(self.mat.m)]
            return LocalRef(row, MatVal.vector(row))
        if isinstance(r, Stmt) or isinstance(c, Stmt):
            return DynamicLocalRef(self.mat, r, c)
        if not (0 <= r < self.mat.n and 0 <= c < self.mat.m):
            raise FieldsimSyntaxError(f"index ({r}, {c}) out of range for shape {self.mat.shape}")
        return LocalRef([self.mat.at(r, c)], None)


class DynamicLocalRef:
    """`v[i] = x` with a runtime index: every entry is rewritten through a select."""

    def __init__(self, mat: MatVal, r, c):
        self.mat, self.r, self.c = mat, r, c

    def _flat(self, fe):
        return fe.e.binop("+", fe.e.binop("*", self.r, self.mat.m), self.c)

    def load(self, fe):
        return fe.matval_get(self.mat.map(fe.b.local_load), [self.r, self.c])

    def store(self, fe, value):
        flat = self._flat(fe)
        for k, slot in enumerate(self.mat.entries):
            hit = fe.e.compare("==", flat, k)
            new = fe.e.select(hit, fe.e.value(value, slot.dtype), fe.b.local_load(slot))
            fe.b.local_store(slot, fe.e.value(new, slot.dtype))


class FieldRef:
    """An element of a field (all components for a vector/matrix field, or one component)."""

    def __init__(self, field: Field, indices, comp):
        self.field, self.indices, self.comp = field, indices, comp

    def _targets(self, fe):
        f = self.field
        if f.ndim_el == 0:
            return [self.indices]
        from fieldsim.lang.frontend_expr import component_indices
        comps = [self.comp] if self.comp is not None else range(f.n * (f.m or 1))
        return [self.indices + component_indices(fe, f, c) for c in comps]

    def load(self, fe):
        if self.comp is not None or self.field.ndim_el == 0:
            return fe.b.load(self.field, self._targets(fe)[0])
        return fe.load_field(self.field, self.indices)

    def _values(self, fe, value):
        targets = self._targets(fe)
        if len(targets) == 1 and (self.comp is not None or self.field.ndim_el == 0):
            if isinstance(value, MatVal) or not isinstance(value, (Stmt, numbers.Number)):
                raise FieldsimTypeError(f"cannot store {describe(value)} into scalar field "
                                        f"{self.field.ir_name!r}" if self.field.ndim_el == 0 else
                                        f"cannot store {describe(value)} into a component of {self.field.ir_name!r}")
            return targets, [value]
        shape = self.field.element_shape
        if not isinstance(value, MatVal):
            if isinstance(value, (Stmt, numbers.Number)):
                value = MatVal([value] * len(targets), self.field.n, self.field.m or 1, self.field.ndim_el)
            else:
                raise FieldsimTypeError(f"cannot store {describe(value)} into field {self.field.ir_name!r}")
        if tuple(value.shape) != tuple(shape) and len(value.entries) != len(targets):
            raise FieldsimTypeError(f"cannot store {describe(value)} into field {self.field.ir_name!r} "
                                    f"whose elements have shape {shape}")
        return targets, value.entries

    def store(self, fe, value):
        targets, values = self._values(fe, value)
        for idx, v in zip(targets, values):
            fe.b.store(self.field, idx, fe.e.value(v, self.field.dtype))

    def atomic(self, fe, kind, value):
        targets, values = self._values(fe, value)
        olds = [fe.b.atomic(kind, self.field, idx, fe.e.value(v, self.field.dtype))
                for idx, v in zip(targets, values)]
        if len(olds) == 1 and (self.comp is not None or self.field.ndim_el == 0):
            return olds[0]
        return MatVal(olds, self.field.n, self.field.m or 1, self.field.ndim_el)

    def component(self, fe, idx):
        if self.field.ndim_el == 0 or self.comp is not None:
            raise FieldsimTypeError(f"field {self.field.ir_name!r} elements are scalars")
        if any(isinstance(i, Stmt) for i in idx):
            r = idx[0]
            c = idx[1] if len(idx) > 1 else 0
            m = self.field.m or 1
            flat = fe.e.binop("+", fe.e.binop("*", r, m), c)
            return FieldRef(self.field, self.indices, flat)
        r = idx[0]
        c = idx[1] if len(idx) > 1 else 0
        return FieldRef(self.field, self.indices, r * (self.field.m or 1) + c)


def _assigned_names(fdef) -> set:
    names = set()
    for n in ast.walk(fdef):
        targets = []
        if isinstance(n, ast.Assign):
            targets = n.targets
        elif isinstance(n, (ast.AugAssign, ast.AnnAssign)):
            targets = [n.target]
        for t in targets:
            for sub in ast.walk(t):
                if isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                    names.add(sub.id)
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
    raise FieldsimTypeError(f"a func cannot return {describe(value)} from inside a branch")


def _rebuild_value(flat, shape):
    if shape[0] == "scalar":
        return flat[0]
    if shape[0] == "mat":
        return MatVal(flat, shape[1], shape[2], shape[3])
    out, pos = [], 0
    for count, s in shape[1]:
        out.append(_rebuild_value(flat[pos:pos + count], s))
        pos += count
    return tuple(out)


def _bind_args(fn, params, fdef, args, kwargs) -> dict:
    defaults = fdef.args.defaults
    bound = {}
    if len(args) > len(params):
        raise FieldsimTypeError(f"func {fn.__name__!r} takes {len(params)} argument(s), "
                                f"got {len(args)}")
    for name, v in zip(params, args):
        bound[name] = v
    for name, v in kwargs.items():
        if name not in params:
            raise FieldsimTypeError(f"func {fn.__name__!r} has no parameter {name!r}")
        bound[name] = v
    py_defaults = fn.__defaults__ or ()
    for name, d in zip(params[len(params) - len(defaults):], py_defaults):
        bound.setdefault(name, d)
    missing = [p for p in params if p not in bound]
    if missing:
        raise FieldsimTypeError(f"func {fn.__name__!r} is missing argument(s) {', '.join(missing)}")
    return bound


def _may_exceed_i32(v) -> bool:
    """Whether a loop bound (a Python int or an IR value) may lie outside the i32 range."""
    if isinstance(v, int):
        return not -(1 << 31) <= v < (1 << 31)
    return getattr(v, "dtype", None) in (T.i64, T.u64, T.u32)
