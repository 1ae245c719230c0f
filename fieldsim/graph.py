"""`ti.graph`: compute graphs, a fixed sequence of kernel launches over named arguments.

A `GraphBuilder` records `dispatch(kernel, *args)` calls whose arguments are symbolic
(`Arg(ArgKind.NDARRAY, "x", dtype, ndim)`, scalars, matrices, textures) or concrete values; sequences made
with `create_sequential()` can be appended many times. `compile()` freezes the list into a
`Graph`; `graph.run({"x": array, ...})` binds every symbol by name and launches the kernels in
order, each through the kernel's ordinary call (so each specialisation compiles once and is then
cached, and every argument check of a plain launch applies).

Guarantees: a dispatch whose argument count does not fit the kernel, or that passes a symbolic
argument of the wrong kind for an annotated parameter, fails at `dispatch` naming the kernel and
the user's line; `run` checks that every symbol is given, and that each value has the declared
kind, element dtype and ndim, before any kernel runs, so a wrong argument leaves all data as it
was. Taichi compiles a graph for deployment (AOT) and runs it in C++; fieldsim runs it from
Python, which costs one ordinary launch per dispatched kernel.
"""
from __future__ import annotations

import enum

import numpy as np

from fieldsim.errors import FieldsimRuntimeError
from fieldsim.lang import runtime
from fieldsim.lang import types as T
from fieldsim.lang.kernel import KernelObj
from fieldsim.lang.naming import user_loc
from fieldsim.lang.ndarray import Ndarray, NdarrayType
from fieldsim.lang.texture import RWTextureType, Texture, TextureType

__all__ = ["Arg", "ArgKind", "Graph", "GraphBuilder", "Sequential"]


class ArgKind(enum.Enum):
    SCALAR = "scalar"
    NDARRAY = "ndarray"
    MATRIX = "matrix"
    TEXTURE = "texture"
    RWTEXTURE = "rwtexture"


_ALLOWED = {
    ArgKind.SCALAR: ("dtype",),
    ArgKind.NDARRAY: ("dtype", "ndim", "field_dim"),
    ArgKind.MATRIX: ("dtype",),
    ArgKind.TEXTURE: ("ndim",),
    ArgKind.RWTEXTURE: ("ndim", "fmt"),
}


_ARRAYS = (ArgKind.NDARRAY, ArgKind.TEXTURE, ArgKind.RWTEXTURE)


class Arg:
    """A named, typed placeholder for a graph argument, bound when the graph runs.

    >>> x = fs.graph.Arg(fs.graph.ArgKind.NDARRAY, "x", fs.f32, ndim=1)
    >>> (x.name, x.ndim)
    ('x', 1)
    """

    def __init__(self, tag, name, dtype=None, ndim=None, **kwargs):
        options = {"dtype": dtype, "ndim": ndim, **kwargs}
        if not isinstance(tag, ArgKind):
            raise FieldsimRuntimeError(f"tag must be a ti.graph.ArgKind, got {tag!r}", user_loc())
        if not isinstance(name, str):
            raise FieldsimRuntimeError(f"name must be a string, got {type(name).__name__}",
                                       user_loc())
        unknown = [k for k, v in options.items() if v is not None and k not in _ALLOWED[tag]]
        if unknown:
            raise FieldsimRuntimeError(
                f"graph argument {name!r}: invalid option(s) {', '.join(unknown)} for "
                f"{tag.name}; allowed: {', '.join(_ALLOWED[tag])}", user_loc())
        self.tag, self.name = tag, name
        self.ndim = options["ndim"] if options["ndim"] is not None else kwargs.get("field_dim")
        self.dtype, self.fmt = dtype, kwargs.get("fmt")
        self._check_declaration()

    def _check_declaration(self):
        matrix = isinstance(self.dtype, T.MatrixType)
        if self.tag is ArgKind.SCALAR and matrix:
            raise FieldsimRuntimeError(f"graph argument {self.name!r}: ArgKind.SCALAR needs a "
                                       f"scalar dtype, got {self.dtype}", user_loc())
        if self.tag is ArgKind.MATRIX and not matrix:
            raise FieldsimRuntimeError(f"graph argument {self.name!r}: ArgKind.MATRIX needs a "
                                       f"vector or matrix dtype, got {self.dtype}", user_loc())
        if self.tag in _ARRAYS and not isinstance(self.ndim, int):
            raise FieldsimRuntimeError(f"graph argument {self.name!r}: an {self.tag.name} "
                                       "argument needs ndim", user_loc())

    def __repr__(self):
        return f"ti.graph.Arg({self.tag.name}, {self.name!r}, dtype={self.dtype}, ndim={self.ndim})"

    def check_value(self, value):
        """Raises unless `value` can stand for this argument."""
        if self.tag is ArgKind.NDARRAY:
            self._check_array(value)
        elif self.tag in (ArgKind.TEXTURE, ArgKind.RWTEXTURE):
            self._check_texture(value)
        elif self.tag is ArgKind.SCALAR and not isinstance(value, (int, float, np.number)):
            raise FieldsimRuntimeError(f"graph argument {self.name!r} is a scalar; got "
                                       f"{type(value).__name__}", user_loc())

    def _check_texture(self, value):
        problem = (f"got {type(value).__name__}" if not isinstance(value, Texture)
                   else f"got a {value.num_dims}-D texture" if value.num_dims != self.ndim
                   else f"got format {value.fmt.name}" if self.fmt not in (None, value.fmt)
                   else None)
        if problem:
            raise FieldsimRuntimeError(f"graph argument {self.name!r} is a {self.ndim}-D "
                                       f"{self.tag.name}; {problem}", user_loc())

    def _check_array(self, value):
        if not isinstance(value, (Ndarray, np.ndarray)) and not hasattr(value, "__dlpack__"):
            raise FieldsimRuntimeError(f"graph argument {self.name!r} is an ndarray; got "
                                       f"{type(value).__name__}", user_loc())
        if not isinstance(value, Ndarray):
            return  # numpy/torch/jax arrays: the kernel's launch checks them as usual
        declared, got_shape = self.dtype, value.element_shape
        matrix = isinstance(declared, T.MatrixType)
        element = declared.dtype if matrix else declared
        shape = ((declared.n,) if declared.ndim == 1 else (declared.n, declared.m)) if matrix else ()
        problems = []
        if len(value.shape) != self.ndim:
            problems.append(f"ndim {len(value.shape)} (declared {self.ndim})")
        rt = runtime.get()
        if element is not None and T.concrete_dtype(element, rt.default_fp,
                                                    rt.default_ip) != value.dtype:
            problems.append(f"element dtype {value.dtype} (declared {element})")
        if declared is not None and shape != got_shape:
            problems.append(f"element shape {got_shape} (declared {shape})")
        if problems:
            raise FieldsimRuntimeError(f"graph argument {self.name!r}: the ndarray given has "
                                       + ", ".join(problems), user_loc())


