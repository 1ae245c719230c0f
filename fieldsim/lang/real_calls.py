"""Real calls: a `fs.real_func` that recurses is compiled as an IR `Function` and called.

Takes the frontend at a call of a real func. Every call is inlined as before (faster, and
differentiable) unless it recurses: a call of the same real func with the same compile-time
arguments (its static values, and the dtypes of its runtime ones) while that func is still
being inlined. That call raises `_Recursion`; the inlining it belongs to catches it, removes
what it had emitted (builder and frontend state as at its start), builds the func as a
`Function` of the kernel (once per key: runtime arguments become PARAMs, scalars and
flattened vectors/matrices; static ones are bound as usual) and emits a CALL instead. Inside a
function's body its own key, and every key built before, is called, never inlined.
A result called for at the kernel's top level goes through a hidden 0-D field (like a kernel
variable), so a later task, e.g. the loop it bounds, can read it.
Guarantees: a kernel's `funcs` hold only complete functions, each ending with one RETURN of its
declared scalar result. Refused (`FieldsimCompilationError`, naming the func): a recursive real
func returning a vector, matrix, tuple or struct, or taking a struct or a by-reference
runtime value.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimCompilationError
from fieldsim.ir.dtypes import DataType
from fieldsim.ir.ir import Function, Op, Stmt
from fieldsim.lang import func_args
from fieldsim.lang.expr import MatVal
from fieldsim.lang.types import MatrixType


class _Recursion(Exception):
    """Raised at a recursive call; caught by the inlining of the same key."""

    def __init__(self, key):
        super().__init__(key)
        self.key = key


class _Unkeyed(Exception):
    """An argument that cannot cross a real call (a struct, a by-reference runtime value)."""


def call(fe, func, args, kwargs, node):
    """A call of the real func `func` from the frontend `fe`: inlined, or a CALL."""
    from fieldsim.lang.frontend import _bind_args, _parse_cached
    fdef = _parse_cached(func.fn).node
    bound = _bind_args(func.fn, [a.arg for a in fdef.args.args], fdef, args, kwargs)
    ann = func_args.annotations(func, fdef)
    try:
        key, spec = _key(fe, func, bound, ann)
    except _Unkeyed:
        return fe.inline_plain(func, args, kwargs, node, refs=fe.caller_refs(node))
    built = fe.real_funcs.get(key)
    if built is not None:
        return _emit_call(fe, built, spec, bound, ann, func)
    if key in fe.real_inlining:
        raise _Recursion(key)
    mark = _State(fe)
    fe.real_inlining.append(key)
    try:
        return fe.inline_plain(func, args, kwargs, node, refs=fe.caller_refs(node))
    except _Recursion as rec:
        if rec.key != key:
            raise
    finally:
        fe.real_inlining.pop()
    mark.restore(fe)
    built = _build(fe, func, key, spec, bound, ann, node)
    return _emit_call(fe, built, spec, bound, ann, func)


def _key(fe, func, bound: dict, ann: dict):
    """(key, spec): the key of this call's compile-time arguments, and per parameter its
    runtime kind (None: static; a DataType: a scalar; a MatrixType: its entries)."""
    from fieldsim.lang import struct
    parts, spec = [id(func)], {}
    for name, value in bound.items():
        a = ann.get(name)
        kind = _runtime_kind(fe, a, value)
        if kind is None and isinstance(value, (Stmt, MatVal)) or struct.is_struct(value):
            raise _Unkeyed(name)
        spec[name] = kind
        if isinstance(kind, MatrixType):
            parts.append((name, "rt", kind.n, kind.m, kind.dtype, kind.ndim))
        elif kind is not None:
            parts.append((name, "rt", kind))
        elif isinstance(value, (int, float, bool)):
            parts.append((name, "const", type(value), value))
        else:
            parts.append((name, "static", id(value)))
    return tuple(parts), spec


def _runtime_kind(fe, a, value):
    if isinstance(a, func_args.RefType) or func_args.is_by_reference(a):
        return None
    if (a is int or a is float or isinstance(a, DataType)) and isinstance(value, Stmt):
        return func_args._dtype(fe, a)
    if isinstance(a, MatrixType) and isinstance(value, MatVal) \
            and any(isinstance(e, Stmt) for e in value.entries):
        return MatrixType(a.n, a.m, func_args._dtype(fe, a.dtype), a.ndim)
    return None


class _State:
    """The frontend's state at the start of an inlining, to return to when it recurses."""

    _COUNTERS = ("depth", "loop_depth", "parallel_depth", "loop_config", "frame")

    def __init__(self, fe):
        self.blocks = list(fe.b.blocks)
        self.size = len(fe.b.block)
        self.loc = fe.b.loc
        self.values = {n: getattr(fe, n) for n in self._COUNTERS}
        self.static_loops = list(fe.static_loops)
        self.inline_stack = list(fe.inline_stack)

    def restore(self, fe):
        fe.b.blocks[:] = self.blocks
        del fe.b.block[self.size:]
        fe.b.loc = self.loc
        for n, v in self.values.items():
            setattr(fe, n, v)
        fe.static_loops[:] = self.static_loops
        fe.inline_stack[:] = self.inline_stack


