"""Automatic differentiation: reverse mode (adjoint kernels + Tape), forward mode, checking."""
from fieldsim.ad.tape import (Tape, clear_all_gradients, grad_for, grad_replaced, no_grad)

__all__ = ["Tape", "clear_all_gradients", "grad_for", "grad_replaced", "no_grad"]
