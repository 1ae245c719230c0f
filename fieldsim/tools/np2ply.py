"""`fs.tools.np2ply` (Taichi's `ti.tools.np2ply`): the module holding `PLYWriter`, which writes
numpy arrays to PLY files (fieldsim.ply)."""
from fieldsim.ply import PLYWriter

__all__ = ["PLYWriter"]
