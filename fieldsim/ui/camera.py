"""``ti.ui.Camera``: where a 3-D scene is seen from, and how it is projected onto the window.

Takes Taichi's setters (``position``, ``lookat``, ``up``, ``fov`` in degrees, ``projection_mode``,
the orthogonal frustum's ``left/right/top/bottom``, ``z_near``/``z_far``), with GGUI's defaults.
Guarantees `Projector`: world points to pixel coordinates (x right, y down) and view depth, as
GGUI's perspective projection with a vertical field of view does; the view and projection
matrices (glm's ``lookAt`` and ``perspective``/``ortho``, OpenGL clip depth, as 4x4 numpy arrays
acting on column vectors). ``track_user_inputs`` moves nothing: no input ever arrives offscreen.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from fieldsim.lang.matrix import Vector
from fieldsim.ui import _inputs
from fieldsim.ui.constants import ProjectionMode


def _unit(v: np.ndarray) -> np.ndarray:
    n = np.linalg.norm(v)
    return v / n if n > 0 else v


@dataclass(frozen=True)
class CameraState:
    """A camera's settings at one moment (a scene keeps the one it was given each frame)."""

    eye: tuple = (0.0, 0.0, 0.0)
    target: tuple = (0.0, 0.0, 1.0)
    up: tuple = (0.0, 1.0, 0.0)
    mode: int = ProjectionMode.Perspective
    fov: float = 45.0
    frustum: tuple = (-1.0, 1.0, -1.0, 1.0)  # left, right, top, bottom (GGUI's order)
    near: float = 0.1
    far: float = 1000.0

    def basis(self):
        """The eye and the orthonormal right, up and forward directions of the view."""
        eye = np.asarray(self.eye, dtype=np.float64)
        forward = _unit(np.asarray(self.target, dtype=np.float64) - eye)
        right = _unit(np.cross(forward, np.asarray(self.up, dtype=np.float64)))
        return eye, right, np.cross(right, forward), forward


class Projector:
    """World coordinates to the pixels of a ``res = (width, height)`` window for one camera."""

    def __init__(self, state: CameraState, res):
        self.state = state
        self.res = res
        self.eye, self.right, self.up, self.forward = state.basis()
        self.ortho = state.mode == ProjectionMode.Orthogonal
        w, h = res
        if self.ortho:
            left, right, top, bottom = state.frustum
            self._sx = w / (right - left)
            self._sy = h / abs(bottom - top)
            self._x0, self._y0 = left, min(top, bottom)
        else:
            self._focal = 0.5 * h / np.tan(np.radians(state.fov) / 2.0)

    def view(self, p: np.ndarray) -> np.ndarray:
        """``(N, 3)`` world points as (right, up, depth) view coordinates."""
        d = p - self.eye
        return np.stack([d @ self.right, d @ self.up, d @ self.forward], axis=1)

    def project(self, p: np.ndarray):
        """Pixel x, pixel y (down) and view depth of ``(N, 3)`` world points."""
        v = self.view(p)
        z = v[:, 2]
        if self.ortho:
            return (v[:, 0] - self._x0) * self._sx, self.res[1] - (v[:, 1] - self._y0) * self._sy, z
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = self._focal / z
        w, h = self.res
        return 0.5 * w + v[:, 0] * inv, 0.5 * h - v[:, 1] * inv, z

    def pixels_per_unit(self, z: np.ndarray) -> np.ndarray:
        """How many pixels one world unit at view depth ``z`` spans on screen."""
        if self.ortho:
            return np.full_like(z, self._sy)
        with np.errstate(divide="ignore"):
            return self._focal / z

    def toward_viewer(self, p: np.ndarray) -> np.ndarray:
        """Directions from ``(N, 3)`` points back toward the viewer (not normalised)."""
        if self.ortho:
            return np.broadcast_to(-self.forward, p.shape)
        return self.eye - p

    def clip_depth(self, z: np.ndarray) -> np.ndarray:
        """View depth as Vulkan's depth buffer holds it: 0 at z_near, 1 at z_far."""
        near, far = self.state.near, self.state.far
        if self.ortho:
            return (z - near) / (far - near)
        return far * (z - near) / (z * (far - near))


