"""Real calls: a `fs.real_func` that recurses is compiled as an IR `Function` and called.

Takes the frontend at a call of a real func. Every call is inlined as before (faster, and
differentiable) unless it recurses: a call of the same real func with the same compile-time
arguments (its static values, and the dtypes of its runtime ones) while that func is still
being inlined. That call raises `_Recursion`; the inlining it belongs to catches it, removes
what it had emitted (builder and frontend state as at its start), builds the func as a
`Function` of the kernel (once per key: runtime arguments become PARAMs, scalars and
flattened vectors/matrices; static ones are bound as usual) and emits a CALL instead. Inside a
function's body its own key, and every key built before, is called, never inlined.
Recursion on compile-time values (constants passed to annotated scalar/matrix parameters)
keeps inlining and folding, up to `_MAX_SELF_INLINED` nested calls of one func; deeper, the
outermost of them becomes a real call with those constants as runtime arguments.
A result that bounds a later outermost loop crosses into the loop's task as any impure bound
does (`lang.task_bounds`).
Results: a scalar is the CALL's value; a vector/matrix, or a tuple of scalars and matrices, is
flattened into several scalar results (CALL_RESULT) and rebuilt.
Guarantees: a kernel's `funcs` hold only complete functions, each ending with one RETURN of its
declared results. Refused (`FieldsimCompilationError`, naming the func): a recursive real func
returning a struct. An ndarray argument is bound as a compile-time value (one function per
array argument of the kernel); the body reads its pointer and shape from the launch's
arguments itself (`ndarray.slot_in_function`), as the kernel's own values are not visible there. A call passing a struct, or a runtime value to a by-reference parameter,
is always inlined (as before: recursion through it must end at compile time).
"""
from __future__ import annotations

import numbers

from fieldsim.errors import FieldsimCompilationError
from fieldsim.ir.dtypes import DataType
from fieldsim.ir.ir import Function, Op, Stmt
from fieldsim.lang import func_args
from fieldsim.lang.expr import MatVal
from fieldsim.lang.frontend import _bind_args, _flatten_value, _parse_cached, _rebuild_value
from fieldsim.lang.ndarray import is_slot, slot_in_function
from fieldsim.lang.types import MatrixType

# nested inlined calls of one real func on compile-time values beyond which it becomes a real
# call (its constants made runtime values): well within the frontend's 64 nested calls and
# Python's recursion limit, each inlined call costing some tens of Python frames
_MAX_SELF_INLINED = 16


class _Recursion(Exception):
    """Raised at a recursive call; caught by the inlining of the same key. `promote`: the
    recursion runs on compile-time values too deep to inline, so the catcher makes its
    constant scalar and matrix arguments runtime ones."""

    def __init__(self, key, promote=False):
        super().__init__(key)
        self.key, self.promote = key, promote


class _Unkeyed(Exception):
    """An argument that cannot cross a real call (a struct, a by-reference runtime value)."""


def call(fe, func, args, kwargs, node):
    """A call of the real func `func` from the frontend `fe`: inlined, or a CALL."""
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
    mine = [k for k in fe.real_inlining if k[0] == id(func)]
    if len(mine) >= _MAX_SELF_INLINED and _key(fe, func, bound, ann, promote=True)[0] != key:
        raise _Recursion(mine[0], promote=True)  # a real call from its first call on
    mark = _State(fe)
    fe.real_inlining.append(key)
    try:
        return fe.inline_plain(func, args, kwargs, node, refs=fe.caller_refs(node))
    except _Recursion as rec:
        if rec.key != key:
            raise
        promote = rec.promote
    finally:
        fe.real_inlining.pop()
    mark.restore(fe)
    if promote:
        key, spec = _key(fe, func, bound, ann, promote=True)
    built = fe.real_funcs.get(key) or _build(fe, func, key, spec, bound, ann, node)
    return _emit_call(fe, built, spec, bound, ann, func)


def _key(fe, func, bound: dict, ann: dict, promote=False):
    """(key, spec): the key of this call's compile-time arguments, and per parameter its
    runtime kind (None: static; a DataType: a scalar; a MatrixType: its entries). `promote`:
    constants passed to scalar- or matrix-annotated parameters count as runtime values."""
    from fieldsim.lang import struct
    parts, spec = [id(func)], {}
    for name, value in bound.items():
        a = ann.get(name)
        kind = _runtime_kind(fe, a, value, promote)
        if kind is None and isinstance(value, (Stmt, MatVal)) or struct.is_struct(value):
            raise _Unkeyed(name)
        spec[name] = kind
        if isinstance(kind, MatrixType):
            parts.append((name, "rt", kind.n, kind.m, kind.dtype, kind.ndim))
        elif kind is not None:
            parts.append((name, "rt", kind))
        elif isinstance(value, (int, float, bool)):
            parts.append((name, "const", type(value), value))
        elif is_slot(value):  # the kernel's array argument, however the body rebased it
            parts.append((name, "ndarray", value.ptr_pos, value.role))
        else:
            parts.append((name, "static", id(value)))
    return tuple(parts), spec


