"""Custom derivatives for one `@fs.func` inside kernels (Warp's `func_grad` / `func_replay`).

    @fs.func
    def safe_sqrt(x):
        return fs.sqrt(x)

    @fs.ad.func_grad(safe_sqrt)
    def safe_sqrt_grad(x, adj_ret):      # the inputs, then the adjoint of the output
        return adj_ret * 0.5 / fs.sqrt(x) if x > 0 else 0.0   # one adjoint per input

The adjoint func receives the func's inputs and the adjoint of its result (same shape), and
returns one adjoint per input (a tuple for several inputs). Reverse AD uses it instead of
differentiating the func's body; forward mode and plain launches use the body.

    @fs.func
    def claim(i):                        # a side effect the adjoint must not repeat
        k = fs.atomic_add(count[None], 1)
        slot[i] = k
        return k

    @fs.ad.func_replay(claim)
    def claim_again(i):                  # the same inputs; returns what the func returned
        return slot[i]

The replay func is what the adjoint kernel recomputes in place of the func's body; without a
func_grad the gradient flows through the replay code. The access-rule checker then ignores
what the func's own body reads (the adjoint never reads it again).
"""
from __future__ import annotations

from fieldsim.errors import FieldsimRuntimeError
from fieldsim.lang.kernel import Func
from fieldsim.lang.naming import user_loc


def func_grad(primal):
    if not isinstance(primal, Func):
        raise FieldsimRuntimeError(f"fs.ad.func_grad needs an @fs.func, got {primal!r}", user_loc())

    def decorator(fn):
        primal.custom_grad = fn if isinstance(fn, Func) else Func(fn)
        return fn
    return decorator


def func_replay(primal):
    """Replace the func's body during the adjoint's forward replay (e.g. to skip side effects)."""
    if not isinstance(primal, Func):
        raise FieldsimRuntimeError(f"fs.ad.func_replay needs an @fs.func, got {primal!r}", user_loc())

    def decorator(fn):
        primal.replay = fn if isinstance(fn, Func) else Func(fn)
        return fn
    return decorator
