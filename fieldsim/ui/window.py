"""``ti.ui.Window`` and its widget panel ``Gui``, offscreen.

Takes Taichi 1.7's constructor ``Window(name, res, vsync=False, show_window=True,
fps_limit=1000, pos=(100, 100))`` and calls. Never opens a window: the frame is drawn into a
numpy buffer (a fieldsim.gui ``GUI`` used as the surface) when it is needed: ``show()`` (which
then starts the next frame), ``save_image``, ``get_image_buffer_as_numpy``. ``running`` stays
true until it is set false or ``destroy()`` is called. No input ever arrives: no events, no key
pressed, the cursor at the centre; widgets return the values they are given (buttons are never
clicked) and draw nothing. Guarantees images in Taichi's layouts: ``[x, y]`` indexed, y up.
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from fieldsim.gui import GUI
from fieldsim.ui import _inputs
from fieldsim.ui.canvas import Canvas
from fieldsim.ui.constants import PRESS, RELEASE
from fieldsim.ui.scene import Scene


class Gui:
    """The ImGui panel of a window (``window.get_gui()``): inert offscreen."""

    @contextmanager
    def sub_window(self, name, x, y, width, height):
        self.begin(name, x, y, width, height)
        try:
            yield self
        finally:
            self.end()

    def begin(self, name, x, y, width, height):
        pass

    def end(self):
        pass

    def text(self, text, color=None):
        pass

    def checkbox(self, text, old_value):
        return bool(old_value)

    def slider_int(self, text, old_value, minimum, maximum):
        return int(old_value)

    def slider_float(self, text, old_value, minimum, maximum):
        return float(old_value)

    def color_edit_3(self, text, old_value):
        return tuple(float(c) for c in old_value)

    def button(self, text):
        return False


def _check_tag(tag):
    if tag not in (None, PRESS, RELEASE):
        _inputs.fail(f"unrecognized event tag {tag!r} (use None, ti.ui.PRESS or ti.ui.RELEASE)")


class Window:
    """Taichi's ``ti.ui.Window``, drawn offscreen."""

    def __init__(self, name, res, vsync=False, show_window=True, fps_limit=1000, pos=(100, 100)):
        w, h = (res, res) if np.isscalar(res) else tuple(res)
        self.name = name
        self.res = (int(w), int(h))
        self.event = None
        self.frame = 0
        self._running = True
        self._surface = GUI(name, res=self.res)
        self._surface._byte_rounding = 0.5  # GGUI's images round to the nearest byte
        self._surface._antialias = False  # GGUI draws circles and lines without it (as before)
        self._background = 0x000000
        self._ops = []
        self._drawn = 0  # how many of this frame's ops the surface shows (-1: redraw all)
        self._depth = None  # (view depth per pixel, projector) of the frame's last scene
        self._canvas = Canvas(self)

    # ----------------------------------------------------------- state
    @property
    def running(self) -> bool:
        return self._running

    @running.setter
    def running(self, value):
        self._running = bool(value)

    def destroy(self):
        self._running = False

    def get_window_shape(self):
        return self.res

    # ----------------------------------------------------------- handles
    def get_canvas(self) -> Canvas:
        return self._canvas

    def get_scene(self) -> Scene:
        return Scene()

    def get_gui(self) -> Gui:
        return Gui()

    @property
    def GUI(self) -> Gui:  # Taichi's deprecated name for get_gui()
        return self.get_gui()

    # ----------------------------------------------------------- input (none arrives)
    def get_events(self, tag=None):
        _check_tag(tag)
        return []

    def get_event(self, tag=None):
        _check_tag(tag)
        return False

    def is_pressed(self, *keys):
        return False

    def get_cursor_pos(self):
        return (0.5, 0.5)

    # ----------------------------------------------------------- frames
    def _record(self, op):
        self._ops.append(op)

    def _render(self) -> GUI:
        """The surface showing every draw of this frame so far."""
        s = self._surface
        if self._drawn == 0 or s.background_color != self._background:
            s.background_color = self._background
            s.clear()
            self._drawn = 0
        for op in self._ops[self._drawn:]:
            op(s)
        self._drawn = len(self._ops)
        return s

    def show(self):
        """Finish the frame and start the next (cleared to the background colour)."""
        self._render()
        self._ops, self._drawn, self._depth = [], 0, None
        self.frame += 1

    def save_image(self, filename):
        """Write the frame drawn so far to ``filename`` (PNG, or another format by extension)."""
        self._render().save(filename)

    def get_image_buffer_as_numpy(self) -> np.ndarray:
        """The frame so far: float32 ``(W, H, 4)`` in [0, 1], indexed ``[x, y]``, y up."""
        return self._render()._shown_image()

    def get_depth_buffer_as_numpy(self) -> np.ndarray:
        """The depth of the frame's 3-D scene as Vulkan stores it: float32 ``(W, H)``, 0 at the
        camera's z_near, 1 at z_far and where no geometry is, indexed ``[x, y]``, y up."""
        self._render()
        w, h = self.res
        if self._depth is None:
            return np.ones((w, h), dtype=np.float32)
        depth, proj = self._depth
        d = np.ones(depth.shape)
        hit = np.isfinite(depth)
        d[hit] = np.clip(proj.clip_depth(depth[hit]), 0.0, 1.0)
        return d.reshape(h, w)[::-1].T.astype(np.float32)

    def get_depth_buffer(self, depth):
        """Copy the depth (see `get_depth_buffer_as_numpy`) into a 2-D f32 field or ndarray."""
        depth.from_numpy(self.get_depth_buffer_as_numpy())
