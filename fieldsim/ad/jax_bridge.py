"""`fs.ad.jax_function`: a Python function that launches fieldsim kernels, as a JAX function.

Takes `fn(*arrays)` that passes numpy arrays to kernels' `fs.types.ndarray()` arguments and
returns a numpy array or a tuple of them, and `out_shapes`: the results' `jax.ShapeDtypeStruct`s,
or a callable that makes them from the arguments' (JAX needs them before the host runs).
Returns a `jax.custom_vjp` function: its forward runs `fn` on the host through
`jax.pure_callback` (on writable copies of the inputs: JAX arrays are immutable), under a
fieldsim Tape; its backward replays that Tape's adjoints with the cotangents as seeds
(`torch_bridge.Recording`, so the same guarantees: per-call gradient buffers, re-entrant,
cotangents only read). Works under `jax.jit` and `jax.grad`; `jax.vmap` runs `fn` once per
batch element (vmap_method="sequential"). Forward mode (`jax.jvp`) is refused by JAX itself
(custom_vjp).
"""
from __future__ import annotations

import itertools
from collections import OrderedDict

import numpy as np

from fieldsim.ad.torch_bridge import BridgeError, Recording

_TOKENS = itertools.count(1)
_RECORDINGS: OrderedDict = OrderedDict()  # token -> Recording awaiting its backward
_MAX_PENDING = 1024  # forwards whose backward never ran are dropped past this many


def jax_function(fn, out_shapes=None):
    import jax

    if out_shapes is None:
        raise BridgeError(f"jax_function {fn.__qualname__!r}: give out_shapes= (a "
                          "jax.ShapeDtypeStruct, a tuple of them, or a callable making them from "
                          "the arguments): JAX needs the results' shapes before the host runs fn")
    host = _Host(fn)

    @jax.custom_vjp
    def f(*args):
        return _primal(host, out_shapes, args)

    def f_fwd(*args):
        return _vjp_forward(host, out_shapes, args)

    def f_bwd(residual, ct):
        return _vjp_backward(host, residual, ct)

    f.defvjp(f_fwd, f_bwd)
    f.__name__ = getattr(fn, "__name__", "jax_function")
    f.__doc__ = fn.__doc__
    return f


# ---- the host side: numpy in and out, run through jax.pure_callback --------------------------
def _outputs(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


class _Host:
    """What `fn` does on the host: the primal run, the forward under a Tape (its Recording kept
    in `_RECORDINGS` under a token until its backward) and the backward's replay. Arguments
    arrive as read-only buffers and are copied (kernels may write them)."""

    def __init__(self, fn):
        self.fn = fn

    def primal(self, *args):
        args = [np.array(a) for a in args]  # writable host copies
        return tuple(np.asarray(o).copy() for o in _outputs(self.fn(*args)))

    def forward(self, *args):
        args = [np.array(a) for a in args]
        rec = Recording(self.fn)
        out = _outputs(rec.forward(args))
        rec.out_views = [np.asarray(o) for o in out]
        rec.in_views = [a if a.dtype.kind == "f" else None for a in args]
        token = next(_TOKENS)
        _RECORDINGS[token] = rec
        while len(_RECORDINGS) > _MAX_PENDING:
            _RECORDINGS.popitem(last=False)
        return tuple(o.copy() for o in rec.out_views) + (np.int64(token),)

    def backward(self, token, ins, *cts):
        rec = _RECORDINGS.pop(int(token), None)
        if rec is None:
            raise BridgeError(f"jax_function {self.fn.__qualname__!r}: its forward record is gone "
                              f"(more than {_MAX_PENDING} forwards awaited a backward)")
        seeds = [(v, np.asarray(c)) for v, c in zip(rec.out_views, cts) if v.dtype.kind == "f"]
        grads = rec.backward(seeds, rec.in_views)
        return tuple(np.zeros(s.shape, s.dtype) if g is None else g for g, s in zip(grads, ins))


# ---- the JAX side: shapes, pure_callback, the custom_vjp rule ---------------------------------
def _arg_structs(args):
    import jax
    import jax.numpy as jnp
    return tuple(jax.ShapeDtypeStruct(jnp.shape(a), jnp.result_type(a)) for a in args)


def _out_tuple(out_shapes, args):
    """(the results' ShapeDtypeStructs as a tuple, whether fn returns a single array)."""
    s = out_shapes(*_arg_structs(args)) if callable(out_shapes) else out_shapes
    return (tuple(s) if isinstance(s, (tuple, list)) else (s,)), not isinstance(s, (tuple, list))


def _primal(host: _Host, out_shapes, args):
    import jax
    outs, single = _out_tuple(out_shapes, args)
    res = jax.pure_callback(host.primal, outs, *args, vmap_method="sequential")
    return res[0] if single else tuple(res)


def _vjp_forward(host: _Host, out_shapes, args):
    """The results, and (the forward's token, the arguments) as the residual."""
    import jax
    import jax.numpy as jnp
    outs, single = _out_tuple(out_shapes, args)
    token = jax.ShapeDtypeStruct((), jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)

    def host_forward(*a):
        res = host.forward(*a)
        return res[:-1] + (np.asarray(res[-1], token.dtype),)
    res = jax.pure_callback(host_forward, outs + (token,), *args, vmap_method="sequential")
    out = res[0] if single else tuple(res[:-1])
    return out, (res[-1], args)


def _vjp_backward(host: _Host, residual, ct):
    import jax
    import jax.numpy as jnp
    token, args = residual
    cts = (ct,) if not isinstance(ct, tuple) else ct
    ins = _arg_structs(args)

    def host_backward(tok, *c):
        return host.backward(tok, ins, *c)
    grads = jax.pure_callback(host_backward, ins, token, *cts, vmap_method="sequential")
    # integer arguments have no cotangent
    return tuple(g if jnp.issubdtype(s.dtype, jnp.floating) else np.zeros(s.shape, jax.dtypes.float0)
                 for g, s in zip(grads, ins))
