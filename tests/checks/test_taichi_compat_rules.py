"""The access-rule checker on programs from Taichi's AD tests (issue #11): two valid programs it
used to refuse, and the refusals it must keep.

Accepted programs are checked against float64 central finite differences (and analytic
gradients); refused ones must raise `AccessRuleError` naming the rule and the field.

* a matrix field indexed by component loop indices, `m[i][j, k]` with `j, k` from an `ndrange`
  loop: the component index `2*j + k` is the loop index again, so every iteration writes its own
  element (and the read of `m[i][j, k]` is one component, not the whole matrix);
* an overwrite of an element whose earlier value carries no derivative (`p[i] += i`, then
  `p[i] = val * i` in the same thread): Rule 2 guards only values that carry a gradient.

Kept: an overwrite of a value that carries a gradient (Rule 2), an inert write overwritten from
another thread (a race: Rule 2), and a read followed by `+=` of the same element (Rule 1; Taichi
silently loses the gradient of the value read).
"""
import numpy as np
import pytest
from rules_support import N, Good, assert_names, check_good, put, scalar, vec

import fieldsim as fs


@pytest.fixture(autouse=True)
def fresh_fs():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    yield


def _refused(loss, kernel, rule, field_name):
    with pytest.raises(fs.AccessRuleError) as info, fs.ad.Tape(loss=loss):
        kernel()
    assert_names(info.value, rule, field_name)
    assert isinstance(info.value, fs.TaichiAssertionError)
    return info.value


# ---- accepted ----------------------------------------------------------------------------------
def _matrix_by_component_indices():
    m = fs.Matrix.field(2, 2, float, shape=N, needs_grad=True, name="m")
    n = fs.Matrix.field(2, 2, float, shape=N, needs_grad=True, name="n")
    loss = scalar("loss")

    @fs.kernel
    def k():
        for i in range(N):
            for j, c in fs.ndrange(2, 2):
                m[i][j, c] = (j + 1) * (c + 1) * n[i][j, c] ** 2
                loss[None] += m[i][j, c]

    n.from_numpy(np.random.default_rng(3).uniform(0.2, 1.0, (N, 2, 2)))
    return m, n, loss, k


def test_matrix_indexed_by_component_loop_indices_is_accepted():
    m, n, loss, k = _matrix_by_component_indices()
    weights = np.array([[1.0, 2.0], [2.0, 4.0]])
    check_good(Good({"n": n}, loss, k, expect={"n": 2 * weights * n.to_numpy()}))


def test_matrix_indexed_by_component_loop_indices_by_kernel_grad():
    m, n, loss, k = _matrix_by_component_indices()
    k()
    loss.grad[None] = 1.0
    k.grad()
    weights = np.array([[1.0, 2.0], [2.0, 4.0]])
    np.testing.assert_allclose(n.grad.to_numpy(), 2 * weights * n.to_numpy(), rtol=1e-12)


def test_inert_value_overwritten_later_in_the_thread_is_accepted():
    a = put(vec("a"))
    b = fs.field(fs.i32, shape=N, name="b")
    p = vec("p")
    loss = scalar("loss")

    @fs.kernel
    def compute():
        for i in range(N):
            val = a[i]
            for j in range(b[i]):
                p[i] += i  # carries no derivative
            p[i] = val * i

    @fs.kernel
    def total():
        for i in p:
            loss[None] += p[i] ** 2

    def run():
        compute()
        total()

    def reset():
        p.fill(0.0)

    b.from_numpy(np.full(N, 2, dtype=np.int32))
    i = np.arange(N)
    check_good(Good({"a": a}, loss, run, reset, expect={"a": 2 * a.to_numpy() * i * i}))


def test_inert_matrix_entry_overwritten_is_accepted():
    x = put(vec("x"))
    M = fs.Matrix.field(2, 2, float, shape=N, needs_grad=True, name="M")
    loss = scalar("loss")

    @fs.kernel
    def k():
        for i in x:
            M[i] = fs.Matrix([[x[i], 0.0], [0.0, x[i]]])
            M[i][0, 1] = x[i] * 3.0

    @fs.kernel
    def total():
        for i in M:
            loss[None] += M[i][0, 0] * M[i][0, 1] + M[i][1, 1]

    check_good(Good({"x": x}, loss, lambda: (k(), total()), expect={"x": 6 * x.to_numpy() + 1}))


def test_in_order_overwrite_of_a_value_with_a_gradient_is_exact():
    """`p[i] += a[i]` then `p[i] = 2 a[i]` in one thread: the store's adjoint takes p's whole
    gradient and zeroes it, so the overwritten addend gets none (Taichi's gets it too)."""
    a, p, loss = put(vec("a")), vec("p"), scalar("loss")

    @fs.kernel
    def k():
        for i in range(N):
            p[i] += a[i]
            p[i] = a[i] * 2.0

    @fs.kernel
    def total():
        for i in range(N):
            loss[None] += p[i] ** 2

    check_good(Good({"a": a}, loss, lambda: (k(), total()), reset=lambda: p.fill(0.0),
                    expect={"a": 8 * a.to_numpy()}))


# ---- still refused -----------------------------------------------------------------------------


def test_inert_write_overwritten_from_another_thread_is_refused():
    a, p, loss = put(vec("a")), vec("p"), scalar("loss")

    @fs.kernel
    def k():
        for i in range(N):
            p[i] = 1.0
            p[N - 1 - i] = a[i]  # thread N-1-i stored 1.0 there: a race

    _refused(loss, k, 2, "p")


def test_read_then_accumulate_of_the_same_element_is_refused():
    """Taichi's test_if_condition_depend_on_for_loop_index: `f = f_bend[0] * pos[c]` then
    `pos[c] += ...`; the adjoint would replay the read after the update."""
    pos = vec("pos")
    f_bend = put(vec("f_bend", n=1))
    F, loss = vec("F"), scalar("loss")

    @fs.kernel
    def simulation(t: fs.i32):
        for c in pos:
            for n in range(3):
                f = 0.0
                if n < 1:
                    f = 1.0
                else:
                    f = f_bend[0] * pos[c]
                F[c] += f
            pos[c] += 1.0 * t

    with pytest.raises(fs.AccessRuleError) as info, fs.ad.Tape(loss=loss):
        simulation(5)
    assert_names(info.value, 1, "pos")
