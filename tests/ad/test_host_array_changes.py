"""NumPy arrays (and CPU tensors) changed in place from Python between launches on a Tape.

The backward replays each adjoint with the arrays its launch took; an array changed since then
would give a silently wrong gradient (Taichi 1.7.4 does). A change an adjoint depends on is
refused, located; changes no adjoint depends on, kernel writes and copies pass, and their
gradients equal the analytic ones.
"""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import AccessRuleError

N = 4
P0 = np.array([0.43, -0.31, 0.92, 0.27])


@pytest.fixture
def prog():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    p = fs.field(fs.f64, N, needs_grad=True)
    q = fs.field(fs.f64, N, needs_grad=True)
    loss = fs.field(fs.f64, (), needs_grad=True)
    p.from_numpy(P0)

    @fs.kernel
    def scale(a: fs.types.ndarray()):
        for i in range(N):
            q[i] = a[i] * p[i] * p[i]

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += q[i]

    @fs.kernel
    def fill_array(a: fs.types.ndarray(), v: fs.f64):
        for i in range(N):
            a[i] = v

    @fs.kernel
    def square_into(a: fs.types.ndarray()):
        for i in range(N):
            a[i] = p[i] * p[i]

    return dict(p=p, q=q, loss=loss, scale=scale, total=total, fill_array=fill_array,
                square_into=square_into)


def test_a_change_an_adjoint_reads_is_refused_at_the_tapes_end(prog):
    a = np.ones(N)
    with pytest.raises(AccessRuleError) as err:
        with fs.ad.Tape(prog["loss"]):
            prog["scale"](a)
            a[:] = 5.0
            prog["total"]()
    text = str(err.value)
    assert "array 'a' changed in place from Python" in text
    assert "kernel 'scale' (launch 1" in text and "reads a" in text
    assert "test_host_array_changes.py" in text
    # no backward ran: no gradient made from the changed array
    assert not prog["p"].grad.to_numpy().any()


def test_a_change_is_refused_before_the_next_launch_that_takes_the_array_runs(prog):
    a = np.ones(N)
    with pytest.raises(AccessRuleError, match="changed in place from Python") as err:
        with fs.ad.Tape(prog["loss"]):
            prog["scale"](a)
            a[2] = 7.0
            prog["square_into"](a)  # refused: it would overwrite `a` anyway, but after a read
    text = str(err.value)
    assert "Python-scope `a[...] = ...`" in text  # the change is named, not the kernel's write
    assert 'prog["square_into"](a)' in text.splitlines()[1]  # located at the launch that found it
    assert a[2] == 7.0  # the refused launch did not run


def test_a_copy_passed_to_the_kernel_may_change_afterwards(prog):
    a = np.full(N, 2.0)
    with fs.ad.Tape(prog["loss"]):
        prog["scale"](a.copy())
        a[:] = 5.0
        prog["total"]()
    np.testing.assert_allclose(prog["p"].grad.to_numpy(), 2 * 2.0 * P0, rtol=1e-12)


def test_unchanged_arrays_and_kernel_writes_pass(prog):
    a = np.zeros(N)
    with fs.ad.Tape(prog["loss"]):
        prog["fill_array"](a, 3.0)  # a kernel's write before any read: seen, not a Python change
        prog["scale"](a)
        prog["total"]()
    np.testing.assert_allclose(a, 3.0)
    np.testing.assert_allclose(prog["p"].grad.to_numpy(), 2 * 3.0 * P0, rtol=1e-12)


def test_a_change_before_any_read_of_the_array_passes(prog):
    a = np.zeros(N)
    with fs.ad.Tape(prog["loss"]):
        prog["fill_array"](a, 3.0)
        a[:] = 1.5  # nothing recorded read `a` yet: the kernel below reads the new values
        prog["scale"](a)
        prog["total"]()
    np.testing.assert_allclose(prog["p"].grad.to_numpy(), 2 * 1.5 * P0, rtol=1e-12)


def test_changing_an_output_array_nothing_reads_passes(prog):
    out = np.zeros(N)
    a = np.ones(N)
    with fs.ad.Tape(prog["loss"]):
        prog["square_into"](out)
        out[:] = -1.0
        prog["scale"](a)
        prog["total"]()
    np.testing.assert_allclose(prog["p"].grad.to_numpy(), 2 * P0, rtol=1e-12)


def test_a_fortran_order_array_changed_in_place_is_refused():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    p = fs.field(fs.f64, (2, 3), needs_grad=True)
    loss = fs.field(fs.f64, (), needs_grad=True)
    p.fill(0.5)

    @fs.kernel
    def weigh(w: fs.types.ndarray()):
        for i, j in p:
            loss[None] += w[i, j] * p[i, j] * p[i, j]

    w = np.asfortranarray(np.arange(6.0).reshape(2, 3))
    with fs.ad.Tape(loss):
        weigh(w)
    np.testing.assert_allclose(p.grad.to_numpy(), 2 * 0.5 * w, rtol=1e-12)
    with pytest.raises(AccessRuleError, match="array 'w' changed in place"):
        with fs.ad.Tape(loss):
            weigh(w)
            w[1, 2] = 100.0


def test_a_cpu_tensor_changed_in_place_is_refused(prog):
    torch = pytest.importorskip("torch")
    t = torch.ones(N, dtype=torch.float64)
    with pytest.raises(AccessRuleError, match="changed in place from Python"):
        with fs.ad.Tape(prog["loss"]):
            prog["scale"](t)
            t.mul_(3.0)
            prog["total"]()


@pytest.mark.parametrize("read_view", [True, False])
def test_a_kernel_writing_another_view_of_a_read_array_is_named(prog, read_view):
    """`scale(a[:]); fill_array(a)`: two numpy objects, one buffer. Refused (the adjoint of
    `scale` reads what `fill_array` overwrote), and the message names the kernel's write, not a
    change from Python."""
    a = np.ones(N)
    with pytest.raises(AccessRuleError) as err:
        with fs.ad.Tape(prog["loss"]):
            prog["scale"](a[:] if read_view else a)
            prog["fill_array"](a if read_view else a[:], 3.0)
            prog["total"]()
    text = str(err.value)
    assert ("kernel 'fill_array' (launch 2), through another view of the memory that array 'a' "
            "was read through, writes elements of field 'a' that kernel 'scale' (launch 1") in text
    assert "changed in place from Python" not in text


def test_a_python_change_after_a_kernel_wrote_another_view_is_still_pythons(prog):
    a = np.ones(N)
    with pytest.raises(AccessRuleError) as err:
        with fs.ad.Tape(prog["loss"]):
            prog["fill_array"](a[:], 3.0)
            prog["scale"](a)
            a[1] = 5.0
            prog["total"]()
    assert "array 'a' changed in place from Python" in str(err.value)


def test_a_kernel_writing_a_view_nothing_read_since_passes(prog):
    a = np.ones(N)
    b = a[:]
    with fs.ad.Tape(prog["loss"]):
        prog["fill_array"](b, 2.0)
        prog["scale"](a)
        prog["total"]()
    np.testing.assert_allclose(prog["p"].grad.to_numpy(), 2 * 2.0 * P0)
