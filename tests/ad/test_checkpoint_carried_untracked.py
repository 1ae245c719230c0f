"""`fs.ad.checkpoint`'s carried-value check and two accesses it did not follow (gh-regress9).

A step carried `p` outside `state=[s]` through `q.copy_from(p)` (the copy's read of `p` was
not followed, only its write of `q`) or through a launch under `fs.ad.no_grad` (neither
recorded nor followed). The backward recomputed the segments with `p` at its end-of-forward
value and x.grad was silently wrong ([-29.5, -4.3, 1.16] against central differences
[-4.57, -7.69, -0.90] for the copy). Both are refused now, naming `p`; with `p` in the state
the gradient matches the central differences: the backward's copies of what each launch
read were shared past the unrecorded `no_grad` launch (its writes unseen), and are not now.
"""
import numpy as np
import pytest

import fieldsim as fs

from .checkpoint_mixing import mixing_kernels, runner
from .fd import central_differences

pytestmark = pytest.mark.fs_init(fp="f64")

N = 3


def _program(variant, in_state=False):
    x = fs.field(fs.f64, N, needs_grad=True)
    s = fs.field(fs.f64, N, needs_grad=True)
    w = fs.field(fs.f64, N, needs_grad=True)
    p = fs.field(fs.f64, N, needs_grad=True)
    q = fs.field(fs.f64, N, needs_grad=True)
    loss = fs.field(fs.f64, (), needs_grad=True)

    @fs.kernel
    def init():
        for i in range(N):
            s[i] = x[i]
            p[i] = 1.0
            q[i] = 0.0

    @fs.kernel
    def set_p(t: fs.f64):
        for i in range(N):
            p[i] = 1.0 + 0.3 * t

    @fs.kernel
    def bump_p():
        for i in range(N):
            p[i] += 0.3

    use, commit, fin = mixing_kernels(s, w, loss, N)

    def step(t):
        if variant == "copy_from":
            q.copy_from(p)
            use(q)
            commit()
            set_p(t)
        elif variant == "no_grad":
            use(p)
            commit()
            fs.ad.no_grad(bump_p)()
        else:  # the backward's copy of what `use` read is taken before the bump
            use(p)
            fs.ad.no_grad(bump_p)()
            commit()

    state = [s, p] if in_state else [s]

    run = runner(loss, init, step, fin, state)
    x.from_numpy(np.array([0.3, 0.5, 0.7]))
    return x, run


@pytest.mark.parametrize("variant,writer", [("copy_from", "kernel 'set_p'"),
                                            ("no_grad", "kernel 'bump_p'"),
                                            ("no_grad_between", "kernel 'bump_p'")])
def test_a_value_carried_through_an_unfollowed_access_is_refused(variant, writer):
    x, run = _program(variant)
    with pytest.raises(fs.AccessRuleError) as err:
        run(True)
    text = str(err.value)
    assert "field 'p' carries values from one step to a later one" in text
    assert writer in text and "add it to state=[s, p]" in text
    assert not x.grad.to_numpy().any()


@pytest.mark.parametrize("variant", ["copy_from", "no_grad", "no_grad_between"])
def test_with_p_in_the_state_the_gradient_is_right(variant):
    x, run = _program(variant, in_state=True)
    ref = central_differences(lambda: run(False), {"x": x})["x"]
    run(True)
    np.testing.assert_allclose(x.grad.to_numpy(), ref, rtol=1e-6, atol=1e-9)
