"""Python objects with a meaning in kernels: the frontend's hooks for attribute access, indexing
and iteration (MeshTaichi's element sets, elements and relations use them).

Takes nothing itself: a class subclasses `KernelObject` and overrides the hooks it has. The
frontend calls them with itself (`fe`), emitting through it, and guarantees that

    obj.attr, obj.attr = v, obj.attr += v     call  kernel_attribute(fe, name) -> a frontend Ref
    obj[i], obj[i] = v                        call  kernel_item(fe, indices) -> a frontend Ref
    for e in obj:                             calls kernel_loop_dims(fe) -> [(begin, end)] once,
                                              then kernel_loop_bind(fe, index) -> the loop item

so the objects lower to ordinary loads, stores and range loops: the checker, AD and codegen see
nothing new. A hook the class lacks raises FieldsimTypeError naming the object.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimTypeError


class KernelObject:
    """A Python object whose attributes, items or iteration emit kernel code (module docstring)."""

    kernel_name = "this object"

    def kernel_attribute(self, fe, name: str):
        raise FieldsimTypeError(f"{self.kernel_name} has no attribute {name!r} in a kernel")

    def kernel_item(self, fe, indices: list):
        raise FieldsimTypeError(f"{self.kernel_name} cannot be indexed in a kernel")

    def kernel_loop_dims(self, fe) -> list:
        raise FieldsimTypeError(f"cannot iterate over {self.kernel_name} in a kernel")

    def kernel_loop_bind(self, fe, index):
        raise FieldsimTypeError(f"cannot iterate over {self.kernel_name} in a kernel")
