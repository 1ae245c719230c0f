"""pytest plugin: run any test suite on the CUDA backend (or its host emulation) unchanged.

    PYTHONPATH=tests/cuda FIELDSIM_FORCE_ARCH=cuda python -m pytest -p force_cuda tests/lang
    PYTHONPATH=tests/cuda FIELDSIM_FORCE_ARCH=emu  python -m pytest -p force_cuda tests/lang

Every `fs.init(...)` (whatever arch it names) then starts a CUDA runtime (`cuda`), or a CPU
runtime whose backend is swapped for `cuda_emu.EmuBackend` (`emu`: the CUDA launcher, storage
and grid-stride lowering, run on the host). Without FIELDSIM_FORCE_ARCH the plugin does nothing.
"""
import os
import types

import pytest

import fieldsim
from fieldsim.lang import runtime

FORCE = os.environ.get("FIELDSIM_FORCE_ARCH", "").strip().lower()
_real_init = runtime.init


def _forced_init(arch=runtime.cpu, *args, **kwargs):
    if FORCE == "cuda":
        return _real_init(runtime.cuda, *args, **kwargs)
    rt = _real_init(runtime.cpu, *args, **kwargs)
    if FORCE == "emu":
        from cuda_emu import EmuBackend
        rt.device = EmuBackend(rt)
    return rt


# the wrapper's frame counts as fieldsim's own (naming.user_frame skips modules named
# fieldsim.*), so messages and warnings still point at the test's fs.init line
_forced_init = types.FunctionType(_forced_init.__code__, dict(globals(), __name__="fieldsim.force_cuda"),
                                  "_forced_init", _forced_init.__defaults__)
_forced_init.__doc__ = _real_init.__doc__  # what fs.init documents (tests/docs reads it)


def pytest_configure(config):
    if FORCE in ("cuda", "emu"):
        fieldsim.init = runtime.init = _forced_init


def pytest_collection_modifyitems(config, items):
    """Tests marked `cpu_backend(why)` check the CPU backend itself (its memory, its launch and
    compile internals): skipped here, saying why."""
    if FORCE not in ("cuda", "emu"):
        return
    for item in items:
        mark = item.get_closest_marker("cpu_backend")
        if mark is not None:
            why = mark.args[0] if mark.args else "the CPU backend's own behaviour"
            item.add_marker(pytest.mark.skip(reason=f"cpu_backend: {why}"))


def pytest_report_header(config):
    if FORCE in ("cuda", "emu"):
        return f"fieldsim: every fs.init runs on {FORCE} (tests/cuda/force_cuda.py)"
    return None
