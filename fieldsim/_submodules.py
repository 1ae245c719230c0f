"""Taichi's submodule names that programs import or reach through attributes:
`from taichi.linalg.sparse_matrix import SparseMatrixBuilder`, `ti.linalg.sparse_solver`,
`isinstance(a, ti.types.ndarray_type.NdarrayType)`, `ti.types.compound_types.matrix`,
`ti.types.texture_type.TextureType`.

Takes the loaded package. Guarantees: each name is an attribute of its parent (`fs.linalg`,
`fs.types`) and an entry of `sys.modules` (so `import`/`from ... import` find it), holding the
same objects as fieldsim's own names. fieldsim's linalg is one module and fs.types another, not
packages: the entries stand in for Taichi's files.

`install_internals` does the same for the module paths of Taichi's own tree that libraries import
from (`from taichi.lang.kernel_impl import Kernel`, `from taichi.lang.matrix import MatrixField`,
`from taichi.types.primitive_types import f32`, `taichi._logging`, `taichi.profiler`).
"""
from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import types as _pytypes

from fieldsim import linalg, matrixfree, sparse_matrix, sparse_solver
from fieldsim.lang import ndarray, struct, texture
from fieldsim.lang import types as T
from fieldsim.lang.func_args import ref
from fieldsim.lang.triplets import sparse_matrix_builder


def _module(name: str, doc: str, **names) -> _pytypes.ModuleType:
    mod = _pytypes.ModuleType(name, doc)
    mod.__dict__.update(names)
    return mod


