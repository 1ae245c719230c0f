"""Automatic differentiation: reverse mode (adjoint kernels + Tape), forward mode, checking."""
from fieldsim.ad.check import GradcheckError, GradcheckReport, gradcheck
from fieldsim.ad.checkpoint import CheckpointInfo, checkpoint
from fieldsim.ad.custom import func_grad, func_replay
from fieldsim.ad.fwd_mode import FwdMode, clear_all_duals, jvp_for
from fieldsim.ad.jacobian import jacobian, jacobian_fd, plot_jacobian
from fieldsim.ad.tape import (
    CustomEntry,
    LaunchEntry,
    PythonWriteEntry,
    Tape,
    clear_all_gradients,
    grad_for,
    grad_replaced,
    no_grad,
)
from fieldsim.ad.visualize import write_tape_dot

__all__ = [
    "CheckpointInfo",
    "CustomEntry",
    "FwdMode",
    "GradcheckError",
    "GradcheckReport",
    "LaunchEntry",
    "PythonWriteEntry",
    "Tape",
    "checkpoint",
    "clear_all_duals",
    "clear_all_gradients",
    "func_grad",
    "func_replay",
    "grad_for",
    "grad_replaced",
    "gradcheck",
    "jacobian",
    "jacobian_fd",
    "jvp_for",
    "no_grad",
    "plot_jacobian",
    "write_tape_dot",
]


def torch_function(fn=None):
    """`fs.ad.torch_function`: see fieldsim.ad.torch_bridge (imports torch on first use)."""
    from fieldsim.ad.torch_bridge import torch_function as impl
    return impl(fn)


def jax_function(fn=None, **kwargs):
    """`fs.ad.jax_function`: see fieldsim.ad.jax_bridge (imports JAX on first use)."""
    from fieldsim.ad.jax_bridge import jax_function as impl
    return impl(fn, **kwargs) if fn is not None else (lambda f: impl(f, **kwargs))


__all__ += ["jax_function", "torch_function"]
