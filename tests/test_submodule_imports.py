"""How Taichi programs import and probe the package: `import taichi.math as tm`, `from
taichi.types import ndarray`, `ti._lib.core.with_vulkan()`, `ti.is_arch_supported`, logging."""
import numpy as np
import pytest

import fieldsim as fs


def test_math_module_imports_and_works_in_a_kernel():
    import fieldsim.math as tm
    from fieldsim.math import clamp, vec3
    assert tm is fs.math
    fs.init(arch=fs.cpu)
    out = fs.Vector.field(3, fs.f32, shape=2)

    @fs.kernel
    def k():
        for i in out:
            out[i] = clamp(vec3(i - 0.5, 2.0, -3.0), 0.0, 1.0) + tm.vec3(0, 0, i)

    k()
    np.testing.assert_allclose(out.to_numpy(), [[0, 1, 0], [0.5, 1, 1]])


def test_types_module_imports_for_annotations():
    from fieldsim.types import ndarray, vector
    assert vector is fs.types.vector and vector(2, fs.f32).n == 2
    fs.init(arch=fs.cpu)

    @fs.kernel
    def double(a: ndarray(dtype=fs.f32, ndim=1)):
        for i in a:
            a[i] *= 2

    a = np.arange(4, dtype=np.float32)
    double(a)
    np.testing.assert_array_equal(a, [0, 2, 4, 6])


def test_build_questions_of_taichis_extension():
    core = fs._lib.core
    assert core.with_vulkan() is False and core.with_metal() is False
    assert core.with_cuda() == fs.is_arch_supported(fs.cuda)
    assert core.GGUI_AVAILABLE is False
    assert core.get_version_string() == fs.__version__


def test_is_arch_supported():
    assert fs.is_arch_supported(fs.cpu) and fs.is_arch_supported(fs.x64)
    assert not fs.is_arch_supported(fs.vulkan) and not fs.is_arch_supported(fs.metal)


def test_logging_level_is_kept_and_checked():
    try:
        fs.set_logging_level(fs.ERROR)
        assert not fs.is_logging_effective(fs.WARN)
        assert fs.is_logging_effective(fs.CRITICAL)
        fs.set_logging_level(fs.TRACE)
        assert fs.is_logging_effective(fs.DEBUG)
    finally:
        fs.set_logging_level(fs.INFO)
    with pytest.raises(ValueError, match="unknown logging level 'loud'"):
        fs.set_logging_level("loud")


def test_lang_impl_names_programs_import():
    from fieldsim.lang.impl import call_internal, current_cfg, field, static
    fs.init(arch=fs.cpu, debug=True)
    assert current_cfg().debug is True
    x = field(fs.i32, shape=3)

    @fs.kernel
    def fill():
        for i in static(range(3)):
            x[i] = i * 2

    fill()
    np.testing.assert_array_equal(x.to_numpy(), [0, 2, 4])
    with pytest.raises(fs.FieldsimError, match="call_internal"):
        call_internal("x")
    fs.init(arch=fs.cpu)


def test_math_mathimpl_module_as_taichi_programs_import_it():
    # JulesLePrince/taichi_raytracer: `from taichi.math.mathimpl import dot, sign`
    import fieldsim.math.mathimpl as impl
    from fieldsim.math.mathimpl import dot, normalize, sign
    assert impl is fs.math and dot is fs.math.dot
    fs.init(arch=fs.cpu)
    out = fs.Vector.field(3, fs.f32, shape=2)

    @fs.kernel
    def k():
        for i in out:
            n = fs.math.vec3(0.0, 1.0, 0.0)
            d = normalize(fs.math.vec3(1.0, 2.0 * i - 1.0, 2.0))
            out[i] = sign(dot(d, n)) * d

    k()
    r = 6 ** -0.5  # |(1, +-1, 2)| = sqrt(6); sign(d . n) = +-1 flips the first
    np.testing.assert_allclose(out.to_numpy(), [[-r, r, -2 * r], [r, r, 2 * r]], rtol=1e-6)


