"""What Taichi has on `ti` that fieldsim refuses clearly: `ti.sym_eig`/`ti.eig`. (The type
predicates `is_integral`, `is_real`, `is_signed` and `primitive_types` live in
`fieldsim.lang.types`; quantized types in `fieldsim.lang.quant_types`.)

Guarantees a `FieldsimTypeError` naming the missing thing and the user's line, in either scope,
rather than a missing name or a silently wrong layout.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimTypeError


# ---- linear algebra Taichi has and fieldsim does not (yet): a clear error in both scopes -----
def _unsupported_linalg(name, hint):
    from fieldsim.lang import ops

    def fn(*args, **kwargs):
        from fieldsim.lang.compat import user_loc as _user_loc
        raise FieldsimTypeError(f"ti.{name} is not supported by fieldsim; {hint}", _user_loc())

    def kernel(fe, node, args, kw):
        raise FieldsimTypeError(f"ti.{name} is not supported by fieldsim; {hint}")

    fn.__name__ = name
    ops.KERNEL_BUILTINS[fn] = kernel
    return fn


sym_eig = _unsupported_linalg("sym_eig", "use ti.svd (for a symmetric positive semi-definite "
                                         "matrix its singular values are the eigenvalues)")
eig = _unsupported_linalg("eig", "use ti.svd or ti.polar_decompose")
