"""`@fs.kernel` and `@fs.func`: argument binding, specialisation, the compile pipeline, launch.

Pipeline (data flows one way): frontend (AST -> IR) -> offload (tasks) -> verify ->
[checks.access_rules -> ad.reverse | ad.forward] -> backend codegen -> launch. A kernel is
compiled once per (runtime generation, template arguments); its adjoint and tangent kernels are
made lazily from the same IR. Errors from compilation reach the user without internal frames.
"""
from __future__ import annotations

import inspect
import time
import typing

from fieldsim.errors import AccessRuleError, FieldsimError, FieldsimSyntaxError, FieldsimTypeError, Loc
from fieldsim.ir.ir import Kernel
from fieldsim.ir.passes.run import run_pass
from fieldsim.lang import runtime
from fieldsim.lang import types as T
from fieldsim.lang.enums import AutodiffMode
from fieldsim.lang.field import Field
from fieldsim.lang.ndarray import (
    NdarrayType,
    bind_arg,
    bound_view,
    check_writable,
    copy_back,
    refuse_grad_reads,
)


class Template:
    """`fs.template()`: the argument is bound at compile time (fields, Python values)."""

    def __repr__(self):
        return "template()"


def template():
    return Template()


class Func:
    """`@fs.func`: inlined into the kernels that call it."""

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.custom_grad = None  # set by fs.ad.func_grad
        self.replay = None  # set by fs.ad.func_replay

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)  # Python scope: plain call

    def __get__(self, obj, owner=None):
        # `self.helper(...)` on a data-oriented object or a dataclass value: `self` is bound
        return self if obj is None else BoundFunc(self, obj)


class BoundFunc:
    """A `@fs.func` method bound to its object (a data-oriented instance or a struct value);
    the frontend inlines `func` with `obj` as the first argument."""

    def __init__(self, func: Func, obj):
        self.func, self.obj = func, obj
        self.__name__ = func.__name__

    def __call__(self, *args, **kwargs):
        return self.func.fn(self.obj, *args, **kwargs)


def func(fn=None, *, is_real_function=False):
    if fn is None:
        return lambda f: Func(f)
    return Func(fn)


pyfunc = func


def real_func(fn=None):
    """`ti.real_func`: Taichi compiles it as a separate function; fieldsim inlines it like any
    `@func` (same results; recursion must end through fs.static conditions). As in Taichi, its
    parameters must be annotated, and so must its return value if it has one."""
    if fn is None:
        return real_func
    from fieldsim.lang.func_args import check_real_func
    check_real_func(fn)
    f = func(fn)
    f.is_real = True
    return f


def data_oriented(cls):
    """`@ti.data_oriented`: a class whose methods are kernels over its own fields. Kernels bound
    to an instance take `self` as a compile-time value (its fields and Python attributes are
    read at compile time, like a `fs.template()` argument)."""
    if not isinstance(cls, type):
        raise TypeError(f"@data_oriented decorates a class, got {cls!r}")
    cls._fieldsim_data_oriented = True
    return cls


def _is_data_oriented(obj) -> bool:
    return bool(getattr(type(obj), "_fieldsim_data_oriented", False))


class _SelfArg:
    """The unannotated first parameter of a kernel defined in a class: the instance, bound
    at compile time."""

    def __repr__(self):
        return "self"


def _defined_in_class(fn) -> bool:
    parts = getattr(fn, "__qualname__", "").split(".")
    return len(parts) >= 2 and parts[-2] != "<locals>"


def _resolve_annotation(ann, fn):
    if isinstance(ann, str):
        try:
            ann = eval(ann, fn.__globals__)
        except Exception:  # noqa: BLE001 - whatever a user's annotation string raises
            raise FieldsimTypeError(f"cannot resolve the annotation {ann!r}") from None
    return ann


class CompiledKernel:
    """One specialisation: its IR, its fields, and the backend's compiled program."""

    def __init__(self, owner, ir: Kernel, hidden_fields, arg_dtypes, ret):
        self.owner, self.ir, self.hidden_fields = owner, ir, hidden_fields
        self.arg_dtypes, self.ret = arg_dtypes, ret
        self.program = None
        self.adjoint = None  # (ir, program), made on first use
        self.tangent = None
        self.checked = False
        self.access_check = None  # its checks.access_rules.KernelCheck (see `kernel_check`)
        self.field_sets = None  # (reads, writes) by id, for the Tape's cut-chain warning
        self.validation = None  # checks.validation.Instrumented, made on first use


