"""`copy_from` with an `fs.ndarray` or a component on either side, under a Tape (gh-copynd).

`a.copy_from(nd)`, `nd.copy_from(a)` and `nd.copy_from(nd2)` were Python-scope writes: the
source's gradient stayed 0 for `loss = sum(dst**2)`, silently (Taichi 1.7.4 differentiates
`nd.copy_from(nd2)`: nd2.grad = 2 nd2; it refuses the field/ndarray mixes, fieldsim takes them).
Now each is a kernel launch; copies the kernel cannot do (index shapes that differ, sparse
fields) are refused at the user's line where a gradient would be lost.
"""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import FieldsimRuntimeError

X0 = np.array([1.0, -2.0, 3.5])


def _make(kind, needs_grad=True):
    if kind == "field":
        return fs.field(fs.f64, 3, needs_grad=needs_grad)
    return fs.ndarray(fs.f64, 3, needs_grad=needs_grad)


def _sum_of_squares(loss):
    @fs.kernel
    def of_field(a: fs.template()):
        for i in a:
            loss[None] += a[i] * a[i]

    @fs.kernel
    def of_ndarray(a: fs.types.ndarray()):
        for i in a:
            loss[None] += a[i] * a[i]

    return lambda a: (of_ndarray if isinstance(a, fs.Ndarray) else of_field)(a)


@pytest.mark.parametrize("dst_kind", ["field", "ndarray"])
@pytest.mark.parametrize("src_kind", ["field", "ndarray"])
def test_copy_from_with_an_ndarray_carries_the_gradient(dst_kind, src_kind):
    dst, src = _make(dst_kind), _make(src_kind)
    loss = fs.field(fs.f64, (), needs_grad=True)
    fin = _sum_of_squares(loss)
    src.from_numpy(X0)
    with fs.ad.Tape(loss):
        dst.copy_from(src)
        fin(dst)
    np.testing.assert_allclose(dst.to_numpy(), X0)
    np.testing.assert_allclose(src.grad.to_numpy(), 2 * X0)


@pytest.mark.parametrize("dst_kind", ["field", "ndarray"])
@pytest.mark.parametrize("src_kind", ["field", "ndarray"])
def test_a_copy_from_a_gradient_less_source_cuts_what_it_overwrites(dst_kind, src_kind):
    x = fs.field(fs.f64, 3, needs_grad=True)
    dst, src = _make(dst_kind), _make(src_kind, needs_grad=False)
    loss = fs.field(fs.f64, (), needs_grad=True)
    fin = _sum_of_squares(loss)

    @fs.kernel
    def twice(a: fs.template()):
        for i in x:
            a[i] = 2 * x[i]

    @fs.kernel
    def twice_nd(a: fs.types.ndarray()):
        for i in x:
            a[i] = 2 * x[i]

    x.from_numpy(X0)
    src.from_numpy(X0 + 1)
    with fs.ad.Tape(loss):
        (twice_nd if dst_kind == "ndarray" else twice)(dst)
        dst.copy_from(src)  # the loss no longer depends on x
        fin(dst)
    assert loss[None] == pytest.approx(float(((X0 + 1) ** 2).sum()))
    np.testing.assert_array_equal(x.grad.to_numpy(), 0)


def test_copy_from_a_component_and_into_one_carries_the_gradient():
    v = fs.Vector.field(2, fs.f64, 3, needs_grad=True)
    a = fs.field(fs.f64, 3, needs_grad=True)
    loss = fs.field(fs.f64, (), needs_grad=True)
    fin = _sum_of_squares(loss)
    v0 = np.stack([X0, 2 * X0], axis=1)
    v.from_numpy(v0)
    with fs.ad.Tape(loss):
        a.copy_from(v.get_scalar_field(1))
        fin(a)
    np.testing.assert_allclose(v.grad.to_numpy(), np.stack([0 * X0, 4 * X0], axis=1))

    @fs.kernel
    def fin_v():
        for i in v:
            loss[None] += v[i][0] * v[i][1]

    a.from_numpy(X0 + 1)
    with fs.ad.Tape(loss):
        v.get_scalar_field(0).copy_from(a)
        fin_v()
    np.testing.assert_allclose(a.grad.to_numpy(), 2 * X0)  # d(a * v1)/da = v1 = 2 X0


def test_copies_the_kernel_cannot_differentiate_are_refused_at_the_users_line():
    v = fs.Vector.field(2, fs.f64, 3, needs_grad=True)
    m = fs.field(fs.f64, (3, 2), needs_grad=True)
    s = fs.field(fs.f64, needs_grad=True)
    fs.root.pointer(fs.i, 1).dense(fs.i, 3).place(s, s.grad)
    a = fs.field(fs.f64, 3, needs_grad=True)
    loss = fs.field(fs.f64, (), needs_grad=True)
    for dst, src, why in [(m, v, "index shapes differ"), (s, a, "under sparse SNodes")]:
        with fs.ad.Tape(loss), pytest.raises(FieldsimRuntimeError) as err:
            dst.copy_from(src)  # the refused line
        text = str(err.value)
        assert why in text and f"derivative of '{src.ir_name}'" in text
        assert err.value.loc.file == __file__ and "dst.copy_from(src)" in err.value.loc.source
    with fs.ad.Tape(loss):  # no gradient wanted: a plain copy, as outside a Tape
        fs.ad.no_grad(m.copy_from)(v)
    np.testing.assert_array_equal(m.to_numpy(), v.to_numpy())


def test_copy_from_in_a_fwd_mode_block_carries_the_tangent():
    # Taichi 1.7.4 fails to compile its copy kernel's tangent here (MatrixPtrStmt); fieldsim
    # dropped the dual silently (0); d sum(a**2) / d x[0] = 2 x[0]
    x = fs.field(fs.f64, 3, needs_dual=True)
    a = fs.field(fs.f64, 3, needs_dual=True)
    loss = fs.field(fs.f64, (), needs_dual=True)
    x.from_numpy(X0)

    @fs.kernel
    def fin():
        for i in a:
            loss[None] += a[i] * a[i]

    with fs.ad.FwdMode(loss=loss, param=x, seed=[1.0, 0.0, 0.0]):
        a.copy_from(x)
        fin()
    assert loss.dual[None] == pytest.approx(2 * X0[0])
