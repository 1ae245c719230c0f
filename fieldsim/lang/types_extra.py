"""What Taichi has on `ti.types` that fieldsim refuses clearly: `ti.types.quant`
(quantized types). (The type predicates `is_integral`, `is_real`,
`is_signed` and `primitive_types` live in `fieldsim.lang.types`.)

Guarantees a `FieldsimTypeError` naming the missing thing and the user's line, in either scope,
rather than a missing name or a silently wrong layout.
"""
from __future__ import annotations

from types import SimpleNamespace

from fieldsim.errors import FieldsimTypeError


def _unsupported(kind):
    def make(*args, **kwargs):
        from fieldsim.lang.compat import user_loc as _user_loc
        raise FieldsimTypeError(
            f"ti.types.quant.{kind} (quantized types stored in bit-packed fields) is not "
            "supported by fieldsim; use a primitive type such as ti.i8/ti.i16/ti.f16", _user_loc())
    make.__name__ = kind
    return make


quant = SimpleNamespace(int=_unsupported("int"), fixed=_unsupported("fixed"),
                        float=_unsupported("float"))
