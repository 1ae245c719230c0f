"""`@fs.kernel` and `@fs.func`: argument binding, specialisation, the compile pipeline, launch.

Pipeline (data flows one way): frontend (AST -> IR) -> offload (tasks) -> verify ->
[checks.access_rules -> ad.reverse | ad.forward] -> backend codegen -> launch. A kernel is
compiled once per (runtime generation, template arguments); its adjoint and tangent kernels are
made lazily from the same IR. Errors from compilation reach the user without internal frames.
"""
from __future__ import annotations

import abc
import functools
import inspect
import math
import numbers
import typing

from fieldsim.errors import (
    AnnotationError,
    ArgumentCountError,
    ArgumentTypeError,
    FieldsimError,
    FieldsimSyntaxError,
    FieldsimTypeError,
    Loc,
)
from fieldsim.ir.ir import Kernel
from fieldsim.ir.passes.run import run_pass
from fieldsim.lang import runtime
from fieldsim.lang import types as T
from fieldsim.lang.argpack import ArgPackType, pack_members
from fieldsim.lang.enums import AutodiffMode
from fieldsim.lang.field import Field
from fieldsim.lang.kernel_args import bind_matrix_arg, bind_struct_arg
from fieldsim.lang.naming import user_loc
from fieldsim.lang.ndarray import (
    CheckOnly,
    NdarrayType,
    bind_arg_reused,
)
from fieldsim.lang.struct import StructType
from fieldsim.lang.template_key import template_key
from fieldsim.lang.triplets import bind_builder, is_builder_annotation


class Template:
    """`fs.template()`: annotation for a kernel/func argument taken at compile time (a field, a
    Python value). Each distinct value compiles its own instance of the kernel. As in Taichi,
    `fs.template` is this class, so `isinstance(annotation, fs.template)` tells a template
    argument apart (libraries that inspect a kernel's annotations do).

    >>> a = fs.field(fs.i32, shape=2)
    >>> @fs.kernel
    ... def fill(f: fs.template(), v: fs.i32):
    ...     for i in f:
    ...         f[i] = v
    >>> fill(a, 7); a.to_numpy().tolist()
    [7, 7]
    >>> isinstance(fs.template(), fs.template)
    True
    """

    def __init__(self, tensor=None, dim=None):
        self.tensor, self.dim = tensor, dim  # Taichi's signature; neither changes the binding

    def __repr__(self):
        return "template()"


template = Template


class Func:
    """`@fs.func`: inlined into the kernels that call it."""

    _is_taichi_function = True  # Taichi's marker, which libraries test with hasattr

    @property
    def _is_real_function(self) -> bool:
        return getattr(self, "is_real", False)

    @property
    def func(self) -> Func:
        """Taichi's `f.func` on a `@ti.func`: the func object itself."""
        return self

    def __init__(self, fn, python_scope=False):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.custom_grad = None  # set by fs.ad.func_grad
        self.replay = None  # set by fs.ad.func_replay
        self.python_scope = python_scope  # `@fs.pyfunc`: callable from Python too
        self.plain = False  # an undecorated Python function a kernel calls, inlined like a func

    def __call__(self, *args, **kwargs):
        # Kernels inline funcs without calling this: a call here comes from Python scope
        if not self.python_scope:
            raise FieldsimSyntaxError(f"Taichi functions cannot be called from Python-scope: "
                                      f"{self.__name__!r} is an @fs.func (use @fs.pyfunc for "
                                      "both scopes)", user_loc())
        return self.fn(*args, **kwargs)

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
    """Decorate a function callable from kernels (Taichi's `@ti.func`); it is inlined.

    Arguments are passed by value unless annotated `fs.template()` or `fs.ref()`.

    >>> @fs.func
    ... def sq(v):
    ...     return v * v
    >>> y = fs.field(fs.f32, shape=())
    >>> @fs.kernel
    ... def k():
    ...     y[None] = sq(3.0)
    >>> k(); y[None]
    9.0
    """
    if fn is None:
        return lambda f: func(f, is_real_function=is_real_function)
    return real_func(fn) if is_real_function else Func(fn)  # Taichi's older real_func spelling


