"""`taichi.lang.impl`'s names that Taichi programs import directly (`from taichi.lang.impl import
field, static, current_cfg`): the same objects fieldsim exposes at its top level.

Taichi's internal helpers here (`call_internal`, `expr_init`, `get_runtime`) have no fieldsim
counterpart: the names import, so a program that only imports them runs, and a call raises
`FieldsimError` naming the helper.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimError
from fieldsim.lang.field import Field, field
from fieldsim.lang.ndarray import ndarray
from fieldsim.lang.ops import grouped, static
from fieldsim.lang.runtime import cfg
from fieldsim.lang.snode import root

__all__ = ["Field", "call_internal", "current_cfg", "default_cfg", "expr_init", "field",
           "get_runtime", "grouped", "ndarray", "root", "static"]


def current_cfg():
    """The options of the current `init` (Taichi's `impl.current_cfg()`; fieldsim's `fs.cfg`)."""
    return cfg


default_cfg = current_cfg


def _internal(name: str):
    def refuse(*_args, **_kwargs):
        raise FieldsimError(f"taichi.lang.impl.{name} is Taichi's internal helper; fieldsim has no "
                            f"counterpart (use the public API)")
    refuse.__name__ = name
    return refuse


call_internal = _internal("call_internal")
expr_init = _internal("expr_init")
get_runtime = _internal("get_runtime")
