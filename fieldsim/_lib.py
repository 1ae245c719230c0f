"""`ti._lib.core`: the questions Taichi programs ask Taichi's C++ extension about its build.

Taichi's own examples pick their backend with `ti._lib.core.with_vulkan()` or `with_cuda()` and
test `_ti_core.GGUI_AVAILABLE`. fieldsim has no C++ extension; this answers those questions for
fieldsim's build (no Vulkan, Metal, OpenGL or DirectX; CUDA where a device works) so such programs
run, and names its `TaichiRuntimeError` (fieldsim's `FieldsimRuntimeError`, which the errors
Taichi raises from C++ are in fieldsim), and its `DataType` (`taichi._lib.core.taichi_python.DataType`,
the class of `ti.f32`). Nothing else of Taichi's private extension is imitated.
"""
from __future__ import annotations

import sys
from types import ModuleType

from fieldsim.errors import FieldsimRuntimeError
from fieldsim.ir.dtypes import DataType


def _with_cuda() -> bool:
    from fieldsim.lang.runtime import cuda, is_arch_supported
    return is_arch_supported(cuda)


def _version() -> str:
    from fieldsim import __version__
    return __version__


# In Taichi `ti._lib.core` is the extension module `taichi._lib.core.taichi_python` itself;
# libraries import its `DataType` (the class of `ti.f32`) to test `isinstance(dtype, DataType)`.
core = ModuleType(f"{__name__}.core.taichi_python", "Taichi's C++ extension, as far as programs ask it")
core.__path__ = []
core.__dict__.update(
    DataType=DataType,
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
__path__: list = []  # a package, so `import taichi._lib.core.taichi_python` resolves
core.taichi_python = core
sys.modules[f"{__name__}.core"] = sys.modules[core.__name__] = core
