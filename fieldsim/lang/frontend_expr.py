"""Expression half of the frontend (mixed into `Frontend`): names, operators, subscripts,
attributes and calls, evaluated to frontend values (constants, `Stmt`, `MatVal`, Python objects).
"""
from __future__ import annotations

import ast
import builtins
import inspect
import numbers
import operator
import types

import numpy as np

from fieldsim.errors import (
    ArgumentCountError,
    FieldsimError,
    FieldsimNameError,
    FieldsimSyntaxError,
    FieldsimTypeError,
    IndexCountError,
    RuntimeValueError,
)
from fieldsim.ir.ir import Op, Stmt
from fieldsim.ir.opdefs import PURE
from fieldsim.lang import (
    dynamic_methods,
    extra_ops,
    formatting,
    matrix_ops,
    ops,
    runtime,
    struct,
    syntax_warnings,
)
from fieldsim.lang import types as T
from fieldsim.lang.expr import MatVal, describe, is_boolean, is_number, unbool
from fieldsim.lang.field import ComponentField, Field, placed_twin
from fieldsim.lang.frontend_refs import (
    FieldRef,
    LocalRef,
    StaticRef,
    array_slots,
    binding_for,
    check_index_count,
    component_indices,
    to_matval,
)
from fieldsim.lang.kernel_objects import KernelObject
from fieldsim.lang.matrix import Matrix as PyMatrix
from fieldsim.lang.triplets import TripletBuffer, TripletRef

BINOP_AST = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
              ast.Mod: "%", ast.Pow: "**", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^",
              ast.LShift: "<<", ast.RShift: ">>", ast.MatMult: "@"}
_CMP_AST = {ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=", ast.Eq: "==", ast.NotEq: "!=",
            ast.Is: "==", ast.IsNot: "!="}


def _check_identity(op_node, left, right) -> None:
    """`is` between Python objects (`ti.static(f is g)`, a template argument `is None`) is
    Python's; on a kernel value it has no meaning (Taichi 1.7.4 refuses `is` in kernels
    altogether), and reading it as `==` would hide the mistake."""
    if not isinstance(op_node, (ast.Is, ast.IsNot)):
        return
    if any(isinstance(v, Stmt) or _has_stmt(v) for v in (left, right)):
        word = "is" if isinstance(op_node, ast.Is) else "is not"
        raise FieldsimSyntaxError(
            f'Operator "{word}" in Taichi scope is not supported for a kernel value: compare '
            "values with == / !=; `is` stays for Python objects (ti.static(a is None))")


class BoundMethod:
    def __init__(self, value: MatVal, name: str):
        self.value, self.name = value, name


