"""fieldsim.runtime: the pipeline driver, the top of the package's stack.

It imports every layer below and connects them: it installs the `Driver` that kernel objects
(`fieldsim.lang.kernel`) hand compiling and launching to, and the backend hooks that the
runtime state (`fieldsim.lang.runtime`, what `fs.init` configures) uses to make a device and to
ask whether CUDA works. Importing `fieldsim` imports this package.
"""
from fieldsim.lang import kernel as _kernel
from fieldsim.lang import runtime as _state
from fieldsim.runtime.backends import cuda_reason, make_backend
from fieldsim.runtime.pipeline import Driver, adjoint_program

_kernel.install_driver(Driver())
_state.HOOKS.update(make_backend=make_backend, cuda_reason=cuda_reason)

__all__ = ["Driver", "adjoint_program", "cuda_reason", "make_backend"]