def pyfunc(fn):
    """`@fs.pyfunc`: a func kernels inline that Python code may also call directly.

    >>> @fs.pyfunc
    ... def twice(v):
    ...     return v * 2
    >>> twice(3)
    6
    """
    return Func(fn, python_scope=True)


def real_func(fn=None):
    """`ti.real_func`: Taichi compiles it as a separate function; fieldsim inlines it like any
    `@func` unless it recurses, and then compiles it as a real function it calls (recursion on
    runtime values; lang/real_calls.py). As in Taichi, its parameters must be annotated, and so
    must its return value if it has one."""
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
    cls._data_oriented = True  # Taichi's marker: libraries test `hasattr(obj, "_data_oriented")`
    return cls


def _is_data_oriented(obj) -> bool:
    cls = obj if isinstance(obj, type) else type(obj)  # a `@classmethod` kernel binds the class
    return bool(getattr(cls, "_fieldsim_data_oriented", False))


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


class _Bound:
    """What `KernelObj.bind` collects, argument by argument."""

    __slots__ = ("dtypes", "key", "staged", "templates", "values")

    def __init__(self):
        self.templates, self.key, self.values, self.dtypes = {}, [], [], {}
        self.staged = {}  # host arrays this launch copies to the device (ndarray._staged)


class CompiledKernel:
    """One specialisation: its IR, its fields, and the backend's compiled program."""

    def __init__(self, owner, ir: Kernel, hidden_fields, arg_dtypes, ret):
        self.owner, self.ir, self.hidden_fields = owner, ir, hidden_fields
        self.arg_dtypes, self.ret = arg_dtypes, ret
        self.program = None
        self.adjoint = None  # (ir, program), made on first use
        self.adjoint_job = None  # (ir, future program): begun on a Tape (runtime.pipeline)
        self.tangent = None  # ad.fwd_mode._TangentPrograms, made on first use
        self.checked = False
        self.analyses = None  # checks.analyses.KernelAnalyses, made on first use
        self.validation = None  # checks.validation.Instrumented, made on first use


