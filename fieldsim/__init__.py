"""fieldsim: a field-based differentiable simulation language, compiled with LLVM.

`import fieldsim as ti` runs a DiffTaichi-style program: fields, `@kernel`s whose outermost loops
run in parallel, `@func`s, and reverse/forward-mode autodiff with statically checked access rules.
"""
from fieldsim import errors
from fieldsim.errors import (AccessRuleError, FieldsimCompilationError, FieldsimError,
                             FieldsimIndexError, ADStackOverflowError, FieldsimNameError,
                             FieldsimRuntimeError, FieldsimSyntaxError, FieldsimTypeError,
                             FieldsimAssertionError, FieldsimValueError)
from fieldsim.lang import types
from fieldsim.lang.field import Field, MatrixField, ScalarField, field
from fieldsim.lang.snode import (FieldsBuilder, SNode, axes, i, ij, ijk, ijkl, ijl, ik, ikl, il,
                                  j, jk, jkl, jl, k, kl, l, root)
from fieldsim.lang.kernel import (Func, KernelObj, data_oriented, func, kernel, pyfunc, real_func,
                                  template)
from fieldsim.lang.matrix import Matrix, Vector
from fieldsim.lang.struct import Struct, StructField, dataclass
from fieldsim.lang import argpack  # `ti.argpack`: Taichi's module of that name
from fieldsim.lang.argpack import ArgPack
from fieldsim.lang.extra_ops import global_thread_idx, static_assert
from fieldsim.lang.addresses import get_addr
from fieldsim.lang.sparse_ops import (activate, append, deactivate, deactivate_all_snodes,
                                      is_active, length, rescale_index)
from fieldsim.lang import math
from fieldsim.lang.ops_int import bit_cast, bit_sar, bit_shl, bit_shr, frexp, raw_div, raw_mod
from fieldsim.lang import ops_logic  # `ti.lang.ops.cmp_eq`-style names, registered on import
from fieldsim.lang.ops import (abs, acos, asin, atan, atan2, atomic_add, atomic_and, atomic_max,
                               atomic_min, atomic_mul, atomic_or, atomic_sub, atomic_xor, cast,
                               ceil, cos, exp, floor, grouped, log, loop_config, max, min,
                               ndrange, one, pow, random, round, rsqrt, select, sin, sqrt, static,
                               static_print, tan, tanh, zero)
from fieldsim.lang.runtime import (CRITICAL, DEBUG, ERROR, INFO, TRACE, WARN, amdgpu, arm64, cfg, cpu,
                                   cuda, dx11, dx12, gles, gpu, init, is_arch_supported,
                                   is_logging_effective, metal, opengl, reset, set_logging_level,
                                   sync, vulkan, x64, x86_64)
from fieldsim.lang.enums import DeviceCapability, Layout, extension
from fieldsim.lang.lang_builtins import randn
from fieldsim.lang.func_args import ref
from fieldsim.lang.exception import (TaichiAssertionError, TaichiCompilationError, TaichiError,
                                     TaichiIndexError, TaichiNameError, TaichiRuntimeError,
                                     TaichiRuntimeTypeError, TaichiSyntaxError, TaichiTypeError)
from fieldsim.lang.types import (f16, f32, f64, float16, float32, float64, i8, i16, i32, i64,
                                 int8, int16, int32, int64, u1, u8, u16, u32, u64, uint8, uint16,
                                 uint32, uint64)
uint1 = u1
from fieldsim.gui import GUI
from fieldsim import ui
from fieldsim import tools
from fieldsim import algorithms
from fieldsim import experimental
import fieldsim.lang.impl  # `ti.lang.impl`, which libraries reach into, is there at import
from fieldsim.lang import profiler
from fieldsim.tools import hex_to_rgb, rgb_to_hex
from fieldsim import ad
from fieldsim.ad import Tape
from fieldsim.lang.stop_grad import stop_grad
from fieldsim.lang.hints import assume_in_range, block_local, cache_read_only, no_activate
from fieldsim.lang.mesh import Mesh, MeshInstance, TetMesh, TriMesh
from fieldsim.lang.mesh_kernel import mesh_local, mesh_patch_idx

from fieldsim.lang.ndarray import MatrixNdarray, Ndarray, ScalarNdarray, VectorNdarray, ndarray
from fieldsim.lang import _ndarray  # `ti.lang._ndarray.ScalarNdarray`
from fieldsim.lang.texture import Format, Texture
from fieldsim.lang.quant import BitpackedFields

from fieldsim.lang import interop as _interop

_interop.install()  # to_torch/from_torch/__dlpack__ on fields and ndarrays
from_dlpack = _interop.from_dlpack

from fieldsim import linalg
from fieldsim.lang.triplets import sparse_matrix_builder

polar_decompose = linalg.polar_decompose
svd = linalg.svd
solve = linalg.solve
from fieldsim.eigen import eig, sym_eig

import fieldsim.runtime
from fieldsim import _lib
from fieldsim import graph

import sys as _sys

# `import fieldsim.math as tm` and `from fieldsim.types import ndarray`, as Taichi programs write
# `import taichi.math`: the modules behind `fs.math` and `fs.types` answer to those names too.
_sys.modules[__name__ + ".math"] = math
# Taichi's `taichi.math.mathimpl` holds its math functions; programs import them from there
_sys.modules[__name__ + ".math.mathimpl"] = math.mathimpl = math
_sys.modules[__name__ + ".types"] = types
from fieldsim import _submodules

_submodules.install(__name__)  # `ti.linalg.sparse_solver`, `ti.types.ndarray_type`, ...
_submodules.install_internals(__name__)  # `taichi.lang.kernel_impl`, `taichi._logging`, ...

from fieldsim.version import __version__

from fieldsim.lang import compat as _compat

__getattr__ = _compat.module_getattr  # Taichi names fieldsim lacks: a clear, located error

from fieldsim import _docstrings

_docstrings._apply({**{f'fs.{n}': v for n, v in globals().items()}, 'fs.DataType': type(f32),
                     'fs.Axis': type(i), **{f'fs.ad.{n}': getattr(ad, n) for n in dir(ad)},
                     **{f'fs.types.{n}': getattr(types, n) for n in dir(types)},
                     **{f'fs.math.{n}': getattr(math, n) for n in math.__all__}})
