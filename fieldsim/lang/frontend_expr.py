"""Expression half of the frontend (mixed into `Frontend`): names, operators, subscripts,
attributes and calls, evaluated to frontend values (constants, `Stmt`, `MatVal`, Python objects).
"""
from __future__ import annotations

import ast
import builtins
import numbers
import types

from fieldsim.errors import FieldsimError, FieldsimNameError, FieldsimSyntaxError, FieldsimTypeError
from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang import formatting, matrix_ops, ops, struct
from fieldsim.lang import types as T
from fieldsim.lang.expr import CMPOPS, MatVal, describe
from fieldsim.lang.field import ComponentField, Field, placed_twin

_BINOP_AST = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
              ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
              ast.LShift: "<<", ast.RShift: ">>", ast.MatMult: "@"}
_CMP_AST = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
            ast.Is: "==", ast.IsNot: "!="}


class BoundMethod:
    def __init__(self, value: MatVal, name: str):
        self.value, self.name = value, name


class ExprMixin:
    # ---- names ----------------------------------------------------------------------------------
    def expr_Name(self, node: ast.Name):
        found, value = self.frame.lookup(node.id)
        if found:
            return self.captured(self.read_binding(value))
        raise FieldsimNameError(f"name {node.id!r} is not defined")

    def read_binding(self, binding):
        kind, v = binding
        if kind == "var":
            return self.b.local_load(v)
        if kind == "mat":
            return v.map(self.b.local_load)
        if kind == "gvar":
            return self.load_field(v, [])
        return v  # "val", "static", and "struct" (a StructLocalRef: members load lazily)

    def captured(self, v):
        """A Python-scope `fs.Vector`/`fs.Matrix` (a global, closure or attribute) used in a
        kernel: a constant vector/matrix value, typed as its dtype if it has one."""
        from fieldsim.lang.matrix import Matrix
        if not isinstance(v, Matrix):
            return v
        arr = v.to_numpy()
        dt = v.dtype if isinstance(v.dtype, T.DataType) else None
        vals = [x.item() for x in arr.reshape(-1)]
        if dt is not None:
            vals = [self.b.const(x if dt.is_float else int(x), dt) for x in vals]
        if arr.ndim == 1:
            return MatVal.vector(vals)
        return MatVal(vals, arr.shape[0], arr.shape[1], 2)

    def expr_Constant(self, node: ast.Constant):
        if isinstance(node.value, (bool, int, float, str)) or node.value is None:
            return node.value
        raise FieldsimSyntaxError(f"unsupported constant {node.value!r}")

    def expr_Dict(self, node):
        if any(k is None for k in node.keys):
            raise FieldsimSyntaxError("dict unpacking (**) is not supported in a kernel")
        keys = [self.expr(k) for k in node.keys]
        if not all(isinstance(k, str) for k in keys):
            raise FieldsimSyntaxError("a dict in a kernel needs constant string keys "
                                      "(e.g. fs.Struct({'a': x}))")
        return {k: self.expr(v) for k, v in zip(keys, node.values)}

    def expr_JoinedStr(self, node):
        return formatting.joined_str(self, node)

    def expr_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    def expr_List(self, node):
        return [self.expr(e) for e in node.elts]

    # ---- operators --------------------------------------------------------------------------------
    def expr_BinOp(self, node: ast.BinOp):
        op = _BINOP_AST.get(type(node.op))
        a, b = self.expr(node.left), self.expr(node.right)
        if op == "@":
            return self.e.matmul(a, b)
        if op is None:
            raise FieldsimSyntaxError(f"unsupported operator {type(node.op).__name__}")
        if op == "%" and isinstance(a, str) and _has_kernel_value(b):
            return formatting.percent_format(self, a, b)
        if not _is_value(a) or not _is_value(b):
            if not isinstance(a, (Stmt, MatVal)) and not isinstance(b, (Stmt, MatVal)):
                return _py_binop(op, a, b)
            raise FieldsimTypeError(f"unsupported operand type(s) for {op}: {describe(a)} and {describe(b)}")
        return self.e.binop(op, a, b)

    def expr_UnaryOp(self, node: ast.UnaryOp):
        v = self.expr(node.operand)
        if isinstance(node.op, ast.UAdd):
            return v
        if not isinstance(v, (Stmt, MatVal)):
            return {ast.USub: lambda x: -x, ast.Not: lambda x: not x,
                    ast.Invert: lambda x: ~x}[type(node.op)](v)
        op = {ast.USub: Op.NEG, ast.Not: Op.NOT, ast.Invert: Op.BIT_NOT}[type(node.op)]
        if op == Op.NOT:
            return self.e.unop(Op.NOT, self.e.truthy(v))
        return self.e.unop(op, v)

    def expr_BoolOp(self, node: ast.BoolOp):
        acc = self.e.truthy(self.expr(node.values[0]))
        for sub in node.values[1:]:
            nxt = self.e.truthy(self.expr(sub))
            if isinstance(acc, int) and isinstance(nxt, int):
                acc = int(acc and nxt) if isinstance(node.op, ast.And) else int(acc or nxt)
            else:
                acc = self.e.binop("&" if isinstance(node.op, ast.And) else "|",
                                   self.e.value(acc), self.e.value(nxt))
        return acc

    def expr_Compare(self, node: ast.Compare):
        left = self.expr(node.left)
        result = None
        for op_node, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            op = _CMP_AST.get(type(op_node))
            if op is None:
                raise FieldsimSyntaxError(f"unsupported comparison {type(op_node).__name__}")
            if isinstance(left, MatVal) or isinstance(right, MatVal):
                r = self.e.elementwise(op, _as_matval(left, right), _as_matval(right, left))
            elif not _is_value(left) or not _is_value(right):
                r = int(_py_binop(op, left, right))
            else:
                r = self.e.compare(op, left, right)
            result = r if result is None else self.e.binop("&", result, r)
            left = right
        return result

    def expr_IfExp(self, node: ast.IfExp):
        c = self.e.truthy(self.expr(node.test))
        if isinstance(c, int):
            return self.expr(node.body if c else node.orelse)
        if _may_touch_memory(node.body) or _may_touch_memory(node.orelse):
            return self.guarded_ifexp(c, node)
        return self.e.select(c, self.expr(node.body), self.expr(node.orelse))

    def guarded_ifexp(self, c, node: ast.IfExp):
        """`a if c else b` whose sides load or call: only the taken side runs (a guard such as
        `p[i] if 0 <= i < n else 0.0` must keep the load, and its adjoint, in bounds)."""
        block = self.b.block
        if_stmt = self.b.if_(self.e.value(c))
        self.depth += 1
        try:
            with self.b.into(if_stmt.blocks[0]):
                a = self.expr(node.body)
            with self.b.into(if_stmt.blocks[1]):
                b = self.expr(node.orelse)
        finally:
            self.depth -= 1
        if isinstance(a, MatVal) or isinstance(b, MatVal):
            a, b = self.e.broadcast(a, b)
            pairs, shape = list(zip(a.entries, b.entries)), a
        elif _is_value(a) and _is_value(b):
            pairs, shape = [(a, b)], None
        else:
            raise FieldsimTypeError(f"the two sides of a conditional expression must be values, got "
                                    f"{describe(a)} and {describe(b)}")
        at = block.index(if_stmt)
        results = []
        for x, y in pairs:
            dt = T.promote(self.e.dtype_of(x), self.e.dtype_of(y))
            var = Stmt(Op.ALLOCA, dt, loc=self.b.loc)
            block.insert(at, var)  # declared before the IF, so both branches can store to it
            at += 1
            for blk, v in ((if_stmt.blocks[0], x), (if_stmt.blocks[1], y)):
                with self.b.into(blk):
                    self.b.local_store(var, self.e.value(v, dt))
            results.append(self.b.local_load(var))
        if shape is None:
            return results[0]
        return MatVal(results, shape.n, shape.m, shape.ndim)

    # ---- subscripts and attributes --------------------------------------------------------------
    def expr_Subscript(self, node: ast.Subscript):
        if isinstance(node.value, ast.Subscript):
            outer = self.expr(node.value.value)
            if isinstance(outer, Field) and outer.ndim_el > 0:
                return self.field_component(outer, node)
            base = self.subscript_of(outer, node.value)
        else:
            base = self.expr(node.value)
        return self.subscript_of(base, node)

    def field_component(self, f: Field, node: ast.Subscript):
        """`m[i][j, k]`: with a run-time component index, one LOAD of that component (the
        whole element loaded and selected from would be a read of every component, which the
        access-rule checker must count as such)."""
        from fieldsim.lang.frontend import FieldRef
        indices = self.field_indices(f, self.subscript_indices(node.value.slice))
        idx = self.subscript_indices(node.slice)
        if len(idx) == f.ndim_el and any(isinstance(i, Stmt) for i in idx):
            return FieldRef(f, indices, None).component(self, idx).load(self)
        return self.matval_get(self.load_field(f, indices), idx)

    def subscript_of(self, base, node: ast.Subscript):
        idx = self.subscript_indices(node.slice)
        if isinstance(base, Field):
            return self.load_field(base, self.field_indices(base, idx))
        if isinstance(base, struct.StructField):  # an element: members load when read
            return struct.StructFieldRef(base, self.struct_indices(base, idx))
        if isinstance(base, MatVal):
            return self.matval_get(base, idx)
        if isinstance(base, (tuple, list, dict, range)) and all(not isinstance(i, Stmt) for i in idx):
            return base[idx[0]] if len(idx) == 1 else base[tuple(idx)]
        raise FieldsimTypeError(f"cannot index {describe(base)}")

    def subscript_indices(self, sl) -> list:
        if isinstance(sl, ast.Tuple):
            vals = [self.expr(e) for e in sl.elts]
        else:
            vals = [self.expr(sl)]
        out = []
        for v in vals:  # a vector index `x[I]` expands to its entries
            out.extend(v.entries if isinstance(v, MatVal) else [v])
        return out

    def field_indices(self, field: Field, idx: list) -> list:
        if field.shape is None:
            raise FieldsimTypeError(f"field {field.ir_name!r} is used before it has a shape "
                                    "(place it with fs.root.dense(...).place(...))")
        if idx == [None]:
            idx = []
        if len(idx) != len(field.shape):
            raise FieldsimSyntaxError(
                f"field {field.ir_name!r} has {len(field.shape)} dimension(s) but is indexed with "
                f"{len(idx)} index(es)" + ("; index a 0-D field with x[None]" if not field.shape else ""))
        out = []
        for v in idx:
            if isinstance(v, float) or (isinstance(v, Stmt) and v.dtype.is_float):
                raise FieldsimTypeError(f"field {field.ir_name!r} index must be an integer, "
                                        f"got {describe(v)}; use int(...)")
            if isinstance(v, MatVal) or not (isinstance(v, (Stmt, numbers.Integral))):
                raise FieldsimTypeError(f"bad index for field {field.ir_name!r}: {describe(v)}")
            out.append(self.e.value(v, T.i32))
        if field.offset is not None:  # storage index = user index - offset
            out = [v if o == 0 else self.e.value(self.e.binop("-", v, o), T.i32)
                   for v, o in zip(out, field.offset)]
        return out

    def struct_indices(self, sfield, idx: list) -> list:
        leaves = sfield.leaves()
        if not leaves:
            raise FieldsimTypeError(f"struct field {sfield.ir_name!r} has no members")
        return self.field_indices(leaves[0], idx)

    def load_field(self, field: Field, indices: list):
        if isinstance(field, ComponentField):  # a component view: load from its owner
            return self.b.load(field.owner, indices + component_indices(self, field.owner, field.comp))
        if field.ndim_el == 0:
            return self.b.load(field, indices)
        comps = [self.b.load(field, indices + component_indices(self, field, c))
                 for c in range(len(_components(field)))]
        return MatVal(comps, field.n, field.m or 1, field.ndim_el)

    def matval_get(self, m: MatVal, idx: list):
        if len(idx) == 1 and m.ndim == 2 and m.m > 1:  # a row of a matrix
            return MatVal.vector([self.matval_get(m, [idx[0], c]) for c in range(m.m)])
        if len(idx) not in (1, 2) or (len(idx) == 2 and m.ndim == 1):
            raise FieldsimSyntaxError(f"{describe(m)} indexed with {len(idx)} indices")
        r, c = idx[0], (idx[1] if len(idx) == 2 else 0)
        if not isinstance(r, Stmt) and not isinstance(c, Stmt):
            if not (0 <= r < m.n and 0 <= c < m.m):
                raise FieldsimSyntaxError(f"index ({r}, {c}) is out of range for {describe(m)}")
            return m.at(r, c)
        flat = self.e.binop("+", self.e.binop("*", r, m.m), c)
        acc = m.entries[-1]
        for k in range(len(m.entries) - 2, -1, -1):
            acc = self.e.select(self.e.compare("==", flat, k), m.entries[k], acc)
        return acc

    def expr_Attribute(self, node: ast.Attribute):
        base = self.expr(node.value)
        name = node.attr
        if isinstance(base, struct.StructValue):
            return struct.attribute(self, base, name)
        if isinstance(base, MatVal):
            if name in matrix_ops.SWIZZLE and base.ndim == 1:
                return base.entries[matrix_ops.SWIZZLE[name]]
            if name in ("n", "m"):
                return getattr(base, name)
            if name == "T":
                return matrix_ops.transpose(self.e, base)
            if name in matrix_ops.METHODS:
                return BoundMethod(base, name)
            raise FieldsimTypeError(f"{describe(base)} has no attribute or method {name!r}")
        if isinstance(base, Field) and name in ("grad", "dual"):
            return placed_twin(base, name)
        if isinstance(base, (Stmt,)):
            raise FieldsimTypeError(f"a scalar {base.dtype} value has no attribute {name!r}")
        try:
            return self.captured(getattr(base, name))
        except AttributeError as err:
            if isinstance(err, FieldsimError):  # e.g. a Taichi name fieldsim lacks: its reason,
                raise FieldsimNameError(err.message) from None  # located at this node
            raise FieldsimNameError(f"{describe(base)} has no attribute {name!r}") from None

    # ---- calls ------------------------------------------------------------------------------------
    def expr_Call(self, node: ast.Call):
        filled = self.fill_in_place(node)
        if filled is not None:
            return None
        fn = self.expr(node.func)
        if fn in ops.LVALUE_BUILTINS:
            args = [None] + [self.expr(a) for a in node.args[1:]]
            return ops.KERNEL_BUILTINS[fn](self, node, args, {})
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(self.expr(a.value))
            else:
                args.append(self.expr(a))
        kwargs = {kw.arg: self.expr(kw.value) for kw in node.keywords}
        return self.call(fn, args, kwargs, node)

    def fill_in_place(self, node: ast.Call):
        """`v.fill(c)` on an assignable vector/matrix (a field element, a local, a struct
        member): every entry becomes `c`, as in Taichi. None when `node` is not such a call."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "fill" and len(node.args) == 1
                and not node.keywords):
            return None
        from fieldsim.lang.frontend import StaticRef
        try:
            ref = self._lvalue(func.value)
        except FieldsimError:
            return None
        if isinstance(ref, StaticRef) or not hasattr(ref, "load"):
            return None
        current = ref.load(self)
        if not isinstance(current, MatVal):
            return None
        value = self.expr(node.args[0])
        ref.store(self, current.map(lambda _: value))
        return True

    def call(self, fn, args, kwargs, node):
        from fieldsim.lang.kernel import BoundFunc, Func, KernelObj
        from fieldsim.lang.matrix import Matrix, Vector
        if _hashable(fn) and fn in ops.KERNEL_BUILTINS:
            return ops.KERNEL_BUILTINS[fn](self, node, args, kwargs)
        if isinstance(fn, Func):
            return self.inline_func(fn, args, kwargs, node)
        if isinstance(fn, BoundFunc):  # a func method: `self` comes first
            return self.inline_func(fn.func, [fn.obj] + list(args), kwargs, node)
        if isinstance(getattr(fn, "__func__", None), Func):  # a classmethod func (Python 3.13+)
            return self.inline_func(fn.__func__, [fn.__self__] + list(args), kwargs, node)
        if isinstance(fn, BoundMethod):
            return matrix_ops.METHODS[fn.name](self.e, fn.value, *args, **kwargs)
        if fn is Vector or fn is Matrix:
            return ops._matval_ctor(self, node, args, kwargs, 1 if fn is Vector else 2)
        if isinstance(fn, T.MatrixType):
            return self.matrix_type_ctor(fn, args)
        if isinstance(fn, struct.StructType) or fn is struct.Struct:
            return struct.construct(self, fn if fn is not struct.Struct else None, args, kwargs)
        if isinstance(fn, T.DataType):
            return self.e.cast(args[0], fn)
        if isinstance(fn, KernelObj):
            raise FieldsimSyntaxError("a kernel cannot call another kernel; make it an @fs.func")
        if isinstance(getattr(fn, "__self__", None), Field) and fn.__name__ == "fill":
            if len(args) != 1 or kwargs:
                raise FieldsimTypeError("field.fill takes one value")
            return self.field_fill(fn.__self__, args[0])
        handler = _PY_BUILTINS.get(fn) if _hashable(fn) else None
        if handler is not None:
            return handler(self, args, kwargs)
        if isinstance(getattr(fn, "__self__", None), str) and getattr(fn, "__name__", "") == "format":
            if _has_kernel_value((args, kwargs)):
                return formatting.format_method(self, fn.__self__, args, kwargs)
            try:  # constants too: Taichi's numbering and specs (`{:.2}` of 2 is "02")
                return formatting.format_method(self, fn.__self__, args, kwargs)
            except formatting.UnsupportedSpec:
                pass  # alignment and the like: Python's own str.format
        special = self.matrix_classmethod(fn, args)
        if special is not None:
            return special
        return self.call_python(fn, args, kwargs)

    def matrix_classmethod(self, fn, args):
        from fieldsim.lang.matrix import Matrix
        owner = getattr(fn, "__self__", None)
        if not (isinstance(owner, type) and issubclass(owner, Matrix)):
            return None
        name = fn.__name__
        if name in ("zero", "one"):
            dt, shape = args[0], args[1:]
            fill = 0 if name == "zero" else 1
            dt = self.e.fp if dt is float else self.e.ip if dt is int else dt
            n, m = shape[0], (shape[1] if len(shape) > 1 else 1)
            vals = [self.b.const(fill, dt) for _ in range(n * m)]
            return MatVal(vals, n, m, 2 if len(shape) > 1 else 1)
        if name == "identity":
            dt, n = args
            dt = self.e.fp if dt is float else dt
            return MatVal([self.b.const(int(r == c), dt) for r in range(n) for c in range(n)], n, n, 2)
        if name == "unit":
            n, i = args[0], args[1]
            dt = args[2] if len(args) > 2 else self.e.fp
            return MatVal.vector([self.b.const(int(k == i), dt) for k in range(n)])
        return None

    def matrix_type_ctor(self, mt: T.MatrixType, args):
        flat = []
        for a in args:
            flat.extend(_flatten_values(a))
        if len(flat) == 1:
            flat = flat * (mt.n * mt.m)
        if len(flat) != mt.n * mt.m:
            raise FieldsimTypeError(f"{mt!r} needs {mt.n * mt.m} values, got {len(flat)}")
        dt = mt.dtype or self.e.fp
        dt = self.e.fp if dt is float else self.e.ip if dt is int else dt
        return MatVal([self.e.cast(v, dt) for v in flat], mt.n, mt.m, mt.ndim)

    def call_python(self, fn, args, kwargs):
        if not callable(fn):
            raise FieldsimTypeError(f"{describe(fn)} is not callable")
        if fn is ops.ndrange and not kwargs:  # runtime bounds, e.g. an ndarray's shape
            return fn(*args)
        if any(isinstance(v, (Stmt, MatVal)) for v in list(args) + list(kwargs.values())):
            if isinstance(fn, types.FunctionType):  # as Taichi runs it on its values: inlined
                from fieldsim.lang.kernel import Func
                return self.inline_func(Func(fn), args, kwargs, None)
            name = getattr(fn, "__name__", repr(fn))
            raise FieldsimSyntaxError(f"cannot call the Python function {name!r} with kernel values; "
                                      "decorate it with @fs.func to call it from a kernel")
        return fn(*args, **kwargs)


def component_indices(fe, field, flat) -> list:
    """IR indices of component `flat` (row-major) of a vector (one index) or matrix (two)."""
    if field.ndim_el == 1:
        return [fe.e.value(flat, T.i32)]
    m = field.m
    if isinstance(flat, Stmt):
        return [fe.e.value(fe.e.binop("//", flat, m), T.i32), fe.e.value(fe.e.binop("%", flat, m), T.i32)]
    return [fe.b.const(flat // m, T.i32), fe.b.const(flat % m, T.i32)]


def _flatten_values(v) -> list:
    if isinstance(v, MatVal):
        return list(v.entries)
    if isinstance(v, (list, tuple)):
        return [e for item in v for e in _flatten_values(item)]
    return [v]


def _as_matval(v, like):
    """A Python list/tuple compared with a vector (`v == [1, 2, 3]`): a constant vector."""
    if isinstance(v, (list, tuple)) and isinstance(like, MatVal):
        flat = _flatten_values(v)
        if len(flat) == len(like.entries):
            return MatVal(flat, like.n, like.m, like.ndim)
    return v


def _py_all_any(name):
    def handler(fe, args, kw):
        v = args[0]
        if not isinstance(v, MatVal):
            if isinstance(v, Stmt):
                return fe.e.truthy(v)
            return getattr(builtins, name)(v)
        acc = None
        for e in v.entries:
            t = fe.e.truthy(e)
            if acc is None:
                acc = t
            elif isinstance(acc, int) and isinstance(t, int):
                acc = int(acc and t) if name == "all" else int(acc or t)
            else:
                acc = fe.e.binop("&" if name == "all" else "|", fe.e.value(acc), fe.e.value(t))
        return acc
    return handler


def _components(field):
    return range(field.n * (field.m or 1)) if field.ndim_el else range(1)


def _may_touch_memory(node) -> bool:
    """Could evaluating this expression load from a field or run a call (with effects)?"""
    return any(isinstance(n, (ast.Subscript, ast.Call)) for n in ast.walk(node))


def _has_kernel_value(v) -> bool:
    """Does a (nested) argument hold a runtime value (or text made from one)?"""
    if isinstance(v, (Stmt, MatVal, formatting.FmtStr)):
        return True
    if isinstance(v, (list, tuple)):
        return any(_has_kernel_value(e) for e in v)
    if isinstance(v, dict):
        return any(_has_kernel_value(e) for e in v.values())
    return False


def _is_value(v) -> bool:
    return isinstance(v, (Stmt, MatVal, numbers.Number))


def _hashable(v) -> bool:
    try:
        hash(v)
        return True
    except TypeError:
        return False


def _py_binop(op, a, b):
    from fieldsim.lang.expr import _PY
    return _PY[op](a, b)


def _int_cast(fe, args, kw):
    v = args[0] if args else 0
    if isinstance(v, (Stmt, MatVal)):
        return fe.e.cast(v, fe.e.ip)
    return int(v)


def _float_cast(fe, args, kw):
    v = args[0] if args else 0.0
    if isinstance(v, (Stmt, MatVal)):
        return fe.e.cast(v, fe.e.fp)
    return float(v)


def _len(fe, args, kw):
    v = args[0]
    if isinstance(v, MatVal):
        return v.n
    if isinstance(v, Field):
        return v.shape[0]
    return len(v)


def _py_minmax(name):
    def handler(fe, args, kw):
        if len(args) == 1 and isinstance(args[0], MatVal):
            return fe.e.reduce(name, args[0])
        if all(not isinstance(a, (Stmt, MatVal)) for a in args):
            return getattr(builtins, name)(*args)
        acc = args[0]
        for a in args[1:]:
            acc = fe.e.binop(name, acc, a)
        return acc
    return handler


def _py_abs(fe, args, kw):
    if not isinstance(args[0], (Stmt, MatVal)):
        return builtins.abs(args[0])
    return fe.e.unop(Op.ABS, args[0])


def _getattr(fe, args, kw):
    if args and isinstance(args[0], struct.StructValue) and len(args) == 2:
        return struct.attribute(fe, args[0], args[1])
    return getattr(*args)


_PY_BUILTINS = {getattr: _getattr, int: _int_cast, float: _float_cast, len: _len, min: _py_minmax("min"),
                max: _py_minmax("max"), abs: _py_abs, all: _py_all_any("all"),
                any: _py_all_any("any"), print: formatting.emit_print,
                builtins.range: lambda fe, a, k: _static_range(a)}


def _static_range(args):
    if any(isinstance(a, (Stmt, MatVal)) for a in args):
        from fieldsim.lang.frontend import RangeSpec
        if len(args) not in (1, 2):
            raise FieldsimSyntaxError("range() with runtime bounds takes (end) or (begin, end)")
        return RangeSpec(0, args[0]) if len(args) == 1 else RangeSpec(args[0], args[1])
    return range(*args)


def is_cmp(op):
    return op in CMPOPS