class ExprMixin:
    def kernel_value(self, v):
        """A Python-scope `fs.Vector`/`fs.Matrix` met in a kernel is a constant vector/matrix."""
        return self.captured(v)

    # ---- names ----------------------------------------------------------------------------------
    def expr_Name(self, node: ast.Name):
        ref = self.frame.lookup(node.id)
        if ref is None:
            raise FieldsimNameError(f"name {node.id!r} is not defined")
        return self.captured(ref.load(self))  # (a struct local loads as itself: members lazily)

    def captured(self, v):
        """A Python-scope `fs.Vector`/`fs.Matrix` (a global, closure or attribute) used in a
        kernel: a constant vector/matrix value. As in Taichi 1.7.4 (which rebuilds it from its
        Python values), a typed one holds default_fp constants if its dtype is real and
        default_ip ones if integral, whatever its own width (an f64 vector under the default f32
        is f32 in a kernel); an untyped one holds its Python values."""
        if not isinstance(v, PyMatrix):  # most captured names are scalars, fields, modules
            return v
        arr = v.to_numpy()
        dt = v.dtype if isinstance(v.dtype, T.DataType) else None
        vals = [x.item() for x in arr.reshape(-1)]
        if dt is not None and dt.bits != 1:
            dt = self.e.fp if dt.is_float else self.e.ip
            vals = [self.b.const(float(self.e.fp.np.type(x)) if dt.is_float else int(x), dt)
                    for x in vals]
        if arr.ndim == 1:
            return MatVal.vector(vals)
        return MatVal(vals, arr.shape[0], arr.shape[1], 2)

    def expr_Constant(self, node: ast.Constant):
        if isinstance(node.value, (bool, int, float, str)) or node.value in (None, Ellipsis):
            return node.value  # (`...` as a statement: a placeholder body, as in Python)
        raise FieldsimSyntaxError(f"unsupported constant {node.value!r}")

    def expr_Dict(self, node):
        if any(k is None for k in node.keys):
            raise FieldsimSyntaxError("dict unpacking (**) is not supported in a kernel")
        keys = [self._dict_key(k) for k in node.keys]
        return {k: self.expr(v) for k, v in zip(keys, node.values)}

    def _dict_key(self, node):
        """A compile-time key, or a scalar kernel value: as Taichi's Expr keys, each such value
        is its own key, for `.values()`/`.items()` (`sum({x[j]: x[j] + j for j in ...}.values())`);
        looking one up by a runtime value is refused (`constant_item`)."""
        key = self.expr(node)
        if isinstance(key, MatVal) or not _hashable(key):
            raise FieldsimSyntaxError("a dict in a kernel needs compile-time or scalar keys "
                                      "(e.g. fs.Struct({'a': x}), {0: x})")
        return key

    def expr_JoinedStr(self, node):
        return formatting.joined_str(self, node)

    def expr_Tuple(self, node):
        return tuple(self.expr(e) for e in node.elts)

    def expr_List(self, node):
        return [self.expr(e) for e in node.elts]

    # ---- operators --------------------------------------------------------------------------------
    def expr_BinOp(self, node: ast.BinOp):
        if _reads_attribute(node):
            return self.captured(self._binop_value(node))
        op = BINOP_AST.get(type(node.op))
        if op is None:
            raise FieldsimSyntaxError(f"unsupported operator {type(node.op).__name__}")
        return self.apply_binop(op, self.expr(node.left), self.expr(node.right))

    def _binop_value(self, node: ast.BinOp):
        """`a op b`. As in Taichi, a Python-scope vector reached through an attribute
        (`self.g + self.wind`, `cfg.g * cfg.dt`) combines with Python values in Python, in double
        precision, and becomes a kernel constant only where it meets a kernel value (Taichi makes
        a kernel constant of a global's name only); the result may be such a vector still."""
        op = BINOP_AST.get(type(node.op))
        if op is None:
            raise FieldsimSyntaxError(f"unsupported operator {type(node.op).__name__}")
        a, b = self._binop_operand(node.left), self._binop_operand(node.right)
        if isinstance(a, PyMatrix) or isinstance(b, PyMatrix):
            if op != "@" and not isinstance(a, (Stmt, MatVal)) and not isinstance(b, (Stmt, MatVal)):
                return _py_binop(op, a, b)
            a, b = self.captured(a), self.captured(b)  # Taichi's `@` makes kernel values
        return self.apply_binop(op, a, b)

    def _binop_operand(self, node):
        if isinstance(node, ast.BinOp):
            return self._binop_value(node)
        if isinstance(node, ast.Attribute):
            return self._attribute(node)
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
            v = self._binop_operand(node.operand)
            if isinstance(v, PyMatrix):
                return -v
            return self.expr_UnaryOp(node, v)
        return self.expr(node)

    def apply_binop(self, op: str, a, b):
        """`a op b` on frontend values (what `a op b` in kernel source means)."""
        a, b = coerce_pair(a, b)
        if op == "@":
            return self.e.matmul(a, b)
        if op == "%" and isinstance(a, str) and _has_kernel_value(b):
            return formatting.percent_format(self, a, b)
        if not _is_value(a) or not _is_value(b):
            if not isinstance(a, (Stmt, MatVal)) and not isinstance(b, (Stmt, MatVal)):
                try:
                    return _py_binop(op, a, b)
                except TypeError:
                    if not isinstance(a, struct.StructValue) and not isinstance(b, struct.StructValue):
                        raise  # Python's own words name both plain Python types well enough
            raise FieldsimTypeError(f"unsupported operand type(s) for {op}: {describe(a)} and "
                                    f"{describe(b)}")
        return self.e.binop(op, a, b)

    def expr_UnaryOp(self, node: ast.UnaryOp, operand=None):
        v = self.expr(node.operand) if operand is None else self.captured(operand)
        if isinstance(node.op, ast.UAdd):
            return v
        if not isinstance(v, (Stmt, MatVal)):
            return {ast.USub: lambda x: -x, ast.Not: lambda x: not x,
                    ast.Invert: lambda x: ~x}[type(node.op)](v)
        op = {ast.USub: Op.NEG, ast.Not: Op.NOT, ast.Invert: Op.BIT_NOT}[type(node.op)]
        if op == Op.NOT and isinstance(v, MatVal):  # Taichi: element-wise logical not
            return v.map(lambda x: self.e.unop(Op.NOT, self.e.truthy(x)) if isinstance(x, Stmt)
                         else int(not x))
        if op == Op.NOT:
            return self.e.as_bool(self.e.unop(Op.NOT, self.e.truthy(v)))
        return self.e.unop(op, v)

    def expr_BoolOp(self, node: ast.BoolOp):
        """`a and b` / `a or b` take Python's values (`5 or 2` is 5, `5 and 2` is 2), as in
        Taichi; operands with effects all run (Taichi's default `short_circuit_operators=False`),
        operands that only load run where needed (`bool_operand`). With a vector operand they
        are element-wise 0/1 (`p < 0 and v < 0`), as in Taichi."""
        is_and = isinstance(node.op, ast.And)
        vals = [self.expr(node.values[0])]
        for sub in node.values[1:]:
            vals.append(self.bool_operand(vals, sub, is_and))
        return self.combine_bool(vals, is_and)

    def combine_bool(self, vals, is_and: bool):
        """`and`/`or` of operand values already evaluated (also `ti.lang.ops.logical_and`)."""
        if any(isinstance(v, MatVal) for v in vals):
            return self.elementwise_bool_op("&" if is_and else "|", vals)
        acc = vals[0]
        for nxt in vals[1:]:
            if not isinstance(acc, Stmt) and not isinstance(nxt, Stmt):
                acc = (acc and nxt) if is_and else (acc or nxt)
            elif is_boolean(acc) and is_boolean(nxt):  # 0/1 values: the same as & and |
                acc = self.e.as_bool(self.e.binop("&" if is_and else "|", self.e.value(unbool(acc)),
                                                  self.e.value(unbool(nxt))))
            else:
                c = self.e.truthy(acc)
                acc = self.e.select(c, nxt, acc) if is_and else self.e.select(c, acc, nxt)
        return acc

    def bool_operand(self, before, sub, is_and: bool):
        """The next operand of `and`/`or`. One that only loads and computes
        (`i == 0 or p[i - 1] > 0`) is evaluated where the operands before it do not decide the
        result, as Taichi evaluates such a lazily built operand: no load outside the field, no
        bounds error with `debug=True`, and a Tape's index check sees the guard. Operands with
        effects (calls, atomics) always run, as in Taichi."""
        if not _may_touch_memory(sub) or not all(isinstance(v, Stmt) or is_number(v) for v in before):
            return self.expr(sub)
        block = self.b.block
        mark = len(block)
        value = self.expr(sub)
        lazy = block[mark:]
        if not isinstance(value, Stmt) or not _loads_only(lazy):
            return value
        del block[mark:]
        needed = None
        for v in before:
            t = self.e.truthy(v)
            t = t if is_and else (int(not t) if isinstance(t, int) else self.e.unop(Op.NOT, t))
            needed = t if needed is None else self.e.binop("&", needed, t)
        if isinstance(needed, int):  # decided at compile time: Python's and/or
            if not needed:  # `False and x[i - 1]`: the result is the operand before, never loaded
                return 0
            block.extend(lazy)
            return value
        var = Stmt(Op.ALLOCA, value.dtype, loc=self.b.loc)
        block.append(var)
        guard = self.b.if_(self.e.value(needed))
        guard.blocks[0].extend(lazy)
        with self.b.into(guard.blocks[0]):
            self.b.local_store(var, value)
        return self.b.local_load(var)

    def elementwise_bool_op(self, op: str, vals):
        acc = None
        for v in vals:
            t = v.map(self.truth_value) if isinstance(v, MatVal) else self.truth_value(v)
            acc = t if acc is None else self.e.binop(op, acc, t)
        return acc

    def truth_value(self, v):
        """A scalar as a 0/1 kernel value."""
        return self.e.value(self.e.truthy(v))

    def expr_Compare(self, node: ast.Compare):
        left = self.expr(node.left)
        result = None
        for op_node, right_node in zip(node.ops, node.comparators):
            right = self.expr(right_node)
            if isinstance(op_node, (ast.In, ast.NotIn)):
                r = _membership(op_node, left, right)
                result = r if result is None else self.e.binop("&", result, r)
                left = right
                continue
            _check_identity(op_node, left, right)
            left, right = coerce_pair(left, right)
            op = _CMP_AST.get(type(op_node))
            if op is None:
                raise FieldsimSyntaxError(f"unsupported comparison {type(op_node).__name__}")
            if isinstance(left, MatVal) or isinstance(right, MatVal):
                r = self.e.elementwise(op, _as_matval(left, right), _as_matval(right, left))
                r = r.map(self.e.as_bool)  # one u1 per entry, as Taichi 1.7.4: `(v > 0).sum()` wraps
            elif not _is_value(left) or not _is_value(right):
                r = int(_py_binop(op, left, right))
            else:
                r = self.e.as_bool(self.e.compare(op, left, right))
            result = r if result is None else self.e.binop("&", result, r)
            left = right
        return result

    def expr_NamedExpr(self, node: ast.NamedExpr):
        """`(a := value)`: assigns as `a = value` does, and is that value."""
        value = self.expr(node.value)
        self.assign_name(node.target.id, value, node)
        return value

    def expr_IfExp(self, node: ast.IfExp):
        test = self.expr(node.test)
        if isinstance(test, MatVal):  # Taichi >= 1.5 refuses this too
            raise FieldsimTypeError("`a if cond else b` with a vector/matrix condition is not an "
                                    "element-wise choice; use ti.select(cond, a, b)")
        c = self.e.truthy(test)
        if isinstance(c, int):
            return self.expr(node.body if c else node.orelse)
        syntax_warnings.check_plain_branch(self, "a if cond else b", node)
        if _may_touch_memory(node.body) or _may_touch_memory(node.orelse):
            return self.guarded_ifexp(c, node)
        return self.e.select(c, self.expr(node.body), self.expr(node.orelse))

    def guarded_ifexp(self, c, node: ast.IfExp):
        """`a if c else b` whose sides load or call. Sides that only load run where taken (a
        guard such as `p[i] if 0 <= i < n else 0.0` must keep the load, and its adjoint, in
        bounds); if a side has effects (a func's stores, an atomic, a real_func call), both sides
        run and the value is selected, as Taichi 1.7.4 lowers every runtime `a if c else b`."""
        block = self.b.block
        mark = len(block)
        self.depth += 1
        try:
            a = self.expr(node.body)
            mid = len(block)
            b = self.expr(node.orelse)
        finally:
            self.depth -= 1
        side_a, side_b = block[mark:mid], block[mid:]
        if not (_lazy_ok(side_a, set(), []) and _lazy_ok(side_b, set(), [])):
            return self.e.select(c, a, b)
        del block[mark:]
        if_stmt = self.b.if_(self.e.value(c))
        if_stmt.blocks[0].extend(side_a)
        if_stmt.blocks[1].extend(side_b)
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
            dt = T.promote(self.e.branch_dtype(x), self.e.branch_dtype(y))
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
    def field_element(self, node):
        """`x[i]` with x a vector/matrix field (x a plain name or attribute): its FieldRef, so
        that `x[i][j, k]` and `x[i].y` load one component, not the whole element (the access
        checker then sees exactly what is read). None for anything else."""
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, (ast.Name, ast.Attribute))):
            return None
        with self.b.at(self.loc(node)):
            base = self.expr(node.value)
            if not isinstance(base, Field) or not base.ndim_el:
                return None
            return FieldRef(base, self.field_indices(base, self.subscript_indices(node.slice)), None)

    def expr_Subscript(self, node: ast.Subscript):
        elem = self.field_element(node.value)
        if elem is not None:
            idx = self.subscript_indices(node.slice)
            if any(isinstance(i, slice) for i in idx):
                return self.matval_slice(elem.load(self), idx)
            return elem.component(self, idx).load(self)
        item = self.local_array_item(node)
        if item is not None:
            return item
        base = self.expr(node.value)
        idx = self.subscript_indices(node.slice)
        if isinstance(base, Field):
            return self.load_field(base, self.field_indices(base, idx))
        if isinstance(base, struct.StructField):  # an element: members load when read
            return struct.StructFieldRef(base, self.struct_indices(base, idx))
        if isinstance(base, MatVal):
            return self.matval_get(base, idx)
        if isinstance(base, KernelObject):
            return base.kernel_item(self, idx).load(self)
        if isinstance(base, TripletBuffer):
            raise TripletRef(base, idx).only_accumulate()
        return self.constant_item(base, idx)

    def constant_item(self, base, idx):
        """An item of a compile-time Python container (tuple, list, dict, range, numpy array),
        or of a user's object through its `__getitem__` (run on kernel values, as Taichi does)."""
        key = idx[0] if len(idx) == 1 else tuple(idx)
        runtime_key = any(isinstance(i, (Stmt, MatVal)) for i in idx)
        if isinstance(base, (tuple, list, dict, range, np.ndarray)):
            if runtime_key:
                raise FieldsimTypeError(constant_index_message(base))
            item = base[key]
            # a numpy array is a compile-time constant, as in Taichi: its scalars are numbers
            return item.item() if isinstance(item, np.generic) else item
        if not _user_indexable(base):
            raise FieldsimTypeError(f"cannot index {describe(base)}")
        if not runtime_key:
            return base[key]
        if not isinstance(type(base).__getitem__, types.FunctionType):  # C code: no source to inline
            raise FieldsimTypeError(constant_index_message(base))
        return self.inline_func(_plain_func(type(base).__getitem__), [base, key], {}, None)

    def local_array_item(self, node: ast.Subscript):
        """`v[i]` of a local vector/matrix variable that a runtime index reaches as a stack
        array (`frontend_refs.array_slots`): one load of the entry (the index evaluated before
        the entry is read, as Python does), not a load of every entry. None for anything
        else."""
        if not isinstance(node.value, ast.Name):
            return None
        ref = self.frame.lookup(node.value.id)
        if not isinstance(ref, LocalRef) or ref.mat is None or array_slots(ref.mat) is None:
            return None
        idx = self.subscript_indices(node.slice)
        if any(isinstance(i, slice) for i in idx):
            return self.matval_slice(ref.load(self), idx)
        return ref.component(self, idx).load(self)

    def subscript_indices(self, sl) -> list:
        if isinstance(sl, ast.Tuple):
            vals = [self.expr(e) for e in sl.elts]
        else:
            vals = [self.expr(sl)]
        out = []
        # a vector index `x[I]`, a tuple `idx = (i, j); x[idx]` or a list (`f([i, j])` into a
        # func's `x[I]`, as GeoTaichi's level sets index) expands, as in Taichi
        for v in vals:
            out.extend(v.entries if isinstance(v, MatVal) else list(v) if isinstance(v, (tuple, list))
                       else [v])
        return out

    def field_indices(self, field: Field, idx: list) -> list:
        if field.shape is None:
            raise FieldsimTypeError(f"field {field.ir_name!r} is used before it has a shape "
                                    "(place it with fs.root.dense(...).place(...))")
        if idx == [None]:
            idx = []
        what = f"{_holder_kind(field)} {field.ir_name!r}"
        if len(idx) != len(field.shape):
            raise IndexCountError(
                f"{what} has {len(field.shape)} dimension(s) but is indexed with "
                f"{len(idx)} index(es)" + ("; index a 0-D field with x[None]" if not field.shape else ""))
        out = []
        for d, v in enumerate(idx):
            if isinstance(v, float) or (isinstance(v, Stmt) and v.dtype.is_float):
                raise FieldsimTypeError(f"{what} index must be an integer, "
                                        f"got {describe(v)}; use int(...)")
            if isinstance(v, MatVal) or not (isinstance(v, (Stmt, numbers.Integral))):
                raise FieldsimTypeError(f"bad index for {what}: {describe(v)}")
            # i32 unless the index may not fit (an i64 value, a big constant, a dimension of
            # 2^31 or more): truncating would reach the wrong element, or 2 GiB before the data.
            extent = field.shape[d]  # (an ndarray argument's extent is a runtime value)
            wide = ((isinstance(extent, int) and extent > (1 << 31) - 1)
                    or (isinstance(v, Stmt) and v.dtype.bits == 64)
                    or (not isinstance(v, Stmt) and not -(1 << 31) <= v < (1 << 31)))
            out.append(self.e.value(v, T.i64 if wide else T.i32))
        if field.offset is not None:  # storage index = user index - offset
            out = [v if o == 0 else self._storage_index(v, o) for v, o in zip(out, field.offset)]
        return out

    def _storage_index(self, v, offset):
        """`v - offset`; the very value a sparse struct-for's cell was tested at, where `v` is
        that loop's index (so its stores need not activate the cell: `known_cell`)."""
        known = self.storage_of.get(id(v))
        if known is not None and known[0] == offset:
            return known[1]
        return self.e.value(self.e.binop("-", v, offset), v.dtype)

    def struct_indices(self, sfield, idx: list) -> list:
        leaves = sfield.leaves()
        if not leaves:
            raise FieldsimTypeError(f"struct field {sfield.ir_name!r} has no members")
        shape = leaves[0].shape
        count = 0 if idx == [None] else len(idx)
        if shape is not None and count != len(shape):  # said of the struct field, not its member
            raise IndexCountError(f"struct field {sfield.ir_name!r} has {len(shape)} dimension(s) "
                                  f"but is indexed with {count} index(es)")
        return self.field_indices(leaves[0], idx)

    def load_field(self, field: Field, indices: list):
        if isinstance(field, ComponentField):  # a component view: load from its owner
            return self.b.load(field.owner, indices + component_indices(self, field.owner, field.comp))
        if field.ndim_el == 0:
            return self.b.load(field, indices)
        comps = [self.b.load(field, indices + component_indices(self, field, c))
                 for c in range(len(_components(field)))]
        return MatVal(comps, field.n, field.m or 1, field.ndim_el)

    def expr_Slice(self, node: ast.Slice):
        parts = [self.expr(p) if p is not None else None for p in (node.lower, node.upper, node.step)]
        if any(isinstance(p, (Stmt, MatVal)) for p in parts):
            raise FieldsimSyntaxError("a slice of a vector/matrix needs compile-time bounds (as Taichi "
                                      "says: Taichi does not support variables in slice now)")
        return slice(*parts)

    def matval_slice(self, m: MatVal, idx: list):
        """`v[a:b]`, `m[i, :]`, `m[:, j]`, `m[a:b, c:d]` with compile-time bounds (as Taichi); the
        index beside a slice may be a runtime value (`m[i, :]` in a loop over i)."""
        check_index_count(m, idx)
        rows = range(m.n)[idx[0]] if isinstance(idx[0], slice) else [idx[0]]
        cols = (range(m.m)[idx[1]] if isinstance(idx[1], slice) else [idx[1]]) if m.ndim == 2 else [0]
        if any(isinstance(i, Stmt) for i in idx):
            return MatVal.vector([self.matval_get(m, [r, c] if m.ndim == 2 else [r])
                                  for r in rows for c in cols])
        for r in rows:
            for c in cols:
                if not (0 <= r < m.n and 0 <= c < m.m):
                    raise FieldsimSyntaxError(f"index ({r}, {c}) is out of range for {describe(m)}")
        if m.ndim == 1 or not isinstance(idx[0], slice) or not isinstance(idx[1], slice):
            return MatVal.vector([m.at(r, c) for r in rows for c in cols])
        return MatVal([m.at(r, c) for r in rows for c in cols], len(rows), len(cols), 2)

    def matval_get(self, m: MatVal, idx: list):
        if any(isinstance(i, slice) for i in idx):
            return self.matval_slice(m, idx)
        check_index_count(m, idx)
        r, c = idx[0], (idx[1] if len(idx) == 2 else 0)
        if not isinstance(r, Stmt) and not isinstance(c, Stmt):
            if not (0 <= r < m.n and 0 <= c < m.m):
                raise FieldsimSyntaxError(f"index ({r}, {c}) is out of range for {describe(m)}")
            return m.at(r, c)
        self.check_dynamic_index(m, r, c)
        flat = self.e.binop("+", self.e.binop("*", r, m.m), c)
        acc = m.entries[-1]
        for k in range(len(m.entries) - 2, -1, -1):
            acc = self.e.select(self.e.compare("==", flat, k), m.entries[k], acc)
        return acc

    def check_dynamic_index(self, m: MatVal, r, c):
        """With debug=True, a runtime index into a local vector/matrix is bounds-checked."""
        if not self.rt.debug:
            return
        ok = None
        for v, size in ((r, m.n), (c, m.m)):
            if not isinstance(v, Stmt):
                continue
            inside = self.e.binop("&", self.e.compare(">=", v, 0), self.e.compare("<", v, size))
            ok = inside if ok is None else self.e.binop("&", ok, inside)
        if ok is not None:
            self.b.emit(Op.ASSERT, None, (ok,),
                        attr=f"Out of bound access to {describe(m)}")

    def expr_ListComp(self, node: ast.ListComp):
        """A list comprehension over compile-time iterables (`[x * 2 for x in range(3)]`),
        unrolled; `fs.Vector`/`fs.Matrix` turn the list into a vector/matrix."""
        out = []
        self._unroll_comprehension(node.generators, 0, lambda: out.append(self.expr(node.elt)))
        return out

    def expr_DictComp(self, node: ast.DictComp):
        """`{k: v for k in range(3)}` over compile-time iterables, unrolled (keys compile-time)."""
        out = {}

        def leaf():
            out[self._dict_key(node.key)] = self.expr(node.value)
        self._unroll_comprehension(node.generators, 0, leaf)
        return out

    def static_expr(self, node):
        """`node`'s value built as in fs.static(...): its Python calls do not warn."""
        self.static_args += 1
        try:
            return self.expr(node)
        finally:
            self.static_args -= 1

    def _unroll_comprehension(self, generators, k, leaf):
        if k == len(generators):
            leaf()
            return
        g = generators[k]
        it = self.static_expr(g.iter)  # iterables and conditions are compile-time, as Taichi's
        if isinstance(it, MatVal):
            it = it.entries if it.ndim == 1 else [MatVal.vector([it.at(r, c) for c in range(it.m)])
                                                  for r in range(it.n)]
        if isinstance(it, Stmt) or not hasattr(it, "__iter__") or \
                type(it).__name__ == "RangeSpec":
            raise FieldsimSyntaxError("a comprehension in a kernel must iterate over a "
                                      "compile-time range or list (e.g. range(3))")
        for v in it:
            self.frame.scopes.append({})
            try:
                self.bind_comprehension_target(g.target, v)
                conds = [self.e.truthy(self.static_expr(c)) for c in g.ifs]
                if any(not isinstance(c, int) for c in conds):
                    raise FieldsimSyntaxError("a comprehension condition must be a "
                                              "compile-time constant")
                if all(conds):
                    self._unroll_comprehension(generators, k + 1, leaf)
            finally:
                self.frame.scopes.pop()

    def bind_comprehension_target(self, target, v):
        if isinstance(target, ast.Name):
            self.frame.bind(target.id, binding_for(v))
            return
        if isinstance(target, (ast.Tuple, ast.List)):
            vals = v.entries if isinstance(v, MatVal) else list(v)
            if len(vals) != len(target.elts):
                raise FieldsimTypeError(f"cannot unpack {describe(v)} into {len(target.elts)} names")
            for t, x in zip(target.elts, vals):
                self.bind_comprehension_target(t, x)
            return
        raise FieldsimSyntaxError("unsupported comprehension target")

    def expr_Attribute(self, node: ast.Attribute):
        return self.captured(self._attribute(node))

    def _attribute(self, node: ast.Attribute):
        """`base.name`; a Python-scope vector stays one (`captured` makes it a constant)."""
        loaded = self._field_element_swizzle(node)
        if loaded is not None:
            return loaded
        if node.attr in dynamic_methods.METHODS:
            bound = dynamic_methods.bind(self, node)
            if bound is not None:
                return bound
        base = self.expr(node.value)
        name = mangled(self.frame.fn, node.attr)
        if isinstance(base, (struct.StructValue, KernelObject)):
            return self._object_attribute(base, name)
        if isinstance(base, MatVal):
            return self._matval_attribute(base, name)
        if isinstance(base, Field) and name in ("grad", "dual"):
            return placed_twin(base, name)
        if isinstance(base, (Stmt,)):
            raise FieldsimTypeError(f"a scalar {base.dtype} value has no attribute {name!r}"
                                    f"{_atomic_method_hint(name, node)}")
        try:
            return getattr(base, name)
        except AttributeError as err:
            if isinstance(err, FieldsimError):  # e.g. a Taichi name fieldsim lacks: its reason,
                raise FieldsimNameError(err.message) from None  # located at this node
            raise FieldsimNameError(f"{describe(base)} has no attribute {name!r}") from None

    def _object_attribute(self, base, name):
        """A struct's member, or what a kernel object (a mesh element, ...) says `base.name` is."""
        if isinstance(base, KernelObject):
            return base.kernel_attribute(self, name).load(self)
        return struct.attribute(self, base, name)

    def _field_element_swizzle(self, node: ast.Attribute):
        """`x[i].y` of a vector field: loads that one component only (None if `node` is not
        a one-letter swizzle of a vector-field element)."""
        sw = matrix_ops.swizzle_indices(node.attr)
        if sw is None or len(sw) != 1:
            return None
        elem = self.field_element(node.value)
        if elem is None or elem.field.ndim_el != 1:
            return None
        matrix_ops.check_swizzle(node.attr, sw, elem.field.n,
                                 f"the {elem.field.n}-vectors of field {elem.field.ir_name!r}")
        return elem.component(self, [sw[0]]).load(self)

    def _matval_attribute(self, base: MatVal, name: str):
        """A vector's swizzle, a matrix's n/m/T, or one of its methods (bound, called later)."""
        sw = matrix_ops.swizzle_indices(name) if base.ndim == 1 else None
        if sw is not None:
            matrix_ops.check_swizzle(name, sw, base.n, describe(base))
            if len(sw) == 1:
                return base.entries[sw[0]]
            return MatVal.vector([base.entries[k] for k in sw])
        if name in ("n", "m"):
            return getattr(base, name)
        if name == "T":
            return matrix_ops.transpose(self.e, base)
        if name == "fill":
            raise FieldsimTypeError("fill() needs a variable or field element as its "
                                    "receiver (e.g. v.fill(0) or x[i].fill(0))")
        if name in matrix_ops.METHODS:
            return BoundMethod(base, name)
        raise FieldsimTypeError(f"{describe(base)} has no attribute or method {name!r}")

    # ---- calls ------------------------------------------------------------------------------------
    def expr_Call(self, node: ast.Call):
        filled = self.fill_in_place(node)
        if filled is not None:
            return None
        fn = self.expr(node.func)
        if fn in ops.LVALUE_BUILTINS:
            return ops.KERNEL_BUILTINS[fn](self, node, self._atomic_args(fn, node), {})
        refs = self.by_reference_elements(fn, node)
        # a Python call in fs.static(...) or fs.static_assert(...) is meant: no warning (Taichi
        # 1.7.4 still warns in fs.static_print's arguments)
        value = self.static_expr if fn is ops.static or fn is extra_ops.static_assert else self.expr
        args = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                args.extend(_starred_items(value(a.value)))
            else:
                args.append(refs[id(a)].load(self) if id(a) in refs else value(a))
        kwargs = {kw.arg: refs[id(kw.value)].load(self) if id(kw.value) in refs else value(kw.value)
                  for kw in node.keywords}
        if not refs:
            return self.call(fn, args, kwargs, node)
        self.call_arg_refs.update(refs)
        try:
            return self.call(fn, args, kwargs, node)
        finally:
            for k in refs:
                self.call_arg_refs.pop(k, None)

    def _atomic_args(self, fn, node) -> list:
        """An atomic builtin's target reference and value, in Taichi's order (as for `a[i] += v`
        in `stmt_AugAssign`): funcs the target calls run before the value."""
        kind = ops.LVALUE_BUILTINS[fn]
        if self._calls_a_func(node.args[0]):
            target = self.atomic_target(node.args[0], kind)
            return [target] + [self.expr(a) for a in node.args[1:]]
        rest = [self.expr(a) for a in node.args[1:]]
        return [self.atomic_target(node.args[0], kind)] + rest

    def by_reference_elements(self, fn, node) -> dict:
        """{AST node id: element} of the arguments of a plain `@fs.func` call whose parameter
        is `ti.template()`/`ti.ref` and whose element's indices call something (`f(x[g(i)])`):
        each evaluated once as the element, which the parameter then aliases (Taichi writes
        through it; a copy would drop the func's writes)."""
        # the arguments first (AST only): almost every call has none such, and returns at once
        candidates = [(k, a) for k, a in enumerate(node.args)] + [(kw.arg, kw.value) for kw in node.keywords]
        candidates = [(k, a) for k, a in candidates if isinstance(a, (ast.Subscript, ast.Attribute))
                      and any(isinstance(n, ast.Call) for n in ast.walk(a))]
        if not candidates:
            return {}
        from fieldsim.lang import func_args
        from fieldsim.lang.frontend import _parse_cached
        from fieldsim.lang.kernel import Func
        if not isinstance(fn, Func) or fn.custom_grad is not None or fn.replay is not None \
                or getattr(fn, "is_real", False) or any(isinstance(a, ast.Starred) for a in node.args):
            return {}
        fdef = _parse_cached(fn.fn).node
        params = [p.arg for p in fdef.args.args]
        ann = func_args.annotations(fn, fdef)
        refs = {}
        for k, a in candidates:
            name = params[k] if isinstance(k, int) and k < len(params) else k
            if func_args.is_by_reference(ann.get(name)):
                ref = self._field_element_ref(a, calls=True)
                if ref is not None and hasattr(ref, "load"):
                    refs[id(a)] = ref
        return refs

    def fill_in_place(self, node: ast.Call):
        """`v.fill(c)` on an assignable vector/matrix (a field element, a local, a struct
        member): every entry becomes `c`, as in Taichi. None when `node` is not such a call
        (e.g. a field's own `fill`)."""
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr == "fill" and len(node.args) == 1
                and not node.keywords):
            return None
        try:
            ref = self._lvalue(func.value)
        except FieldsimError:
            return None
        if isinstance(ref, (struct.StructFieldRef, struct.StructLocalRef)):
            # Taichi's Struct.fill: every member (FluidLab's `self.grid[f, I].fill(0)`)
            if ref.stype is not None and "fill" in ref.stype.methods:
                return None
            self._fill_struct(ref, self._fill_value(node))
            return True
        if isinstance(ref, StaticRef) or not hasattr(ref, "load"):
            return None
        current = ref.load(self)
        if not isinstance(current, MatVal):
            return None
        value = self._fill_value(node)
        ref.store(self, current.map(lambda _: value))
        return True

    def _fill_value(self, node: ast.Call):
        value = self.expr(node.args[0])
        if isinstance(value, MatVal):
            raise FieldsimTypeError(f"fill() takes a scalar, got {describe(value)}")
        return value

    def _fill_struct(self, ref, value):
        for name in ref.names():
            m = ref.member_ref(self, name)
            if isinstance(m, (struct.StructFieldRef, struct.StructLocalRef)):
                self._fill_struct(m, value)
                continue
            current = m.load(self)
            m.store(self, current.map(lambda _: value) if isinstance(current, MatVal) else value)

    def call(self, fn, args, kwargs, node):
        """Calls `fn` in a kernel: kernel builtins, funcs, fieldsim's constructors and casts,
        then Python callables (builtins, str.format, Matrix classmethods, plain Python)."""
        if fn is builtins.print:  # whatever print is now (Ray, for one, replaces it at ray.init)
            fn = _PRINT
        syntax_warnings.check_call(self, fn, args, node)
        if _hashable(fn) and fn in ops.KERNEL_BUILTINS:
            try:
                return ops.KERNEL_BUILTINS[fn](self, node, args, kwargs)
            except (IndexError, TypeError):
                _check_builtin_arity(fn, args, kwargs)  # a missing argument: say so
                raise
        if isinstance(fn, dynamic_methods.DynamicMethod):
            return fn(*args, **kwargs)
        for handler in (self._call_func, self._call_fieldsim_callable):
            out = handler(fn, args, kwargs, node)
            if out is not _UNHANDLED:
                return out
        return self._call_python_callable(fn, args, kwargs, node)

    def _call_func(self, fn, args, kwargs, node):
        """An @fs.func (plain, a method with `self` first, or a classmethod): inlined."""
        from fieldsim.lang.kernel import BoundFunc, Func
        if isinstance(fn, Func):
            return self.inline_func(fn, args, kwargs, node)
        if isinstance(fn, BoundFunc):  # a func method: `self` comes first
            return self.inline_func(fn.func, [fn.obj] + list(args), kwargs, node, method=True)
        if isinstance(getattr(fn, "__func__", None), Func):  # a classmethod func (Python 3.13+)
            return self.inline_func(fn.__func__, [fn.__self__] + list(args), kwargs, node,
                                    method=True)
        return _UNHANDLED

    def _call_fieldsim_callable(self, fn, args, kwargs, node):
        """A matrix method, a Vector/Matrix/struct constructor, a dtype cast; a kernel is an
        error."""
        from fieldsim.lang.kernel import KernelObj
        from fieldsim.lang.matrix import Matrix, Vector
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
        return _UNHANDLED

    def _call_python_callable(self, fn, args, kwargs, node):
        if isinstance(getattr(fn, "__self__", None), Field) and fn.__name__ == "fill":
            if len(args) != 1 or kwargs:
                raise FieldsimTypeError("field.fill takes one value")
            return self.field_fill(fn.__self__, args[0])
        if fn is builtins.range:
            return _static_range([_range_bound(self, x, node) for x in args])
        handler = _PY_BUILTINS.get(fn) if _hashable(fn) else None
        if handler is not None:
            return handler(self, args, kwargs)
        if isinstance(getattr(fn, "__self__", None), str) and getattr(fn, "__name__", "") == "format":
            out = self._str_format(fn.__self__, args, kwargs)
            if out is not _UNHANDLED:
                return out
        special = self.matrix_classmethod(fn, args, kwargs)
        if special is not None:
            return special
        return self.call_python(fn, args, kwargs)

    def _str_format(self, fmt: str, args, kwargs):
        """`"...".format(...)` with Taichi's numbering and specs (`{:.2}` of 2 is "02"), for
        constants too; _UNHANDLED for constant arguments with a spec Taichi lacks (alignment
        and the like), which Python's own str.format then formats."""
        if _has_kernel_value((args, kwargs)):
            return formatting.format_method(self, fmt, args, kwargs)
        try:
            return formatting.format_method(self, fmt, args, kwargs)
        except formatting.UnsupportedSpec:
            return _UNHANDLED

    def matrix_classmethod(self, fn, args, kwargs=None):
        from fieldsim.lang.matrix import Matrix, Vector
        kwargs = kwargs or {}
        name = getattr(fn, "__name__", None)
        if name in matrix_ops.METHODS and args and isinstance(args[0], MatVal) and \
                (getattr(Matrix, name, None) is fn or getattr(Vector, name, None) is fn):
            # `fs.Vector.normalized(v, eps)`: a method called on the class
            return matrix_ops.METHODS[name](self.e, args[0], *args[1:], **kwargs)
        owner = getattr(fn, "__self__", None)
        if not (isinstance(owner, type) and issubclass(owner, Matrix)):
            return None
        name = fn.__name__
        if name not in ("diag", "rows", "cols", "zero", "one", "identity", "unit"):
            return None
        if name in ("rows", "cols"):
            if len(args) != 1 or not isinstance(args[0], (list, tuple)):
                raise FieldsimTypeError(f"fs.Matrix.{name} takes one list of vectors or lists")
            lines = [list(v.entries) if isinstance(v, MatVal) else _flatten_values(v) for v in args[0]]
            if any(len(r) != len(lines[0]) for r in lines):
                raise FieldsimTypeError(f"fs.Matrix.{name}: all {name} must have the same length")
            m = MatVal.rows(lines)
            return m if name == "rows" else matrix_ops.transpose(self.e, m)
        # positional or keyword (`identity(dt=ti.f32, n=2)`), named as Taichi's parameters
        return self._matrix_constant(name, _bind_arguments(fn, args, kwargs))

    def _matrix_constant(self, name, a):
        """`fs.Matrix.diag/zero/one/identity` or `fs.Vector.unit` from its bound arguments."""
        if name == "diag":
            dim, val = a["dim"], a["val"]
            zero = self.e.cast(0, self.e.dtype_of(val)) if isinstance(val, Stmt) else 0 * val
            return MatVal([val if r == c else zero for r in range(dim) for c in range(dim)],
                          dim, dim, 2)
        if name in ("zero", "one"):
            fill = 0 if name == "zero" else 1
            dt = self._constant_dtype(name, a["dt"])
            n, m = a["n"], a.get("m")
            vals = [self.b.const(fill, dt) for _ in range(n * (m or 1))]
            return MatVal(vals, n, m or 1, 1 if m is None else 2)
        if name == "identity":
            dt, n = self._constant_dtype(name, a["dt"]), a["n"]
            return MatVal([self.b.const(int(r == c), dt) for r in range(n) for c in range(n)], n, n, 2)
        n, i, dt = a["n"], a["i"], a.get("dt")  # unit
        dt = self._constant_dtype(name, int if dt is None else dt)  # Taichi's default here is int
        return MatVal.vector([self.b.const(int(k == i), dt) for k in range(n)])

    def _constant_dtype(self, name, dt):
        # `Matrix.zero(2, 2)` (the dtype left out: Taichi's is `zero(dt, n, m)`) reached the
        # constant builder as dtype 2 and failed there with an internal AttributeError
        dtype = self.e.resolve(dt)
        if not isinstance(dtype, T.DataType):
            first = "n, i, dt" if name == "unit" else "dt, n"
            raise FieldsimTypeError(f"fs.Matrix.{name}: {dt!r} is not a data type (the arguments "
                                    f"are ({first}, ...), as in Taichi)")
        return dtype

    def _zero_arg_super(self):
        """`super()` in a func defined in a class: Python's zero-argument form, from the
        method's `__class__` cell and first argument (Taichi 1.7.4 raises a RuntimeError)."""
        params = self.frame.source.node.args.args
        cls = self.frame.closure.get("__class__")
        if cls is None or not params:
            raise FieldsimSyntaxError("super() without arguments works only in a method of a "
                                      "class; write super(Class, self)")
        return builtins.super(cls, self.frame.lookup(params[0].arg).load(self))

    def matrix_type_ctor(self, mt: T.MatrixType, args):
        flat = []
        for a in args:
            flat.extend(_flatten_values(a))
        if len(flat) == 1:
            flat = flat * (mt.n * mt.m)
        if len(flat) != mt.n * mt.m:
            raise FieldsimTypeError(f"{mt!r} needs {mt.n * mt.m} values, got {len(flat)}")
        dt = self.e.resolve(mt.dtype or self.e.fp)
        return MatVal([self.e.cast(v, dt) for v in flat], mt.n, mt.m, mt.value_ndim)

    def call_python(self, fn, args, kwargs):
        if not callable(fn):
            raise FieldsimTypeError(f"{describe(fn)} is not callable")
        if fn is builtins.super and not args and not kwargs:
            return self._zero_arg_super()
        if fn is ops.ndrange and not kwargs:  # runtime bounds, e.g. an ndarray's shape
            return fn(*args)
        if _is_user_method(fn) and _holds_kernel_values(fn.__self__):  # `ray.at(0.5)`
            from fieldsim.lang.kernel import Func
            return self.inline_func(Func(fn.__func__), [fn.__self__, *args], kwargs, None)
        if any(isinstance(v, (Stmt, MatVal)) for v in list(args) + list(kwargs.values())):
            if isinstance(fn, types.FunctionType):  # as Taichi runs it on its values: inlined
                return self.inline_func(_plain_func(fn), args, kwargs, None)
            if _is_user_method(fn):  # `ray.at(t)` on an object made in the kernel: inlined too
                from fieldsim.lang.kernel import Func
                return self.inline_func(Func(fn.__func__), [fn.__self__, *args], kwargs, None)
            if _is_user_class(fn):
                return _construct_in_python(fn, args, kwargs)
            if isinstance(getattr(fn, "__self__", None), (list, dict, set)):
                # `temp = []; temp.append(m)`: a Python container of kernel values, as in Taichi
                return fn(*args, **kwargs)
            from fieldsim.lang import kernel_hints  # (errors only: kept out of the first import)
            name = getattr(fn, "__name__", repr(fn))
            raise RuntimeValueError(f"cannot call the Python function {name!r} with kernel values; "
                                    + kernel_hints.python_call_hint(fn))
        return runtime.call_from_kernel(fn, args, kwargs)


