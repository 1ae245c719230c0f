"""Taichi's module path `taichi.lang._ndarray`, which programs name to test an array's class
(`type(a) is ti.lang._ndarray.ScalarNdarray`): the same classes as `fieldsim.lang.ndarray`."""
from fieldsim.lang.ndarray import MatrixNdarray, Ndarray, ScalarNdarray, VectorNdarray

__all__ = ["MatrixNdarray", "Ndarray", "ScalarNdarray", "VectorNdarray"]
