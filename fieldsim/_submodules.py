"""Taichi's submodule names that programs import or reach through attributes:
`from taichi.linalg.sparse_matrix import SparseMatrixBuilder`, `ti.linalg.sparse_solver`,
`isinstance(a, ti.types.ndarray_type.NdarrayType)`, `ti.types.compound_types.matrix`,
`ti.types.texture_type.TextureType`.

Takes the loaded package. Guarantees: each name is an attribute of its parent (`fs.linalg`,
`fs.types`) and an entry of `sys.modules` (so `import`/`from ... import` find it), holding the
same objects as fieldsim's own names. fieldsim's linalg is one module and fs.types another, not
packages: the entries stand in for Taichi's files.
"""
from __future__ import annotations

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


def install(package: str) -> None:
    linalg_mods = {"sparse_matrix": sparse_matrix, "sparse_solver": sparse_solver,
                   "sparse_cg": sparse_solver, "matrixfree_cg": matrixfree}
    # Taichi's sparse_matrix module also holds the builder's annotation
    sparse_matrix.sparse_matrix_builder = sparse_matrix_builder
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