class KernelObj:
    """What `@fs.kernel` returns: call it to compile (once per signature) and launch.

    `k.grad(*args)` runs its reverse-mode adjoint; inside `fs.ad.FwdMode` a call also computes
    the forward-mode tangents.

    >>> @fs.kernel
    ... def noop():
    ...     pass
    >>> isinstance(noop, fs.KernelObj)
    True
    """
    autodiff_mode = AutodiffMode.NONE  # Taichi's attribute: VALIDATION while on a validating Tape
    _is_wrapped_kernel = True  # Taichi's markers, which libraries test with hasattr

    @property
    def _is_classkernel(self) -> bool:
        return _defined_in_class(self.fn)

    @property
    def _primal(self) -> KernelObj:
        return self

    @property
    def _adjoint(self):
        return self.grad

    def __init__(self, fn):
        self.fn = fn
        self.__name__ = fn.__name__
        self.__doc__ = fn.__doc__
        self.__wrapped__ = fn  # as Taichi's: the body run as plain Python (Python scope)
        self._cache: dict = {}
        self._sig = inspect.signature(fn)
        self.params = list(self._sig.parameters.values())
        self._ann = None
        self.grad = _AdjointLauncher(self)
        self.last_rng_key = 0
        self._scalar_only = None  # every parameter a scalar: launches may skip `bind`
        self._fast = None  # (runtime generation, CompiledKernel, is-float per argument, kernel epoch)
        self._nd_memo: dict = {}  # ndarray parameter -> its last binding (`bind_arg_reused`)

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
        """(template bindings, specialisation key, runtime values, their dtypes, return spec)
        of one call's arguments."""
        rt = runtime.get()
        ann, ret = self.annotations()
        args = self._positional(args, kwargs)
        bound = self._bind_params(rt, ann, args)
        from fieldsim.lang.returns import ret_spec
        ret_dt = ret_spec(ret, rt, self.__name__)
        return bound.templates, tuple(bound.key), bound.values, bound.dtypes, ret_dt

    def _bind_params(self, rt, ann, args, only=None, staged=None) -> _Bound:
        """Bind each parameter (only those whose annotation `only` accepts, when given); a
        value that does not fit is located at the user's call. `staged`: the launch's table
        of host arrays copied to the device (ndarray.CheckOnly: none are)."""
        bound = _Bound()
        if staged is not None:
            bound.staged = staged
        try:
            for p, a, v in zip(self.params, ann, args):
                if only is None or only(a):
                    self._bind_one(bound, rt, p.name, a, v)
        except FieldsimTypeError as err:
            if err.loc is not None:
                raise
            raise type(err)(err.message, user_loc(), err.related) from None
        return bound

    def check_values(self, args):
        """Raise what a launch with `args` would raise for its scalar, vector/matrix, struct
        and ndarray parameters (a host array checked, not copied to a GPU): a graph checks
        every launch so before it runs any.

        >>> @fs.kernel
        ... def k(n: fs.i32):
        ...     pass
        >>> k.check_values([2 ** 31])
        Traceback (most recent call last):
        ...
        fieldsim.errors.FieldsimTypeError: ...out of range for i32...
        """
        rt = runtime.get()
        self._bind_params(rt, self.annotations()[0], self._positional(args, {}),
                          only=lambda a: _is_value_annotation(a) or isinstance(a, NdarrayType),
                          staged=CheckOnly())

    def _positional(self, args, kwargs) -> list:
        if not kwargs and len(args) == len(self.params):
            return args
        try:
            bound = self._sig.bind(*args, **kwargs)
        except TypeError as e:
            raise ArgumentCountError(f"kernel {self.__name__!r} takes {len(self.params)} "
                                    f"argument(s) ({', '.join(p.name for p in self.params)}): "
                                    f"{_call_mismatch(self._sig, args, kwargs) or ''} ({e})", user_loc(),
                                    _defined_at(self)) from None
        bound.apply_defaults()
        return [bound.arguments[p.name] for p in self.params]

    def _bind_one(self, bound, rt, name, a, v):
        """Bind argument `name` (annotation `a`, value `v`) by its kind of annotation."""
        kname = self.__name__
        if isinstance(a, _SelfArg) and not _is_data_oriented(v):
            raise FieldsimSyntaxError(
                f"kernel {kname!r} is a method of class {type(v).__name__!r}, which is not "
                "decorated with @fs.data_oriented: decorate the class to use kernels as methods",
                self.def_loc())
        if isinstance(a, NdarrayType):  # pointer and shape as hidden runtime arguments
            bound.templates[name], nd_values, nd_dtypes = bind_arg_reused(
                self._nd_memo, a, v, kname, name, rt, bound.staged)
            bound.key.append(bound.templates[name].spec.key())
            bound.values.extend(nd_values)
            bound.dtypes.update(nd_dtypes)
        elif is_builder_annotation(a):  # bound at compile time, like a template
            bound.templates[name] = v
            bound.key.append(bind_builder(v, kname, name, self.def_loc()))
        elif isinstance(a, (Template, _SelfArg)) or a is Template:
            if hasattr(a, "bind_value"):  # a texture: the view the kernel sees
                v = a.bind_value(v, kname, name, self.def_loc())
            bound.templates[name] = v
            bound.key.append(("f", v.uid, v.generation) if type(v) is Field else template_key(v))
        elif isinstance(a, (ArgPackType, T.MatrixType, StructType)):
            self._bind_compound(bound, rt, name, a, v)
        else:
            dt = _scalar_dtype(a, rt, kname, name, self.def_loc)
            bound.dtypes[name] = dt
            bound.values.append(_convert_arg(v, dt, kname, name))

    def _bind_compound(self, bound, rt, name, a, v):
        """Bind an argument pack (each member as an argument `name.member`), a vector/matrix or
        a struct (their entries travel as scalar arguments)."""
        kname = self.__name__
        if isinstance(a, ArgPackType):
            bound.dtypes[name] = a
            for member, t, x in pack_members(a, v, kname, name):
                self._bind_one(bound, rt, f"{name}.{member}", t, x)
            return
        if isinstance(a, T.MatrixType):
            bound.dtypes[name], flat = bind_matrix_arg(a, v, rt, kname, name)
            dt = bound.dtypes[name].dtype
            flat = [(dt, x) for x in flat]
        else:
            bound.dtypes[name], flat = bind_struct_arg(a, v, rt, kname, name)
        for entry, (dt, x) in zip(_entry_names(name, len(flat)), flat):
            bound.dtypes[entry] = dt
            bound.values.append(_convert_arg(x, dt, kname, name))

    # ---- compile and launch ----------------------------------------------------------------------
    def compiled(self, templates, key, dtypes, ret) -> CompiledKernel:
        rt = runtime.get()
        gen = (rt.generation, rt.kernel_epoch)
        ck = self._cache.get((gen, key))
        if ck is None:
            ck = self._compile(rt, templates, dtypes, ret)
            if any(k[0] != gen for k in self._cache):
                # a previous fs.init()'s specialisations can never run again (their machine
                # code is freed at reset), nor those from before an SNodeTree.destroy(): drop
                # them rather than keep their IR for good
                self._cache = {k: v for k, v in self._cache.items() if k[0] == gen}
                self._fast = None
            self._cache[(gen, key)] = ck
        return ck

    def build_ir(self, rt, templates, dtypes, ret):
        """(offloaded IR, the hidden fields it made) for these bound arguments: frontend,
        offload, the select form of the local arrays not worth a stack array, promote_locals;
        without compiling."""
        from fieldsim.ir.passes.kernel_vars import demote_kernel_variables
        from fieldsim.ir.passes.offload import offload
        from fieldsim.ir.passes.promote_locals import promote_locals
        from fieldsim.ir.passes.scalarize_arrays import small_arrays_scalarized
        from fieldsim.lang.frontend import Frontend, SerialFuncLoops
        fe = Frontend(self.fn, rt, self.__name__, templates, dtypes, ret)
        try:
            ir = run_pass("frontend", lambda _: fe.build(), None, verify=rt.debug)
        except SerialFuncLoops:
            fe = Frontend(self.fn, rt, self.__name__, templates, dtypes, ret, func_tasks=False)
            ir = run_pass("frontend", lambda _: fe.build(), None, verify=rt.debug)
        ir = run_pass("offload", offload, ir, verify=rt.debug)
        ir = run_pass("demote_kernel_variables", demote_kernel_variables, ir, fe.kernel_variables,
                      verify=rt.debug)
        if "local_arrays" in ir.meta:  # the select form where it is faster (scalarize_arrays)
            ir = run_pass("scalarize_arrays", small_arrays_scalarized, ir, verify=rt.debug)
        show = bool(rt.ignored_options.get("print_ir"))
        return run_pass("promote_locals", promote_locals, ir, verify=rt.debug, show=show), \
            fe.hidden_fields

    def _compile(self, rt, templates, dtypes, ret) -> CompiledKernel:
        return _driver().compile(self, rt, templates, dtypes, ret)

    def scalar_params(self) -> bool:
        """Whether every parameter is a scalar: a call's binding is then its converted values
        alone, and its specialisation the one of key () (a Tape replays adjoints on the
        values; see `ad.tape.LaunchEntry`)."""
        if self._scalar_only is None:
            try:
                ann = self.annotations()[0]
            except FieldsimError:
                ann = None
            self._scalar_only = ann is not None and all(
                not isinstance(a, (NdarrayType, Template, _SelfArg, T.MatrixType, StructType,
                                   ArgPackType))
                and a is not Template and not is_builder_annotation(a) for a in ann)
        return self._scalar_only

    def _fast_bind(self, rt, args):
        """(compiled kernel, argument values) without `bind`, for a kernel of scalar parameters
        already compiled in this runtime, called with exactly its Python ints and floats (each
        converted as `_convert_arg` would); None: take the full path (which also reports any
        error). Keeps an empty launch within a few microseconds."""
        fast = self._fast
        if fast is None or fast[0] != rt.generation or fast[3] != rt.kernel_epoch:
            ck = self._cache.get(((rt.generation, rt.kernel_epoch), ())) \
                if self.scalar_params() else None
            if ck is None:
                return None
            fast = self._fast = (rt.generation, ck, tuple(
                None if dt.is_float else _int_range(dt) for dt in ck.arg_dtypes), rt.kernel_epoch)
        ranges = fast[2]
        if len(args) != len(ranges):
            return None
        values = []
        for v, int_range in zip(args, ranges):
            t = type(v)
            if t is float and int_range is None:
                values.append(v)
            elif t is int and int_range is None and -(1 << 1023) < v < (1 << 1023):
                values.append(float(v))
            elif t is int and int_range is not None and int_range[0] <= v <= int_range[1]:
                values.append(v)
            else:  # numpy scalars, bools, a float for an int, out of range: the full path
                return None
        return fast[1], values

    def __call__(self, *args, **kwargs):
        try:
            return _DRIVER[0].launch(self, args, kwargs)
        except FieldsimError as err:
            raise _at_user_call(err) from None

    def replay_adjoint(self, ck, values, rng_key=None):
        """Run the adjoint of specialisation `ck` on argument values a launch bound (a Tape's
        replay of a kernel of scalar parameters: no binding again)."""
        _DRIVER[0].replay_adjoint(self, ck, values, rng_key)

    def launch_adjoint(self, args, kwargs=None, rng_key=None, check=False):
        """Run the adjoint. The access rules are judged with this launch's argument values
        when `check` (a user's `kernel.grad(...)`) or when no Tape launch has judged them."""
        _driver().launch_adjoint(self, args, kwargs, rng_key, check)


