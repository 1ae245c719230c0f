"""Key and event names of Taichi's ``ti.ui`` (GGUI), and its camera projection modes.

Takes nothing; guarantees the same strings Taichi uses, so programs that compare event keys
(``e.key == ti.ui.ESCAPE``) run unchanged. No key event ever arrives offscreen.
"""
from enum import IntEnum

SHIFT = "Shift"
ALT = "Alt"
CTRL = "Control"
ESCAPE = "Escape"
RETURN = "Return"
TAB = "Tab"
BACKSPACE = "BackSpace"
SPACE = " "
UP = "Up"
DOWN = "Down"
LEFT = "Left"
RIGHT = "Right"
CAPSLOCK = "CapsLock"
LMB = "LMB"
MMB = "MMB"
RMB = "RMB"

PRESS = "Press"
RELEASE = "Release"


class ProjectionMode(IntEnum):
    """``Camera.projection_mode``: 0 perspective, 1 orthogonal (Taichi's numbering)."""

    Perspective = 0
    Orthogonal = 1