class KernelObj:
    autodiff_mode = AutodiffMode.NONE  # Taichi's attribute: VALIDATION while on a validating Tape

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self._cache: dict = {}
        self._sig = inspect.signature(fn)
        self.params = list(self._sig.parameters.values())
        self._ann = None
        self.grad = _AdjointLauncher(self)
        self.last_rng_key = 0
        self._scalar_only = None  # every parameter a scalar: launches may skip `bind`
        self._fast = None  # (runtime generation, CompiledKernel, is-float per argument)

    def __get__(self, obj, owner=None):
        # a kernel method of a data-oriented class: `obj.k(...)` binds `self`
        return self if obj is None else BoundKernel(self, obj)

    # ---- binding -----------------------------------------------------------------------------
    def annotations(self):
        if self._ann is None:
            ann = []
            for pos, p in enumerate(self.params):
                a = _resolve_annotation(p.annotation, self.fn)
                if a is inspect.Parameter.empty and pos == 0 and _defined_in_class(self.fn):
                    ann.append(_SelfArg())
                    continue
                if a is inspect.Parameter.empty:
                    raise FieldsimSyntaxError(
                        f"kernel {self.__name__!r}: argument {p.name!r} needs a type annotation "
                        "(e.g. fs.f32, fs.i32, fs.template())", self.def_loc())
                ann.append(a)
            ret = _resolve_annotation(self._sig.return_annotation, self.fn)
            self._ann = (ann, None if ret in (inspect.Signature.empty, None) else ret)
        return self._ann

    def def_loc(self) -> Loc:
        try:
            lines, start = inspect.getsourcelines(self.fn)
            idx = next(i for i, line in enumerate(lines) if line.lstrip().startswith("def "))
            return Loc(inspect.getsourcefile(self.fn) or "?", start + idx, 0, None,
                       self.__name__, lines[idx].rstrip("\n"))
        except (OSError, TypeError, StopIteration):
            return None

    def bind(self, args, kwargs):
        rt = runtime.get()
        ann, ret = self.annotations()
        if kwargs or len(args) != len(self.params):
            try:
                bound = self._sig.bind(*args, **kwargs)
            except TypeError as e:
                raise FieldsimTypeError(f"kernel {self.__name__!r} takes {len(self.params)} "
                                        f"argument(s) ({', '.join(p.name for p in self.params)}): "
                                        f"{e}", self.def_loc()) from None
            bound.apply_defaults()
            args = [bound.arguments[p.name] for p in self.params]
        templates, key, values, dtypes = {}, [], [], {}
        for p, a, v in zip(self.params, ann, args):
            if isinstance(a, _SelfArg) and not _is_data_oriented(v):
                raise FieldsimSyntaxError(
                    f"kernel {self.__name__!r} is a method of class {type(v).__name__!r}, which is not "
                    "decorated with @fs.data_oriented: decorate the class to use kernels as methods",
                    self.def_loc())
            if isinstance(a, NdarrayType):  # pointer and shape as hidden runtime arguments
                templates[p.name], nd_values, nd_dtypes = bind_arg(a, v, self.__name__, p.name, rt)
                key.append(templates[p.name].spec.key())
                values.extend(nd_values)
                dtypes.update(nd_dtypes)
                continue
            if isinstance(a, (Template, _SelfArg)) or a is Template:
                templates[p.name] = v
                key.append(("f", v.uid, v.generation) if isinstance(v, Field) else ("v", _hashkey(v)))
                continue
            dt = _scalar_dtype(a, rt, self.__name__, p.name)
            dtypes[p.name] = dt
            values.append(_convert_arg(v, dt, self.__name__, p.name))
        from fieldsim.lang.returns import ret_spec
        ret_dt = ret_spec(ret, rt, self.__name__)
        return templates, tuple(key), values, dtypes, ret_dt

    # ---- compile and launch ----------------------------------------------------------------------
    def compiled(self, templates, key, dtypes, ret) -> CompiledKernel:
        rt = runtime.get()
        ck = self._cache.get((rt.generation, key))
        if ck is None:
            ck = self._compile(rt, templates, dtypes, ret)
            self._cache[(rt.generation, key)] = ck
        return ck

    def build_ir(self, rt, templates, dtypes, ret):
        """(offloaded IR, the hidden fields it made) for these bound arguments: frontend and
        offload, without compiling."""
        from fieldsim.ir.passes.offload import offload
        from fieldsim.lang.frontend import Frontend
        fe = Frontend(self.fn, rt, self.__name__, templates, dtypes, ret)
        ir = run_pass("frontend", lambda _: fe.build(), None, verify=rt.debug)
        show = bool(rt.ignored_options.get("print_ir"))
        return run_pass("offload", offload, ir, verify=rt.debug, show=show), fe.hidden_fields

    def _compile(self, rt, templates, dtypes, ret) -> CompiledKernel:
        t0 = time.perf_counter()
        ir, hidden_fields = self.build_ir(rt, templates, dtypes, ret)
        ck = CompiledKernel(self, ir, hidden_fields, [dtypes[p.name] for p in ir.params
                                                        if not p.template], ret)
        ck.program = rt.backend().compile(ir, rt)
        rt.stats["compile_s"] += time.perf_counter() - t0
        return ck

    def _fast_bind(self, rt, args):
        """(compiled kernel, argument values) without `bind`, for a kernel of scalar parameters
        already compiled in this runtime, called with exactly its Python ints and floats (each
        converted as `_convert_arg` would); None: take the full path (which also reports any
        error). Keeps an empty launch within a few microseconds."""
        fast = self._fast
        if fast is None or fast[0] != rt.generation:
            if self._scalar_only is None:
                try:
                    ann = self.annotations()[0]
                except FieldsimError:
                    ann = None
                self._scalar_only = ann is not None and all(
                    not isinstance(a, (NdarrayType, Template, _SelfArg)) and a is not Template
                    for a in ann)
            ck = self._cache.get((rt.generation, ())) if self._scalar_only else None
            if ck is None:
                return None
            fast = self._fast = (rt.generation, ck, tuple(dt.is_float for dt in ck.arg_dtypes))
        floats = fast[2]
        if len(args) != len(floats):
            return None
        values = []
        for v, is_float in zip(args, floats):
            t = type(v)
            if t is int:
                values.append(float(v) if is_float else v)
            elif t is float and is_float:
                values.append(v)
            else:  # numpy scalars, bools, a float for an int: the full conversion
                return None
        return fast[1], values

    def __call__(self, *args, **kwargs):
        rt = runtime.get()
        checked_run = None  # Tape(validation=True): runs the launch checked per element
        try:
            fast = None if kwargs else self._fast_bind(rt, args)
            if fast is not None:
                templates, (ck, values) = {}, fast
            else:
                templates, key, values, dtypes, ret = self.bind(args, kwargs)
                ck = self.compiled(templates, key, dtypes, ret)
            if templates:
                check_writable(ck, templates, self.__name__)
            if rt.tape is not None and rt.no_grad_depth == 0:
                checked_run = rt.tape.on_launch(self, bound_view(ck, templates), args, kwargs, values)
        except FieldsimError as err:
            raise err.with_traceback(None) from None
        rt.launch_counter += 1
        rng_key = _rng_key(rt.random_seed, rt.launch_counter)
        self.last_rng_key = rng_key
        if rt.tape is not None and rt.no_grad_depth == 0:
            rt.tape.set_last_rng_key(rng_key)
        program = ck.program
        if rt.fwd_mode is not None and rt.no_grad_depth == 0:
            from fieldsim.ad.fwd_mode import tangent_program
            try:
                program = tangent_program(ck, rt)
            except FieldsimError as err:
                raise err.with_traceback(None) from None
        if checked_run is not None:
            try:
                result = checked_run(program, values, rng_key)
            except AccessRuleError as err:
                raise err.with_traceback(None) from None
        elif not rt.kernel_profiler:
            result = rt.backend().launch(program, values, rng_key)
        else:
            from fieldsim.profiler import timed
            result = timed(rt, self.__name__, lambda: rt.backend().launch(program, values, rng_key))
        if templates:  # ndarray arguments given as Fortran-order numpy arrays
            copy_back(templates)
        return result

    def launch_adjoint(self, args, kwargs=None, rng_key=None, check=False):
        """Run the adjoint. The access rules are judged with this launch's argument values
        when `check` (a user's `kernel.grad(...)`) or when no Tape launch has judged them."""
        rt = runtime.get()
        try:
            templates, key, values, dtypes, ret = self.bind(args, kwargs or {})
            ck = self.compiled(templates, key, dtypes, ret)
            checked = bound_view(ck, templates)  # ndarray arguments: judged on this launch's arrays
            if checked is not ck:
                refuse_grad_reads(ck, self.__name__)
            if check or not checked.checked:
                kernel_check(checked).run(values)
            program = adjoint_program(ck, rt)
        except FieldsimError as err:
            raise err.with_traceback(None) from None
        from fieldsim.profiler import timed
        rng = self.last_rng_key if rng_key is None else rng_key
        timed(rt, f"{self.__name__}.grad",
              lambda: rt.backend().launch(program, values, rng, adjoint=True))


