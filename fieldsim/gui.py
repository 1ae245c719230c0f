"""Offscreen drawing with Taichi's ``ti.GUI`` interface, and GIF assembly.

Provides:

- ``GUI``: the subset of Taichi's ``ti.GUI`` that simulation examples use
  (``circles``, ``lines``, ``triangles``, ``rect``, ``arrows``, ``set_image``,
  ``text``, ``clear``, ``show``, ``running``, ``frame``, ``point_field``, ``arrow_field``,
  ``vector_field``, ``contour``, the event methods and ``event``).
  It never opens a window: every frame is drawn into a numpy RGB buffer and
  ``show(file)`` writes it as a PNG. Coordinates are Taichi's: positions in
  ``[0, 1]^2`` with the origin at the bottom-left, radii in pixels, colours as
  ``0xRRGGBB`` ints. Inputs may be numpy arrays, sequences, or fields (anything
  with ``.to_numpy()``).
- ``frames_to_gif(pngs, out_path, fps=20)``: writes PNG frames as an animated GIF.

Shapes are rasterised with vectorised numpy, so tens of thousands of particles per frame draw
in milliseconds; antialiased ``circles``/``lines``/``arrows`` calls go through a small loop
compiled once per process (`fieldsim._gui_raster`: llvmlite, not a kernel). Circles and lines are antialiased as Taichi 1.7.4's GUI draws them (`_coverage`:
measured against its images), blended in call order in float and truncated to bytes once per
drawing call (Taichi keeps floats between calls: at most a byte apart per overlapping call). Text is rendered with
matplotlib's Agg renderer, once per label and place. Only numpy, llvmlite and matplotlib (which brings Pillow) are used.
"""

from __future__ import annotations

import functools
import os
import sys

import numpy as np

from fieldsim import _gui_raster
from fieldsim.ir import subnormals

__all__ = ["GUI", "frames_to_gif"]

# Upper bound on candidate pixels handled at once, to bound temporary memory.
_CHUNK = 1 << 22
# Single-shape calls queued before they are drawn together (bounds the queue's memory).
_QUEUE_LIMIT = 1 << 16
_CIRCLE, _LINE, _TRIANGLE = 0, 1, 2


def _as_array(x, dtype=np.float64) -> np.ndarray:
    """A numpy array from an array, a sequence, a scalar or a field (``.to_numpy()``)."""
    if hasattr(x, "to_numpy"):
        x = x.to_numpy()
    return np.asarray(x, dtype=dtype)


def _taichi_image(a: np.ndarray, grey_alpha: bool) -> np.ndarray:
    """A ``(W, H, 1|3|4)`` image as Taichi's GUI buffer holds it: float32 RGBA, integers
    scaled by 1/255 (u16/u32 came scaled by their maximum), a grey channel copied into red,
    green, blue and, if ``grey_alpha``, alpha; alpha 0 where the image has none.

    >>> _taichi_image(np.full((1, 1, 3), 0.25), False)[0, 0].tolist()
    [0.25, 0.25, 0.25, 0.0]
    >>> _taichi_image(np.full((1, 1, 1), 51, np.uint8), True)[0, 0].tolist()
    [0.20000000298023224, 0.20000000298023224, 0.20000000298023224, 0.20000000298023224]
    """
    out = np.empty(a.shape[:2] + (4,), np.float32)
    filled = 4 if a.shape[2] == 4 or (a.shape[2] == 1 and grey_alpha) else 3
    out[..., :filled] = a  # a grey channel broadcasts over the channels
    out[..., filled:] = 0.0
    if subnormals.FLUSHING_MACHINE and np.issubdtype(a.dtype, np.floating):
        # Taichi copies the image in a kernel, which flushes subnormals to (signed) zero
        out[..., :filled] = subnormals.flushed_array(out[..., :filled])
    if not (np.issubdtype(a.dtype, np.floating) or a.dtype == np.bool_):
        out[..., :filled] *= np.float32(1 / 255)  # as Taichi scales u8: in float32, by the rounded 1/255
    return out


def _points(x) -> np.ndarray:
    """Positions as an ``(N, 2)`` float array."""
    a = _as_array(x)
    if a.ndim == 1 and a.shape[0] == 2:
        a = a[None]
    if a.ndim != 2 or a.shape[1] < 2:
        raise ValueError(f"expected positions of shape (N, 2), got {a.shape}")
    return a[:, :2]


def _point(x) -> np.ndarray:
    """One position as a ``(1, 2)`` float array, read as Taichi's single-item calls read it:
    ``x[0]`` and ``x[1]``, each a number or a one-element array. A ``(2, 1)`` column is
    accepted (older Taichi did; 1.7.4's pybind binding raises TypeError for it)."""
    if hasattr(x, "to_numpy"):
        x = x.to_numpy()
    return np.array([[np.asarray(x[0], dtype=np.float64).item(), np.asarray(x[1], dtype=np.float64).item()]])


def _xy(p) -> tuple[float, float]:
    """One position as two floats, as `_point` reads it; a pair of numbers or a numeric
    ``(2,)`` array without building arrays (GUI loops draw one shape per call)."""
    if type(p) is tuple or type(p) is list:
        if len(p) >= 2 and isinstance(p[0], (int, float)) and isinstance(p[1], (int, float)):
            return float(p[0]), float(p[1])
    elif type(p) is np.ndarray and p.shape == (2,) and p.dtype.kind in "fiub":
        x, y = p.tolist()
        return float(x), float(y)
    q = _point(p)[0]
    return float(q[0]), float(q[1])


def _packed(c) -> np.ndarray:
    """Colours as packed ``0xRRGGBB`` uint32 values, one per item. Accepts Taichi's hex ints
    (one or an array), ``(N, 3)`` RGB arrays, and one float RGB triple; floats are in [0, 1]."""
    a = _as_array(c, dtype=None)
    floating = np.issubdtype(a.dtype, np.floating)
    if (a.ndim == 2 and a.shape[1] == 3) or (floating and a.shape == (3,)):
        a = np.atleast_2d(a)
        if floating:
            a = np.clip(a, 0.0, 1.0) * 255.0 + 0.5
        a = np.clip(a, 0, 255).astype(np.uint32)
        return (a[:, 0] << 16) | (a[:, 1] << 8) | a[:, 2]
    return (np.atleast_1d(a).astype(np.int64).ravel() & 0xFFFFFF).astype(np.uint32)


def _unpack(buf: np.ndarray) -> np.ndarray:
    """Packed ``0xRRGGBB`` values to uint8 RGB on a new last axis."""
    return np.stack([(buf >> 16) & 0xFF, (buf >> 8) & 0xFF, buf & 0xFF], axis=-1).astype(np.uint8)


def _pack(rgb: np.ndarray) -> np.ndarray:
    rgb = rgb.astype(np.uint32)
    return (rgb[..., 0] << 16) | (rgb[..., 1] << 8) | rgb[..., 2]


def _per_item(values: np.ndarray, n: int, what: str) -> np.ndarray:
    """Broadcast one value or one per item to exactly ``n`` rows."""
    if len(values) == 1:
        return np.broadcast_to(values, (n,) + values.shape[1:])
    if len(values) != n:
        raise ValueError(f"got {len(values)} {what} values for {n} items")
    return values


def _boxes(x0, y0, w, h):
    """Yield ``(ids, xs, ys)`` covering the integer boxes ``[x0, x0+w) x [y0, y0+h)``,
    in chunks of at most about ``_CHUNK`` pixels."""
    counts = (w * h).astype(np.int64)
    keep = np.nonzero(counts > 0)[0]
    if keep.size == 0:
        return
    cum = np.cumsum(counts[keep])
    spans = bool(((w[keep] == 1) | (h[keep] == 1)).all())
    start = 0
    while start < keep.size:
        base = cum[start - 1] if start else 0
        stop = max(int(np.searchsorted(cum, base + _CHUNK, side="right")), start + 1)
        ids = keep[start:stop]
        c = counts[ids]
        rep = np.repeat(np.arange(ids.size), c)
        local = np.arange(int(c.sum())) - np.repeat(np.cumsum(c) - c, c)
        wi = w[ids]
        if spans:  # one row or one column each: no integer division per pixel
            across = (wi > 1)[rep]
            yield (ids[rep], x0[ids][rep] + np.where(across, local, 0),
                   y0[ids][rep] + np.where(across, 0, local))
        else:
            wi = wi[rep]
            yield ids[rep], x0[ids][rep] + local % wi, y0[ids][rep] + local // wi
        start = stop


