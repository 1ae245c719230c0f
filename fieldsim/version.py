"""fieldsim's version, and the Taichi release whose API it follows.

`fieldsim.__version__` is fieldsim's own version string. Taichi's `ti.__version__` is a tuple,
and Taichi programs compare it with one (`if ti.__version__ < (1, 6, 0): ...`), which a plain
string would refuse with a TypeError. Compared with a tuple, fieldsim's version string
compares as `TAICHI_API_VERSION`, the Taichi release whose API fieldsim mirrors, so such a
check takes the branch its author wrote for that Taichi. Everything else about it is the string.
"""
from __future__ import annotations

TAICHI_API_VERSION = (1, 7, 4)


class _VersionString(str):
    """fieldsim's version string; against a tuple, Taichi's version `TAICHI_API_VERSION`."""

    def _mine(self, other):
        return TAICHI_API_VERSION if isinstance(other, tuple) else str(self)

    def __eq__(self, other):
        return self._mine(other) == other

    def __ne__(self, other):
        return self._mine(other) != other

    def __lt__(self, other):
        return self._mine(other) < other

    def __le__(self, other):
        return self._mine(other) <= other

    def __gt__(self, other):
        return self._mine(other) > other

    def __ge__(self, other):
        return self._mine(other) >= other

    __hash__ = str.__hash__


__version__ = _VersionString("0.1.0")
