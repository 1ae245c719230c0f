"""Rule-keeping programs with vectors, matrices, 0-D and n-D fields, time-indexed state and several
launches, written as a user writes them (one-kernel patterns: rules_cases_good.py). Same `@good`
registry and checks (rules_support).
"""
import numpy as np
from rules_support import Good, N, good, put, reduce_squares, scalar, then, vec, x_and_loss

import fieldsim as fs


# -------------------------------------------------------------- vectors, matrices, 0-D, n-D
@good
def vector_field_written_then_reduced():
    x, loss = x_and_loss()
    v = fs.Vector.field(2, float, shape=N, needs_grad=True, name="v")

    @fs.kernel
    def k():
        for i in x:
            v[i] = fs.Vector([x[i], x[i] ** 2])

    @fs.kernel
    def reduce():
        for i in v:
            loss[None] += v[i].dot(v[i]) + v[i][0] * v[i][1]

    return Good({"x": x}, loss, then(k, reduce))


@good
def vector_components_stored_separately():
    x, loss = x_and_loss()
    v = fs.Vector.field(2, float, shape=N, needs_grad=True, name="v")

    @fs.kernel
    def k():
        for i in x:
            v[i][0] = x[i]
            v[i][1] = x[i] * 2.0
            loss[None] += v[i][0] * v[i][1]

    return Good({"x": x}, loss, k)


@good
def matrix_field_determinant():
    x, loss = x_and_loss()
    y = put(vec("y"))
    M = fs.Matrix.field(2, 2, float, shape=N, needs_grad=True, name="M")

    @fs.kernel
    def k():
        for i in x:
            M[i] = fs.Matrix([[x[i], y[i]], [y[i] * 0.5, x[i] ** 2]])

    @fs.kernel
    def reduce():
        for i in M:
            loss[None] += M[i].determinant()

    return Good({"x": x, "y": y}, loss, then(k, reduce))


@good
def zero_d_field_between_kernels():
    x, loss = x_and_loss()
    c = scalar("c")

    @fs.kernel
    def k():
        c[None] = x[0] * x[1]

    @fs.kernel
    def use():
        for i in x:
            loss[None] += c[None] * x[i]

    return Good({"x": x}, loss, then(k, use))


@good
def stencil_in_2d():
    x2, loss = put(fs.field(float, shape=(4, 3), needs_grad=True, name="x2")), scalar("loss")
    y2 = fs.field(float, shape=(4, 3), needs_grad=True, name="y2")

    @fs.kernel
    def k():
        for i, j in fs.ndrange(3, 3):
            y2[i, j] = x2[i, j] * x2[i + 1, j] + x2[i, (j + 1) % 3]

    return Good({"x2": x2}, loss, then(k, reduce_squares(y2, loss)))


@good
def reads_in_3d():
    x3, loss = put(fs.field(float, shape=(2, 3, 3), needs_grad=True, name="x3")), scalar("loss")

    @fs.kernel
    def k():
        for i, j, m in fs.ndrange(2, 3, 2):
            loss[None] += x3[i, j, m] * x3[i, j, m + 1]

    return Good({"x3": x3}, loss, k)


# ------------------------------------------------------------------- time-indexed state
def _xt(steps=3):
    return put(fs.field(float, shape=(steps + 1, N), needs_grad=True, name="xt"))


@good
def time_indexed_steps():
    xt, loss = _xt(), scalar("loss")

    @fs.kernel
    def step(t: int):
        for i in range(N):
            xt[t + 1, i] = fs.sin(xt[t, i]) + 0.5 * xt[t, i]

    @fs.kernel
    def final():
        for i in range(N):
            loss[None] += xt[3, i] ** 2

    def run():
        for t in range(3):
            step(t)
        final()

    return Good({"xt": xt}, loss, run)


@good
def time_indexed_inner_serial_loop():
    xt, loss = _xt(), scalar("loss")

    @fs.kernel
    def k():
        for i in range(N):
            for t in range(3):
                xt[t + 1, i] = xt[t, i] * xt[t, i] * 0.5 + 0.1

    @fs.kernel
    def final():
        for i in range(N):
            loss[None] += xt[3, i]

    return Good({"xt": xt}, loss, then(k, final))


