"""``ti.ui.Canvas``: the 2-D drawing calls of a GGUI window, and where a 3-D scene is drawn.

Takes Taichi 1.7's Canvas calls. Coordinates are GGUI's: ``[0, 1]^2`` with the origin at the
bottom-left; circle radii and line widths are fractions of the window height; colours are RGB
floats in [0, 1]. Inputs are read at the call; drawing happens when the window finishes the
frame, in call order over the background colour (so ``set_background_color`` after a draw still
sets the frame's background, as in GGUI). Guarantees the same pixels as fieldsim.gui's ``ti.GUI``
for circles and lines without its antialiasing (it is the rasteriser used), triangles with per-vertex colours
interpolated, and ``scene`` rendered by fieldsim.ui.render3d.
"""
from __future__ import annotations

import numpy as np

from fieldsim.gui import _pack, _triangle_cover
from fieldsim.lang.texture import Texture, texels
from fieldsim.ui import _inputs
from fieldsim.ui.render3d import render

_GREY = (0.5, 0.5, 0.5)


def _rgb8(rgb: np.ndarray) -> np.ndarray:
    """Packed ``0xRRGGBB`` from float RGB in [0, 1]."""
    return _pack(np.clip(rgb, 0.0, 1.0) * 255.0 + 0.5)


def _pairs(indices, n: int, what: str) -> np.ndarray:
    """Segment vertex pairs (S, 2): consecutive index pairs, or consecutive vertices."""
    idx = np.arange(n) if indices is None else _inputs.indices(indices, n, f"{what} indices")
    return idx[: len(idx) - len(idx) % 2].reshape(-1, 2)


