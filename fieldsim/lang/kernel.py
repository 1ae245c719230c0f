"""`@fs.kernel` and `@fs.func`: argument binding, specialisation, the compile pipeline, launch.

Pipeline (data flows one way): frontend (AST -> IR) -> offload (tasks) -> verify ->
[checks.access_rules -> ad.reverse | ad.forward] -> backend codegen -> launch. A kernel is
compiled once per (runtime generation, template arguments); its adjoint and tangent kernels are
made lazily from the same IR. Errors from compilation reach the user without internal frames.
"""
from __future__ import annotations

import inspect
import math
import numbers
import time
import typing

from fieldsim.errors import AccessRuleError, FieldsimError, FieldsimSyntaxError, FieldsimTypeError, Loc
from fieldsim.ir.ir import Kernel
from fieldsim.ir.passes.run import run_pass
from fieldsim.lang import runtime
from fieldsim.lang import types as T
from fieldsim.lang.field import Field
from fieldsim.lang.template_key import template_key


class Template:
    """`fs.template()`: the argument is bound at compile time (fields, Python values)."""

    def __repr__(self):
        return "template()"


def template():
    return Template()


class NdarrayType:
    def __init__(self, dtype=None, ndim=None, **kw):
        self.dtype, self.ndim = dtype, ndim


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


def func(fn=None, *, is_real_function=False):
    if fn is None:
        return lambda f: Func(f)
    return Func(fn)


pyfunc = func


def real_func(fn=None):
    """`ti.real_func`: Taichi compiles it as a separate function; fieldsim inlines it like any
    `@func` (same results; recursion is not supported)."""
    return func(fn)


def data_oriented(cls):
    """`@ti.data_oriented`: a class whose methods are kernels over its own fields. Kernels bound
    to an instance take `self` as a compile-time value."""
    return cls


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

    # ---- binding -----------------------------------------------------------------------------
    def annotations(self):
        if self._ann is None:
            ann = []
            for p in self.params:
                a = _resolve_annotation(p.annotation, self.fn)
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
            if isinstance(a, Template) or a is Template or isinstance(a, NdarrayType):
                templates[p.name] = v
                key.append(("f", v.uid, v.generation) if type(v) is Field else template_key(v))
                continue
            dt = _scalar_dtype(a, rt, self.__name__, p.name)
            dtypes[p.name] = dt
            values.append(_convert_arg(v, dt, self.__name__, p.name))
        ret_dt = None if ret is None else _scalar_dtype(ret, rt, self.__name__, "return value")
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
        return run_pass("offload", offload, ir, verify=rt.debug), fe.hidden_fields

    def _compile(self, rt, templates, dtypes, ret) -> CompiledKernel:
        t0 = time.perf_counter()
        ir, hidden_fields = self.build_ir(rt, templates, dtypes, ret)
        ck = CompiledKernel(self, ir, hidden_fields, [dtypes[p.name] for p in ir.params
                                                        if not p.template], ret)
        ck.program = rt.backend().compile(ir, rt)
        rt.stats["compile_s"] += time.perf_counter() - t0
        return ck

    def __call__(self, *args, **kwargs):
        rt = runtime.get()
        ad = rt._per_thread  # this thread's tape/fwd_mode/no_grad (read directly: hot path)
        checked_run = None  # Tape(validation=True): runs the launch checked per element
        try:
            templates, key, values, dtypes, ret = self.bind(args, kwargs)
            ck = self.compiled(templates, key, dtypes, ret)
            if ad.tape is not None and ad.no_grad_depth == 0:
                checked_run = ad.tape.on_launch(self, ck, args, kwargs, values)
        except FieldsimError as err:
            raise err.with_traceback(None) from None
        rt.launch_counter += 1
        rng_key = _rng_key(rt.random_seed, rt.launch_counter)
        self.last_rng_key = rng_key
        if ad.tape is not None and ad.no_grad_depth == 0:
            ad.tape.set_last_rng_key(rng_key)
        program = ck.program
        if ad.fwd_mode is not None and ad.no_grad_depth == 0:
            from fieldsim.ad.fwd_mode import tangent_program
            try:
                program = tangent_program(ck, rt)
            except FieldsimError as err:
                raise err.with_traceback(None) from None
        if checked_run is not None:
            try:
                return checked_run(program, values, rng_key)
            except AccessRuleError as err:
                raise err.with_traceback(None) from None
        return rt.backend().launch(program, values, rng_key)

    def launch_adjoint(self, args, kwargs=None, rng_key=None, check=False):
        """Run the adjoint. The access rules are judged with this launch's argument values
        when `check` (a user's `kernel.grad(...)`) or when no Tape launch has judged them."""
        rt = runtime.get()
        try:
            templates, key, values, dtypes, ret = self.bind(args, kwargs or {})
            ck = self.compiled(templates, key, dtypes, ret)
            if check or not ck.checked:
                kernel_check(ck).run(values)
            program = adjoint_program(ck, rt)
        except FieldsimError as err:
            raise err.with_traceback(None) from None
        rt.backend().launch(program, values, self.last_rng_key if rng_key is None else rng_key,
                            adjoint=True)


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

    def __init__(self, owner: KernelObj):
        self.owner = owner

    def __call__(self, *args, **kwargs):
        self.owner.launch_adjoint(args, kwargs, check=True)


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
    """A scalar argument as the Python value the launch stores: never wrapped, truncated or
    rounded silently (an integer argument out of the type's range, a fractional or NaN value
    for an integer, a complex number: a FieldsimTypeError naming the argument)."""
    t = type(v)
    if dt.is_float:
        if t is float:  # the common cases first: launches are frequent
            return v
        if t is int and -(1 << 1023) < v < (1 << 1023):
            return float(v)
    elif t is int:
        lo, hi = _int_range(dt)
        if lo <= v <= hi:
            return v
    return _convert_arg_slow(v, dt, kname, pname)


def _convert_arg_slow(v, dt, kname, pname):
    if hasattr(v, "item") and getattr(v, "ndim", 1) == 0:
        v = v.item()
    if isinstance(v, bool):
        return int(v)
    if not isinstance(v, numbers.Real):
        raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} expects a {dt} scalar, "
                                f"got {type(v).__name__}" + (f" {v!r}" if isinstance(v, complex) else ""))
    if dt.is_float:
        try:
            return float(v)
        except OverflowError:
            raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} ({dt}) got an integer "
                                    "too large for any float") from None
    if isinstance(v, numbers.Integral):
        iv = int(v)
    else:
        f = float(v)
        if not math.isfinite(f) or f != math.floor(f):
            raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} expects an integer "
                                    f"({dt}), got {v!r}")
        iv = int(f)
    lo, hi = _int_range(dt)
    if not lo <= iv <= hi:
        raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} = {iv} is out of range "
                                f"for {dt} [{lo}, {hi}]")
    return iv


_INT_RANGES: dict = {}


def _int_range(dt):
    """[lo, hi] an integer argument of `dt` may take (at most a signed 64-bit word, which is
    what arguments travel in)."""
    r = _INT_RANGES.get(dt.name)
    if r is None:
        lo, hi = (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1) if dt.is_signed else (0, (1 << dt.bits) - 1)
        r = _INT_RANGES[dt.name] = (lo, min(hi, (1 << 63) - 1))
    return r


def _rng_key(seed: int, counter: int) -> int:
    x = (seed * 0x9E3779B97F4A7C15 + counter * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 31
    return x & 0x7FFFFFFFFFFFFFFF


__all__ = ["Func", "KernelObj", "func", "kernel", "template", "typing"]