_DRIVER = []  # the pipeline driver `fieldsim.runtime` installs (compile, launch, adjoint)


def install_driver(driver):
    """Called once by `fieldsim.runtime`: kernel objects hand compiling and launching to it,
    so this module needs nothing of the passes above the language layer."""
    _DRIVER[:] = [driver]


def _driver():
    return _DRIVER[0]  # `import fieldsim` (the parent package of every module) installed it


def _at_user_call(err):
    """A launch's error is the user's mistake: shown at their call, without fieldsim's frames."""
    if err.loc is None:
        err.loc = user_loc()
    return err.with_traceback(None)


def compile_adjoints(wanted):
    """Make the adjoints of compiled specialisations now, several at once where the backend
    can (a Tape's backward, before it replays them). `wanted`: (specialisation, argument
    values of one of its launches) pairs."""
    _driver().compile_adjoints(wanted)


class _AdjointLauncher:
    """`kernel.grad(*args)`: launch the adjoint with output gradients seeded by the user."""

    autodiff_mode = AutodiffMode.REVERSE

    def __init__(self, owner: KernelObj):
        self.owner = owner

    def __call__(self, *args, **kwargs):
        try:
            self.owner.launch_adjoint(args, kwargs, check=True)
        except FieldsimError as err:
            raise _at_user_call(err) from None


