"""`fs.ad.FwdMode(loss, param, seed)`: Jacobian-vector products into `loss.dual` (Taichi's API).

Inside the block every kernel launch runs its fused primal + tangent kernel (`ad.forward`), so the
duals flow alongside the values. A `grad_replaced` call takes its user JVP (`fs.ad.jvp_for`) or is
refused: its custom backward says nothing about tangents.
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import FieldsimRuntimeError
from fieldsim.lang import runtime
from fieldsim.lang.field import Field
from fieldsim.lang.naming import user_loc


class FwdModeError(FieldsimRuntimeError):
    """A FwdMode block set up wrongly (Taichi raises `RuntimeError`), located at the `with` line.

    >>> issubclass(FwdModeError, RuntimeError)
    True
    """


class FwdMode:
    def __init__(self, loss, param, seed=None, clear_gradients=True):
        self.loss, self.param, self.seed, self.clear_gradients = loss, param, seed, clear_gradients

    def __enter__(self):
        rt = runtime.get()
        try:
            seed = self._checked_seed(rt)
        except FwdModeError as err:  # the user's mistake: at the `with` line, no fieldsim frames
            raise FwdModeError(err.message, user_loc()).with_traceback(None) from None
        for f in (self.param, *self._losses()):
            f._attach("dual")
        if self.clear_gradients:
            clear_all_duals()
        self.param.tangent.storage.from_numpy(seed)
        rt.fwd_mode = self
        return self

    def _checked_seed(self, rt):
        """The seed array, once the block's set-up is known good (nothing changed before)."""
        if rt.fwd_mode is not None or rt.tape is not None:
            raise FwdModeError("fs.ad.FwdMode cannot be nested in another FwdMode or a Tape")
        for what, f in (("param", self.param), *(("loss", f) for f in self._losses())):
            if not isinstance(f, Field):
                raise FwdModeError(f"FwdMode: {what} must be a field, got {type(f).__name__}")
            if not f.dtype.is_float:
                raise FwdModeError(f"FwdMode: {what} field {f.ir_name!r} is not a float field")
        return self._seed_array()

    def _losses(self):
        # Taichi takes one loss field or a list of them (several JVP outputs in one pass)
        return list(self.loss) if isinstance(self.loss, (list, tuple)) else [self.loss]

    def _seed_array(self):
        shape = self.param.storage_shape
        if self.seed is None:
            if int(np.prod(shape, dtype=np.int64)) != 1:
                raise FwdModeError(f"FwdMode: param {self.param.ir_name!r} has {int(np.prod(shape))} "
                                    "elements: give seed= (one value per element)")
            return np.ones(shape, dtype=self.param.dtype.np)
        seed = np.asarray(self.seed, dtype=self.param.dtype.np)
        if seed.size != int(np.prod(shape, dtype=np.int64)):
            raise FwdModeError(f"FwdMode: seed has {seed.size} values, param {self.param.ir_name!r} "
                                f"has {int(np.prod(shape))} elements")
        return seed.reshape(shape)

    def __exit__(self, exc_type, exc, tb):
        runtime.get().fwd_mode = None
        # the seed is cleared on leaving (as Taichi does): a later FwdMode with
        # clear_gradients=False, or a plain launch, must not see it as a tangent
        if self.param.tangent is not None and self.param.tangent.storage is not None:
            self.param.tangent.storage.zero()
        return False


def clear_all_duals():
    for f in runtime.get().fields:
        if f.role == "dual" and f.storage is not None:
            f.storage.zero()


def tangent_program(ck, rt):
    """The fused primal + tangent program of a compiled kernel, made once."""
    if ck.tangent is None:
        from fieldsim.ad.forward import make_tangent
        from fieldsim.ir.passes.run import run_pass
        jvp_ir = run_pass("forward", make_tangent, ck.ir, verify=rt.debug)
        ck.tangent = (jvp_ir, rt.backend().compile(jvp_ir, rt))
    return ck.tangent[1]


def jvp_for(primal):
    """Register the decorated function as the forward-mode JVP of a `grad_replaced` function."""

    def decorator(fn):
        if not hasattr(primal, "jvp"):
            raise FieldsimRuntimeError(f"{getattr(primal, '__name__', primal)!r} is not a "
                                       "grad_replaced function", user_loc())
        primal.jvp = fn
        return fn
    return decorator
