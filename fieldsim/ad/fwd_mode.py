"""`fs.ad.FwdMode(loss, param, seed)`: Jacobian-vector products into `loss.dual` (Taichi's API).

Inside the block every kernel launch runs its fused primal + tangent kernel (`ad.forward`), so the
duals flow alongside the values. A `grad_replaced` call takes its user JVP (`fs.ad.jvp_for`) or is
refused: its custom backward says nothing about tangents.

The block keeps `live`: the fields whose duals may be nonzero (the param's, those a launch or a
Python-scope write in the block has written a tangent into; every dual already there when the
block does not clear them). A launch runs the tangent program made for the live fields it reads,
so values that depend on none of them get no tangent (`ad.forward`).
"""
from __future__ import annotations

import numpy as np

from fieldsim.errors import FieldsimRuntimeError
from fieldsim.lang import runtime
from fieldsim.lang.field import ComponentField, Field
from fieldsim.lang.naming import user_loc


class FwdModeError(FieldsimRuntimeError):
    """A FwdMode block set up wrongly (Taichi raises `RuntimeError`), located at the `with` line.

    >>> issubclass(FwdModeError, RuntimeError)
    True
    """


class FwdMode:
    def __init__(self, loss, param, seed=None, clear_gradients=True):
        self.loss, self.param, self.seed, self.clear_gradients = loss, param, seed, clear_gradients
        self.live: set[int] = set()  # ids of the fields whose duals may be nonzero
        self.version = 0  # bumped whenever `live` grows

    def add_live(self, ids) -> None:
        if not self.live.issuperset(ids):
            self.live.update(ids)
            self.version += 1

    def may_be_nonzero(self, field) -> bool:
        if field.role == "primal":
            return id(field) in self.live
        # fieldsim's own fields (ndarray arguments): not tracked, so assumed nonzero; a twin
        # (x.grad, x.dual read as data) has a tangent only if one was attached to it
        return field.role == "hidden" or field.tangent is not None

    def note_dual_write(self, dual) -> None:
        """A Python-scope write into a dual in the block: its field's tangent is now live."""
        self.add_live((id(dual.primal),))

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
            # a dual shared zero copy (DLPack) may be written after the clearing, unseen
            self.live = {id(f) for f in rt.fields if getattr(f, "dual_shared", False)} | {id(self.param)}
        else:  # the duals kept may hold anything
            self.live = {id(f.primal) for f in rt.fields if f.role == "dual"} | {id(self.param)}
        self.version += 1  # (a block object entered again starts afresh)
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
        if isinstance(self.param, ComponentField):  # its seed would need a mask of the owner's
            raise FwdModeError(f"FwdMode: param {self.param.ir_name!r} is one component of a "
                               f"vector/matrix field; give param={self.param.owner.ir_name!r} "
                               "with a seed for each of its elements (0 for the other components)")
        return self._seed_array()

    def _losses(self):
        # Taichi takes one loss field or a list of them (several JVP outputs in one pass); a
        # component (`y.get_scalar_field(i)`) gets its tangent in the dual of the field it views
        losses = list(self.loss) if isinstance(self.loss, (list, tuple)) else [self.loss]
        return [f.owner if isinstance(f, ComponentField) else f for f in losses]

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
    """The fused primal + tangent program of a compiled kernel for the live fields it reads
    (made once per such set); notes the fields whose duals it may write as live."""
    tp = ck.tangent
    if tp is None:
        tp = ck.tangent = _TangentPrograms(ck.ir)
    fwd = rt.fwd_mode
    if fwd is not None and tp.last[0] is fwd and tp.last[1] == fwd.version:
        return tp.last[2]  # the hot path: nothing went live since this kernel's last launch
    if fwd is None:  # not in a block: every dual may be nonzero
        key = frozenset(id(f) for f in tp.reads)
    else:
        key = frozenset(id(f) for f in tp.reads if fwd.may_be_nonzero(f))
    program, writes = tp.get(key, rt)
    if fwd is not None:
        fwd.add_live(writes)
        tp.last = (fwd, fwd.version, program)
    return program


def plain_program(ck, fwd):
    """The primal program of a launch under `no_grad` in a block; the duals its code writes
    (`x.dual[i] = ...`) are live from then on, as any launch's are."""
    tp = ck.tangent
    if tp is None:
        tp = ck.tangent = _TangentPrograms(ck.ir)
    fwd.add_live(tp.dual_stores)
    return ck.program


class _TangentPrograms:
    """A kernel's tangent programs, by the set of live fields they read."""

    def __init__(self, ir):
        from fieldsim.ir.ir import Op, walk
        self.ir = ir
        self.reads = list({id(s.field): s.field for s in walk(ir.body)  # an atomic reads too
                           if s.op in (Op.LOAD, Op.ATOMIC) and s.field.dtype.is_float}.values())
        self.dual_stores = frozenset(id(s.field.primal) for s in walk(ir.body)  # x.dual[i] = ...
                                     if s.op in (Op.STORE, Op.ATOMIC) and s.field.role == "dual")
        self.made: dict[frozenset, tuple] = {}  # key -> (jvp IR, program, ids of written fields)
        self.last = (None, -1, None)  # (FwdMode block, its live version, program) last launched

    def get(self, key: frozenset, rt):
        made = self.made.get(key)
        if made is None:
            from fieldsim.ad.forward import make_tangent
            from fieldsim.ir.passes.run import run_pass
            live, writes = self._closed(key)
            from fieldsim.ir.subnormals import flushing_widths
            jvp_ir = run_pass("forward", make_tangent, self.ir, _member(live),
                              flushing_widths(rt.arch, rt.fast_math), verify=rt.debug)
            made = self.made[key] = (jvp_ir, rt.backend().compile(jvp_ir, rt), frozenset(writes))
        return made[1], made[2]

    def _closed(self, key: frozenset):
        """(the live fields the kernel reads, its tasks' writes included: a task may read what
        an earlier one wrote a tangent into; the ids of the fields whose duals it may write)."""
        from fieldsim.ad.forward import dual_writes
        live = set(key)
        read = {id(f) for f in self.reads}
        while True:
            writes = {id(f) for f in dual_writes(self.ir, _member(live))}
            if writes & read <= live:
                return live, writes
            live |= writes & read


def _member(ids: set[int]):
    return lambda f: id(f) in ids


def jvp_for(primal):
    """Register the decorated function as the forward-mode JVP of a `grad_replaced` function."""

    def decorator(fn):
        if not hasattr(primal, "jvp"):
            raise FieldsimRuntimeError(f"{getattr(primal, '__name__', primal)!r} is not a "
                                       "grad_replaced function", user_loc())
        primal.jvp = fn
        return fn
    return decorator