def test_taichi_linalg_and_types_submodules_import_by_name():
    """Programs write `from taichi.linalg.sparse_matrix import SparseMatrixBuilder` and
    `isinstance(anno, ti.types.ndarray_type.NdarrayType)`: the same objects as fieldsim's."""
    from fieldsim.linalg.sparse_matrix import SparseMatrix, SparseMatrixBuilder
    from fieldsim.linalg.sparse_solver import SparseSolver
    from fieldsim.types.ndarray_type import NdarrayType
    from fieldsim.types.texture_type import RWTextureType, TextureType
    assert SparseMatrix is fs.linalg.SparseMatrix and SparseMatrixBuilder is fs.linalg.SparseMatrixBuilder
    assert SparseSolver is fs.linalg.sparse_solver.SparseSolver is fs.linalg.SparseSolver
    assert fs.linalg.sparse_cg.SparseCG is fs.linalg.SparseCG
    assert fs.linalg.matrixfree_cg.MatrixFreeCG is fs.linalg.MatrixFreeCG
    assert fs.linalg.sparse_matrix.sparse_matrix_builder is fs.types.sparse_matrix_builder
    anno = fs.types.ndarray(fs.f32, ndim=2)
    assert isinstance(anno, NdarrayType) and anno.ndim == 2 and anno.dtype == fs.f32
    assert fs.types.ndarray_type.ndarray is fs.types.ndarray
    assert fs.types.compound_types.vector is fs.types.vector
    assert fs.types.compound_types.matrix is fs.types.matrix
    assert fs.types.compound_types.struct is fs.types.struct
    assert TextureType is fs.types.texture and RWTextureType is fs.types.rw_texture
    assert fs.types.ref is fs.ref
    fs.init(arch=fs.cpu)

    @fs.func
    def bump(x: fs.types.ref(fs.f32)):
        x += 1.0

    @fs.kernel
    def k() -> fs.f32:
        y = 1.0
        bump(y)
        return y

    assert k() == 2.0


def test_default_fp_to_string_as_programs_compare_it():
    # `ti.lang.impl.current_cfg().default_fp.to_string() == "f32"` picks precision in programs
    from fieldsim.lang.impl import current_cfg
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    assert current_cfg().default_fp.to_string() == "f64"
    assert [t.to_string() for t in (fs.f32, fs.i64, fs.u1)] == ["f32", "i64", "u1"]


def test_taichi_internal_module_paths_libraries_import_from():
    # libraries write `from taichi.lang.kernel_impl import Kernel`, `from taichi.lang.matrix
    # import MatrixField`, ...: the modules import and hold fieldsim's own objects
    from fieldsim._snode.snode_tree import SNodeTree
    from fieldsim.lang.field import ScalarField
    from fieldsim.lang.impl import axes
    from fieldsim.lang.kernel_impl import Kernel, func, kernel
    from fieldsim.lang.matrix import MatrixField, VectorNdarray
    from fieldsim.lang.misc import get_host_arch_list, ij, reset
    from fieldsim.lang.snode import is_active
    from fieldsim.types.annotations import template
    from fieldsim.types.primitive_types import f32, i32, real_types
    fs.init(arch=fs.cpu)
    assert (kernel, func, ij, reset, axes, is_active) == (fs.kernel, fs.func, fs.ij, fs.reset,
                                                          fs.axes, fs.is_active)
    assert VectorNdarray is fs.VectorNdarray and fs.cpu in get_host_arch_list()
    assert f32 is fs.f32 and f32 in real_types
    v = fs.Vector.field(2, f32, shape=3)
    s = fs.field(i32, shape=3)
    assert isinstance(v, MatrixField) and isinstance(s, ScalarField)
    assert not isinstance(s, MatrixField)

    @kernel
    def fill(a: template(), b: template()):
        for i in a:
            a[i] = [i, 2 * i]
            b[i] = 3 * i

    assert isinstance(fill, Kernel)
    fill(v, s)
    np.testing.assert_array_equal(v.to_numpy()[:, 1], [0, 2, 4])
    np.testing.assert_array_equal(s.to_numpy(), [0, 3, 6])
    fb = fs.FieldsBuilder()
    t = fs.field(f32)
    fb.dense(fs.i, 2).place(t)
    assert isinstance(fb.finalize(), SNodeTree)


def test_taichi_logging_and_profiler_modules():
    import fieldsim._logging as logging_mod
    import fieldsim.profiler
    assert fieldsim.profiler is fs.profiler and fs._logging is logging_mod
    fs.set_logging_level(fs.ERROR)
    try:
        assert not logging_mod.is_logging_effective(fs.WARN)
        logging_mod.warn("not shown")  # below the level: nothing
    finally:
        fs.set_logging_level(fs.INFO)
    assert logging_mod.supported_log_levels[2] == fs.INFO


def test_lang_util_type_conversions_and_scope():
    from fieldsim.lang.util import (cook_dtype, in_python_scope, python_scope, to_numpy_type,
                                    to_taichi_type)
    assert to_numpy_type(fs.f32) is np.float32 and to_numpy_type(fs.u8) is np.uint8
    assert to_taichi_type(np.float64) is fs.f64 and to_taichi_type(np.dtype("int32")) is fs.i32
    assert to_taichi_type(fs.u16) is fs.u16
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    assert cook_dtype(float) is fs.f64 and cook_dtype(fs.i8) is fs.i8
    assert in_python_scope()

    @python_scope
    def host_only():
        return 1

    assert host_only() == 1
    out = fs.field(fs.i32, shape=())

    @fs.kernel
    def k():
        out[None] = host_only()

    with pytest.raises(Exception, match="Python-scope|Taichi-scope"):
        k()