def _bind_arguments(fn, args, kwargs) -> dict:
    """The arguments of a Python-scope `Matrix` classmethod call by parameter name, defaults
    filled in (its signature is Taichi's)."""
    try:
        bound = inspect.signature(fn).bind(*args, **kwargs)
    except TypeError as exc:
        raise FieldsimTypeError(f"fs.Matrix.{fn.__name__}: {exc}") from None
    bound.apply_defaults()
    return dict(bound.arguments)


def mangled(fn, name: str) -> str:
    """`self.__x` in a method of class C reads `self._C__x`, as Python compiles it (the kernel's
    body is re-parsed, so Python's own mangling is lost)."""
    if not name.startswith("__") or name.endswith("__"):
        return name
    parts = getattr(fn, "__qualname__", "").split(".")
    owner = parts[-2] if len(parts) >= 2 else "<locals>"
    if owner == "<locals>" or not owner.lstrip("_"):
        return name
    return f"_{owner.lstrip('_')}{name}"


def _user_indexable(obj) -> bool:
    """A user's Python object with `__getitem__` (a lookup table class): indexed at compile
    time with constant keys, as Taichi does."""
    cls = type(obj)
    return hasattr(cls, "__getitem__") and not cls.__module__.startswith("fieldsim")


def _plain_func(fn):
    from fieldsim.lang.kernel import Func
    func = Func(fn)
    func.plain = True
    return func