def _ret_dtype(fe, func, ann):
    a = ann.get("return")
    if a is None or a is type(None):
        return None
    if a is int or a is float or isinstance(a, DataType):
        return func_args._dtype(fe, a)
    raise FieldsimCompilationError(
        f"real function {func.fn.__name__!r} recurses on runtime values and returns {a!r}: "
        "fieldsim compiles such a function as a real call, which returns one scalar (or "
        "nothing); return a scalar, or write results into a field")


def _build(fe, func, key, spec, bound, ann, node) -> Function:
    """The Function of `func` for `key` (registered before its body, which may call it)."""
    params = []
    for kind in spec.values():
        if isinstance(kind, MatrixType):
            params.extend([kind.dtype] * (kind.n * kind.m))
        elif kind is not None:
            params.append(kind)
    name = func.fn.__name__
    if any(g.name == name for g in fe.funcs):  # another instantiation: names stay distinct
        name = f"{name}.{len(fe.funcs)}"
    fn = Function(name, params, _ret_dtype(fe, func, ann), [], fe.b.loc)
    fe.real_funcs[key] = fn
    fe.funcs.append(fn)
    saved = _State(fe)
    saved_inlining, fe.real_inlining = fe.real_inlining, []
    fe.real_building += 1
    fe.b.blocks[:] = [fn.body]
    fe.depth, fe.loop_depth, fe.parallel_depth, fe.loop_config = 0, 0, -1, {}
    fe.static_loops[:], fe.inline_stack[:] = [], []
    try:
        result = fe.inline_plain(func, [], _param_values(fe, spec, bound), node)
        if fn.ret is None:
            fe.b.emit(Op.RETURN, None, ())
        else:
            fe.b.emit(Op.RETURN, None, (fe.e.value(result, fn.ret),))
    finally:
        fe.real_inlining = saved_inlining
        fe.real_building -= 1
        saved.restore(fe)
    return fn


def _param_values(fe, spec, bound) -> dict:
    """The function body's arguments: PARAMs for the runtime ones, the static ones as bound."""
    out, k = {}, 0
    for name, kind in spec.items():
        if isinstance(kind, MatrixType):
            entries = []
            for _ in range(kind.n * kind.m):
                entries.append(fe.b.emit(Op.PARAM, kind.dtype, attr=k))
                k += 1
            out[name] = MatVal(entries, kind.n, kind.m, kind.ndim)
        elif kind is not None:
            out[name] = fe.b.emit(Op.PARAM, kind, attr=k)
            k += 1
        else:
            out[name] = bound[name]
    return out


def _emit_call(fe, fn: Function, spec, bound, ann, func):
    args = []
    for name, kind in spec.items():
        if kind is None:
            continue
        value = func_args.coerce(fe, ann.get(name), bound[name], f"argument {name}", func)
        if isinstance(kind, MatrixType):
            args.extend(fe.e.value(e, kind.dtype) for e in value.entries)
        else:
            args.append(fe.e.value(value, kind))
    s = fe.b.emit(Op.CALL, fn.ret, tuple(args), attr=fn)
    if fn.ret is None:
        return None
    if len(fe.b.blocks) == 1 and not fe.real_building:
        return _kernel_level(fe, fn, s)
    return s


def _kernel_level(fe, fn: Function, value: Stmt) -> Stmt:
    """A result made at the kernel's top level, through a hidden 0-D field: the call runs
    in a serial task, and a later task (a loop whose bound it is) reads it there, as it
    reads a kernel variable."""
    from fieldsim.lang.field import Field
    hidden = Field(fn.ret, (), f"{fe.kernel_name}.{fn.name}.result{len(fe.hidden_fields)}",
                   _role="hidden")
    fe.hidden_fields.append(hidden)
    fe.b.store(hidden, [], value)
    return fe.b.load(hidden, [])