def _pixel_box(xlo, xhi, ylo, yhi, res):
    """Integer pixel boxes ``(x0, y0, w, h)`` covering the float ranges, clipped to a canvas of
    ``res = (width, height)`` pixels."""
    w, h = res
    x0 = np.clip(np.floor(xlo), 0, w).astype(np.int64)
    x1 = np.clip(np.floor(xhi) + 1, 0, w).astype(np.int64)
    y0 = np.clip(np.floor(ylo), 0, h).astype(np.int64)
    y1 = np.clip(np.floor(yhi) + 1, 0, h).astype(np.int64)
    return x0, y0, np.maximum(x1 - x0, 0), np.maximum(y1 - y0, 0)


def _disc_pixels(cx, cy, r, res, ordered=True, own=True):
    """``(ids, flat, d2)``: the canvas pixels (flat indices, row 0 at the top) covered by discs
    ``ids`` (centres ``cx, cy`` and radii ``r`` in pixels, y down) on a ``res`` canvas, in
    drawing order (disc by disc, so a later disc wins where discs overlap), and the squared
    distances from their centres to the disc's. A pixel is covered when its centre is inside;
    with ``own``, the centre's own pixel always is. Discs are visited in blocks of
    one square box size, the distance test broadcast from a row and a column per disc. With
    ``ordered`` False (discs of one colour) the pixels may come in any order."""
    w, h = res
    # a disc with a NaN or infinite centre or radius draws nothing (as in Taichi), and its
    # garbage integer box must not warn
    finite = np.isfinite(cx) & np.isfinite(cy) & np.isfinite(r)
    cx, cy, r = (np.where(finite, a, 0.0) for a in np.broadcast_arrays(cx, cy, r))
    x0, y0 = np.floor(cx - r).astype(np.int64), np.floor(cy - r).astype(np.int64)
    size = np.maximum(np.floor(cx + r).astype(np.int64) - x0,
                      np.floor(cy + r).astype(np.int64) - y0) + 1
    shown = np.flatnonzero(finite & (size > 0) & (x0 < w) & (x0 + size > 0) & (y0 < h)
                           & (y0 + size > 0))
    parts = []
    for side in np.unique(size[shown]):
        group = shown[size[shown] == side]
        step = max(1, _CHUNK // int(side * side))
        for start in range(0, group.size, step):
            parts.append(_disc_block(group[start:start + step], int(side), cx, cy, r, x0, y0, res,
                                     ordered, own))
    if not parts:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    ids, flat, d2 = (np.concatenate(a) for a in zip(*parts))
    if ordered and len(parts) > 1:  # blocks went by size: back to drawing order
        order = np.argsort(ids, kind="stable")
        ids, flat, d2 = ids[order], flat[order], d2[order]
    return ids, flat, d2


def _disc_block(ids, side, cx, cy, r, x0, y0, res, ordered=True, own=True):
    """`_disc_pixels` for discs ``ids`` whose boxes are ``side`` pixels square, disc by disc
    (with ``ordered``)."""
    if side <= 4:
        return _small_disc_block(ids, side, cx, cy, r, x0, y0, res, ordered, own)
    w, h = res
    bx, by = x0[ids], y0[ids]
    xs = bx[:, None, None] + np.arange(side)[None, None, :]  # (n, 1, side)
    ys = by[:, None, None] + np.arange(side)[None, :, None]  # (n, side, 1)
    dx, dy = xs + 0.5 - cx[ids, None, None], ys + 0.5 - cy[ids, None, None]
    d2 = dx * dx + dy * dy
    inside = d2 <= (r[ids] ** 2)[:, None, None]
    if own and r[ids].min() < 0.75:  # a disc this small may miss its own pixel's centre
        inside |= (xs == np.floor(cx[ids, None, None])) & (ys == np.floor(cy[ids, None, None]))
    if bx.min() < 0 or by.min() < 0 or bx.max() + side > w or by.max() + side > h:
        inside &= (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)  # a box crosses the edge
    # boolean gathers in disc, row, column order (np.nonzero's three index arrays cost more)
    flat = (by * w + bx)[:, None, None] + (np.arange(side) * w)[:, None] + np.arange(side)
    return np.repeat(ids, inside.sum(axis=(1, 2))), flat[inside], d2[inside]


def _small_disc_block(ids, side, cx, cy, r, x0, y0, res, ordered, own):
    """`_disc_block` for boxes of at most 4x4 pixels (most particle plots): squared distances
    per box column and per box row, one ``(side, n)`` array each, then one add and one
    compare per box row, every numpy loop running over the discs."""
    w, h = res
    bx, by, cxs, cys, r2 = x0[ids], y0[ids], cx[ids], cy[ids], r[ids] ** 2
    off = np.arange(side)[:, None]
    px, py = off + bx, off + by  # (side, n): the box's pixel columns and rows
    dx2, dy2 = (px + 0.5 - cxs) ** 2, (py + 0.5 - cys) ** 2
    small = own and r2.min() < 0.5625  # r < 0.75: a disc may miss its own pixel's centre
    if small:
        own_x, own_y = px == np.floor(cxs), py == np.floor(cys)
    crosses = bx.min() < 0 or by.min() < 0 or bx.max() + side > w or by.max() + side > h
    if crosses:
        x_ok, y_ok = (px >= 0) & (px < w), (py >= 0) & (py < h)
    inside = np.empty((side, side, ids.size), bool)  # (row, column, disc)
    d2 = np.empty(inside.shape)
    for row in range(side):
        np.add(dx2, dy2[row], out=d2[row])
        np.less_equal(d2[row], r2, out=inside[row])
        if small:
            inside[row] |= own_x & own_y[row]
        if crosses:
            inside[row] &= x_ok & y_ok[row]
    flat = (np.arange(side) * w)[:, None, None] + np.arange(side)[:, None] + (by * w + bx)
    if ordered:
        inside, d2, flat = (a.transpose(2, 0, 1) for a in (inside, d2, flat))
        return np.repeat(ids, inside.sum(axis=(1, 2))), flat[inside], d2[inside]
    # one colour: any order, and the contiguous scan is several times faster
    return np.broadcast_to(ids, inside.shape)[inside], flat[inside], d2[inside]


def _disc_cover_grouped(cx, cy, r, res):
    """Yield ``(ids, xs, ys, dx, dy)`` for the covered pixels of discs ``ids`` (as
    `_disc_pixels` decides coverage, but in float32), ``dx, dy`` from the centre to the pixel
    centre: discs are visited in groups of equal box size, so the order in which overlapping
    discs are drawn is not kept. For depth-tested drawing (`ui.render3d`)."""
    w, h = res
    cx, cy, r = (np.asarray(a, dtype=np.float32) for a in (cx, cy, r))
    x0, y0 = np.floor(cx - r).astype(np.int32), np.floor(cy - r).astype(np.int32)
    bw = np.floor(cx + r).astype(np.int32) - x0 + 1
    bh = np.floor(cy + r).astype(np.int32) - y0 + 1
    shown = np.flatnonzero((x0 < w) & (x0 + bw > 0) & (y0 < h) & (y0 + bh > 0))
    key = bw[shown].astype(np.int64) << 32 | bh[shown]
    order = shown[np.argsort(key, kind="stable")]
    cuts = np.flatnonzero(np.diff(np.sort(key))) + 1
    for group in np.split(order, cuts) if order.size else ():
        gw, gh = int(bw[group[0]]), int(bh[group[0]])
        ox = np.tile(np.arange(gw, dtype=np.int32), gh)
        oy = np.repeat(np.arange(gh, dtype=np.int32), gw)
        step = max(1, _CHUNK // (gw * gh))
        for start in range(0, group.size, step):
            yield _disc_group(group[start:start + step], ox, oy, cx, cy, r, x0, y0, res)


def _disc_group(ids, ox, oy, cx, cy, r, x0, y0, res):
    """Covered pixels of discs ``ids``, all with the box size of the offsets ``ox, oy``."""
    w, h = res
    xs, ys = x0[ids, None] + ox, y0[ids, None] + oy
    dx, dy = xs + np.float32(0.5) - cx[ids, None], ys + np.float32(0.5) - cy[ids, None]
    inside = dx * dx + dy * dy <= (r[ids] ** 2)[:, None]
    if r[ids].min() < 0.75:  # a disc this small may miss its own pixel's centre
        inside |= (xs == np.floor(cx[ids, None])) & (ys == np.floor(cy[ids, None]))
    if x0[ids].min() < 0 or y0[ids].min() < 0 or xs[:, -1].max() >= w or ys[:, -1].max() >= h:
        inside &= (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
    rows = np.nonzero(inside)[0]
    return ids[rows], xs[inside], ys[inside], dx[inside], dy[inside]


_OFF_CANVAS = -2.0 ** 40  # pixels: where a shape that cannot be drawn is put


def _triangle_cover(ax, ay, bx, by, cx, cy, res):
    """Yield ``(ids, xs, ys, e_ab, e_bc, e_ca)`` for the pixels whose centres lie in triangles
    ``ids`` (corners in pixels) on a ``res`` canvas, either winding. The edge functions are
    twice the signed areas opposite c, a and b: divided by their sum they are the barycentric
    weights of c, a and b. Candidates are, per triangle and pixel row, the span between the
    edges (widened by a pixel: the exact test decides)."""
    xs_all, ys_all = np.stack([ax, bx, cx]), np.stack([ay, by, cy])
    # a triangle with a NaN or infinite corner draws nothing (as in Taichi), without warnings
    finite = np.isfinite(xs_all).all(0) & np.isfinite(ys_all).all(0)
    if not finite.all():
        ax, bx, cx = (np.where(finite, c, _OFF_CANVAS) for c in (ax, bx, cx))
        ay, by, cy = (np.where(finite, c, _OFF_CANVAS) for c in (ay, by, cy))
        xs_all, ys_all = np.stack([ax, bx, cx]), np.stack([ay, by, cy])
    x0, y0, w, h = _pixel_box(xs_all.min(0), xs_all.max(0), ys_all.min(0), ys_all.max(0), res)
    tri = np.repeat(np.arange(len(ax)), h)
    row = y0[tri] + np.arange(int(h.sum())) - np.repeat(np.cumsum(h) - h, h)
    lo, hi = _triangle_row_spans(ax[tri], ay[tri], bx[tri], by[tri], cx[tri], cy[tri], row + 0.5)
    lo = np.maximum(lo, x0[tri])
    hi = np.minimum(hi, x0[tri] + w[tri])
    for ids, xs, ys in _boxes(lo, row, np.maximum(hi - lo, 0), np.ones_like(row)):
        t = tri[ids]
        px, py = xs + 0.5, ys + 0.5
        e0 = (bx[t] - ax[t]) * (py - ay[t]) - (by[t] - ay[t]) * (px - ax[t])
        e1 = (cx[t] - bx[t]) * (py - by[t]) - (cy[t] - by[t]) * (px - bx[t])
        e2 = (ax[t] - cx[t]) * (py - cy[t]) - (ay[t] - cy[t]) * (px - cx[t])
        inside = ((e0 >= 0) & (e1 >= 0) & (e2 >= 0)) | ((e0 <= 0) & (e1 <= 0) & (e2 <= 0))
        yield t[inside], xs[inside], ys[inside], e0[inside], e1[inside], e2[inside]


def _triangle_row_spans(ax, ay, bx, by, cx, cy, py):
    """Per triangle and pixel-centre row ``py``: integer ``[lo, hi)`` holding every column whose
    centre may be inside (a pixel wider each side than the edges' crossings; everything for a
    degenerate triangle)."""
    area = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax)
    lo = np.full(len(py), -np.inf)
    hi = np.full(len(py), np.inf)
    with np.errstate(divide="ignore", invalid="ignore"):
        for (x1, y1, x2, y2) in ((ax, ay, bx, by), (bx, by, cx, cy), (cx, cy, ax, ay)):
            # edge function (x2-x1)(py-y1) - (y2-y1)(px-x1), kept on the area's side
            dy = (y2 - y1) * np.sign(area)
            cross = x1 + (x2 - x1) * (py - y1) / (y2 - y1)
            hi = np.where(dy > 0, np.minimum(hi, cross), hi)
            lo = np.where(dy < 0, np.maximum(lo, cross), lo)
            # a horizontal edge keeps the row whole or empty; the exact test decides
    flat = area == 0
    lo = np.where(flat, -np.inf, lo)
    hi = np.where(flat, np.inf, hi)
    lo = np.floor(np.nan_to_num(lo - 0.5, neginf=-2.0**40, posinf=2.0**40)) - 1
    hi = np.floor(np.nan_to_num(hi - 0.5, neginf=-2.0**40, posinf=2.0**40)) + 2
    return lo.astype(np.int64), hi.astype(np.int64)


def _segment_pixels(ax, ay, bx, by, r, res):
    """Yield ``(ids, flat, d2)``: the canvas pixels (flat indices) within ``r`` pixels of segments
    ``ids`` from ``(ax, ay)`` to ``(bx, by)`` (pixels, y down; round caps), segment by segment in
    order, and their squared distances to the segment. Each segment is walked along its major axis u; per pixel column the band within r of
    the line is an interval of half-width hw on the minor axis v; the exact test trims the caps."""
    n = len(ax)
    # a segment with a NaN or infinite end or radius draws nothing (as in Taichi): moved far
    # off the canvas, its pixel range is empty instead of a garbage (or huge) integer span
    finite = np.isfinite(ax) & np.isfinite(ay) & np.isfinite(bx) & np.isfinite(by) & np.isfinite(r)
    ax, ay, bx, by = (np.where(finite, c, _OFF_CANVAS) for c in np.broadcast_arrays(ax, ay, bx, by))
    r = np.where(finite, r, 0.5)
    steep = np.abs(by - ay) > np.abs(bx - ax)
    au, av, bu, bv = (np.where(steep, ay, ax), np.where(steep, ax, ay),
                      np.where(steep, by, bx), np.where(steep, bx, by))
    flip = au > bu
    au, bu, av, bv = (np.where(flip, bu, au), np.where(flip, au, bu),
                      np.where(flip, bv, av), np.where(flip, av, bv))
    slope = (bv - av) / np.maximum(bu - au, 1e-12)
    hw = r * np.sqrt(1.0 + slope * slope)
    size_u = np.where(steep, res[1], res[0])
    u0 = np.clip(np.floor(au - r), 0, size_u).astype(np.int64)
    u1 = np.clip(np.floor(bu + r) + 1, 0, size_u).astype(np.int64)
    k = np.maximum(u1 - u0, 0)
    seg = np.repeat(np.arange(n), k)
    u = u0[seg] + np.arange(int(k.sum())) - np.repeat(np.cumsum(k) - k, k)
    vc = av[seg] + (np.clip(u + 0.5, au[seg], bu[seg]) - au[seg]) * slope[seg]
    v0 = np.floor(vc - hw[seg] - 0.5).astype(np.int64)
    v1 = np.floor(vc + hw[seg] + 0.5).astype(np.int64) + 1
    st = steep[seg]
    box = (np.where(st, v0, u), np.where(st, u, v0), np.where(st, v1 - v0, 1),
           np.where(st, 1, v1 - v0))
    ex, ey = bx - ax, by - ay
    w, h = res
    for ids, xs, ys in _boxes(*box):
        s = seg[ids]
        px, py = xs + 0.5 - ax[s], ys + 0.5 - ay[s]
        t = np.clip((px * ex[s] + py * ey[s]) / np.maximum(ex[s] ** 2 + ey[s] ** 2, 1e-12), 0.0, 1.0)
        d2 = (px - t * ex[s]) ** 2 + (py - t * ey[s]) ** 2
        inside = (d2 <= r[s] ** 2) & (xs >= 0) & (xs < w) & (ys >= 0) & (ys < h)
        yield s[inside], ys[inside] * w + xs[inside], d2[inside]


def _coverage(r, d2):
    """Taichi's GUI antialiasing: a pixel at distance ``sqrt(d2)`` from a shape of radius ``r``
    is covered by ``clamp(r - d, 0, 1)`` (measured against Taichi 1.7.4's images)."""
    a = np.sqrt(d2)
    np.subtract(r, a, out=a)
    np.minimum(a, 1.0, out=a)
    return np.maximum(a, 0.0, out=a)


def _circle_pixels(cx, cy, r, res, aa, ordered=True):
    """``(ids, flat, alpha)`` of circles (pixels, y down); ``alpha`` None without ``aa``.
    Taichi's GUI measures a circle's distances from each pixel's lower-left corner (its
    integer point, y up), not its centre: that is the centre shifted by (+0.5, -0.5) here."""
    if not aa:
        ids, flat, _ = _disc_pixels(cx, cy, r, res, ordered)
        return ids, flat, None
    ids, flat, d2 = _disc_pixels(cx + 0.5, cy - 0.5, r, res, ordered, own=False)
    return ids, flat, _coverage(r[ids], d2)


def _line_pixels(ax, ay, bx, by, r, res, aa):
    """Yield ``(ids, flat, alpha)`` of segments (`_segment_pixels`); ``alpha`` None without
    ``aa``, where a line is at least a pixel wide."""
    if not aa:
        for ids, flat, _ in _segment_pixels(ax, ay, bx, by, np.maximum(r, 0.5), res):
            yield ids, flat, None
        return
    for ids, flat, d2 in _segment_pixels(ax, ay, bx, by, r, res):
        yield ids, flat, _coverage(r[ids], d2)


def _queued_pixels(kind, coords, radii, res, aa):
    """Yield ``(ids, flat, alpha)`` as the drawing functions do, for queued shapes of one kind:
    ``coords`` ``(n, 2 | 4 | 6)``, corners in Taichi's [0, 1]^2 (y up)."""
    xs, ys = coords[:, 0::2] * res[0], (1.0 - coords[:, 1::2]) * res[1]
    if kind == _CIRCLE:
        yield _circle_pixels(xs[:, 0], ys[:, 0], radii, res, aa)
    elif kind == _LINE:
        yield from _line_pixels(xs[:, 0], ys[:, 0], xs[:, 1], ys[:, 1], radii, res, aa)
    else:
        for ids, flat in _triangle_pixels(xs[:, 0], ys[:, 0], xs[:, 1], ys[:, 1], xs[:, 2],
                                          ys[:, 2], res):
            yield ids, flat, (np.ones(ids.size) if aa else None)


def _paint(canvas, flat, colors, alpha, one_colour=False):
    """Draw pixels ``flat`` of the packed canvas ``canvas`` (1-D) in order with ``colors``,
    each over what is below by its coverage ``alpha`` (None: all opaque), as Taichi's GUI
    blends in float (``old (1 - a) + colour a``), then truncated to bytes as its frames are.
    Vectorised: per pixel the last opaque entry is the base; the partial ones after it
    combine in closed form (each colour weighted by its alpha times the transparencies of
    the later ones). With ``one_colour`` the order does not matter and is not sorted."""
    if alpha is None:
        canvas[flat] = colors
        return
    if one_colour:
        _blend_one_colour(canvas, flat, colors[0], alpha)
        return
    full = alpha >= 1.0
    canvas[flat[full]] = colors[full]
    part = np.flatnonzero((alpha > 0.0) & ~full)
    if part.size == 0:
        return
    if full.any():  # partial entries under a later opaque one are hidden by it
        last = np.full(canvas.size, -1, np.int64)
        last[flat[full]] = np.flatnonzero(full)  # in order: the last opaque entry wins
        part = part[part > last[flat[part]]]
    _blend_partial(canvas, flat[part], colors[part], alpha[part])


def _blend_one_colour(canvas, flat, color, alpha):
    """`_paint` for entries of one colour: c over c is c, so only each pixel's total
    transparency matters, in any order (an opaque entry's is 0: its log is capped at -34)."""
    if flat.size == 0:
        return
    log_t = np.bincount(flat, np.log1p(-np.minimum(alpha, 1.0 - 1e-15)), canvas.size)
    pix = np.flatnonzero(log_t)  # entries of coverage 0 leave their pixel as it is
    log_t = log_t[pix]
    opaque = log_t < -30.0  # covered: no blending (most pixels of big discs)
    canvas[pix[opaque]] = color
    pix, trans = pix[~opaque], np.exp(log_t[~opaque])
    _put_blended(canvas, pix, trans, (1.0 - trans)[:, None] * _unpack(np.uint32(color)))


def _blend_partial(canvas, flat, colors, alpha):
    """`_paint` for entries of coverage in (0, 1), in drawing order."""
    log_t = np.log1p(-alpha)
    count = np.bincount(flat, minlength=canvas.size)
    alone = count[flat] == 1  # the only partial entry of its pixel: no order to keep
    pix = flat[alone]
    _put_blended(canvas, pix, 1.0 - alpha[alone], alpha[alone, None] * _unpack(colors[alone]))
    many = np.flatnonzero(~alone)
    if many.size:
        _blend_in_order(canvas, flat[many], colors[many], alpha[many], log_t[many])


def _blend_in_order(canvas, flat, colors, alpha, log_t):
    """`_blend_partial` for pixels with several partial entries: sorted by pixel (drawing order
    kept within a pixel), each colour weighted by its alpha times the later ones' transparency."""
    order = np.sort((flat << 32) | np.arange(flat.size)) & 0xFFFFFFFF  # stable, faster than argsort
    flat, log_t, alpha, colors = flat[order], log_t[order], alpha[order], colors[order]
    new_pixel = np.r_[True, flat[1:] != flat[:-1]]
    starts = np.flatnonzero(new_pixel)
    sums = np.cumsum(log_t)
    total = np.add.reduceat(log_t, starts)
    # log of the transparency of the later entries of the same pixel
    later = (sums[starts] - log_t[starts] + total)[np.cumsum(new_pixel) - 1] - sums
    paint = np.add.reduceat((alpha * np.exp(later))[:, None] * _unpack(colors), starts, axis=0)
    _put_blended(canvas, flat[starts], np.exp(total), paint)


def _put_blended(canvas, pix, trans, paint):
    """Pixels ``pix`` of the packed canvas become ``old * trans + paint`` (bytes, truncated as
    Taichi's frames are; the small lift keeps a pixel that barely changes from losing a byte)."""
    new = _unpack(canvas[pix]) * trans[:, None] + paint + 1e-4
    canvas[pix] = _pack(np.clip(new, 0.0, 255.0))


def _triangle_pixels(ax, ay, bx, by, cx, cy, res):
    """Yield ``(ids, flat)``: the canvas pixels (flat indices) whose centres lie in triangles
    ``ids`` (`_triangle_cover`), triangle by triangle in order."""
    for ids, xs, ys, *_ in _triangle_cover(ax, ay, bx, by, cx, cy, res):
        yield ids, ys * res[0] + xs


@functools.lru_cache(maxsize=256)
def _text_coverage(content: str, font_size: float, x: float, y: float, res: tuple):
    """``(box, alpha)``: where on a ``res`` canvas ``content`` drawn at pixel ``(x, y)`` (its
    top-left corner) lies, and its coverage there (float32 in [0, 1], ``(h, w, 1)``, read-only);
    None when it covers nothing. Cached: GUI loops draw the same labels at the same places every
    frame, and laying out and rasterising one costs more than a small simulation's frame.
    Labels that change every frame (a step counter) are laid out by matplotlib and composed from
    cached glyph bitmaps (about 2 ms for 40 characters, against 7 ms rendering the string,
    Taichi's GUI 1.3 ms), the pixels Agg draws."""
    try:
        placed = _glyph_placements(content, font_size, x, y, res[1])
    except (AttributeError, ImportError, TypeError):  # matplotlib's private font API changed
        return _text_coverage_agg(content, font_size, x, y, res)
    return _compose_glyphs(placed, res)


@functools.lru_cache(maxsize=4096)
def _glyph(fname: str, size: float, index: int, ox: int, oy: int):
    """(coverage bytes, left, top) of glyph ``index`` of font file ``fname`` rendered at the
    26.6 fixed-point subpixel offset (ox, oy), as Agg's text drawing renders each glyph."""
    from matplotlib.backends.backend_agg import get_hinting_flag
    from matplotlib.font_manager import get_font
    from matplotlib.ft2font import RenderMode

    font = get_font(fname)
    font.set_size(size, 72)
    font._set_transform(np.array([[0x10000, 0], [0, 0x10000]]), [ox, oy])
    bitmap = font._render_glyph(index, get_hinting_flag(), RenderMode.NORMAL)
    return np.array(bitmap.buffer, dtype=np.uint8), bitmap.left, bitmap.top


@functools.lru_cache(maxsize=4096)
def _glyph_top(fname: str, size: float, index: int) -> int:
    """The top of glyph ``index``'s box above the baseline, in 26.6 fixed point."""
    from matplotlib.backends.backend_agg import get_hinting_flag
    from matplotlib.font_manager import get_font

    font = get_font(fname)
    font.set_size(size, 72)
    return font.load_glyph(index, flags=get_hinting_flag()).bbox[3]


def _glyph_placements(content, font_size, x, y, height):
    """[(coverage bytes, top row, left column)] of the glyphs of ``content`` laid out as
    matplotlib's Agg renderer lays out a string drawn at (x, y) with y down (72 dpi)."""
    from matplotlib.backends.backend_agg import get_hinting_flag
    from matplotlib.font_manager import FontProperties, fontManager, get_font

    font = get_font(fontManager._find_fonts_by_props(FontProperties(size=font_size)))
    font.clear()
    font.set_size(font_size, 72)
    items = font._layout(content, flags=get_hinting_flag())
    if not items:
        return []
    # the string's top above its baseline (what Agg's height minus descent is): the highest
    # glyph box, without laying the string out a second time (set_text)
    base = y + max(_glyph_top(i.ft_object.fname, float(font_size), i.glyph_index)
                   for i in items) / 64.0
    placed = []
    for item in items:
        px, py = round(64 * (x + item.x)), round(64 * (height - base + item.y))
        buf, left, top = _glyph(item.ft_object.fname, float(font_size), item.glyph_index,
                                px % 64, py % 64)
        if buf.size:
            placed.append((buf, height - top - py // 64, left + px // 64))
    return placed


def _compose_glyphs(placed, res):
    """`_text_coverage`'s result from glyph placements: coverages combined as Agg blends them
    (a + b (1 - a)), clipped to the canvas, rounded to bytes as Agg's alpha channel is."""
    w, h = res
    if not placed:
        return None
    r0, c0 = max(min(p[1] for p in placed), 0), max(min(p[2] for p in placed), 0)
    r1 = min(max(p[1] + p[0].shape[0] for p in placed), h)
    c1 = min(max(p[2] + p[0].shape[1] for p in placed), w)
    if r0 >= r1 or c0 >= c1:
        return None
    acc = np.zeros((r1 - r0, c1 - c0), np.float32)
    for buf, r, c in placed:
        top, bottom = max(r, r0), min(r + buf.shape[0], r1)
        left, right = max(c, c0), min(c + buf.shape[1], c1)
        if top < bottom and left < right:
            cov = buf[top - r:bottom - r, left - c:right - c] * np.float32(1 / 255)
            dst = acc[top - r0:bottom - r0, left - c0:right - c0]
            dst += cov * (1 - dst)
    acc = np.round(acc * 255) / np.float32(255)
    rows, cols = np.nonzero(acc.any(axis=1))[0], np.nonzero(acc.any(axis=0))[0]
    if rows.size == 0:
        return None
    a = acc[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1][..., None].astype(np.float32)
    a.setflags(write=False)
    return np.s_[r0 + rows[0]:r0 + rows[-1] + 1, c0 + cols[0]:c0 + cols[-1] + 1], a


def _text_coverage_agg(content: str, font_size: float, x: float, y: float, res: tuple):
    """`_text_coverage` through matplotlib's Agg renderer on a whole canvas: where the
    matplotlib in use lacks what `_glyph_placements` reads."""
    from matplotlib.backends.backend_agg import RendererAgg
    from matplotlib.font_manager import FontProperties

    w, h = res
    renderer = RendererAgg(w, h, 72)  # 72 dpi: one point is one pixel
    prop = FontProperties(size=font_size)
    _, th, descent = renderer.get_text_width_height_descent(content, prop, ismath=False)
    renderer.draw_text(renderer.new_gc(), x, y + th - descent, content, prop, 0)
    alpha = np.asarray(renderer.buffer_rgba())[..., 3]
    rows, cols = np.nonzero(alpha.any(axis=1))[0], np.nonzero(alpha.any(axis=0))[0]
    if rows.size == 0:
        return None
    box = np.s_[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    a = alpha[box][..., None].astype(np.float32) / 255.0
    a.setflags(write=False)
    return box, a


class GUI:
    """Taichi's ``ti.GUI``, drawn offscreen into a numpy buffer (never a window).

    ``show_gui``, ``fullscreen`` and ``fast_gui`` are accepted for compatibility and ignored.
    No input ever arrives: ``get_event`` is False, ``event`` stays None, no key is pressed.
    """

    class Event:
        """One input event, as Taichi's ``GUI.Event`` (type, modifier, pos, key, delta)."""

        def __init__(self):
            self.type = self.modifier = self.pos = self.key = self.delta = None

    # Key and event names, as in Taichi, so that event-polling loops still run.
    ESCAPE, SHIFT, ALT, CTRL, SPACE, BACKSPACE, RETURN, TAB, CAPSLOCK = (
        "Escape",
        "Shift",
        "Alt",
        "Control",
        " ",
        "BackSpace",
        "Return",
        "Tab",
        "Caps_Lock",
    )
    LEFT, RIGHT, UP, DOWN = "Left", "Right", "Up", "Down"
    LMB, MMB, RMB, WHEEL, MOVE, EXIT = "LMB", "MMB", "RMB", "Wheel", "Motion", "WMClose"
    # added to float pixels * 255 before they become bytes: Taichi's GUI truncates (0.5 shows
    # and saves 127, measured); a ti.ui window's surface rounds
    _byte_rounding = 0.0
    # Taichi's GUI antialiases circles and lines (`_coverage`); a ti.ui window's surface does not
    _antialias = True
    PRESS, RELEASE, MOTION = "Press", "Release", "Motion"

    def __init__(self, name="Taichi", res=512, background_color=0x000000, show_gui=False, fullscreen=False,
                 fast_gui=False):
        self.name = name
        w, h = (res, res) if np.isscalar(res) else tuple(res)
        self.res = (int(w), int(h))
        self.background_color = background_color
        self.show_gui = show_gui
        self.fullscreen = fullscreen
        self.fast_gui = fast_gui
        self.frame = 0
        self.event = None
        self.key_pressed = set()
        self.fps_limit = None
        self._running = True
        # Packed 0xRRGGBB per pixel, row 0 at the top: drawing is a flat scatter of uint32.
        self._canvas = np.empty((self.res[1], self.res[0]), dtype=np.uint32)
        # (kind, coordinates, radius, colour) of single-shape calls not drawn yet, in call order
        self._queued = []
        # (image, grey fills alpha, canvas it made) of the last set_image until the next clear:
        # what get_image returns where nothing was drawn over it since
        self._raw = None
        self.clear()
        _gui_raster.start_image_compile()  # set_image's compiled conversion, ready in a few frames

    # ----------------------------------------------------------- state
    @property
    def running(self) -> bool:
        return self._running

    @running.setter
    def running(self, value: bool):
        self._running = bool(value)

    def close(self):
        self._running = False

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def clear(self, color=None):
        """Fill the canvas with ``color`` (default: the background colour)."""
        self._queued.clear()
        self._raw = None
        self._canvas[...] = _packed(self.background_color if color is None else color)[0]

    @property
    def _buf(self) -> np.ndarray:
        """The canvas, with every queued shape drawn on it."""
        if self._queued:
            self._draw_queued()
        return self._canvas

    def _queue(self, kind, coords, radius, color):
        """Queue one shape (coordinates in Taichi's [0, 1]^2): a frame's single-shape calls are
        drawn together when the canvas is next used, in call order, one vectorised pass per
        kind (a numpy pass per call cost 0.2-7 ms; Taichi's C++ canvas 5-300 us)."""
        self._queued.append((kind, coords, radius, color))
        if len(self._queued) >= _QUEUE_LIMIT:
            self._draw_queued()

    def _draw_queued(self):
        queued, self._queued = self._queued, []
        kind = queued[0][0]
        if not self._antialias or kind == _TRIANGLE or any(q[0] != kind for q in queued):
            self._draw_queued_numpy(queued)  # mixed kinds: one pass, blended in call order
            return
        self._draw_queued_compiled(kind, queued)

    def _draw_queued_compiled(self, kind, queued):
        """Queued circles only or lines only (a FEM program's 190 `gui.line`s a frame) by the
        compiled loop `circles`/`lines` use: the same bytes as the numpy pass, several times
        faster; with a non-finite value, the numpy pass."""
        coords = np.array([q[1] for q in queued], np.float64)
        radii = np.array([q[2] for q in queued], np.float64)
        if not (np.isfinite(coords).all() and np.isfinite(radii).all()):
            self._draw_queued_numpy(queued)
            return
        colors = np.array([q[3] for q in queued], np.uint32)
        xs, ys = coords[:, 0::2] * self.res[0], (1.0 - coords[:, 1::2]) * self.res[1]
        if kind == _CIRCLE:  # measured from each pixel's lower-left corner, as in `circles`
            shapes, name = (xs[:, 0] + 0.5, ys[:, 0] - 0.5), "circles"
        else:
            shapes, name = (xs[:, 0], ys[:, 0], xs[:, 1], ys[:, 1]), "lines"
        _gui_raster.draw(name, self._canvas.reshape(-1), self._raster_scratch(), self.res, shapes,
                         radii, colors[:1] if (colors == colors[0]).all() else colors)

    def _draw_queued_numpy(self, queued):
        kinds = np.fromiter((q[0] for q in queued), np.int8, len(queued))
        present = np.unique(kinds)
        seqs, flats, colors, alphas = [], [], [], []
        for kind in present:
            which = np.flatnonzero(kinds == kind)
            coords = np.array([queued[i][1] for i in which], np.float64)
            radii = np.array([queued[i][2] for i in which], np.float64)
            color = np.array([queued[i][3] for i in which], np.uint32)
            for ids, flat, alpha in _queued_pixels(kind, coords, radii, self.res, self._antialias):
                seqs.append(which[ids])
                flats.append(flat)
                colors.append(color[ids])
                alphas.append(alpha)
        if not flats:
            return
        flat, color = np.concatenate(flats), np.concatenate(colors)
        alpha = np.concatenate(alphas) if self._antialias else None
        if len(present) > 1:  # kinds were rasterised apart: back to call order
            order = np.argsort(np.concatenate(seqs), kind="stable")
            flat, color = flat[order], color[order]
            alpha = None if alpha is None else alpha[order]
        _paint(self._canvas.reshape(-1), flat, color, alpha)

    def _raster_scratch(self) -> _gui_raster.Scratch:
        """The work arrays of `_gui_raster.draw` for this canvas."""
        npix = self.res[0] * self.res[1]
        s = getattr(self, "_raster", None)
        if s is None or s.mask.size != npix:
            s = self._raster = _gui_raster.Scratch(npix)
        return s

    def _one_color(self, color) -> int:
        if type(color) is int:
            return color & 0xFFFFFF
        return int(self._colors(color, 1)[0])

    @staticmethod
    def _one_radius(radius) -> float:
        if type(radius) is int or type(radius) is float:
            return float(radius)
        return float(_per_item(np.atleast_1d(_as_array(radius)).ravel(), 1, "radius")[0])

    # ----------------------------------------------------------- helpers
    def _to_px(self, p: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Taichi [0,1]^2 (y up) to pixel coordinates (x right, y down; centres at +0.5)."""
        return p[:, 0] * self.res[0], (1.0 - p[:, 1]) * self.res[1]

    def _colors(self, color, n, palette=None, palette_indices=None) -> np.ndarray:
        if palette is not None and palette_indices is not None:
            color = _packed(palette)[_as_array(palette_indices, np.int64).ravel()]
            return _per_item(color, n, "palette_indices")
        return _per_item(_packed(color), n, "color")

    # ----------------------------------------------------------- shapes
    def circles(self, pos, radius=1, color=0xFFFFFF, palette=None, palette_indices=None):
        """Filled discs at ``pos`` (N, 2); ``radius`` in pixels, one or per circle."""
        p = _points(pos)
        n = len(p)
        if n == 0:
            return
        cx, cy = self._to_px(p)
        r = _per_item(np.atleast_1d(_as_array(radius)).ravel(), n, "radius")
        colors = self._colors(color, n, palette, palette_indices)
        one_colour = bool((colors == colors[0]).all())
        if self._antialias:  # compiled loop (_gui_raster); a non-finite circle draws nothing
            r = r.astype(np.float64)
            keep = np.isfinite(cx) & np.isfinite(cy) & np.isfinite(r)
            if not keep.all():
                cx, cy, r = cx[keep], cy[keep], r[keep]
                colors = colors if one_colour else colors[keep]
            # Taichi measures from each pixel's lower-left corner (see _circle_pixels)
            _gui_raster.draw("circles", self._buf.reshape(-1), self._raster_scratch(), self.res,
                             (cx + 0.5, cy - 0.5), r, colors[:1] if one_colour else colors)
            return
        ids, flat, alpha = _circle_pixels(cx, cy, r.astype(np.float64), self.res, self._antialias,
                                          ordered=not one_colour)
        _paint(self._buf.reshape(-1), flat, colors[:1] if one_colour else colors[ids], alpha,
               one_colour)

    def circle(self, pos, color=0xFFFFFF, radius=1):
        self._queue(_CIRCLE, _xy(pos), self._one_radius(radius), self._one_color(color))

    def lines(self, begin, end, radius=1, color=0xFFFFFF):
        """Segments from ``begin`` to ``end`` (N, 2 each) with round caps; a pixel whose centre
        is ``d`` pixels from a segment is covered by ``clamp(radius - d, 0, 1)``."""
        a, b = _points(begin), _points(end)
        n = len(a)
        if n == 0:
            return
        if len(b) != n:
            raise ValueError(f"lines: {n} begin points but {len(b)} end points")
        ax, ay = self._to_px(a)
        bx, by = self._to_px(b)
        r = _per_item(np.atleast_1d(_as_array(radius)).ravel(), n, "radius").astype(np.float64)
        colors = self._colors(color, n)
        one_colour = bool((colors == colors[0]).all())
        flat_buf = self._buf.reshape(-1)
        if self._antialias and all(np.isfinite(a).all() for a in (ax, ay, bx, by, r)):
            _gui_raster.draw("lines", flat_buf, self._raster_scratch(), self.res, (ax, ay, bx, by),
                             r, colors[:1] if one_colour else colors)
            return
        for ids, flat, alpha in _line_pixels(ax, ay, bx, by, r, self.res, self._antialias):
            _paint(flat_buf, flat, colors[:1] if one_colour else colors[ids], alpha, one_colour)

    def line(self, begin, end, radius=1, color=0xFFFFFF):
        self._queue(_LINE, _xy(begin) + _xy(end), self._one_radius(radius), self._one_color(color))

    def triangles(self, a, b, c, color=0xFFFFFF):
        """Filled triangles with corners ``a``, ``b``, ``c`` (N, 2 each)."""
        pa, pb, pc = _points(a), _points(b), _points(c)
        n = len(pa)
        if n == 0:
            return
        (ax, ay), (bx, by), (cx, cy) = self._to_px(pa), self._to_px(pb), self._to_px(pc)
        colors = self._colors(color, n)
        flat_buf = self._buf.reshape(-1)
        for ids, flat in _triangle_pixels(ax, ay, bx, by, cx, cy, self.res):
            flat_buf[flat] = colors[ids]

    def triangle(self, a, b, c, color=0xFFFFFF):
        self._queue(_TRIANGLE, _xy(a) + _xy(b) + _xy(c), 0.0, self._one_color(color))

    def rect(self, topleft, bottomright, radius=1, color=0xFFFFFF):
        """The outline of an axis-aligned rectangle."""
        (x0, y0), (x1, y1) = _xy(topleft), _xy(bottomright)
        r, c = self._one_radius(radius), self._one_color(color)
        corners = [(x0, y0), (x1, y0), (x1, y1), (x0, y1)]
        for k in range(4):
            self._queue(_LINE, corners[k] + corners[(k + 1) % 4], r, c)

    @staticmethod
    def _arrow_to_lines(orig, major, tip_scale=0.2, angle=45):
        """The three strokes of each arrow (shaft and two head strokes), as Taichi draws them."""
        a = np.radians(180 - angle)
        c, s = np.cos(a), np.sin(a)
        minor1 = np.stack([major[:, 0] * c - major[:, 1] * s, major[:, 0] * s + major[:, 1] * c], 1)
        minor2 = np.stack([major[:, 0] * c + major[:, 1] * s, -major[:, 0] * s + major[:, 1] * c], 1)
        end = orig + major
        return [(orig, end), (end, end + minor1 * tip_scale), (end, end + minor2 * tip_scale)]

    def arrows(self, orig, direction, radius=1, color=0xFFFFFF, **kwargs):
        """Arrows from ``orig`` along ``direction`` (N, 2 each); ``tip_scale``, ``angle`` as in Taichi."""
        orig = _points(orig)
        n = len(orig)
        if n == 0:
            return
        strokes = self._arrow_to_lines(orig, _points(direction), **kwargs)
        # one call, shafts then each head stroke as Taichi orders them: blended in one pass,
        # not truncated to bytes between the strokes
        r = _per_item(np.atleast_1d(_as_array(radius)).ravel(), n, "radius")
        self.lines(np.concatenate([b for b, _ in strokes]), np.concatenate([e for _, e in strokes]),
                   radius=np.tile(r, 3), color=np.tile(self._colors(color, n), 3))

    def arrow(self, orig, direction, radius=1, color=0xFFFFFF, **kwargs):
        self.arrows(_point(orig), _point(direction), radius=radius, color=color, **kwargs)

    # ----------------------------------------------------------- fields of shapes
    @staticmethod
    def _field_base(w, h, bound):
        x = np.linspace(bound / w, 1 - bound / w, w)
        y = np.linspace(bound / h, 1 - bound / h, h)
        return np.stack(np.meshgrid(x, y, indexing="ij"), -1).reshape(w * h, 2)

    def point_field(self, radius, color=0xFFFFFF, bound=0.5):
        """A ``(W, H)`` grid of circles with the given radii, spread over the canvas."""
        r = _as_array(radius)
        self.circles(self._field_base(r.shape[0], r.shape[1], bound), radius=r.reshape(-1), color=color)

    def arrow_field(self, direction, radius=1, color=0xFFFFFF, bound=0.5, **kwargs):
        """A ``(W, H, 2)`` grid of arrows, spread over the canvas."""
        d = _as_array(direction)
        base = self._field_base(d.shape[0], d.shape[1], bound)
        self.arrows(base, d.reshape(-1, 2), radius=radius, color=color, **kwargs)

    def vector_field(self, vector_field, arrow_spacing=5, color=0xFFFFFF):
        """Every ``arrow_spacing``-th vector of a 2-D vector field as an arrow; the longest is
        a tenth of the window."""
        v = _as_array(vector_field)
        nx, ny = v.shape[:2]
        scale = 0.1 / (np.max(np.linalg.norm(v, axis=-1)) + 1e-16)
        xs, ys = np.meshgrid(np.arange(0, 1, arrow_spacing / nx), np.arange(0, 1, arrow_spacing / ny))
        begin = np.dstack((xs, ys)).reshape(-1, 2, order="F")
        self.arrows(begin, (v[::arrow_spacing, ::arrow_spacing] * scale).reshape(-1, 2), color=color)

    def contour(self, scalar_field, normalize=False):
        """A scalar field through matplotlib's 'plasma' colormap, bilinearly resampled to the canvas."""
        from matplotlib import colormaps

        a = _as_array(scalar_field)
        if a.shape != self.res:
            gy, gx = np.meshgrid(np.linspace(0, 1, self.res[1]), np.linspace(0, 1, self.res[0]))
            xi, yi = gy * (a.shape[1] - 1), gx * (a.shape[0] - 1)
            x1, y1 = xi.astype(int), yi.astype(int)
            x2, y2 = np.minimum(x1 + 1, a.shape[1] - 1), np.minimum(y1 + 1, a.shape[0] - 1)
            fx, fy = xi - x1, yi - y1
            a = ((a[y1, x1] * (1 - fx) + a[y1, x2] * fx) * (1 - fy)
                 + (a[y2, x1] * (1 - fx) + a[y2, x2] * fx) * fy)
        if normalize:
            a = (a - a.min()) / (a.max() - a.min())
        self.set_image(colormaps["plasma"](a))

    # ----------------------------------------------------------- images and text
    def set_image(self, img):
        """Replace the canvas with ``img``, indexed ``img[x, y]`` (x right, y up) as in Taichi.

        Shapes ``(W, H)``, ``(W, H, 2)`` (red, green; blue 0), ``(W, H, 3)`` or ``(W, H, 4)``
        (alpha ignored); floats are taken in [0, 1], u16/u32/u64 in [0, their maximum] as in
        Taichi, other integers in [0, 255]. Other sizes are scaled (nearest pixel).
        """
        a = _as_array(img, dtype=None)
        if a.ndim == 2:
            a = a[..., None]
        if a.ndim != 3 or a.shape[2] not in (1, 2, 3, 4):
            raise ValueError("set_image: expected shape (W, H), (W, H, 2), (W, H, 3) or (W, H, 4), "
                             f"got {a.shape}")
        if a.dtype in (np.uint16, np.uint32, np.uint64):
            a = a.astype(np.float32) * np.float32(1 / np.iinfo(a.dtype).max)
        if a.shape[2] == 2:
            a = np.concatenate([a, np.zeros_like(a[..., :1])], axis=2)
        w, h = self.res
        if a.shape[:2] != (w, h):  # nearest pixel; the conversions below are per element
            a = a[(np.arange(w) * a.shape[0]) // w][:, (np.arange(h) * a.shape[1]) // h]
        self._queued.clear()  # shapes queued before are covered by the image
        floats = np.issubdtype(a.dtype, np.floating) or a.dtype == np.bool_
        if not (floats and _gui_raster.pack_image(a, self._canvas, self._byte_rounding)):
            self._canvas[...] = self._image_to_packed(a).T[::-1]
        if isinstance(img, np.ndarray) and np.shares_memory(a, img):
            a = a.copy()  # Taichi's buffer is a copy: later writes to the array do not reach it
        # Taichi copies a float field's channels into a buffer whose alpha stays 0; a grey
        # array fills all four channels
        self._raw = (a, not (hasattr(img, "to_numpy") and np.issubdtype(a.dtype, np.floating)),
                     self._canvas.copy())  # to find what is drawn over it (0.2 ms at 1280x320)

    def _image_to_packed(self, a: np.ndarray) -> np.ndarray:
        """A ``(W, H, 1|3|4)`` image as packed ``0xRRGGBB`` ``(W, H)`` (a view of a scratch
        buffer). Runs once per frame on the whole canvas, so it works in place on buffers kept
        between frames, one channel at a time: no strided multi-channel copies, no new pages."""
        channels = 1 if a.shape[2] == 1 else 3
        if np.issubdtype(a.dtype, np.floating) or a.dtype == np.bool_:
            f = self._scratch("float", a.shape[:2] + (channels,), np.float32)
            np.copyto(f, a[..., :channels], casting="unsafe")
            if not np.isfinite(f).all():
                np.nan_to_num(f, copy=False)
            np.clip(f, 0.0, 1.0, out=f)
            f *= 255.0
            if self._byte_rounding:
                f += self._byte_rounding
        else:
            f = np.clip(a[..., :channels], 0, 255)
        u8 = self._scratch("bytes", f.shape, np.uint8)
        np.copyto(u8, f, casting="unsafe")
        rgbx = self._scratch("rgbx", a.shape[:2] + (4,), np.uint8)
        for byte in range(3):  # little-endian 0x00RRGGBB: bytes B, G, R, 0
            rgbx[..., byte] = u8[..., 0 if channels == 1 else 2 - byte]
        rgbx[..., 3] = 0
        return rgbx.view("<u4")[..., 0]

    def _scratch(self, name: str, shape: tuple, dtype) -> np.ndarray:
        """A buffer of this shape and type, the same one for every frame of that size."""
        scratch = self.__dict__.setdefault("_scratch_buffers", {})
        key = (name, shape, np.dtype(dtype))
        if key not in scratch:
            scratch[key] = np.empty(shape, dtype)
        return scratch[key]

    def get_image(self) -> np.ndarray:
        """The canvas as Taichi returns it: float32 ``(W, H, 4)``, indexed ``[x, y]``: its
        colours in [0, 1], opaque, except where the last ``set_image`` still shows: there the
        image's values as given (Taichi's float buffer), alpha 0 unless the image has it."""
        if self._raw is None:
            return self._shown_image()
        return self._raw_where_undrawn()

    def _shown_image(self) -> np.ndarray:
        """The canvas as shown (what ``show(file)`` writes): float32 ``(W, H, 4)`` in [0, 1],
        opaque, indexed ``[x, y]`` (what a ``ti.ui`` window's framebuffer reads)."""
        px = np.ascontiguousarray(self._buf[::-1].T)
        # the packed words' bytes are the channels: one conversion, no shifts (2x faster)
        b, g, r, pad = (0, 1, 2, 3) if sys.byteorder == "little" else (3, 2, 1, 0)
        out = px.view(np.uint8).reshape(px.shape + (4,))[..., [r, g, b, pad]].astype(np.float32)
        out *= np.float32(1 / 255)  # Taichi's bits: 0x33 reads 0.20000002, not 0.2
        out[..., 3] = 1.0
        return out

    def _raw_where_undrawn(self) -> np.ndarray:
        """Taichi's get_image reads its float buffer, which set_image filled with the image as
        given (not rounded to bytes or clipped; alpha 0 unless the image has it): those values
        where nothing was drawn over the image since (a pixel still showing what set_image put
        there), the canvas elsewhere."""
        a, grey_alpha, shown = self._raw
        out = _taichi_image(a, grey_alpha)
        canvas = self._buf
        if not np.array_equal(canvas, shown):  # usually a few shapes: convert only their pixels
            rows, cols = np.nonzero(canvas != shown)
            rgb = (canvas[rows, cols][:, None] >> np.array([16, 8, 0], np.uint32)) & np.uint32(0xFF)
            out[cols, canvas.shape[0] - 1 - rows] = np.append(
                rgb.astype(np.float32) * np.float32(1 / 255), np.ones((rows.size, 1), np.float32), axis=1)
        return out

    def text(self, content, pos, font_size=15, color=0xFFFFFF):
        """Draw ``content`` with its top-left corner at ``pos``; ``font_size`` in pixels."""
        x, y = self._to_px(_point(pos))
        coverage = _text_coverage(str(content), float(font_size), float(x[0]), float(y[0]),
                                  self.res)
        if coverage is None:
            return
        # Blend only the text's bounding box: a whole-canvas blend per call made text-heavy
        # GUI loops several times slower than their simulations.
        box, a = coverage
        rgb = _unpack(_packed(color))[0].astype(np.float32)
        out = _unpack(self._buf[box]).astype(np.float32) * (1.0 - a) + rgb * a
        self._buf[box] = _pack(out + 0.5)

    # ----------------------------------------------------------- frames
    def save(self, file):
        """Write the canvas to the image file ``file`` (its format from the extension, e.g. PNG),
        making its folder if needed."""
        from PIL import Image

        parent = os.path.dirname(os.fspath(file))
        if parent:
            os.makedirs(parent, exist_ok=True)
        Image.fromarray(_unpack(self._buf)).save(file)

    def show(self, file=None):
        """Finish the frame: write it to ``file`` (PNG) if given, then clear the canvas."""
        if file:
            self.save(file)
        self.frame += 1
        self.clear()

    # ----------------------------------------------------------- events and widgets (inert)
    def has_key_event(self):
        return False

    def get_key_event(self):
        raise RuntimeError("GUI.get_key_event: an offscreen GUI never receives input (has_key_event() is False)")

    def get_events(self, *filters):
        return []

    def get_event(self, *filters):
        return False

    def is_pressed(self, *keys):
        return any(k in self.key_pressed for k in keys)

    def get_cursor_pos(self):
        # Taichi's GUI reports (0, 0) until the mouse moves (headless, always): cursor-driven
        # programs then compute what they compute under Taichi.
        return (0.0, 0.0)

    def slider(self, text, minimum, maximum, step=1):
        return _WidgetValue(minimum, f"slider {text!r}")

    def label(self, text):
        return _WidgetValue(0, f"label {text!r}")

    def button(self, text, event_name=None):
        return event_name or f"WidgetButton_{text}"


class _WidgetValue:
    """A slider's or label's value: a float, as Taichi's GUI keeps it (`radius.value = 10` reads
    back 10.0)."""

    def __init__(self, value, what: str):
        self.what = what
        self.value = value

    @property
    def value(self) -> float:
        return self._value

    @value.setter
    def value(self, v):
        try:
            self._value = float(v)
        except (TypeError, ValueError):
            from fieldsim.errors import FieldsimTypeError
            from fieldsim.lang.naming import user_loc
            raise FieldsimTypeError(f"GUI {self.what}: the value must be a number, got {v!r}",
                                    user_loc()) from None


def frames_to_gif(pngs, out_path, fps=20):
    """Write the image files ``pngs`` as an animated GIF at ``fps`` frames per second.

    Identical consecutive frames are merged by Pillow (their durations add up).
    Returns ``out_path``.
    """
    from PIL import Image

    pngs = [os.fspath(p) for p in pngs]
    if not pngs:
        raise ValueError("frames_to_gif: no frames given")
    frames = []
    for p in pngs:
        with Image.open(p) as im:
            frames.append(im.convert("RGB").convert("P", palette=Image.Palette.ADAPTIVE))
    parent = os.path.dirname(os.fspath(out_path))
    if parent:
        os.makedirs(parent, exist_ok=True)
    frames[0].save(
        out_path, save_all=True, append_images=frames[1:], duration=max(round(1000 / fps), 10), loop=0
    )
    return out_path
