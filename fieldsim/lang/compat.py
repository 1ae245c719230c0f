"""What `import fieldsim as ti` says about Taichi names it does not have.

Takes an attribute name missing from the `fieldsim` module (the module's `__getattr__`).
Guarantees: a Taichi 1.7 name fieldsim deliberately lacks raises `FieldsimAttributeError` saying
what Taichi feature it belongs to and that fieldsim does not support it, located at the user's
line; any other missing name raises the same class with Python's usual wording. The class is an
`AttributeError`, so `hasattr`/`getattr(ti, name, default)` keep working. docs/COMPAT.md lists the
same names.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimError
from fieldsim.lang.naming import user_loc  # the user's line (tape, types_extra, matrix import it here)


class FieldsimAttributeError(FieldsimError, AttributeError):
    """A name `fieldsim` does not have (a Taichi feature it lacks, or a typo)."""


# Taichi 1.7 public names of features fieldsim does not have, and what they belong to.
UNSUPPORTED = {
    "aot": "ahead-of-time modules for deployment",
    "simt": "warp/subgroup intrinsics of GPU backends",
}


# names of Taichi before 1.0 that Taichi 1.7 no longer has either, and their replacements
REMOVED = {
    "ext_arr": "ti.types.ndarray()",
    "any_arr": "ti.types.ndarray()",
    "var": "ti.field",
}


def module_getattr(name: str):
    if name.startswith("_"):  # probes by tools (`__wrapped__`, `_pytest...`): plain and quiet
        raise AttributeError(f"module 'fieldsim' has no attribute {name!r}")
    what = UNSUPPORTED.get(name)
    if name in REMOVED:
        msg = (f"ti.{name} was removed before Taichi 1.0 (Taichi 1.7 has no such name either); "
               f"use {REMOVED[name]}")
    elif what is not None:
        msg = (f"fieldsim does not support ti.{name}: it belongs to {what}. "
               "See docs/COMPAT.md for what fieldsim supports instead.")
    else:
        msg = (f"module 'fieldsim' has no attribute {name!r} (if it is a Taichi name, "
               "docs/COMPAT.md says whether fieldsim has it)")
    raise FieldsimAttributeError(msg, user_loc())