def kernel_check(ck: CompiledKernel):
    """The kernel's `checks.access_rules.KernelCheck` (effect table and symbolic findings), made
    once; `.run(values)` re-judges only the flagged pairs with a launch's argument values."""
    if ck.access_check is None:
        from fieldsim.checks.access_rules import KernelCheck
        ck.access_check = KernelCheck(ck.ir)
    return ck.access_check


def adjoint_program(ck: CompiledKernel, rt):
    """The adjoint of a compiled kernel (reverse AD, compiled; made once). Callers judge the
    access rules first (`kernel_check`)."""
    if ck.adjoint is None:
        from fieldsim.ad.reverse import make_adjoint
        t0 = time.perf_counter()
        adj_ir = run_pass("reverse", make_adjoint, ck.ir, verify=rt.debug)
        ck.adjoint = (adj_ir, rt.backend().compile(adj_ir, rt))
        rt.stats["compile_s"] += time.perf_counter() - t0
    return ck.adjoint[1]


class _AdjointLauncher:
    """`kernel.grad(*args)`: launch the adjoint with output gradients seeded by the user."""

    autodiff_mode = AutodiffMode.REVERSE

    def __init__(self, owner: KernelObj):
        self.owner = owner

    def __call__(self, *args, **kwargs):
        self.owner.launch_adjoint(args, kwargs, check=True)


