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
    """Make a Python function that launches fieldsim kernels on torch tensors a torch op.

    Its calls are `torch.autograd.Function` applications: the forward runs `fn` under a Tape on
    the tensors themselves (zero copy), the backward replays the kernels' adjoints. The
    contract is in `fieldsim.ad.torch_bridge`'s docstring and docs/INTEROP.md; torch is imported
    on first use. Used like this (tests/interop runs such code; torch is an optional extra)::

        @fs.kernel
        def square(a: fs.types.ndarray(), out: fs.types.ndarray()):
            for i in a:
                out[i] = a[i] ** 2

        @fs.ad.torch_function
        def f(a):
            out = torch.empty_like(a)
            square(a, out)
            return out

        a = torch.tensor([1.0, 2.0], requires_grad=True)
        f(a).sum().backward()            # a.grad == 2 * a

    >>> callable(fs.ad.torch_function(lambda a: a))
    True
    """
    from fieldsim.ad.torch_bridge import torch_function as impl
    return impl(fn)


def jax_function(fn=None, **kwargs):
    """Make a Python function that launches fieldsim kernels a JAX function with a custom VJP.

    The JAX counterpart of `fs.ad.torch_function` (contract: `fieldsim.ad.jax_bridge` and
    docs/INTEROP.md): `fn` works on numpy arrays, `out_shapes` gives its results' shapes. JAX is
    imported on first use and is an optional extra::

        def h(a):                        # `square` as in torch_function's example
            out = np.empty_like(a)
            square(a, out)
            return out

        g = fs.ad.jax_function(h, out_shapes=lambda a: jax.ShapeDtypeStruct(a.shape, a.dtype))
        jax.grad(lambda a: g(a).sum())(jnp.array([1.0, 2.0]))     # [2., 4.]

    >>> callable(fs.ad.jax_function)
    True
    """
    from fieldsim.ad.jax_bridge import jax_function as impl
    return impl(fn, **kwargs) if fn is not None else (lambda f: impl(f, **kwargs))


__all__ += ["jax_function", "torch_function"]
