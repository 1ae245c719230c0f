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
    import jax.numpy as jnp

    if out_shapes is None:
        raise BridgeError(f"jax_function {fn.__qualname__!r}: give out_shapes= (a "
                          "jax.ShapeDtypeStruct, a tuple of them, or a callable making them from "
                          "the arguments): JAX needs the results' shapes before the host runs fn")

    def structs(args):
        return out_shapes(*args) if callable(out_shapes) else out_shapes

    def outputs(out):
        return tuple(out) if isinstance(out, (tuple, list)) else (out,)

    def host_primal(*args):
        args = [np.array(a) for a in args]  # writable host copies
        return tuple(np.asarray(o).copy() for o in outputs(fn(*args)))

    def host_forward(*args):
        args = [np.array(a) for a in args]
        rec = Recording(fn)
        out = outputs(rec.forward(args))
        rec.out_views = [np.asarray(o) for o in out]
        rec.in_views = [a if a.dtype.kind == "f" else None for a in args]
        token = next(_TOKENS)
        _RECORDINGS[token] = rec
        while len(_RECORDINGS) > _MAX_PENDING:
            _RECORDINGS.popitem(last=False)
        return tuple(o.copy() for o in rec.out_views) + (np.int64(token),)

    def host_backward(token, ins, *cts):
        rec = _RECORDINGS.pop(int(token), None)
        if rec is None:
            raise BridgeError(f"jax_function {fn.__qualname__!r}: its forward record is gone "
                              f"(more than {_MAX_PENDING} forwards awaited a backward)")
        seeds = [(v, np.asarray(c)) for v, c in zip(rec.out_views, cts) if v.dtype.kind == "f"]
        grads = rec.backward(seeds, rec.in_views)
        return tuple(np.zeros(s.shape, s.dtype) if g is None else g for g, s in zip(grads, ins))

    def arg_structs(args):
        return tuple(jax.ShapeDtypeStruct(jnp.shape(a), jnp.result_type(a)) for a in args)

    def out_tuple(args):
        s = structs(arg_structs(args))
        return (tuple(s) if isinstance(s, (tuple, list)) else (s,)), not isinstance(s, (tuple, list))

    @jax.custom_vjp
    def f(*args):
        outs, single = out_tuple(args)
        res = jax.pure_callback(host_primal, outs, *args, vmap_method="sequential")
        return res[0] if single else tuple(res)

    def f_fwd(*args):
        outs, single = out_tuple(args)
        token = jax.ShapeDtypeStruct((), jnp.int64 if jax.config.jax_enable_x64 else jnp.int32)

        def host(*a):
            res = host_forward(*a)
            return res[:-1] + (np.asarray(res[-1], token.dtype),)
        res = jax.pure_callback(host, outs + (token,), *args, vmap_method="sequential")
        out = res[0] if single else tuple(res[:-1])
        return out, (res[-1], args)

    def f_bwd(residual, ct):
        token, args = residual
        cts = (ct,) if not isinstance(ct, tuple) else ct
        ins = arg_structs(args)

        def host(tok, *c):
            return host_backward(tok, ins, *c)
        grads = jax.pure_callback(host, ins, token, *cts, vmap_method="sequential")
        # integer arguments have no cotangent
        return tuple(g if jnp.issubdtype(s.dtype, jnp.floating) else np.zeros(s.shape, jax.dtypes.float0)
                     for g, s in zip(grads, ins))

    f.defvjp(f_fwd, f_bwd)
    f.__name__ = getattr(fn, "__name__", "jax_function")
    f.__doc__ = fn.__doc__
    return f
