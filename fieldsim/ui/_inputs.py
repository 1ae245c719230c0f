"""What GGUI calls are given, as numpy arrays: vertices, indices, colours and radii.

Takes fields and fieldsim ndarrays (anything with ``.to_numpy()``), numpy arrays and sequences,
read once at the call (GGUI copies them into vertex buffers then, so later writes do not change
a frame already described). Guarantees float64 ``(N, dim)`` vectors, int64 flat indices and
``(N, 3)`` RGB in [0, 1]. A wrong shape or count raises `UIInputError` (a ValueError) naming
the call and located at the user's line.
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import FieldsimError
from fieldsim.lang.naming import user_loc


class UIInputError(FieldsimError, ValueError):
    """Data given to a ``ti.ui`` call has the wrong shape, count or type."""


def fail(message: str):
    raise UIInputError(message, user_loc())


def array(x, what: str, dtype=np.float64) -> np.ndarray:
    if hasattr(x, "to_numpy"):
        x = x.to_numpy()
    try:
        return np.asarray(x, dtype=dtype)
    except (TypeError, ValueError):
        fail(f"{what}: expected a field, an ndarray or a numpy array, got {type(x).__name__}")


def vectors(x, dim: int, what: str) -> np.ndarray:
    """``(N, dim)`` positions from a vector field/array of any shape whose last axis has at least
    ``dim`` components (extra ones, as in a 3-D field drawn on the 2-D canvas, are dropped)."""
    a = array(x, what)
    if a.ndim < 2 or a.shape[-1] < dim:
        fail(f"{what}: expected {dim}-component vectors, got an array of shape {a.shape}")
    return a.reshape(-1, a.shape[-1])[:, :dim]


def indices(x, n_vertices: int, what: str) -> np.ndarray:
    """Flat int64 vertex indices, each checked against ``n_vertices``."""
    idx = array(x, what, np.int64).reshape(-1)
    if idx.size and (idx.min() < 0 or idx.max() >= n_vertices):
        fail(f"{what}: vertex index {int(idx.max() if idx.max() >= n_vertices else idx.min())} "
             f"is out of range for {n_vertices} vertices")
    return idx


def colors(per_vertex_color, color, n: int, what: str) -> np.ndarray:
    """``(n, 3)`` RGB: the per-vertex colours when given (at least ``n`` of them), else ``color``."""
    if per_vertex_color is None:
        rgb = array(color, what).reshape(-1)
        if rgb.size < 3:
            fail(f"{what}: color must be an (r, g, b) triple, got {color!r}")
        return np.broadcast_to(np.clip(rgb[:3], 0.0, 1.0), (n, 3))
    rgb = vectors(per_vertex_color, 3, f"{what} per_vertex_color")
    if len(rgb) < n:
        fail(f"{what}: {len(rgb)} per_vertex_color values for {n} vertices")
    return np.clip(rgb[:n], 0.0, 1.0)


def radii(per_vertex_radius, radius, n: int, what: str) -> np.ndarray:
    """``(n,)`` radii: the per-vertex ones when given, else ``radius`` for all."""
    if per_vertex_radius is None:
        return np.full(n, float(np.asarray(array(radius, what)).reshape(-1)[0]))
    r = array(per_vertex_radius, f"{what} per_vertex_radius").reshape(-1)
    if len(r) < n:
        fail(f"{what}: {len(r)} per_vertex_radius values for {n} vertices")
    return r[:n]


def span(total: int, offset: int, count, what: str) -> slice:
    """The items ``offset .. offset + count`` of ``total`` (``count=None``: to the end)."""
    offset = int(offset)
    count = total - offset if count is None else int(count)
    if offset < 0 or count < 0:
        fail(f"{what}: offset {offset} and count {count} must not be negative")
    return slice(offset, min(offset + count, total))


def triple(v, what: str) -> np.ndarray:
    """A 3-vector (a light position or colour) as float64."""
    a = array(v, what).reshape(-1)
    if a.size != 3:
        fail(f"{what}: expected 3 numbers, got {v!r}")
    return a
