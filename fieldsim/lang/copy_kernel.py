"""`Field.copy_from` on a recording Tape: Taichi's copy is a kernel, which its Tape records and
differentiates (the source's gradient gets the copy's); fieldsim's array copy was a Python-scope
write, which cut the chain silently (x.grad 0 for `a.copy_from(x)`; gh-regress9). The same for
`fs.ndarray`s on either side (Taichi differentiates `nd.copy_from(nd2)`; fieldsim also takes a
field and an ndarray together), a vector field's component (`get_scalar_field`), and a copy in
a FwdMode block, whose tangent the plain copy dropped too (gh-copynd). A copy the kernel cannot
do, from a source with a gradient into a float destination, is refused rather than cutting the
chain."""
from __future__ import annotations

from fieldsim.errors import FieldsimRuntimeError
from fieldsim.lang import runtime
from fieldsim.lang.field import ComponentField, Field
from fieldsim.lang.kernel import kernel, template
from fieldsim.lang.ndarray import Ndarray
from fieldsim.lang.ops import grouped
from fieldsim.lang.sparse import field_path


@kernel
def _copy_field(dst: template(), src: template()):
    for i in grouped(dst):
        dst[i] = src[i]


def copy_on_tape(dst, src) -> bool:
    """Copy by `_copy_field` where a Tape (or FwdMode) records it and the gradient can flow:
    both plain dense fields, ndarrays or components of one shape, the destination float and the
    source float with a gradient (a dual in FwdMode). False where no gradient can flow (the caller copies as before);
    raises where one would but the kernel cannot carry it."""
    rt = runtime.get()
    if rt.no_grad_depth or (rt.tape is None and rt.fwd_mode is None):
        return False
    if _gradient(src, rt.fwd_mode is not None) is None \
            or not (dst.dtype.is_float and src.dtype.is_float):
        return False  # nothing flows: the copy overwrites `dst`, as a plain write does
    why = _why_not(dst) or _why_not(src)
    if why is None and dst.shape != src.shape:
        why = f"their index shapes differ ({dst.shape} and {src.shape})"
    if why is not None:
        raise FieldsimRuntimeError(
            f"{dst.ir_name}.copy_from({src.ir_name}) under a recording fs.ad.Tape or FwdMode "
            f"cannot be differentiated: {why}, and a plain copy would silently drop the derivative of "
            f"{src.ir_name!r}. Copy in a kernel of your own (`for I in ti.grouped(dst): "
            f"dst[I] = src[I]`), or under fs.ad.no_grad if no gradient should flow")
    _copy_field(dst, src)
    return True


def _gradient(x, forward: bool):
    """The twin a Tape (or, `forward`, a FwdMode block) carries through the copy, or None."""
    owner = x.owner if type(x) is ComponentField else x
    return owner.tangent if forward else owner.adjoint


def _why_not(x) -> str | None:
    """Why `_copy_field` cannot copy `x` as Taichi's copy kernel would, or None."""
    if not (type(x) in (Field, ComponentField) or isinstance(x, Ndarray)):
        return f"{x.ir_name!r} is a {type(x).__name__}"
    if field_path(x.owner if type(x) is ComponentField else x):
        # a struct-for copies active cells only, Taichi's copy activates every cell
        return f"{x.ir_name!r} is under sparse SNodes"
    return None
