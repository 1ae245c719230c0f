"""Offscreen rendering of a GGUI scene with numpy: a z-buffer, then Lambert shading per pixel.

Takes the scene's draws as numpy data (`Particles`, `Mesh`, `Lines`), its point lights, its
ambient light and a camera state. Guarantees, from `render`, the flat indices of the pixels the
scene covers, their RGB in [0, 1], and the view depth of every pixel (inf where nothing is):

- particles are spheres drawn as discs of their projected radius, each pixel's depth and
  normal taken on the sphere (GGUI's impostor spheres), so overlapping spheres intersect;
- mesh triangles are filled with perspective-correct depth, positions, normals and colours;
  a two-sided mesh turns each normal toward the viewer;
- lines are screen-space quads ``width`` pixels wide, unlit;
- each pixel keeps its nearest fragment (``np.minimum.at`` on the depth buffer), and only those
  are shaded: ``albedo * (ambient + sum of max(0, n.l) * light colour)`` over the point lights,
  as GGUI's shaders do (diffuse only).

Triangles and lines crossing the near plane are clipped to it (fieldsim.ui.near_clip), as GGUI's
pipeline clips them; spheres whose centre is behind it are dropped.
The disc and triangle coverage is fieldsim.gui's rasteriser, so 2-D and 3-D agree on pixels.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from fieldsim.gui import _disc_cover_grouped, _triangle_cover
from fieldsim.ui.camera import CameraState, Projector
from fieldsim.ui.near_clip import clip_segments, clip_triangles

_TILE = 8  # pixels per side of the blocks used for occlusion culling
_CULL_SPAN = 4  # boxes over at most this many blocks per side are tested for occlusion
_BATCH = 1024  # the first batch of spheres drawn before an occlusion test


@dataclass
class Particles:
    centers: np.ndarray  # (N, 3)
    radius: np.ndarray  # (N,)
    colors: np.ndarray  # (N, 3)


@dataclass
class Mesh:
    vertices: np.ndarray  # (V, 3)
    triangles: np.ndarray  # (T, 3) vertex indices
    normals: np.ndarray  # (V, 3)
    colors: np.ndarray  # (V, 3)
    two_sided: bool


@dataclass
class Lines:
    vertices: np.ndarray  # (V, 3)
    segments: np.ndarray  # (S, 2) vertex indices
    colors: np.ndarray  # (V, 3)
    width: float  # pixels


def _normalized(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v, axis=-1, keepdims=True)
    return np.divide(v, n, out=np.zeros_like(v), where=n > 0)


def _halving_max(a: np.ndarray, axis: int) -> np.ndarray:
    """The max over ``axis`` (a power of two long) by pairwise halving: several times faster
    than ``a.max(axis)`` over a short axis."""
    a = np.moveaxis(a, axis, 0)
    while a.shape[0] > 1:
        half = a.shape[0] // 2
        a = np.maximum(a[:half], a[half:])
    return a[0]


class _GBuffer:
    """Per pixel: the nearest fragment's depth, world position, normal, albedo, and whether
    lights shade it."""

    def __init__(self, res):
        self.width, self.height = res
        n = self.width * self.height
        self.depth = np.full(n, np.inf)
        self.pos = np.zeros((n, 3))
        self.normal = np.zeros((n, 3))
        self.albedo = np.zeros((n, 3))
        self.lit = np.zeros(n, dtype=bool)
        self._tiles = None  # the farthest depth in each _TILE x _TILE block, while valid

    def _tile_depth(self) -> np.ndarray:
        if self._tiles is None:
            w, h, t = self.width, self.height, _TILE
            d = self.depth.reshape(h, w)
            if h % t or w % t:
                d = np.full((-(-h // t) * t, -(-w // t) * t), -np.inf)  # off-screen hides nothing
                d[:h, :w] = self.depth.reshape(h, w)
            d = _halving_max(d.reshape(d.shape[0], d.shape[1] // t, t), 2)  # over block columns
            self._tiles = _halving_max(d.reshape(d.shape[0] // t, t, d.shape[1]), 1)
        return self._tiles

    def hidden(self, x0, x1, y0, y1, depth) -> np.ndarray:
        """Which pixel boxes ``[x0, x1] x [y0, y1]`` are wholly behind what the buffer holds
        (every on-screen pixel there is nearer than ``depth``): hierarchical-z culling on
        blocks, conservative (a box spanning many blocks is never called hidden)."""
        tiles = self._tile_depth()
        th, tw = tiles.shape
        tx0, tx1 = (np.clip(np.floor(v) // _TILE, 0, tw - 1).astype(np.int64) for v in (x0, x1))
        ty0, ty1 = (np.clip(np.floor(v) // _TILE, 0, th - 1).astype(np.int64) for v in (y0, y1))
        out = (tx1 - tx0 < _CULL_SPAN) & (ty1 - ty0 < _CULL_SPAN)
        for dy in range(_CULL_SPAN):
            for dx in range(_CULL_SPAN):
                out &= tiles[np.minimum(ty0 + dy, ty1), np.minimum(tx0 + dx, tx1)] < depth
        return out

    def offer(self, xs, ys, depth, attributes, lit: bool):
        """Keep the fragments at pixels ``(xs, ys)`` that are nearest so far;
        ``attributes(sel)`` gives (position, normal, albedo) of the fragments ``sel`` kept."""
        pix = ys * self.width + xs
        np.minimum.at(self.depth, pix, depth)
        sel = np.flatnonzero(depth <= self.depth[pix])
        if sel.size == 0:
            return
        self._tiles = None
        pos, normal, albedo = attributes(sel)
        p = pix[sel]
        self.pos[p], self.normal[p], self.albedo[p], self.lit[p] = pos, normal, albedo, lit


def _particles(gb: _GBuffer, proj: Projector, item: Particles):
    """Nearest first, in batches; a batch's spheres hidden behind what earlier ones drew are
    skipped (dense particle clouds show mostly their surface)."""
    sx, sy, z = proj.project(item.centers)
    rpx = item.radius * proj.pixels_per_unit(z)
    keep = np.flatnonzero((z > proj.state.near) & np.isfinite(rpx) & (rpx > 0))
    keep = keep[np.argsort(z[keep] - item.radius[keep], kind="stable")]
    for batch in _batches(keep):
        front = z[batch] - item.radius[batch]
        xb, yb, rb = sx[batch], sy[batch], rpx[batch]
        batch = batch[~gb.hidden(xb - rb, xb + rb, yb - rb, yb + rb, front)]
        _sphere_batch(gb, proj, item, batch, (sx[batch], sy[batch], z[batch], rpx[batch]))


def _batches(order: np.ndarray):
    """``order`` in batches growing from `_BATCH` to 16 times that: the nearest spheres are
    drawn in small batches, so that occlusion culling soon has something to cull with."""
    start, size = 0, _BATCH
    while start < order.size:
        yield order[start:start + size]
        start, size = start + size, min(2 * size, 16 * _BATCH)


def _sphere_batch(gb: _GBuffer, proj: Projector, item: Particles, batch, screen):
    sx, sy, z, rpx = screen
    centers, radius, colors = item.centers[batch], item.radius[batch], item.colors[batch]
    for ids, xs, ys, dx, dy in _disc_cover_grouped(sx, sy, rpx, proj.res):
        rr = (1.0 / rpx[ids]).astype(np.float32)
        nx, ny = dx * rr, -dy * rr
        nz = np.sqrt(np.maximum(np.float32(0.0), 1.0 - nx * nx - ny * ny))

        def attributes(sel, ids=ids, nx=nx, ny=ny, nz=nz):
            i = ids[sel]
            normal = (nx[sel, None] * proj.right + ny[sel, None] * proj.up
                      - nz[sel, None] * proj.forward)
            return centers[i] + radius[i, None] * normal, normal, colors[i]

        gb.offer(xs, ys, z[ids] - radius[ids] * nz, attributes, lit=True)


def _triangles(gb: _GBuffer, proj: Projector, screen, tri: np.ndarray, vertex_attrs, lit: bool,
               two_sided: bool = False):
    """Fill triangles ``tri`` (T, 3) of vertices at ``screen = (sx, sy, z)``, interpolating
    ``vertex_attrs = (positions, normals, colours)`` (each (V, 3))."""
    sx, sy, z = screen
    ok = np.isfinite(sx) & np.isfinite(sy) & (z > proj.state.near)
    tri = tri[ok[tri].all(axis=1)]
    a, b, c = tri.T
    for ids, xs, ys, e_ab, e_bc, e_ca in _triangle_cover(sx[a], sy[a], sx[b], sy[b], sx[c], sy[c],
                                                          proj.res):
        area = e_ab + e_bc + e_ca
        good = area != 0  # a triangle seen edge-on covers no area
        ids, xs, ys, t = ids[good], xs[good], ys[good], tri[ids[good]]
        w = np.stack([e_bc[good], e_ca[good], e_ab[good]], axis=1) / area[good, None]
        if proj.ortho:
            depth = (w * z[t]).sum(axis=1)
        else:  # 1/z is linear on screen: perspective-correct depth and weights
            w = w / z[t]
            depth = 1.0 / w.sum(axis=1)
            w *= depth[:, None]

        def attributes(sel, t=t, w=w):
            ws, ts = w[sel, :, None], t[sel]
            pos, normal, albedo = ((ws * attr[ts]).sum(axis=1) for attr in vertex_attrs)
            normal = _normalized(normal)
            if two_sided:
                away = (normal * proj.toward_viewer(pos)).sum(axis=1) < 0
                normal[away] *= -1.0
            return pos, normal, albedo

        gb.offer(xs, ys, depth, attributes, lit)


def _clip_plane(proj: Projector) -> float:
    """The depth clipped to: just in front of the near plane, so cut points project."""
    near = proj.state.near
    return near + 1e-6 * max(abs(near), 1e-3)


def _mesh(gb: _GBuffer, proj: Projector, item: Mesh):
    data = np.concatenate([item.vertices, item.normals, item.colors], axis=1)
    data, tri = clip_triangles(data, proj.view(item.vertices)[:, 2], item.triangles,
                               _clip_plane(proj))
    attrs = (data[:, 0:3], data[:, 3:6], data[:, 6:9])
    _triangles(gb, proj, proj.project(attrs[0]), tri, attrs, True, item.two_sided)


def _lines(gb: _GBuffer, proj: Projector, item: Lines):
    """Each segment becomes a screen-space quad (two triangles) of ``width`` pixels."""
    data = np.concatenate([item.vertices, item.colors], axis=1)
    data, segments = clip_segments(data, proj.view(item.vertices)[:, 2], item.segments,
                                   _clip_plane(proj))
    colors = data[:, 3:6]
    sx, sy, z = proj.project(data[:, 0:3])
    i, j = segments.T
    d = np.stack([sx[j] - sx[i], sy[j] - sy[i]], axis=1)
    side = _normalized(d)[:, ::-1] * np.array([-0.5, 0.5]) * max(item.width, 1.0)
    keep = np.flatnonzero(np.isfinite(side).all(axis=1) & (np.abs(d).sum(axis=1) > 0))
    i, j, side = i[keep], j[keep], side[keep]
    ends = np.concatenate([i, i, j, j])  # corners: i+side, i-side, j+side, j-side
    sign = np.repeat([1.0, -1.0, 1.0, -1.0], len(i))[:, None]
    offset = np.tile(side, (4, 1)) * sign
    screen = (sx[ends] + offset[:, 0], sy[ends] + offset[:, 1], z[ends])
    k = np.arange(len(i))
    n = len(i)
    quads = np.concatenate([np.stack([k, k + n, k + 2 * n], 1), np.stack([k + n, k + 3 * n, k + 2 * n], 1)])
    zeros = np.zeros((len(ends), 3))
    _triangles(gb, proj, screen, quads, (zeros, zeros, colors[ends]), lit=False)


_DRAW = {Particles: _particles, Mesh: _mesh, Lines: _lines}


def _shade(gb: _GBuffer, lights, ambient):
    hit = np.flatnonzero(np.isfinite(gb.depth))
    albedo, lit = gb.albedo[hit], gb.lit[hit]
    light = np.tile(np.asarray(ambient, dtype=np.float64), (hit.size, 1))
    pos, normal = gb.pos[hit], gb.normal[hit]
    for light_pos, light_color in lights:
        cos = (normal * _normalized(light_pos - pos)).sum(axis=1)
        light += np.maximum(cos, 0.0)[:, None] * light_color
    rgb = np.where(lit[:, None], albedo * light, albedo)
    return hit, np.clip(rgb, 0.0, 1.0)


def render(draws, lights, ambient, state: CameraState, res):
    """Render ``draws`` (Particles, Mesh, Lines) seen by ``state`` on a ``res`` window.

    Returns ``(pixels, rgb, depth, projector)``: flat indices (row 0 at the top) of the covered
    pixels, their (k, 3) colours, the (height * width) view depth, and the projector used."""
    proj = Projector(state, res)
    gb = _GBuffer(res)
    for item in draws:
        _DRAW[type(item)](gb, proj, item)
    pixels, rgb = _shade(gb, lights, ambient)
    return pixels, rgb, gb.depth, proj
