"""Clipping of 3-D triangles and segments against the camera's near plane, as GGUI's pipeline does.

Takes per-vertex data (one ``(V, k)`` array: positions and whatever else is interpolated),
each vertex's view depth ``z``, the primitives as vertex indices and the plane depth ``near``.
Guarantees the parts in front of the plane (``z >= near``) as new vertex data and primitives:
a triangle with one corner behind becomes a quad (two triangles), with two corners behind a
smaller triangle, with three nothing; the winding of every piece is its triangle's. New
vertices interpolate the data linearly along the cut edges (view depth is affine in world
position, so they lie on the plane).
"""
from __future__ import annotations

import numpy as np


def _cut(data, z, a, b, near):
    """Where edges ``a -> b`` (vertex index arrays) cross depth ``near``: interpolated data."""
    t = (near - z[a]) / (z[b] - z[a])
    return data[a] + t[:, None] * (data[b] - data[a])


def clip_triangles(data: np.ndarray, z: np.ndarray, tri: np.ndarray, near: float):
    """``(data, tri)`` with ``tri`` (T, 3) cut to the front of the plane; ``data`` grows by the
    cut points."""
    front = z[tri] >= near
    count = front.sum(axis=1)
    whole = tri[count == 3]
    partial = (count == 1) | (count == 2)
    if not partial.any():
        return data, whole
    t, inside = tri[partial], front[partial]
    lone_in = inside.sum(axis=1) == 1
    # rotate each triangle so its odd corner (the lone inside or the lone outside one) is first
    odd = np.where(lone_in, inside.argmax(axis=1), (~inside).argmax(axis=1))
    t = t[np.arange(len(t))[:, None], (odd[:, None] + np.arange(3)) % 3]
    first, second, third = t.T
    n = len(data)
    cut_first = _cut(data, z, first, second, near)  # on edge first-second
    cut_last = _cut(data, z, third, first, near)  # on edge third-first
    m = len(t)
    p_first, p_last = n + np.arange(m), n + m + np.arange(m)
    one = lone_in  # the first corner alone in front: one smaller triangle
    pieces = [whole,
              np.stack([first[one], p_first[one], p_last[one]], axis=1),
              np.stack([p_first[~one], second[~one], third[~one]], axis=1),
              np.stack([p_first[~one], third[~one], p_last[~one]], axis=1)]
    return np.concatenate([data, cut_first, cut_last]), np.concatenate(pieces).astype(tri.dtype)


def clip_segments(data: np.ndarray, z: np.ndarray, seg: np.ndarray, near: float):
    """``(data, seg)`` with segments ``seg`` (S, 2) cut to the front of the plane."""
    front = z[seg] >= near
    seg = seg[front.any(axis=1)]
    front = z[seg] >= near
    behind = ~front.all(axis=1)
    if not behind.any():
        return data, seg
    s = seg[behind]
    keep_end = front[behind].argmax(axis=1)  # the end in front
    kept = s[np.arange(len(s)), keep_end]
    lost = s[np.arange(len(s)), 1 - keep_end]
    cut = _cut(data, z, kept, lost, near)
    new = len(data) + np.arange(len(s))
    s = np.where(keep_end[:, None] == 0, np.stack([kept, new], 1), np.stack([new, kept], 1))
    return np.concatenate([data, cut]), np.concatenate([seg[~behind], s]).astype(seg.dtype)
