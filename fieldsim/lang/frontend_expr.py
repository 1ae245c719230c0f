"""Expression half of the frontend (mixed into `Frontend`): names, operators, subscripts,
attributes and calls, evaluated to frontend values (constants, `Stmt`, `MatVal`, Python objects).
"""
from __future__ import annotations

import ast
import builtins
import numbers

from fieldsim.errors import FieldsimNameError, FieldsimSyntaxError, FieldsimTypeError
from fieldsim.ir.ir import Op, Stmt
from fieldsim.lang import matrix_ops, ops
from fieldsim.lang import types as T
from fieldsim.lang.expr import CMPOPS, MatVal, describe
from fieldsim.lang.field import Field

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
            return self.read_binding(value)
        raise FieldsimNameError(f"name {node.id!r} is not defined")

    def read_binding(self, binding):
        kind, v = binding
        if kind == "var":
            return self.b.local_load(v)
        if kind == "mat":
            return v.map(self.b.local_load)
        if kind == "gvar":
            return self.load_field(v, [])
        return v

    def expr_Constant(self, node: ast.Constant):
        if isinstance(node.value, (bool, int, float, str)) or node.value is None:
            return node.value
        raise FieldsimSyntaxError(f"unsupported constant {node.value!r}")

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
        if not _is_value(a) or not _is_value(b):
            if not isinstance(a, (Stmt, MatVal)) and not isinstance(b, (Stmt, MatVal)):
                return _py_binop(op, a, b)
            raise FieldsimTypeError(f"unsupported operands for {op}: {describe(a)} and {describe(b)}")
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
                r = self.e.elementwise(op, left, right)
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
        return self.e.select(c, self.expr(node.body), self.expr(node.orelse))

    # ---- subscripts and attributes --------------------------------------------------------------
    def expr_Subscript(self, node: ast.Subscript):
        base = self.expr(node.value)
        idx = self.subscript_indices(node.slice)
        if isinstance(base, Field):
            return self.load_field(base, self.field_indices(base, idx))
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
        for d, v in enumerate(idx):
            if isinstance(v, float) or (isinstance(v, Stmt) and v.dtype.is_float):
                raise FieldsimTypeError(f"field {field.ir_name!r} index must be an integer, "
                                        f"got {describe(v)}; use int(...)")
            if isinstance(v, MatVal) or not (isinstance(v, (Stmt, numbers.Integral))):
                raise FieldsimTypeError(f"bad index for field {field.ir_name!r}: {describe(v)}")
            # i32 unless the index may not fit (an i64 value, a big constant, a dimension of
            # 2^31 or more): truncating would reach the wrong element, or 2 GiB before the data.
            wide = (field.shape[d] > (1 << 31) - 1
                    or (isinstance(v, Stmt) and v.dtype.bits == 64)
                    or (not isinstance(v, Stmt) and not -(1 << 31) <= v < (1 << 31)))
            out.append(self.e.value(v, T.i64 if wide else T.i32))
        return out

    def load_field(self, field: Field, indices: list):
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
            twin = getattr(base, name)
            if twin is None:
                raise FieldsimTypeError(f"field {base.ir_name!r} has no {name}: declare it with "
                                        f"needs_{name}=True")
            return twin
        if isinstance(base, (Stmt,)):
            raise FieldsimTypeError(f"a scalar {base.dtype} value has no attribute {name!r}")
        try:
            return getattr(base, name)
        except AttributeError:
            raise FieldsimNameError(f"{describe(base)} has no attribute {name!r}") from None

    # ---- calls ------------------------------------------------------------------------------------
    def expr_Call(self, node: ast.Call):
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

    def call(self, fn, args, kwargs, node):
        from fieldsim.lang.kernel import Func, KernelObj
        from fieldsim.lang.matrix import Matrix, Vector
        if _hashable(fn) and fn in ops.KERNEL_BUILTINS:
            return ops.KERNEL_BUILTINS[fn](self, node, args, kwargs)
        if isinstance(fn, Func):
            return self.inline_func(fn, args, kwargs, node)
        if isinstance(fn, BoundMethod):
            return matrix_ops.METHODS[fn.name](self.e, fn.value, *args, **kwargs)
        if fn is Vector or fn is Matrix:
            return ops._matval_ctor(self, node, args, kwargs, 1 if fn is Vector else 2)
        if isinstance(fn, T.MatrixType):
            return self.matrix_type_ctor(fn, args)
        if isinstance(fn, T.DataType):
            return self.e.cast(args[0], fn)
        if isinstance(fn, KernelObj):
            raise FieldsimSyntaxError("a kernel cannot call another kernel; make it an @fs.func")
        handler = _PY_BUILTINS.get(fn) if _hashable(fn) else None
        if handler is not None:
            return handler(self, args, kwargs)
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
        if any(isinstance(v, (Stmt, MatVal)) for v in list(args) + list(kwargs.values())):
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


def _components(field):
    return range(field.n * (field.m or 1)) if field.ndim_el else range(1)


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


_PY_BUILTINS = {int: _int_cast, float: _float_cast, len: _len, min: _py_minmax("min"),
                max: _py_minmax("max"), abs: _py_abs, print: lambda fe, a, k: None,
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
