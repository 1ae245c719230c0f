"""`fs.ad.FwdMode(loss, param, seed)`: Jacobian-vector products into `loss.dual` (Taichi's API).

Inside the block every kernel launch runs its fused primal + tangent kernel (`ad.forward`), so the
duals flow alongside the values. A `grad_replaced` call takes its user JVP (`fs.ad.jvp_for`) or is
refused: its custom backward says nothing about tangents.
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import FieldsimError
from fieldsim.lang import runtime


class FwdMode:
    def __init__(self, loss, param, seed=None, clear_gradients=True):
        self.loss, self.param, self.seed, self.clear_gradients = loss, param, seed, clear_gradients

    def __enter__(self):
        rt = runtime.get()
        if rt.fwd_mode is not None or rt.tape is not None:
            raise FieldsimError("fs.ad.FwdMode cannot be nested in another FwdMode or a Tape")
        for f in (self.param, self.loss):
            if not f.dtype.is_float:
                raise FieldsimError(f"FwdMode: field {f.ir_name!r} is not a float field")
            f._attach("dual")
        if self.clear_gradients:
            clear_all_duals()
        self.param.tangent.storage.from_numpy(self._seed_array())
        rt.fwd_mode = self
        return self

    def _seed_array(self):
        shape = self.param.storage_shape
        if self.seed is None:
            if int(np.prod(shape, dtype=np.int64)) != 1:
                raise FieldsimError(f"FwdMode: param {self.param.ir_name!r} has {int(np.prod(shape))} "
                                    "elements: give seed= (one value per element)")
            return np.ones(shape, dtype=self.param.dtype.np)
        seed = np.asarray(self.seed, dtype=self.param.dtype.np)
        if seed.size != int(np.prod(shape, dtype=np.int64)):
            raise FieldsimError(f"FwdMode: seed has {seed.size} values, param {self.param.ir_name!r} "
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
            raise FieldsimError(f"{getattr(primal, '__name__', primal)!r} is not a grad_replaced function")
        primal.jvp = fn
        return fn
    return decorator