@good
def wave_like_leapfrog():
    p, loss = _xt(4), scalar("loss")

    @fs.kernel
    def step(t: int):
        for i in range(1, N - 1):
            p[t + 1, i] = 2.0 * p[t, i] - p[t - 1, i] + 0.2 * (p[t, i - 1] + p[t, i + 1] - 2.0 * p[t, i])

    @fs.kernel
    def final():
        for i in range(1, N - 1):
            loss[None] += p[4, i] ** 2

    def run():
        for t in range(1, 4):
            step(t)
        final()

    return Good({"xt": p}, loss, run)


@good
def adjacent_rows_by_argument():
    xt, loss = _xt(), scalar("loss")

    @fs.kernel
    def k(t: int):
        for i in range(N):
            loss[None] += xt[t, i] * xt[t + 1, i]

    return Good({"xt": xt}, loss, lambda: (k(0), k(2)))


@good
def serialized_recurrence_through_a_field():
    x, loss = x_and_loss()
    a, y = put(vec("a")), vec("y")

    @fs.kernel
    def k():
        y[0] = x[0]
        fs.loop_config(serialize=True)
        for i in range(1, N):
            y[i] = y[i - 1] * a[i] + fs.sin(x[i])

    return Good({"x": x, "a": a}, loss, then(k, reduce_squares(y, loss)))


# --------------------------------------------------------------------- across kernels
@good
def triple_overwrite_of_the_loss():
    """Taichi's test_ad_set_loss_grad: the last plain write wins, x.grad == 4."""
    x, loss = scalar("x"), scalar("loss")

    @fs.kernel
    def eval_x(x: fs.template()):
        x[None] = 1.0

    @fs.kernel
    def compute_1(x: fs.template(), loss: fs.template()):
        loss[None] = x[None]

    @fs.kernel
    def compute_2(x: fs.template(), loss: fs.template()):
        loss[None] = 2 * x[None]

    @fs.kernel
    def compute_3(x: fs.template(), loss: fs.template()):
        loss[None] = 4 * x[None]

    eval_x(x)

    def run():
        compute_1(x, loss)
        compute_2(x, loss)
        compute_3(x, loss)

    return Good({"x": x}, loss, run, expect={"x": np.array(4.0)})


@good
def overwrite_of_an_unread_field():
    x, loss = x_and_loss()
    y = vec("y")

    @fs.kernel
    def first():
        for i in x:
            y[i] = x[i]

    @fs.kernel
    def second():
        for i in x:
            y[i] = 3.0 * x[i] ** 2

    return Good({"x": x}, loss, then(first, second, reduce_squares(y, loss)))


@good
def neighbours_of_a_field_written_earlier():
    x, loss = x_and_loss()
    y, z = vec("y"), vec("z")

    @fs.kernel
    def k():
        for i in x:
            y[i] = fs.exp(x[i])

    @fs.kernel
    def smooth():
        for i in range(1, N - 1):
            z[i] = y[i - 1] - 2.0 * y[i] + y[i + 1]

    return Good({"x": x}, loss, then(k, smooth, reduce_squares(z, loss)))


@good
def python_write_before_a_kernel_reads():
    x, loss = x_and_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += x[i] ** 3

    def run():
        x[0] = 0.25  # recorded; its adjoint zeroes x.grad[0]
        k()

    return Good({"x": x}, loss, run)


@good
def fill_then_accumulate_on_the_tape():
    x, loss = x_and_loss()
    acc = vec("acc")

    @fs.kernel
    def k():
        for i in x:
            acc[i] += x[i] * 2.0
            acc[(i + 1) % N] += x[i] ** 2

    reduce = reduce_squares(acc, loss)

    def run():
        acc.fill(0.5)
        k()
        reduce()

    return Good({"x": x}, loss, run)


@good
def grad_replaced_checkpoint():
    x, loss = x_and_loss()
    y = vec("y")

    @fs.kernel
    def k():
        for i in x:
            y[i] = fs.sin(x[i]) * x[i]

    @fs.ad.grad_replaced
    def forward():
        k()

    @fs.ad.grad_for(forward)
    def backward():
        k.grad()

    return Good({"x": x}, loss, then(forward, reduce_squares(y, loss)))