def test_kernel_and_func_markers_libraries_test_for():
    from fieldsim.lang.kernel_impl import Kernel
    ti = fs
    ti.init(arch=ti.cpu)

    @ti.kernel
    def k():
        pass

    @ti.func
    def f():
        pass

    @ti.real_func
    def g() -> ti.i32:
        return 1

    assert k._is_wrapped_kernel and not k._is_classkernel
    assert k._primal is k and k._adjoint is k.grad
    assert isinstance(k._primal, Kernel) and isinstance(k._adjoint, Kernel)
    assert not isinstance(f, Kernel)
    assert f._is_taichi_function and not f._is_real_function and g._is_real_function

    @ti.data_oriented
    class Sim:
        @ti.kernel
        def step(self):
            pass

    assert Sim().step._is_wrapped_kernel and Sim.step._is_classkernel


def test_kernel_methods_carry_their_kernel_and_adjoint():
    """stannum's `is_kernel(obj.k)` is `isinstance(obj.k._adjoint, Kernel)`, and its `Tin` asks
    `hasattr(obj, "_data_oriented")`: both hold for a data-oriented instance's kernel method."""
    from fieldsim.lang.kernel_impl import Kernel
    fs.init(arch=fs.cpu)

    @fs.data_oriented
    class Sim:
        def __init__(self):
            self.x = fs.field(fs.f32, shape=2, needs_grad=True)
            self.y = fs.field(fs.f32, shape=2, needs_grad=True)

        @fs.kernel
        def step(self):
            for i in self.x:
                self.y[i] = self.x[i] ** 2

    sim = Sim()
    assert Sim._data_oriented and sim._data_oriented
    assert isinstance(sim.step._primal, Kernel) and isinstance(sim.step._adjoint, Kernel)
    sim.x.from_numpy(np.array([1.5, -2.0], np.float32))
    sim.step()
    sim.y.grad.fill(1.0)
    sim.step.grad()
    np.testing.assert_allclose(sim.x.grad.to_numpy(), [3.0, -4.0])  # d(x^2)/dx = 2x


def test_snode_tree_ids_and_inside_kernel():
    from fieldsim.lang import impl
    fs.init(arch=fs.cpu)
    trees = []
    for _ in range(2):
        fb = fs.FieldsBuilder()
        fb.dense(fs.i, 4).place(fs.field(fs.f32))
        trees.append(fb.finalize())
    assert [t.id for t in trees] == [0, 1]
    trees[0].destroy()
    fb = fs.FieldsBuilder()
    fb.dense(fs.i, 2).place(fs.field(fs.f32))
    assert fb.finalize().id == 0  # a freed id is given again, as in Taichi
    fs.init(arch=fs.cpu)
    fs.field(fs.f32, shape=3)  # fs.root's tree is made first
    fb = fs.FieldsBuilder()
    fb.dense(fs.i, 4).place(fs.field(fs.f32))
    assert fb.finalize().id == 1

    seen = []

    def probe():
        seen.append(impl.inside_kernel())
        return 1

    @fs.kernel
    def k() -> fs.i32:
        return probe()

    assert k() == 1 and seen == [True] and not impl.inside_kernel()


def test_taichi_module_paths_under_a_harness_alias():
    """A harness that sets sys.modules['taichi'] = fieldsim (as the conformance suite's does)
    imports Taichi's module paths as fieldsim's own objects, not second copies of its files."""
    import subprocess
    import sys
    code = """
import sys, fieldsim
sys.modules['taichi'] = fieldsim
from taichi.lang.misc import get_host_arch_list
from taichi.lang.kernel_impl import Kernel
from taichi.types.ndarray_type import NdarrayType
import taichi.linalg.sparse_solver, taichi.lang.impl, taichi._logging
assert get_host_arch_list() == [fieldsim.cpu]
assert sys.modules['taichi.linalg'] is fieldsim.linalg
assert sys.modules['taichi.lang.impl'] is fieldsim.lang.impl
assert NdarrayType is fieldsim.types.ndarray_type.NdarrayType
assert fieldsim.lang.impl.__spec__.name == 'fieldsim.lang.impl'
try:
    import taichi.lang.no_such_module
except ModuleNotFoundError:
    print('ok')
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


def test_extension_data_type_under_a_harness_alias():
    """`from taichi._lib.core.taichi_python import DataType` (stannum's `TiDataType`): the class
    of `ti.f32`, reached by module path and as `ti._lib.core`, as in Taichi."""
    import subprocess
    import sys
    code = """
import sys, fieldsim
sys.modules['taichi'] = fieldsim
import taichi as ti
from taichi._lib.core.taichi_python import DataType
import taichi._lib.core
assert type(ti.f32) == DataType and isinstance(ti.u8, DataType)
assert not isinstance(ti.types.vector(3, ti.f32), DataType)
assert ti._lib.core.DataType is DataType and ti._lib.core.with_vulkan() is False
print('ok')
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