class BoundKernel:
    """`obj.k` for a kernel method `k`: calls (and `.grad`) pass `obj` as `self`."""

    _is_wrapped_kernel = _is_classkernel = True

    def __init__(self, kernel: KernelObj, obj):
        self.kernel, self.obj = kernel, obj
        self.__name__ = kernel.__name__
        self.__doc__ = kernel.__doc__

    # as Taichi's bound method reaches its function's markers: the kernel and its adjoint,
    # unbound (libraries test them with isinstance, as for a kernel outside a class)
    @property
    def _primal(self) -> KernelObj:
        return self.kernel

    @property
    def _adjoint(self):
        return self.kernel.grad

    def __call__(self, *args, **kwargs):
        try:  # the driver directly: a method's launch error keeps one fieldsim frame too
            return _DRIVER[0].launch(self.kernel, (self.obj,) + args, kwargs)
        except FieldsimError as err:
            raise _at_user_call(err) from None

    def grad(self, *args, **kwargs):
        try:
            self.kernel.launch_adjoint((self.obj,) + args, kwargs, check=True)
        except FieldsimError as err:
            raise _at_user_call(err) from None


class TaichiKernel(abc.ABC):
    """Taichi's `kernel_impl.Kernel` as libraries use it, in `isinstance` checks: a kernel and
    its adjoint (`k._adjoint`, `k.grad`) are each one."""


TaichiKernel.register(KernelObj)
TaichiKernel.register(_AdjointLauncher)


def kernel(fn):
    """Decorate a function as a kernel (Taichi's `@ti.kernel`), compiled on first call.

    The outermost `for` loops run in parallel; arguments need annotations (`fs.f32`, `fs.i32`,
    `fs.template()`, `fs.types.ndarray()`, ...); a return annotation returns a value.

    >>> x = fs.field(fs.f32, shape=4)
    >>> @fs.kernel
    ... def fill(v: fs.f32) -> fs.f32:
    ...     for i in x:
    ...         x[i] = v * i
    ...     return x[3]
    >>> fill(2.0)
    6.0
    """
    if isinstance(fn, KernelObj):
        return fn
    if isinstance(fn, Func):  # Taichi fails later, with a NameError about the body's globals
        raise AnnotationError(f"{fn.fn.__name__!r} is decorated with both @fs.kernel and "
                              "@fs.func: keep @fs.kernel to call it from Python, or @fs.func to "
                              "call it from kernels", KernelObj(fn.fn).def_loc())
    return KernelObj(fn)