class Camera:
    """Taichi's ``ti.ui.Camera``. ``curr_position``, ``curr_lookat`` and ``curr_up`` are
    ``ti.Vector``s, as in Taichi."""

    def __init__(self):
        self._state = CameraState()
        self.position(0.0, 0.0, 0.0)
        self.lookat(0.0, 0.0, 1.0)
        self.up(0.0, 1.0, 0.0)

    def _set(self, **changes):
        self._state = replace(self._state, **changes)

    def position(self, x, y, z):
        xyz = _xyz("Camera.position", x, y, z)
        self.curr_position = Vector(list(xyz))
        self._set(eye=xyz)

    def lookat(self, x, y, z):
        xyz = _xyz("Camera.lookat", x, y, z)
        self.curr_lookat = Vector(list(xyz))
        self._set(target=xyz)

    def up(self, x, y, z):
        xyz = _xyz("Camera.up", x, y, z)
        self.curr_up = Vector(list(xyz))
        self._set(up=xyz)

    def projection_mode(self, mode):
        self._set(mode=ProjectionMode(int(mode)))

    def fov(self, fov):
        self._set(fov=float(fov))

    def _frustum(self, index, value):
        f = list(self._state.frustum)
        f[index] = float(value)
        self._set(frustum=tuple(f))

    def left(self, left):
        self._frustum(0, left)

    def right(self, right):
        self._frustum(1, right)

    def top(self, top):
        self._frustum(2, top)

    def bottom(self, bottom):
        self._frustum(3, bottom)

    def z_near(self, z_near):
        self._set(near=float(z_near))

    def z_far(self, z_far):
        self._set(far=float(z_far))

    def get_view_matrix(self) -> np.ndarray:
        eye, right, up, forward = self._state.basis()
        m = np.eye(4, dtype=np.float32)
        m[0, :3], m[1, :3], m[2, :3] = right, up, -forward
        m[:3, 3] = -m[:3, :3] @ eye
        return m

    def get_projection_matrix(self, aspect) -> np.ndarray:
        s = self._state
        near, far = s.near, s.far
        m = np.zeros((4, 4), dtype=np.float32)
        if s.mode == ProjectionMode.Orthogonal:
            left, right, top, bottom = s.frustum  # glm::ortho(left, right, top, bottom), as GGUI
            m[0, 0], m[1, 1], m[2, 2] = 2 / (right - left), 2 / (bottom - top), -2 / (far - near)
            m[0, 3], m[1, 3] = -(right + left) / (right - left), -(bottom + top) / (bottom - top)
            m[2, 3], m[3, 3] = -(far + near) / (far - near), 1.0
            return m
        t = np.tan(np.radians(s.fov) / 2.0)
        m[0, 0], m[1, 1] = 1.0 / (float(aspect) * t), 1.0 / t
        m[2, 2], m[2, 3], m[3, 2] = -(far + near) / (far - near), -2 * far * near / (far - near), -1.0
        return m

    def track_user_inputs(self, window, movement_speed=1.0, yaw_speed=2.0, pitch_speed=2.0,
                          hold_key=None):
        """No key or mouse input arrives offscreen, so the camera does not move; like Taichi's,
        it leaves ``lookat`` one unit in front of ``position``."""
        front = (self.curr_lookat - self.curr_position).normalized()
        self.lookat(*(self.curr_position + front))

    def state(self) -> CameraState:
        return self._state


def _xyz(what: str, x, y, z) -> tuple:
    try:
        return float(x), float(y), float(z)
    except (TypeError, ValueError):
        _inputs.fail(f"{what} takes three numbers, got ({x!r}, {y!r}, {z!r})")
