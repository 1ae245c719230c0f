"""``ti.ui.Scene``: the 3-D content of one frame (particles, meshes, lines, lights, camera).

Takes Taichi 1.7's ``Scene``/``SceneV2`` calls with their signatures; positions, indices,
normals, colours and transforms may be fields, fieldsim ndarrays or numpy arrays, read at the
call (as GGUI copies them into vertex buffers then). Guarantees the frame's draws as numpy data
(fieldsim.ui.render3d) for ``Canvas.scene``, which renders them and then starts the scene's next
frame: draws and point lights are per frame, the ambient light and camera persist, as in GGUI.
``show_wireframe`` is accepted and ignored (triangles are always filled).
"""
from __future__ import annotations

import numpy as np

from fieldsim.ui import _inputs
from fieldsim.ui.camera import Camera, CameraState
from fieldsim.ui.render3d import Lines, Mesh, Particles

_GREY = (0.5, 0.5, 0.5)


def _smooth_normals(vertices: np.ndarray, tri: np.ndarray) -> np.ndarray:
    """Per-vertex normals as GGUI makes them: the mean of the unit normals of the triangles
    around each vertex (a triangle a, b, c facing where (b - a) x (c - a) points)."""
    a, b, c = (vertices[tri[:, k]] for k in range(3))
    n = np.cross(b - a, c - a)
    n /= np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-30)
    out = np.zeros_like(vertices)
    for k in range(3):
        np.add.at(out, tri[:, k], n)
    return out


def _mesh_data(vertices, indices, normals, color, per_vertex_color, vertex_offset, vertex_count,
               index_offset, index_count, what):
    """Vertices (V, 3), triangles (T, 3), normals and colours of a ``mesh``-style call."""
    v = _inputs.vectors(vertices, 3, f"{what} vertices")
    rgb = _inputs.colors(per_vertex_color, color, len(v), what)
    if indices is None:
        keep = _inputs.span(len(v), vertex_offset, vertex_count, what)
        idx = np.arange(len(v))[keep]
    else:
        idx = _inputs.indices(indices, len(v) - int(vertex_offset), f"{what} indices")
        idx = idx[_inputs.span(len(idx), index_offset, index_count, what)] + int(vertex_offset)
    tri = idx[: len(idx) - len(idx) % 3].reshape(-1, 3)
    if normals is None:
        nrm = _smooth_normals(v, tri)
    else:
        nrm = _inputs.vectors(normals, 3, f"{what} normals")
        if len(nrm) < len(v):
            _inputs.fail(f"{what}: {len(nrm)} normals for {len(v)} vertices")
    return v, tri, nrm[: len(v)], rgb


def _instances(transforms, instance_offset, instance_count, what) -> np.ndarray:
    """The (K, 4, 4) transforms of ``mesh_instance`` (one identity when none)."""
    if transforms is None:
        return np.eye(4)[None]
    m = _inputs.array(transforms, f"{what} transforms")
    if m.shape[-2:] != (4, 4):
        _inputs.fail(f"{what}: transforms must be 4x4 matrices, got shape {m.shape}")
    m = m.reshape(-1, 4, 4)
    return m[_inputs.span(len(m), instance_offset, instance_count, what)]


class Scene:
    """Taichi's ``ti.ui.Scene`` (and the ``SceneV2`` that ``Window.get_scene()`` returns)."""

    def __init__(self):
        self._camera = CameraState()
        self._ambient = np.array([0.1, 0.1, 0.1])  # GGUI's default ambient light
        self._lights = []
        self._draws = []

    def set_camera(self, camera: Camera):
        self._camera = camera.state()

    def point_light(self, pos, color):
        self._lights.append((_inputs.triple(pos, "Scene.point_light pos"),
                             _inputs.triple(color, "Scene.point_light color")))

    def ambient_light(self, color):
        self._ambient = _inputs.triple(color, "Scene.ambient_light color")

    def particles(self, centers, radius, color=_GREY, per_vertex_color=None, per_vertex_radius=None,
                  index_offset=0, index_count=None):
        what = "Scene.particles"
        c = _inputs.vectors(centers, 3, f"{what} centers")
        keep = _inputs.span(len(c), index_offset, index_count, what)
        rgb = _inputs.colors(per_vertex_color, color, len(c), what)
        r = _inputs.radii(per_vertex_radius, radius, len(c), what)
        self._draws.append(Particles(c[keep], r[keep], rgb[keep]))

    def mesh(self, vertices, indices=None, normals=None, color=_GREY, per_vertex_color=None,
             two_sided=False, vertex_offset=0, vertex_count=None, index_offset=0, index_count=None,
             show_wireframe=False):
        v, tri, nrm, rgb = _mesh_data(vertices, indices, normals, color, per_vertex_color,
                                      vertex_offset, vertex_count, index_offset, index_count,
                                      "Scene.mesh")
        self._draws.append(Mesh(v, tri, nrm, rgb, bool(two_sided)))

    def mesh_instance(self, vertices, indices=None, normals=None, color=_GREY, per_vertex_color=None,
                      two_sided=False, transforms=None, instance_offset=0, instance_count=None,
                      vertex_offset=0, vertex_count=None, index_offset=0, index_count=None,
                      show_wireframe=False):
        what = "Scene.mesh_instance"
        v, tri, nrm, rgb = _mesh_data(vertices, indices, normals, color, per_vertex_color,
                                      vertex_offset, vertex_count, index_offset, index_count, what)
        for m in _instances(transforms, instance_offset, instance_count, what):
            linear = m[:3, :3]
            normal_map = np.linalg.inv(linear).T if np.linalg.det(linear) != 0 else linear
            self._draws.append(Mesh(v @ linear.T + m[:3, 3], tri, nrm @ normal_map.T, rgb,
                                    bool(two_sided)))

    def lines(self, vertices, width, indices=None, color=_GREY, per_vertex_color=None,
              vertex_offset=0, vertex_count=None, index_offset=0, index_count=None):
        what = "Scene.lines"
        v = _inputs.vectors(vertices, 3, f"{what} vertices")
        rgb = _inputs.colors(per_vertex_color, color, len(v), what)
        if indices is None:
            idx = np.arange(len(v))[_inputs.span(len(v), vertex_offset, vertex_count, what)]
        else:
            idx = _inputs.indices(indices, len(v) - int(vertex_offset), f"{what} indices")
            idx = idx[_inputs.span(len(idx), index_offset, index_count, what)] + int(vertex_offset)
        seg = idx[: len(idx) - len(idx) % 2].reshape(-1, 2)
        self._draws.append(Lines(v, seg, rgb, float(width)))

    def take_frame(self):
        """This frame's (draws, point lights, ambient light, camera state); the next frame
        starts with no draws and no point lights."""
        frame = (self._draws, self._lights, self._ambient, self._camera)
        self._draws, self._lights = [], []
        return frame


SceneV2 = Scene