def _is_value_annotation(a) -> bool:
    """A parameter bound to a runtime value (scalar, vector/matrix, struct), not to an array,
    a template, `self`, a texture or a sparse matrix builder."""
    return not isinstance(a, (NdarrayType, Template, _SelfArg)) and a is not Template \
        and not is_builder_annotation(a) and not hasattr(a, "bind_value")


def _call_mismatch(sig, args, kwargs) -> str | None:
    """Taichi's words for a call that does not fit `sig` (programs match them in their tests).

    >>> def k(a, b): pass
    >>> sig = inspect.signature(k)
    >>> [_call_mismatch(sig, *c) for c in [((1, 2, 3), {}), ((1,), {"c": 2}), ((1,), {"a": 2}),
    ...                                     ((), {"b": 2})]]
    ['Too many arguments', "Unexpected argument 'c'", "Multiple values for argument 'a'", "Parameter 'a' missing"]
    """
    names = list(sig.parameters)
    if len(args) > len(names):
        return "Too many arguments"
    for name in kwargs:
        if name not in names:
            return f"Unexpected argument {name!r}"
        if names.index(name) < len(args):
            return f"Multiple values for argument {name!r}"
    given = set(names[:len(args)]) | set(kwargs)
    missing = [n for n, p in sig.parameters.items()
               if n not in given and p.default is inspect.Parameter.empty]
    return f"Parameter {missing[0]!r} missing" if missing else None


def _defined_at(kernel_obj) -> tuple:
    """`related` of an error about a call: where the kernel is defined, when that is known."""
    loc = kernel_obj.def_loc()
    return () if loc is None else (("the kernel is defined at", loc),)


@functools.lru_cache(maxsize=1024)
def _entry_names(name: str, count: int) -> tuple:
    """The scalar arguments' names of a vector/matrix/struct argument: `name[k]`."""
    return tuple(f"{name}[{k}]" for k in range(count))


def _scalar_dtype(a, rt, kname, pname, def_loc):
    a = T.concrete_dtype(a, rt.default_fp, rt.default_ip)
    if isinstance(a, T.DataType):
        return a
    raise AnnotationError(f"kernel {kname!r}: argument {pname!r} has an unsupported annotation "
                            f"{a!r}; use a scalar type (fs.f32, fs.i32, float, int), fs.types.vector/matrix, "
                            "an ndarray type or fs.template()", def_loc())


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
        raise ArgumentTypeError(f"kernel {kname!r}: argument {pname!r} expects a {dt} scalar, "
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
            raise ArgumentTypeError(f"kernel {kname!r}: argument {pname!r} expects an integer "
                                    f"({dt}), got {v!r}")
        iv = int(f)
    lo, hi = _int_range(dt)
    if not lo <= iv <= hi:
        raise FieldsimTypeError(f"kernel {kname!r}: argument {pname!r} = {iv} is out of range "
                                f"for {dt} [{lo}, {hi}]")
    return iv


_INT_RANGES: dict = {}


def _int_range(dt):
    """[lo, hi] an integer argument of `dt` may take (a u64 above 2**63 travels in its 64-bit
    word as its two's-complement bit pattern)."""
    r = _INT_RANGES.get(dt.name)
    if r is None:
        lo, hi = (-(1 << (dt.bits - 1)), (1 << (dt.bits - 1)) - 1) if dt.is_signed else (0, (1 << dt.bits) - 1)
        r = _INT_RANGES[dt.name] = (lo, hi)
    return r


def rng_key_of(seed: int, counter: int) -> int:
    """The random stream key of one launch (a kernel's `fs.random` draws from it)."""
    x = (seed * 0x9E3779B97F4A7C15 + counter * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    x ^= x >> 31
    return x & 0x7FFFFFFFFFFFFFFF


__all__ = ["Func", "KernelObj", "func", "kernel", "template", "typing"]