def _symbols(args):
    for a in args:
        if isinstance(a, Arg):
            yield a
        elif isinstance(a, (list, tuple)):
            yield from _symbols(a)


class Sequential:
    """A list of dispatches, appended to a graph once or many times."""

    def __init__(self):
        self.launches: list = []

    def dispatch(self, kernel, *args):
        _check_dispatch(kernel, args)
        self.launches.append((kernel, args))


class GraphBuilder:
    """Records kernel launches with symbolic arguments; `compile()` makes the `Graph`."""

    def __init__(self):
        self._root = Sequential()

    def dispatch(self, kernel, *args):
        self._root.dispatch(kernel, *args)

    def create_sequential(self) -> Sequential:
        return Sequential()

    def append(self, node: Sequential):
        if not isinstance(node, Sequential):
            raise FieldsimRuntimeError("GraphBuilder.append takes what create_sequential() "
                                       f"made; got {type(node).__name__}", user_loc())
        self._root.launches.extend(node.launches)

    def compile(self) -> Graph:
        return Graph(list(self._root.launches))


class Graph:
    """A compiled graph: `run(values_by_name)` launches its kernels in order."""

    def __init__(self, launches):
        self.launches = launches
        self.args: dict[str, Arg] = {}
        for _, args in launches:
            for sym in _symbols(args):
                known = self.args.setdefault(sym.name, sym)
                if known is not sym and (known.tag, known.ndim) != (sym.tag, sym.ndim):
                    raise FieldsimRuntimeError(f"graph argument {sym.name!r} is declared twice, "
                                               "differently", user_loc())

    def run(self, args: dict):
        missing = sorted(set(self.args) - set(args))
        if missing:
            raise FieldsimRuntimeError(f"graph.run: no value for argument(s) {', '.join(missing)}",
                                       user_loc())
        for name, sym in self.args.items():
            sym.check_value(args[name])
        launches = [(kernel, [_bind(a, args) for a in symbolic]) for kernel, symbolic in self.launches]
        for kernel, values in launches:  # a scalar a later kernel refuses: before any runs
            kernel.check_values(values)
        for kernel, values in launches:
            kernel(*values)


def _bind(arg, values):
    if isinstance(arg, Arg):
        return values[arg.name]
    if isinstance(arg, (list, tuple)):
        return type(arg)(_bind(a, values) for a in arg)
    return arg


def _kind_of(x):
    """The graph argument kind an annotation (or Arg) takes: ndarray, texture, rw texture or
    other (None)."""
    if isinstance(x, Arg):
        return x.tag if x.tag in _ARRAYS else None
    return (ArgKind.RWTEXTURE if isinstance(x, RWTextureType) else ArgKind.TEXTURE
            if isinstance(x, TextureType) else ArgKind.NDARRAY if isinstance(x, NdarrayType)
            else None)


def _check_dispatch(kernel, args):
    if not isinstance(kernel, KernelObj):
        raise FieldsimRuntimeError(f"graph dispatch takes a @ti.kernel; got {kernel!r}",
                                   user_loc())
    params = kernel.params
    if len(args) != len(params):
        raise FieldsimRuntimeError(
            f"graph dispatch of kernel {kernel.__name__!r}: it takes {len(params)} argument(s), "
            f"{len(args)} given", user_loc())
    for p, a in zip(params, args):
        if isinstance(a, Arg) and _kind_of(p.annotation) is not _kind_of(a):
            raise FieldsimRuntimeError(
                f"graph dispatch of kernel {kernel.__name__!r}: parameter {p.name!r} is "
                f"annotated {p.annotation}, but graph argument {a.name!r} is {a.tag.name}",
                user_loc())
