"""`ti._lib.core`: the questions Taichi programs ask Taichi's C++ extension about its build.

Taichi's own examples pick their backend with `ti._lib.core.with_vulkan()` or `with_cuda()` and
test `_ti_core.GGUI_AVAILABLE`. fieldsim has no C++ extension; this answers those questions for
fieldsim's build (no Vulkan, Metal, OpenGL or DirectX; CUDA where a device works) so such programs
run, and names its `TaichiRuntimeError` (fieldsim's `FieldsimRuntimeError`, which the errors
Taichi raises from C++ are in fieldsim). Nothing else of Taichi's private extension is imitated.
"""
from __future__ import annotations

from types import SimpleNamespace

from fieldsim.errors import FieldsimRuntimeError


def _with_cuda() -> bool:
    from fieldsim.lang.runtime import cuda, is_arch_supported
    return is_arch_supported(cuda)


def _version() -> str:
    from fieldsim import __version__
    return __version__


core = SimpleNamespace(
    with_cuda=_with_cuda,
    with_vulkan=lambda: False,
    with_metal=lambda: False,
    with_opengl=lambda: False,
    with_gles=lambda: False,
    with_dx11=lambda: False,
    with_dx12=lambda: False,
    with_amdgpu=lambda: False,
    GGUI_AVAILABLE=False,
    get_version_string=_version,
    # the extension's exception class: what fieldsim raises where Taichi's C++ runtime raises it
    TaichiRuntimeError=FieldsimRuntimeError,
)