def _runtime_kind(fe, a, value, promote=False):
    if isinstance(a, func_args.RefType) or func_args.is_by_reference(a):
        return None
    number = isinstance(value, numbers.Number) and not isinstance(value, bool) and promote
    if (a is int or a is float or isinstance(a, DataType)) and (isinstance(value, Stmt) or number):
        return fe.e.resolve(a)
    if isinstance(a, MatrixType) and isinstance(value, MatVal) \
            and (promote or any(isinstance(e, Stmt) for e in value.entries)):
        return MatrixType(a.n, a.m, fe.e.resolve(a.dtype), a.ndim, a.vector)
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
        self.task_funcs = list(fe.task_funcs)

    def restore(self, fe):
        fe.b.blocks[:] = self.blocks
        del fe.b.block[self.size:]
        fe.b.loc = self.loc
        for n, v in self.values.items():
            setattr(fe, n, v)
        fe.static_loops[:] = self.static_loops
        fe.inline_stack[:] = self.inline_stack
        fe.task_funcs[:] = self.task_funcs


def _ret_spec(fe, func, a):
    """(result dtypes, shape to rebuild the value from them) of a return annotation: a
    scalar, a vector/matrix (flattened), or a tuple of those."""
    if a is None or a is type(None):
        return [], None
    if a is int or a is float or isinstance(a, DataType):
        return [fe.e.resolve(a)], ("scalar",)
    if isinstance(a, MatrixType):
        return [fe.e.resolve(a.dtype)] * (a.n * a.m), ("mat", a.n, a.m, a.ndim)
    if isinstance(a, tuple):
        dtypes, shapes = [], []
        for item in a:
            d, s = _ret_spec(fe, func, item)
            if s is None:
                break
            dtypes.extend(d)
            shapes.append((len(d), s))
        else:
            return dtypes, ("tuple", tuple(shapes))
    raise FieldsimCompilationError(
        f"real function {func.fn.__name__!r} recurses on runtime values and returns {a!r}: "
        "fieldsim compiles such a function as a real call, which returns scalars, vectors, "
        "matrices or tuples of them (not structs); write other results into a field")


def _build(fe, func, key, spec, bound, ann, node) -> tuple:
    """(the Function of `func` for `key`, its result shape), registered before its body is
    built, which may call it."""
    params = []
    for kind in spec.values():
        if isinstance(kind, MatrixType):
            params.extend([kind.dtype] * (kind.n * kind.m))
        elif kind is not None:
            params.append(kind)
    name = func.fn.__name__
    if any(g.name == name for g in fe.funcs):  # another instantiation: names stay distinct
        name = f"{name}.{len(fe.funcs)}"
    rets, shape = _ret_spec(fe, func, ann.get("return"))
    fn = Function(name, params, rets, [], fe.b.loc)
    fe.real_funcs[key] = (fn, shape)
    fe.funcs.append(fn)
    saved = _State(fe)
    saved_inlining, fe.real_inlining = fe.real_inlining, []
    fe.b.blocks[:] = [fn.body]
    fe.depth, fe.loop_depth, fe.parallel_depth, fe.loop_config = 0, 0, -1, {}
    fe.static_loops[:], fe.inline_stack[:], fe.task_funcs[:] = [], [], []
    try:
        result = fe.inline_plain(func, [], _param_values(fe, spec, bound), node)
        flat = _flatten_value(result)[0] if rets else []
        if len(flat) != len(rets):
            raise FieldsimCompilationError(
                f"real function {func.fn.__name__!r} returns {len(flat)} value(s) where its "
                f"annotation declares {len(rets)}")
        fe.b.emit(Op.RETURN, None, tuple(fe.e.value(v, d) for v, d in zip(flat, rets)))
    finally:
        fe.real_inlining = saved_inlining
        saved.restore(fe)
    return fe.real_funcs[key]


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
        elif is_slot(bound[name]):
            out[name] = slot_in_function(fe, bound[name])
        else:
            out[name] = bound[name]
    return out


def _emit_call(fe, built, spec, bound, ann, func):
    """CALL of the function `built` (with its result shape); the result rebuilt from it."""
    fn, shape = built
    args = []
    for name, kind in spec.items():
        if kind is None:
            continue
        value = func_args.coerce(fe, ann.get(name), bound[name], f"argument {name}", func)
        if isinstance(kind, MatrixType):
            args.extend(fe.e.value(e, kind.dtype) for e in value.entries)
        else:
            args.append(fe.e.value(value, kind))
    call = fe.b.emit(Op.CALL, fn.call_dtype, tuple(args), attr=fn)
    if not fn.rets:
        return None
    flat = [call] if len(fn.rets) == 1 else \
        [fe.b.emit(Op.CALL_RESULT, d, (call,), attr=k) for k, d in enumerate(fn.rets)]
    return _rebuild_value(flat, shape)

