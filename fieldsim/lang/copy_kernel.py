"""`Field.copy_from` on a recording Tape: Taichi's copy is a kernel, which its Tape records and
differentiates (the source's gradient gets the copy's); fieldsim's array copy was a Python-scope
write, which cut the chain silently (x.grad 0 for `a.copy_from(x)`; gh-regress9)."""
from __future__ import annotations

from fieldsim.lang import runtime
from fieldsim.lang.field import Field
from fieldsim.lang.kernel import kernel, template
from fieldsim.lang.ops import grouped
from fieldsim.lang.sparse import field_path


@kernel
def _copy_field(dst: template(), src: template()):
    for i in grouped(dst):
        dst[i] = src[i]


def copy_on_tape(dst, src) -> bool:
    """Copy by `_copy_field` where a Tape records it and the gradient can flow: both plain
    dense fields of one shape, element shape and float dtype, the source with a gradient.
    False otherwise (the caller copies as before)."""
    rt = runtime.get()
    if rt.tape is None or rt.no_grad_depth or rt.fwd_mode is not None:
        return False
    if type(dst) is not Field or type(src) is not Field or src.adjoint is None \
            or dst.shape != src.shape or dst.storage_shape != src.storage_shape \
            or not (dst.dtype.is_float and src.dtype.is_float) or field_path(dst) or field_path(src):
        return False
    _copy_field(dst, src)
    return True