def _is_user_method(fn) -> bool:
    return isinstance(fn, types.MethodType) and isinstance(fn.__func__, types.FunctionType) \
        and not isinstance(fn.__self__, type)


def _holds_kernel_values(obj) -> bool:
    """An object made in this kernel (`Ray(o, d)`) keeps kernel values as attributes."""
    return any(isinstance(v, (Stmt, MatVal)) for v in getattr(obj, "__dict__", {}).values())


def _is_user_class(fn) -> bool:
    return isinstance(fn, type) and not fn.__module__.split(".")[0] in ("fieldsim", "builtins", "numpy")


def _construct_in_python(cls, args, kwargs):
    """`Ray(origin, direction)` in a kernel: as in Taichi, the constructor runs in Python and
    the object keeps the kernel values it was given as attributes (its methods are inlined)."""
    try:
        return cls(*args, **kwargs)
    except TypeError as err:
        raise FieldsimTypeError(
            f"constructing {cls.__name__} in a kernel runs its __init__ in Python, which failed on "
            f"kernel values ({err}); let __init__ only store its arguments, or use @fs.dataclass"
        ) from None


def coerce_pair(a, b):
    """With a kernel value (vector, matrix or scalar) on one side, a list/tuple on the other is a
    vector/matrix, as Taichi makes one of it (`delta * (i, j)`)."""
    if isinstance(a, (MatVal, Stmt)) and isinstance(b, (list, tuple)):
        return a, to_matval(b)
    if isinstance(b, (MatVal, Stmt)) and isinstance(a, (list, tuple)):
        return to_matval(a), b
    return a, b


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