class Canvas:
    """The 2-D canvas of a `fieldsim.ui.Window` (``window.get_canvas()``)."""

    def __init__(self, window):
        self._window = window

    def _draw(self, op):
        self._window._record(op)

    def set_background_color(self, color):
        rgb = _inputs.triple(color, "Canvas.set_background_color")
        self._window._background = int(_rgb8(rgb))

    def set_image(self, img):
        """``img`` indexed ``[x, y]`` (y up): ``(W, H)``, ``(W, H, 3)`` or ``(W, H, 4)``, floats in
        [0, 1] or 8-bit integers, or a 2-D ``ti.Texture``; another size is stretched over the
        window."""
        if isinstance(img, Texture):
            img = texels(img)
        a = _inputs.array(img, "Canvas.set_image", dtype=None)
        if a.dtype.kind not in "biuf" or a.ndim not in (2, 3) or (a.ndim == 3
                                                                   and a.shape[2] not in (3, 4)):
            _inputs.fail(f"Canvas.set_image: expected numbers of shape (W, H), (W, H, 3) or "
                         f"(W, H, 4), got {a.dtype} of shape {a.shape}")
        self._draw(lambda surface: surface.set_image(a))

    def contour(self, scalar_field, cmap_name="plasma", normalize=False):
        """A 2-D scalar field through a matplotlib colour map."""
        from matplotlib import colormaps

        a = _inputs.array(scalar_field, "Canvas.contour")
        if a.ndim != 2:
            _inputs.fail("contour() can only be used on a 2D scalar field.")
        if normalize:
            a = (a - a.min()) / (a.max() - a.min() + 1e-16)
        self.set_image(colormaps[cmap_name](a)[..., :3].astype(np.float32))

    def circles(self, centers, radius, color=_GREY, per_vertex_color=None, per_vertex_radius=None):
        what = "Canvas.circles"
        c = _inputs.vectors(centers, 2, f"{what} centers")
        rgb = _rgb8(_inputs.colors(per_vertex_color, color, len(c), what))
        r = _inputs.radii(per_vertex_radius, radius, len(c), what)
        self._draw(lambda surface: surface.circles(c, radius=r * surface.res[1], color=rgb))

    def lines(self, vertices, width, indices=None, color=_GREY, per_vertex_color=None):
        """Segments between consecutive index (or vertex) pairs, ``width`` a fraction of the
        window height; a segment takes its first vertex's colour. Zero-length segments (unused
        index slots that repeat one vertex) draw nothing."""
        what = "Canvas.lines"
        v = _inputs.vectors(vertices, 2, f"{what} vertices")
        seg = _pairs(indices, len(v), what)
        seg = seg[(v[seg[:, 0]] != v[seg[:, 1]]).any(axis=1)]
        rgb = _rgb8(_inputs.colors(per_vertex_color, color, len(v), what))[seg[:, 0]]
        begin, end = v[seg[:, 0]], v[seg[:, 1]]

        def op(surface):
            if len(seg):
                surface.lines(begin, end, radius=0.5 * float(width) * surface.res[1], color=rgb)

        self._draw(op)

    def triangles(self, vertices, color=_GREY, indices=None, per_vertex_color=None):
        """Filled triangles; per-vertex colours are interpolated across each one."""
        what = "Canvas.triangles"
        v = _inputs.vectors(vertices, 2, f"{what} vertices")
        idx = np.arange(len(v)) if indices is None else _inputs.indices(indices, len(v), what)
        tri = idx[: len(idx) - len(idx) % 3].reshape(-1, 3)
        rgb = _inputs.colors(per_vertex_color, color, len(v), what)
        self._draw(lambda surface: _fill_triangles(surface, v, tri, rgb))

    def vector_field(self, vector_field, arrow_spacing=5, scale=0.1, width=0.002, color=(0, 0, 0)):
        """Arrows for a 2-D field of 2-vectors sampled every ``arrow_spacing`` cells (and the
        last row and column), the longest ``scale`` long, as Taichi draws them."""
        v = _inputs.array(vector_field, "Canvas.vector_field")
        if v.ndim != 3 or v.shape[2] < 2:
            _inputs.fail(f"Canvas.vector_field: expected a 2-D field of 2-vectors, got shape {v.shape}")
        nx, ny = v.shape[:2]
        i, j = (a.ravel() for a in np.meshgrid(_samples(nx, arrow_spacing), _samples(ny, arrow_spacing),
                                                indexing="ij"))
        base = np.stack([i / max(nx - 1, 1), j / max(ny - 1, 1)], axis=1)
        d = v[i, j, :2] * (scale / max(np.linalg.norm(v[..., :2], axis=-1).max(), 1e-30))
        tip = base + d
        angle, head = np.arctan2(d[:, 1], d[:, 0]), 0.2 * np.linalg.norm(d, axis=1)
        ends = [tip + (head * np.stack([np.cos(a), np.sin(a)])).T
                for a in (angle + np.pi - np.pi / 6, angle - np.pi + np.pi / 6)]
        pts = np.stack([base, tip, tip, ends[0], tip, ends[1]], axis=1).reshape(-1, 2)
        self.lines(pts, width=width, color=color)

    def scene(self, scene):
        """Draw ``scene``'s frame (its draws and lights so far) and start its next frame."""
        draws, lights, ambient, camera = scene.take_frame()

        def op(surface):
            pixels, rgb, depth, proj = render(draws, lights, ambient, camera, surface.res)
            surface._buf.reshape(-1)[pixels] = _rgb8(rgb)
            self._window._depth = (depth, proj)

        self._draw(op)


def _samples(n: int, spacing: int) -> np.ndarray:
    """Every ``spacing``-th of ``n`` cells, the last sample moved to the last cell (Taichi's)."""
    k = np.arange(n // spacing + 1)
    return np.where(k < n // spacing, k * spacing, n - 1)


def _fill_triangles(surface, v: np.ndarray, tri: np.ndarray, rgb: np.ndarray):
    w, h = surface.res
    sx, sy = v[:, 0] * w, (1.0 - v[:, 1]) * h
    a, b, c = tri.T
    flat = surface._buf.reshape(-1)
    for ids, xs, ys, e_ab, e_bc, e_ca in _triangle_cover(sx[a], sy[a], sx[b], sy[b], sx[c], sy[c],
                                                          surface.res):
        area = e_ab + e_bc + e_ca
        wts = np.stack([e_bc, e_ca, e_ab], axis=1) / np.where(area == 0, 1.0, area)[:, None]
        wts[area == 0] = 1.0 / 3.0
        color = (wts[:, :, None] * rgb[tri[ids]]).sum(axis=1)
        flat[ys * w + xs] = _rgb8(color)
