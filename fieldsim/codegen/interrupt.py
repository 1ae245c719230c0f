"""Ctrl-C for kernels stuck in a loop on the main thread.

While the main thread runs compiled code (a ctypes call) Python cannot run its SIGINT handler,
so a `while` loop that never ends could not be interrupted. CPython's C-level handler does,
however, write the signal number to the fd given to `signal.set_wakeup_fd`; `install()` points
that at a pipe read by a watcher thread, which sets the stop word of every launch registered
in `active`. Their `while` loops poll it and return; the ctypes call returns and
Python raises KeyboardInterrupt as usual.

Guarantees: installed at most once, from the main thread, and only when no one else (asyncio,
another library) holds the wakeup fd; `install()` returns False otherwise, and the caller falls
back to waiting on a pool thread. Nothing is changed for programs without `while` loops.
"""
from __future__ import annotations

import os
import signal
import threading

from fieldsim.codegen import launch as launch_common

# ctx pointers of running launches that Ctrl-C should stop (set.add/discard are atomic; the
# watcher iterates over a copy)
active: set = set()
_state = {"installed": None}


def install() -> bool:
    """True when Ctrl-C now stops registered launches (call from the main thread)."""
    if _state["installed"] is not None:
        return _state["installed"]
    ok = False
    try:
        r, w = os.pipe()
        os.set_blocking(w, False)
        old = signal.set_wakeup_fd(w, warn_on_full_buffer=False)
        if old != -1:  # someone else's: give it back and stay out of the way
            signal.set_wakeup_fd(old)
            os.close(r)
            os.close(w)
        else:
            threading.Thread(target=_watch, args=(r,), name="fieldsim-sigint",
                             daemon=True).start()
            ok = True
    except (ValueError, OSError):  # not the main thread, or no pipes
        ok = False
    _state["installed"] = ok
    return ok


def forget():
    """In a forked child: the watcher thread was not copied, so judge `install()` afresh (the
    child inherits the wakeup fd, so it takes the caller's fallback)."""
    _state["installed"] = None
    active.clear()


def _watch(fd):
    while True:
        try:
            data = os.read(fd, 64)
        except OSError:
            return
        if not data:
            return
        if int(signal.SIGINT) in data:
            for ctx_ptr in list(active):
                launch_common.request_stop(ctx_ptr)
