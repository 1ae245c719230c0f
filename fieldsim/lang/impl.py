"""`taichi.lang.impl`'s names that Taichi programs import directly (`from taichi.lang.impl import
field, static, current_cfg`): the same objects fieldsim exposes at its top level.

`get_runtime()` answers the questions libraries ask Taichi's runtime object (`default_fp`,
`default_ip`, `prog.config().arch`) from the current `init`; any other attribute raises
`FieldsimError` naming it. Taichi's other internal helpers here (`call_internal`, `expr_init`)
have no fieldsim counterpart: the names import, so a program that only imports them runs, and a
call raises `FieldsimError` naming the helper.
"""
from __future__ import annotations

from fieldsim.errors import FieldsimError
from fieldsim.lang.field import Field, field
from fieldsim.lang.ndarray import ndarray
from fieldsim.lang.ops import grouped, static
from fieldsim.lang.runtime import cfg
from fieldsim.lang.snode import root

__all__ = ["Field", "call_internal", "current_cfg", "default_cfg", "expr_init", "field",
           "get_cuda_compute_capability", "get_runtime", "grouped", "inside_kernel", "ndarray", "root",
           "static"]


def current_cfg():
    """The options of the current `init` (Taichi's `impl.current_cfg()`; fieldsim's `fs.cfg`)."""
    return cfg


default_cfg = current_cfg


def inside_kernel() -> bool:
    """Taichi's `impl.inside_kernel()`: true while a kernel being compiled runs Python code (a
    helper it calls at compile time), false in Python scope."""
    from fieldsim.lang.util import in_taichi_scope
    return in_taichi_scope()


def _internal(name: str):
    def refuse(*_args, **_kwargs):
        raise FieldsimError(f"taichi.lang.impl.{name} is Taichi's internal helper; fieldsim has no "
                            f"counterpart (use the public API)")
    refuse.__name__ = name
    return refuse


call_internal = _internal("call_internal")
expr_init = _internal("expr_init")


class _Program:
    """`get_runtime().prog`: only its `config()`, the current options (`fs.cfg`)."""

    @staticmethod
    def config():
        return cfg


class RuntimeView:
    """What `taichi.lang.impl.get_runtime()` tells programs, read from the current `init`:
    `default_fp`, `default_ip`, `prog.config()` (the options, e.g. `.arch`), and the active
    `ti.ad.Tape` (`target_tape`) or `FwdMode` block (`fwd_mode_manager`), None outside one."""

    prog = _Program()

    @property
    def default_fp(self):
        return cfg.default_fp

    @property
    def default_ip(self):
        return cfg.default_ip

    # read by programs to ask whether they run under an AD block: the block, or None
    @property
    def target_tape(self):
        from fieldsim.lang import runtime
        return runtime.get().tape

    @property
    def fwd_mode_manager(self):
        from fieldsim.lang import runtime
        return runtime.get().fwd_mode

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        raise FieldsimError(f"taichi.lang.impl.get_runtime().{name} is part of Taichi's internal "
                            "runtime; fieldsim has no counterpart (get_runtime() offers default_fp, "
                            "default_ip, target_tape, fwd_mode_manager and prog.config())")


def get_cuda_compute_capability() -> int:
    """The CUDA device's compute capability as major * 10 + minor (90 for an H100/H200), as
    Taichi's `impl.get_cuda_compute_capability()`; only under `fs.init(arch=fs.cuda)`.

    >>> import fieldsim as fs
    >>> from fieldsim.lang import impl
    >>> rt = fs.init(arch=fs.cpu)
    >>> impl.get_cuda_compute_capability()
    Traceback (most recent call last):
    ...
    fieldsim.errors.FieldsimError: get_cuda_compute_capability() needs fs.init(arch=fs.cuda); fieldsim runs on the cpu backend
    """
    from fieldsim.lang import runtime
    backend = runtime.get().backend()
    cc = getattr(getattr(backend, "drv", None), "cc", None)
    if cc is None:
        raise FieldsimError("get_cuda_compute_capability() needs fs.init(arch=fs.cuda); fieldsim "
                            f"runs on the {getattr(backend, 'name', 'cpu')} backend")
    return int(cc[0]) * 10 + int(cc[1])


def get_runtime() -> RuntimeView:
    """Taichi's runtime object as far as programs read it.

    >>> import fieldsim as fs
    >>> from fieldsim.lang import impl
    >>> rt = fs.init(arch=fs.cpu, default_fp=fs.f64)
    >>> impl.get_runtime().default_fp, impl.get_runtime().prog.config().arch == fs.cpu
    (f64, True)
    >>> rt = fs.init(arch=fs.cpu)
    """
    return RuntimeView()
