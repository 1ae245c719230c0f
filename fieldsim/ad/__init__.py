"""Automatic differentiation: reverse mode (adjoint kernels + Tape), forward mode, checking."""
from fieldsim.ad.custom import func_grad, func_replay
from fieldsim.ad.fwd_mode import FwdMode, clear_all_duals, jvp_for
from fieldsim.ad.tape import (Tape, clear_all_gradients, grad_for, grad_replaced, no_grad)

__all__ = ["Tape", "FwdMode", "clear_all_gradients", "clear_all_duals", "grad_for",
           "grad_replaced", "jvp_for", "no_grad", "func_grad", "func_replay"]