def _components(field):
    return range(field.n * (field.m or 1)) if field.ndim_el else range(1)


def _loads_only(stmts) -> bool:
    """Statements that only compute and read (fields and locals), with at least one field load;
    a nested guarded operand (its own ALLOCA, IF and stores to that ALLOCA) counts as reading."""
    loads = []
    return _lazy_ok(stmts, set(), loads) and bool(loads)


def _lazy_ok(stmts, allocas: set, loads: list) -> bool:
    for s in stmts:
        if s.op == Op.ALLOCA:
            allocas.add(id(s))
        elif s.op == Op.LOCAL_STORE:
            if id(s.args[0]) not in allocas:
                return False
        elif s.op == Op.IF:
            if not all(_lazy_ok(b, allocas, loads) for b in s.blocks):
                return False
        elif s.blocks or not (s.op in PURE or s.op == Op.LOCAL_LOAD):
            return False
        elif s.op == Op.LOAD:
            loads.append(s)
    return True


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


def _has_stmt(v) -> bool:
    return isinstance(v, MatVal) and any(isinstance(e, Stmt) for e in v.entries)


def _is_value(v) -> bool:
    return isinstance(v, (Stmt, MatVal)) or is_number(v)


def _hashable(v) -> bool:
    try:
        hash(v)
        return True
    except TypeError:
        return False




