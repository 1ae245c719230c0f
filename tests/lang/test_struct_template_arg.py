"""A struct local passed to an `@fs.func` parameter annotated `fs.template()` is that struct
itself, as in Taichi: `ret.x += ...` in the func changes the caller's struct, and reverse AD
follows the member through the call. An unannotated parameter still gets a copy. Expected
values are the same steps done in plain Python; the gradient is the analytic one."""
import numpy as np

import fieldsim as fs

Pair = fs.types.struct(x=fs.f32, y=fs.f32)


@fs.func
def bump(ret: fs.template()):
    ret.x += 3.0 * ret.y


@fs.func
def bump_copy(ret):
    ret2 = ret
    ret2.x += 3.0 * ret2.y
    return ret2.x


def test_template_struct_argument_is_the_callers_struct():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k():
        a = fs.Struct(x=1.0, y=2.0)
        bump(a)
        bump(a)
        out[0] = a.x
        b = Pair(x=0.5, y=-1.0)
        bump(b)
        out[1] = b.x
        c = Pair(x=0.5, y=-1.0)
        out[2] = bump_copy(c)
        out[3] = c.x  # a by-value argument: the caller's struct is unchanged

    k()
    x = 1.0 + 3.0 * 2.0
    x = x + 3.0 * 2.0
    np.testing.assert_allclose(out.to_numpy(), [x, 0.5 - 3.0, 0.5 - 3.0, 0.5])


def test_gradient_through_a_template_struct_argument():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=(), needs_grad=True)
    y = fs.field(fs.f32, shape=(), needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.func
    def accumulate(ret: fs.template()):
        ret.x += x[None] * ret.y * ret.y

    @fs.kernel
    def compute():
        ret = fs.Struct(x=0.0, y=y[None])
        accumulate(ret)
        loss[None] = ret.x

    x[None], y[None] = 1.5, 2.0
    with fs.ad.Tape(loss):
        compute()
    assert loss[None] == 1.5 * 4.0
    np.testing.assert_allclose([x.grad[None], y.grad[None]], [2.0 ** 2, 2 * 1.5 * 2.0], rtol=1e-6)
