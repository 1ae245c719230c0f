"""Python-scope calls on fields: their plain errors reach the user located at the user's line.

Takes classes whose public methods serve Python-scope calls (`x[i]`, `x[i] = v`,
`x.from_numpy(a)`, `x.fill(v)`, ...) and module-level constructors (`fs.field(...)`).
Guarantees: an `IndexError`, `TypeError` or `ValueError` raised while fieldsim serves such a
call reaches the caller as `FieldsimIndexError`, `FieldsimTypeError` or `FieldsimValueError`
(still the same built-in class, the same message) rendered with the user's file and line, and
fieldsim's own frames are dropped from its traceback; fieldsim's own errors (already located)
and every other exception pass through unchanged, except that fieldsim's own errors also lose
fieldsim's frames (and get the user's line if they had none). Nested calls convert once, at the
innermost boundary, with the same user line; outer boundaries drop the frames in between. Subclasses of a wrapped class get their own public methods
wrapped too (`located_subclasses`).
"""
from __future__ import annotations

import functools

from fieldsim.errors import FieldsimError, FieldsimIndexError, FieldsimTypeError, FieldsimValueError
from fieldsim.lang.naming import user_loc

# the most specific built-in first: numpy's AxisError is both a ValueError and an IndexError
_LOCATED = ((IndexError, FieldsimIndexError), (TypeError, FieldsimTypeError),
            (ValueError, FieldsimValueError))
_DUNDERS = ("__getitem__", "__setitem__", "__init__", "__iter__")


def _located(err: Exception) -> FieldsimError:
    kind = next(located for builtin, located in _LOCATED if isinstance(err, builtin))
    return kind(str(err), user_loc())


def at_user_line(fn):
    """Wrap `fn` (a function or method) so its plain errors are located (module docstring)."""
    if getattr(fn, "_at_user_line", False):
        return fn

    @functools.wraps(fn)
    def call(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except FieldsimError as err:  # fieldsim's own (or an inner boundary's): frames dropped
            if err.loc is None:
                err.loc = user_loc()
            raise err.with_traceback(None) from None
        except (IndexError, TypeError, ValueError) as err:
            located = _located(err)
            located.internal = err  # the original, with fieldsim's frames, for debugging fieldsim
            raise located.with_traceback(None) from None

    call._at_user_line = True
    return call


def _wrap_members(cls):
    for name, member in list(vars(cls).items()):
        public = not name.startswith("_") or name in _DUNDERS
        if public and callable(member) and not isinstance(member, (type, staticmethod,
                                                                   classmethod)):
            setattr(cls, name, at_user_line(member))
    return cls


def located_subclasses(cls):
    """Class decorator: wrap `cls`'s public methods (and `__getitem__`, `__setitem__`,
    `__init__`, `__iter__`), and those every subclass defines."""
    _wrap_members(cls)
    previous = cls.__dict__.get("__init_subclass__")

    def init_subclass(sub, **kwargs):
        if previous is not None:
            previous.__func__(sub, **kwargs)
        else:
            super(cls, sub).__init_subclass__(**kwargs)
        _wrap_members(sub)

    cls.__init_subclass__ = classmethod(init_subclass)
    return cls