def _membership(op_node, item, container) -> int:
    """`a in b` / `a not in b` between compile-time values (Taichi allows it only there)."""
    if any(isinstance(v, (Stmt, MatVal)) for v in (item, container)):
        raise FieldsimSyntaxError("`in` works only on compile-time values (inside fs.static)")
    return int((item in container) == isinstance(op_node, ast.In))


def _reads_attribute(node) -> bool:
    """Is an operand of this chain of arithmetic an attribute (possibly a Python-scope vector
    to combine in Python: `ExprMixin._binop_value`)? Iterative: chains can be long."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, ast.Attribute):
            return True
        if isinstance(n, ast.BinOp):
            stack += (n.left, n.right)
        elif isinstance(n, ast.UnaryOp) and isinstance(n.op, ast.USub):
            stack.append(n.operand)
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
            acc = fe.e.binop(name, *coerce_pair(acc, a))  # `min(v, [n, n])` as Taichi
        return acc
    return handler


def _py_abs(fe, args, kw):
    if not isinstance(args[0], (Stmt, MatVal)):
        return builtins.abs(args[0])
    return fe.e.unop(Op.ABS, args[0])


def _py_pow(fe, args, kw):
    """Python's `pow(a, b)` in a kernel is `a ** b`, as in Taichi."""
    if len(args) != 2 or kw:
        if any(isinstance(a, (Stmt, MatVal)) for a in args):
            raise FieldsimTypeError("pow() in a kernel takes two arguments (base, exponent)")
        return builtins.pow(*args, **kw)
    return fe.apply_binop("**", args[0], args[1])


