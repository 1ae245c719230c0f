"""``fs.ui``: Taichi's GGUI API (``ti.ui``), offscreen.

``Window`` (with its ``Canvas``, ``Scene`` and widget ``Gui``), ``Camera``, ``Scene``, the key and
event constants, ``ProjectionMode``. Nothing opens a window: frames are drawn with numpy into an
image (fieldsim.gui's rasteriser for 2-D, fieldsim.ui.render3d's z-buffer for 3-D) that
``save_image`` and ``get_image_buffer_as_numpy`` return. What differs from GGUI: docs/COMPAT.md.
"""
from fieldsim.ui._inputs import UIInputError
from fieldsim.ui.camera import Camera
from fieldsim.ui.canvas import Canvas
from fieldsim.ui.constants import (
    ALT,
    BACKSPACE,
    CAPSLOCK,
    CTRL,
    DOWN,
    ESCAPE,
    LEFT,
    LMB,
    MMB,
    PRESS,
    RELEASE,
    RETURN,
    RIGHT,
    RMB,
    SHIFT,
    SPACE,
    TAB,
    UP,
    ProjectionMode,
)
from fieldsim.ui.scene import Scene, SceneV2
from fieldsim.ui.window import Gui, Window

__all__ = ["ALT", "BACKSPACE", "CAPSLOCK", "CTRL", "DOWN", "ESCAPE", "LEFT", "LMB", "MMB", "PRESS",
           "RELEASE", "RETURN", "RIGHT", "RMB", "SHIFT", "SPACE", "TAB", "UP", "Camera", "Canvas", "Gui",
           "ProjectionMode", "Scene", "SceneV2", "UIInputError", "Window", "check_ggui_availability",
           "make_camera"]


def make_camera() -> Camera:
    return Camera()


def check_ggui_availability():
    """GGUI is always available: it draws offscreen."""