class _FieldsimUnderAlias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports under another name for fieldsim (`sys.modules["taichi"] = fieldsim`, as test
    harnesses alias it): `import taichi.lang.misc` gives fieldsim's own module object, one
    registered here (no file) or a file's, never a second copy of a file's module (whose classes
    would differ from fieldsim's). Only names whose parent is a fieldsim module under a name not
    starting with `fieldsim` come here; every other import passes through untouched."""

    @staticmethod
    def _own_name(name: str):
        parent, _, child = name.rpartition(".")
        pkg = sys.modules.get(parent)
        if pkg is None or parent.split(".")[0] == "fieldsim":
            return None
        if getattr(pkg, "__name__", "").split(".")[0] != "fieldsim":
            return None
        owns = [pkg.__name__] + [k for k, m in list(sys.modules.items())
                                 if m is pkg and k.split(".")[0] == "fieldsim"]
        for own in owns:
            full = f"{own}.{child}"
            if full in sys.modules or importlib.util.find_spec(full) is not None:
                return full
        return None

    def find_spec(self, name, path=None, target=None):
        own = self._own_name(name)
        if own is None:
            return None
        spec = importlib.util.spec_from_loader(name, self)
        spec.loader_state = own
        return spec

    def create_module(self, spec):
        module = importlib.import_module(spec.loader_state)
        spec.loader_state = (spec.loader_state, module.__dict__.get("__spec__"))
        return module

    def exec_module(self, module):
        # the import system set the alias's spec on fieldsim's module: give it its own back
        own_spec = module.__spec__.loader_state[1]
        if own_spec is not None:
            module.__spec__ = own_spec


def install(package: str) -> None:
    if not any(isinstance(f, _FieldsimUnderAlias) for f in sys.meta_path):
        sys.meta_path.insert(0, _FieldsimUnderAlias())
    linalg_mods = {"sparse_matrix": sparse_matrix, "sparse_solver": sparse_solver,
                   "sparse_cg": sparse_solver, "matrixfree_cg": matrixfree}
    # Taichi's sparse_matrix module also holds the builder's annotation
    sparse_matrix.sparse_matrix_builder = sparse_matrix_builder
    linalg.__path__ = []  # a package to the import system, for `taichi.linalg.*` under an alias
    for attr, mod in linalg_mods.items():
        setattr(linalg, attr, mod)
        sys.modules[f"{package}.linalg.{attr}"] = mod
    types_mods = {
        "ndarray_type": _module(f"{package}.types.ndarray_type", "Taichi's ndarray annotation",
                                NdarrayType=ndarray.NdarrayType, ndarray=ndarray.NdarrayType,
                                vector=T.vector, matrix=T.matrix),
        "compound_types": _module(f"{package}.types.compound_types", "Taichi's compound types",
                                  matrix=T.matrix, vector=T.vector, struct=struct.struct),
        "texture_type": _module(f"{package}.types.texture_type", "Taichi's texture annotations",
                                TextureType=texture.TextureType,
                                RWTextureType=texture.RWTextureType,
                                texture=texture.TextureType, rw_texture=texture.RWTextureType),
    }
    for attr, mod in types_mods.items():
        setattr(T, attr, mod)
        sys.modules[f"{package}.types.{attr}"] = mod
    T.ref = ref
    T.__path__ = []  # `import taichi.types.ndarray_type` under an alias looks up a package


_AXES = ("i", "j", "k", "l", "ij", "ik", "il", "jk", "jl", "kl", "ijk", "ijl", "ikl", "jkl", "ijkl")
_ARCHES = ("cpu", "gpu", "cuda", "x64", "x86_64", "arm64", "vulkan", "metal", "opengl", "gles",
           "dx11", "dx12", "amdgpu")


def _names(package: str, names) -> dict:
    pkg = sys.modules[package]
    return {n: getattr(pkg, n) for n in names if hasattr(pkg, n)}


def _lang_modules(package: str) -> dict:
    from fieldsim.lang import impl, kernel
    from fieldsim.lang import types as T
    from fieldsim.lang.util import cook_dtype, to_taichi_type
    top = sys.modules[package]
    kernel_impl = _module(
        f"{package}.lang.kernel_impl", "Taichi's kernel/func decorators and its Kernel class",
        Kernel=kernel.TaichiKernel, Func=kernel.Func, template=kernel.template,
        cook_dtype=cook_dtype, to_taichi_type=to_taichi_type, primitive_types=T,
        **_names(package, ("kernel", "func", "pyfunc", "real_func", "data_oriented",
                           "TaichiCompilationError", "TaichiRuntimeError", "TaichiSyntaxError",
                           "TaichiTypeError", "TaichiRuntimeTypeError")))
    misc = _module(
        f"{package}.lang.misc", "Taichi's init/reset, arches and axes",
        get_runtime=impl.get_runtime, get_host_arch_list=lambda: [top.cpu],
        **_names(package, _AXES + _ARCHES + (
            "init", "reset", "axes", "is_arch_supported", "is_extension_supported", "extension",
            "loop_config", "global_thread_idx", "assume_in_range", "block_local",
            "cache_read_only", "no_activate", "mesh_local", "mesh_patch_idx", "Expr")))
    runtime_ops = _module(f"{package}.lang.runtime_ops", "Taichi's sync", sync=top.sync)
    return {"kernel_impl": kernel_impl, "misc": misc, "runtime_ops": runtime_ops}


def _logging_module(package: str) -> _pytypes.ModuleType:
    import warnings
    top = sys.modules[package]
    levels = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "CRITICAL")

    def _logger(level):
        def log(msg):
            if top.is_logging_effective(level):
                if levels.index(level.upper()) >= levels.index("WARN"):
                    warnings.warn(str(msg), stacklevel=2)
                else:
                    print(f"[{level[0].upper()}] {msg}")
        log.__name__ = level
        return log
    return _module(f"{package}._logging", "Taichi's logging: the level and its log functions",
                   supported_log_levels=[getattr(top, n) for n in levels],
                   **{n.lower(): _logger(getattr(top, n)) for n in levels},
                   **_names(package, levels + ("set_logging_level", "is_logging_effective")))


def _snode_package(package: str) -> dict:
    from fieldsim.lang import snode
    tree = _module(f"{package}._snode.snode_tree", "Taichi's SNodeTree", SNodeTree=snode.SNodeTree)
    builder = _module(f"{package}._snode.fields_builder", "Taichi's FieldsBuilder",
                      FieldsBuilder=snode.FieldsBuilder)
    pkg = _module(f"{package}._snode", "Taichi's SNode-tree modules", snode_tree=tree,
                  fields_builder=builder, FieldsBuilder=snode.FieldsBuilder)
    pkg.__path__ = []
    return {"_snode": pkg, "_snode.snode_tree": tree, "_snode.fields_builder": builder}


def install_internals(package: str) -> None:
    from fieldsim import lang
    from fieldsim.lang import field, impl, matrix, profiler, snode, sparse_ops
    from fieldsim.lang import ndarray as nd
    from fieldsim.lang.kernel import template
    from fieldsim.lang.triplets import sparse_matrix_builder as smb
    top = sys.modules[package]
    # names Taichi's modules hold that fieldsim keeps elsewhere
    matrix.MatrixField, matrix.ScalarField, matrix.Field = (field.MatrixField, field.ScalarField,
                                                           field.Field)
    matrix.VectorNdarray, matrix.MatrixNdarray = nd.VectorNdarray, nd.MatrixNdarray
    snode.is_active = sparse_ops.is_active
    impl.axes = snode.axes
    annotations = _module(f"{package}.types.annotations", "Taichi's template annotation",
                          template=template, Template=template, sparse_matrix_builder=smb)
    T.annotations = annotations
    sys.modules[f"{package}.types.annotations"] = annotations
    sys.modules[f"{package}.types.primitive_types"] = T
    for attr, mod in _lang_modules(package).items():
        setattr(lang, attr, mod)
        sys.modules[f"{package}.lang.{attr}"] = mod
    for attr, mod in {"_logging": _logging_module(package), "profiler": profiler,
                      **_snode_package(package)}.items():
        if "." not in attr:
            setattr(top, attr, mod)
        sys.modules[f"{package}.{attr}"] = mod