def _py_sum(fe, args, kw):
    """Python's `sum` of a list, tuple or dict view holding kernel values, which Taichi runs on
    its Exprs (`sum({x[j]: ... for j in ...}.values())`): their `+`, from `start` (0)."""
    if args and isinstance(args[0], (Stmt, MatVal)):
        raise FieldsimTypeError(f"sum() of {describe(args[0])}: it is not iterable in a kernel "
                                "(for a vector's entries use v.sum())")
    items = list(args[0]) if args else []
    acc = args[1] if len(args) > 1 else kw.get("start", 0)
    if not any(isinstance(v, (Stmt, MatVal)) for v in [*items, acc]):
        return builtins.sum(*args, **kw)
    for v in items:
        acc = fe.apply_binop("+", acc, v)
    return acc


def _py_bool(fe, args, kw):
    v = args[0] if args else False
    if isinstance(v, (Stmt, MatVal)):
        return fe.e.cast(v, T.u1)  # as Taichi's `bool(x)`
    return bool(v)


def _py_isinstance(fe, args, kw):
    # Taichi runs isinstance in Python on its Expr; a helper branching on it (`if isinstance(v,
    # ti.lang.expr.Expr): n = v.n`) decides while the kernel compiles: a constant here too
    return isinstance(*args, **kw)