class BoundKernel:
    """`obj.k` for a kernel method `k`: calls (and `.grad`) pass `obj` as `self`."""

    def __init__(self, kernel: KernelObj, obj):
        self.kernel, self.obj = kernel, obj
        self.__name__ = kernel.__name__
        self.__doc__ = kernel.__doc__

    def __call__(self, *args, **kwargs):
        return self.kernel(self.obj, *args, **kwargs)

    def grad(self, *args, **kwargs):
        self.kernel.launch_adjoint((self.obj,) + args, kwargs, check=True)


def kernel(fn):
    if isinstance(fn, KernelObj):
        return fn
    return KernelObj(fn)


def _scalar_dtype(a, rt, kname, pname):
    if a is float:
        return rt.default_fp
    if a is int:
        return rt.default_ip
    if isinstance(a, T.DataType):
        return a
    raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} has an unsupported annotation "
                            f"{a!r}; use a scalar type (fs.f32, fs.i32, float, int) or fs.template()")


def _convert_arg(v, dt, kname, pname):
    import numbers
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        v = v.item()
    if isinstance(v, bool) or not isinstance(v, numbers.Number):
        if isinstance(v, bool):
            return int(v)
        raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} expects a {dt} scalar, "
                                f"got {type(v).__name__}")
    return float(v) if dt.is_float else int(v)


def _hashkey(v):
    try:
        hash(v)
        return v
    except TypeError:
        return id(v)


def _rng_key(seed: int, counter: int) -> int:
    x = (seed * 0x9E3779B97F4A7C15 + counter * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 31
    return x & 0x7FFFFFFFFFFFFFFF


__all__ = ["Func", "KernelObj", "func", "kernel", "template", "typing"]
