"""User-facing errors, each rendered with the kernel's source location and a caret underline.

Every class is also the matching Python built-in (`FieldsimTypeError` is a `TypeError`), so
`except TypeError` in user code and `pytest.raises(TypeError)` both work.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Loc:
    """A position in user source: file, 1-based line, 0-based column span, function, text."""

    file: str
    line: int
    col: int = 0
    end_col: int | None = None
    func: str = ""
    source: str = ""

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"

    def render(self) -> str:
        head = f'File "{self.file}", line {self.line}'
        if self.func:
            head += f", in {self.func}"
        if not self.source:
            return head
        text = self.source.rstrip()
        stripped = text.lstrip()
        indent = len(text) - len(stripped)
        start = max(self.col - indent, 0)
        end = self.end_col - indent if self.end_col is not None else len(stripped)
        width = max(1, min(end, len(stripped)) - start)
        return f"{head}:\n    {stripped}\n    {' ' * start}{'^' * width}"


class FieldsimError(Exception):
    """Base class: a message plus the location(s) it is about."""

    def __init__(self, message: str, loc: Loc | None = None, related: tuple = ()):
        self.message, self.loc, self.related = message, loc, tuple(related)
        super().__init__(self.render())

    def render(self) -> str:
        parts = []
        if self.loc is not None:
            parts.append(self.loc.render())
        parts.append(self.message)
        for label, loc in self.related:
            parts.append(f"{label}:\n{loc.render()}")
        return "\n".join(parts)

    def __str__(self) -> str:
        return self.render()


class FieldsimCompilationError(FieldsimError):
    """A kernel or func that cannot be compiled (Taichi's `TaichiCompilationError`).

    The message names the kernel and the user's file:line.

    >>> issubclass(fs.FieldsimTypeError, fs.FieldsimCompilationError)
    True
    """


class FieldsimSyntaxError(FieldsimCompilationError, SyntaxError):
    """Python syntax a kernel does not support, located at the user's line (`TaichiSyntaxError`).

    >>> @fs.kernel
    ... def bad():
    ...     try:
    ...         pass
    ...     except ValueError:
    ...         pass
    >>> try:
    ...     bad()
    ... except fs.FieldsimSyntaxError as e:
    ...     print(type(e).__name__)
    FieldsimSyntaxError
    """
    def __init__(self, message: str, loc: Loc | None = None, related: tuple = ()):
        FieldsimError.__init__(self, message, loc, related)
        self.msg = self.render()
        if loc is not None:
            self.filename, self.lineno, self.text, self.offset = loc.file, loc.line, loc.source, loc.col + 1

    def __str__(self) -> str:
        return self.render()


class FieldsimTypeError(FieldsimCompilationError, TypeError):
    """A type mismatch found while compiling: wrong dtype, shape or argument (`TaichiTypeError`).

    >>> issubclass(fs.FieldsimTypeError, TypeError)
    True
    """


class FieldsimNameError(FieldsimCompilationError, NameError):
    """An undefined name used in a kernel (`TaichiNameError`).

    >>> issubclass(fs.FieldsimNameError, NameError)
    True
    """


class FieldsimRuntimeError(FieldsimError, RuntimeError):
    """An error while a kernel runs or is launched, e.g. wrong arguments (`TaichiRuntimeError`).

    >>> issubclass(fs.FieldsimRuntimeError, RuntimeError)
    True
    """


class FieldsimIndexError(FieldsimError, IndexError):
    """An out-of-range index found by fieldsim (`TaichiIndexError`); also an `IndexError`.

    >>> issubclass(fs.FieldsimIndexError, IndexError)
    True
    """


class FieldsimValueError(FieldsimError, ValueError):
    """A bad value given to a Python-scope call (a shape, an array, a fill value); also a
    `ValueError`.

    >>> issubclass(fs.FieldsimValueError, ValueError)
    True
    """


class MissingMemberError(FieldsimValueError, KeyError):
    """A struct field's `from_numpy` dict without one of its members: Taichi's KeyError (it
    reads `data[member]`), still the ValueError fieldsim raised before."""

    def __str__(self) -> str:  # KeyError's own __str__ would quote the message
        return self.render()


class FieldShapeError(FieldsimValueError, FieldsimRuntimeError):
    """A field shape with an empty or negative extent: the ValueError fieldsim raises for bad
    shapes, and the RuntimeError Taichi raises there (`ti._lib.core.TaichiRuntimeError`)."""


class FieldsimOverflowError(FieldsimError, OverflowError):
    """A Python-scope value out of its type's range where Taichi raises NumPy's OverflowError."""


class FieldsimMemoryError(FieldsimError, MemoryError):
    """A field's storage could not be allocated; also a `MemoryError`."""


class MissingModuleError(FieldsimError, ModuleNotFoundError):
    """An optional package a call needs (PyTorch for `to_torch`) is not installed; still the
    `ModuleNotFoundError` Taichi raises, so `except ImportError` catches it.

    >>> issubclass(fs.errors.MissingModuleError, ImportError)
    True
    """


class ADStackOverflowError(FieldsimRuntimeError):
    """A reverse-mode loop needed more adstack entries than `fs.init(ad_stack_size=...)` allows.

    >>> issubclass(fs.ADStackOverflowError, fs.FieldsimRuntimeError)
    True
    """


class FieldsimAssertionError(FieldsimRuntimeError, AssertionError):
    """A kernel `assert` failed (checked when fs.init(debug=True)). Also a `RuntimeError`, as
    Taichi's `TaichiAssertionError` is, so `except RuntimeError:` catches a failed debug check.

    >>> issubclass(fs.TaichiAssertionError, (RuntimeError, fs.TaichiRuntimeError))
    True
    """


class AccessRuleError(FieldsimAssertionError):
    """A global data access rule is broken: names the rule, kernel(s), field, and both places.

    An assertion error, as Taichi's own checker (`Tape(validation=True)`) reports a broken rule
    with a `TaichiAssertionError`: `pytest.raises(ti.TaichiAssertionError)` catches it."""


# Errors that are two things at once, so that a program catching either Taichi 1.7.4's class
# for the mistake or fieldsim's long-standing class for it catches them.

class IndexCountError(FieldsimSyntaxError, FieldsimIndexError):
    """A field indexed in a kernel with the wrong number of indices; Taichi raises a
    `TaichiIndexError` for it.

    >>> issubclass(fs.errors.IndexCountError, (fs.TaichiIndexError, fs.FieldsimSyntaxError))
    True
    """


class KernelIndexRangeError(FieldsimIndexError, FieldsimAssertionError):
    """An index outside a field's range, found by a kernel built with fs.init(debug=True); Taichi's
    bounds check raises a `TaichiAssertionError` for it.

    >>> issubclass(fs.errors.KernelIndexRangeError, fs.TaichiAssertionError)
    True
    """


class HostIndexRangeError(FieldsimIndexError, FieldsimAssertionError):
    """A Python-scope `x[i]` outside a field's range (always checked here); Taichi 1.7.4 checks
    it with debug=True only, raising an `AssertionError`, so either `except` catches this.

    >>> issubclass(fs.errors.HostIndexRangeError, (IndexError, AssertionError))
    True
    """


class ArgumentCountError(FieldsimTypeError, FieldsimSyntaxError):
    """A kernel or func called with too many or too few arguments (Taichi: `TaichiSyntaxError`).

    >>> issubclass(fs.errors.ArgumentCountError, (TypeError, fs.TaichiSyntaxError))
    True
    """


class AnnotationError(FieldsimTypeError, FieldsimSyntaxError):
    """A kernel parameter annotated with what no argument can have (`list`, `np.ndarray`), or
    a kernel decorator over a func (Taichi: `TaichiSyntaxError`).

    >>> issubclass(fs.errors.AnnotationError, (TypeError, fs.TaichiSyntaxError))
    True
    """


class PythonScopeError(FieldsimSyntaxError):
    """A Python-scope-only call (making a field, `x.to_numpy()`) reached from a kernel or func
    while it compiles; located at the kernel's line that makes it (Taichi refuses these too).

    >>> issubclass(fs.errors.PythonScopeError, fs.TaichiCompilationError)
    True
    """


class IntPowerError(FieldsimTypeError, FieldsimRuntimeError):
    """An integer raised to a constant negative power: refused while compiling (Taichi's
    simplifier raises a `RuntimeError` there; fieldsim's is also the `TypeError` it was).

    >>> issubclass(fs.errors.IntPowerError, (TypeError, RuntimeError))
    True
    """


class ArgumentTypeError(FieldsimTypeError, FieldsimRuntimeError):
    """A kernel argument of the wrong kind or type (Taichi: `TaichiRuntimeTypeError`).

    >>> issubclass(fs.errors.ArgumentTypeError, fs.TaichiRuntimeTypeError)
    True
    """


class RuntimeValueError(FieldsimSyntaxError, FieldsimTypeError):
    """A kernel's runtime value where Python needs a number now: a Python function (`math.sin`)
    called with one, or a bound of `fs.static(range(...))` (Taichi: `TaichiTypeError`).

    >>> issubclass(fs.errors.RuntimeValueError, (SyntaxError, fs.TaichiTypeError))
    True
    """


class CompileTypeError(FieldsimSyntaxError, FieldsimTypeError):
    """A Python `TypeError` raised while a kernel compiles one of its expressions: an operator
    on a whole field (`x / 2` for `x[None] / 2`), `len(3)` (Taichi: `TaichiTypeError`).

    >>> issubclass(fs.errors.CompileTypeError, (SyntaxError, fs.TaichiTypeError, TypeError))
    True
    """


class SwizzleError(FieldsimSyntaxError, FieldsimTypeError):
    """A swizzle naming a component the vector does not have, `v.z` of a 2-vector, in Python
    scope or a kernel (Taichi: `TaichiSyntaxError`).

    >>> issubclass(fs.errors.SwizzleError, (fs.TaichiSyntaxError, TypeError))
    True
    """