def _getattr(fe, args, kw):
    if args and isinstance(args[0], struct.StructValue) and len(args) == 2:
        return struct.attribute(fe, args[0], args[1])
    return getattr(*args)


def _py_anyall(name):
    def handler(fe, args, kw):
        if len(args) == 1 and isinstance(args[0], MatVal):
            return matrix_ops.METHODS[name](fe.e, args[0])
        if any(isinstance(a, (Stmt, MatVal)) for a in args):
            raise FieldsimTypeError(f"{name}() takes a vector/matrix or a Python iterable")
        return int(getattr(builtins, name)(*args))
    return handler


_UNHANDLED = object()  # a call handler declines with this (a handled call may return None)
_PRINT = builtins.print  # as imported, before any tool replaced it
_PY_BUILTINS = {getattr: _getattr, isinstance: _py_isinstance, any: _py_anyall("any"), all: _py_anyall("all"), int: _int_cast,
                float: _float_cast, len: _len, min: _py_minmax("min"),
                max: _py_minmax("max"), abs: _py_abs, pow: _py_pow, bool: _py_bool, sum: _py_sum,
                np.absolute: _py_abs,  # numpy calls the value's __abs__: Taichi takes it
                np.square: lambda fe, a, k: fe.apply_binop("*", a[0], a[0]),  # its __mul__ too
                operator.matmul: lambda fe, a, k: fe.apply_binop("@", a[0], a[1]),
                _PRINT: formatting.emit_print}


def _range_bound(fe, a, node):
    """As Taichi: a real range bound is cast to i32 (truncated), `range(200.)` runs 200 times,
    with Taichi's warning at the user's line (a particle count kept in an f32 field, say)."""
    if isinstance(a, Stmt) and a.dtype.is_float:
        _warn_real_bound(fe, a.dtype, node)
        return fe.e.cast(a, T.i32)
    if isinstance(a, (float, np.floating)):
        _warn_real_bound(fe, fe.e.fp, node)
        return int(a)
    if isinstance(a, (tuple, list)):
        return _range_tuple_bound(fe, a, node)
    return a


def _warn_real_bound(fe, dtype, node):
    if not fe.static_args:  # fs.static(range(2.5)) is Python's own range
        syntax_warnings.warn_at(fe, f"Casting range_for boundary values from {dtype} to i32, which "
                                    f"may cause numerical issues", node, UserWarning)


def _range_tuple_bound(fe, a, node):
    """`range(x.shape)` of a 1-D field runs in Taichi (its one entry is the bound, with a
    warning); a longer tuple has no one bound, and Python's own words do not say so."""
    if len(a) == 1 and isinstance(a[0], (int, np.integer)):
        syntax_warnings.warn_at(fe, f"range() of the 1-tuple {tuple(a)!r}: its one entry is the "
                                    f"bound (write range(n[0]))", node, UserWarning)
        return a[0]
    raise FieldsimTypeError(f"range() of the tuple {tuple(a)!r}: a range bound is one integer; "
                            f"for a shape write `range(shape[0])` or `fs.ndrange(*shape)`")


def _static_range(args):
    if any(isinstance(a, (Stmt, MatVal)) for a in args):
        from fieldsim.lang.frontend import RangeSpec
        if len(args) not in (1, 2):
            raise FieldsimSyntaxError("range() with runtime bounds takes (end) or (begin, end)")
        return RangeSpec(0, args[0]) if len(args) == 1 else RangeSpec(args[0], args[1])
    for a in args:
        if getattr(a, "shape", None) == () and hasattr(a, "to_numpy"):  # Taichi refuses it too
            name = getattr(a, "ir_name", "x")
            raise FieldsimTypeError(f"range() of the 0-D field {name!r}: loop over its value, "
                                    f"`range({name}[None])`")
        if isinstance(a, Field):  # Python's own words name neither the field nor the fix
            raise FieldsimTypeError(f"range() of field {a.ir_name!r}: a bound is a number; loop "
                                    f"over the field with `for i in {a.ir_name}`, or use "
                                    f"`range({a.ir_name}.shape[0])`")
    return range(*args)


def _starred_items(value) -> list:
    """The arguments `*value` passes in a kernel call: a vector's entries, a matrix's rows (as
    Python iterates a Taichi matrix; `vec4(*v.xyz, 1)` as in Taichi), else Python's items."""
    if isinstance(value, MatVal):
        if value.ndim == 1:
            return list(value.entries)
        return [MatVal.vector(value.entries[r * value.m:(r + 1) * value.m]) for r in range(value.n)]
    return list(value)


def constant_index_message(base) -> str:
    """Why a Python container (a `fs.template()` argument, a global) cannot take a runtime
    index in a kernel, and what to do instead."""
    hint = ("; to pass a NumPy array that kernels index at run time, annotate the parameter "
            "fs.types.ndarray()" if isinstance(base, np.ndarray) else "")
    return (f"{describe(base)} is a compile-time Python value: it can only be indexed with "
            f"constants (e.g. in fs.static loops){hint}")


def _holder_kind(field) -> str:
    """What a user calls the indexed thing: an ndarray argument is no field to them."""
    return "ndarray argument" if getattr(field, "is_ndarray_slot", False) else "field"


def _check_builtin_arity(fn, args, kwargs):
    """A kernel builtin's handler failed: an ArgumentCountError if the call does not fit the
    builtin's Python signature (its handler read `args[1]` of one argument), else nothing."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a C builtin without a signature
        return
    try:
        sig.bind(*args, **kwargs)
    except TypeError as e:
        name = getattr(fn, "__name__", "function")
        raise ArgumentCountError(f"fs.{name}(): {e}") from None


def _atomic_method_hint(name: str, node: ast.Attribute) -> str:
    """Pre-1.0 Taichi had atomic methods on values (`x[i].atomic_add(1)`, `n.atomic_add(1)`),
    still in course code; Taichi 1.7 keeps only the functions."""
    if not name.startswith("atomic_"):
        return ""
    return (f" (the method form was removed before Taichi 1.0; use "
            f"ti.{name}({ast.unparse(node.value)}, ...))")
