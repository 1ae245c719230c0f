"""`fs.tools.vtk.write_vtk(field, filename)` (Taichi's `ti.tools.vtk`): a 2-D or 3-D scalar
field as a VTK rectilinear grid, `<filename>.vtr`, through pyevtk (an optional package, as in
Taichi: `pip install pyevtk`, or fieldsim's `vtk` extra).

Takes a scalar field, ndarray or numpy array of 2 or 3 axes. Writes one cell per element: cell
(i, j, k) of a grid with unit spacing and its corner at the origin holds `x[i, j, k]` (a 2-D
field is one layer of cells in z). The data array is named after `filename`, as Taichi names
it. Taichi 1.7.4 gives the grid one point per element, so its files declare one cell fewer
along each axis than the data they carry; here the grid has one point more than the elements
along each axis, so the counts agree and VTK readers see every value in its own cell.
Guarantees: nothing is written when the input is refused (ValueError naming the field and its
shape) or pyevtk is missing (RuntimeError saying how to install it).
"""
from __future__ import annotations

import os

import numpy as np

__all__ = ["write_vtk"]


def write_vtk(scalar_field, filename):
    """Write `scalar_field` to `<filename>.vtr`; returns the path pyevtk wrote."""
    data = _scalar_cells(scalar_field)
    try:
        from pyevtk.hl import gridToVTK
    except ImportError:
        raise RuntimeError("fs.tools.vtk.write_vtk needs pyevtk: pip install pyevtk "
                           "(or fieldsim[vtk])") from None
    name = os.fspath(filename)
    corners = [np.arange(n + 1, dtype=np.float64) for n in data.shape]
    return gridToVTK(name, *corners, cellData={name: data})


def _scalar_cells(x) -> np.ndarray:
    what = getattr(x, "name", None) or type(x).__name__
    if getattr(x, "n", None) is not None or getattr(x, "m", None) is not None:
        raise ValueError(f"write_vtk: {what!r} is a vector or matrix field; write_vtk takes a "
                         "scalar field (write each component as its own field)")
    a = np.asarray(x.to_numpy() if hasattr(x, "to_numpy") else x)
    if a.ndim not in (2, 3):
        raise ValueError(f"write_vtk: {what!r} has shape {a.shape}; write_vtk takes a 2-D or 3-D "
                         "scalar field")
    if a.dtype.kind not in "fiub":
        raise ValueError(f"write_vtk: {what!r} holds {a.dtype}, not numbers")
    a = a[:, :, None] if a.ndim == 2 else a
    return np.ascontiguousarray(a.astype(np.uint8) if a.dtype.kind == "b" else a)
