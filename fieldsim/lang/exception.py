"""Taichi's exception names (`ti.TaichiCompilationError`, ...), as fieldsim's own classes.

A Taichi program catches `ti.TaichiTypeError`; fieldsim raises `FieldsimTypeError`. Each Taichi
name is bound to the fieldsim class that plays its part, so `except ti.TaichiTypeError` catches
what fieldsim raises (and `pytest.raises(TypeError)` keeps working, as every class is also the
matching Python built-in).
"""
from fieldsim.errors import (
                             FieldsimAssertionError,
                             FieldsimCompilationError,
                             FieldsimError,
                             FieldsimIndexError,
                             FieldsimNameError,
                             FieldsimRuntimeError,
                             FieldsimSyntaxError,
                             FieldsimTypeError,
)

TaichiError = FieldsimError
TaichiCompilationError = FieldsimCompilationError
TaichiSyntaxError = FieldsimSyntaxError
TaichiTypeError = FieldsimTypeError
TaichiNameError = FieldsimNameError
TaichiRuntimeError = FieldsimRuntimeError
TaichiAssertionError = FieldsimAssertionError
TaichiIndexError = FieldsimIndexError
TaichiRuntimeTypeError = FieldsimRuntimeError

__all__ = [
                             "TaichiAssertionError",
                             "TaichiCompilationError",
                             "TaichiError",
                             "TaichiIndexError",
                             "TaichiNameError",
                             "TaichiRuntimeError",
                             "TaichiRuntimeTypeError",
                             "TaichiSyntaxError",
                             "TaichiTypeError",
]
