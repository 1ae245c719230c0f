"""Programs that keep the global data access rules, written as a user writes them.

Each `@good` builder runs after `fs.init(default_fp=f64)` and returns a `Good`: the Tape body
`run`, its inputs (given reproducible values here), the loss, and optionally `reset` (state
restored outside the Tape before every forward) and analytic gradients `expect`. The test
checks the Tape gradient of every input against float64 central finite differences.
"""
import numpy as np
from rules_support import Good, N, good, put, reduce_squares, scalar, then, vec, x_and_loss

import fieldsim as fs


# ------------------------------------------------------------------ one kernel, one field
@good
def sum_of_squares():
    x, loss = x_and_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += x[i] ** 2

    return Good({"x": x}, loss, k, expect={"x": 2 * x.to_numpy()})


@good
def plus_and_minus_accumulate():
    x, loss = x_and_loss()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += fs.sin(x[i])
            loss[None] -= 0.5 * x[i] ** 2

    return Good({"x": x}, loss, k)


@good
def write_then_read_back_in_the_same_thread():
    x, loss = x_and_loss()
    y = vec("y")

    @fs.kernel
    def k():
        for i in x:
            y[i] = x[i] * 2.0
            loss[None] += y[i] * x[i]

    return Good({"x": x}, loss, k)


@good
def copy_then_reduce_in_two_kernels():
    x, loss = x_and_loss()
    y = vec("y")

    @fs.kernel
    def k():
        for i in x:
            y[i] = fs.sin(x[i])

    return Good({"x": x}, loss, then(k, reduce_squares(y, loss)))


@good
def neighbours_read_into_another_field():
    x, loss = x_and_loss()
    y = vec("y")

    @fs.kernel
    def k():
        for i in x:
            if 0 < i < N - 1:
                y[i] = x[i - 1] * x[i + 1]

    return Good({"x": x}, loss, then(k, reduce_squares(y, loss)))


@good
def gather_with_plus_scatter():
    x, loss = x_and_loss()
    z = vec("z")

    @fs.kernel
    def k():
        for i in range(N - 1):
            z[i] += x[i] * x[i + 1]
            z[i + 1] += fs.cos(x[i])

    return Good({"x": x}, loss, then(k, reduce_squares(z, loss)), reset=lambda: z.fill(0.0))


@good
def scatter_add_by_data_dependent_index():
    x, loss = x_and_loss()
    y = vec("y")
    idx = fs.field(fs.i32, shape=N, name="idx")
    idx.from_numpy(np.array([2, 2, 0, 5, 5, 5], dtype=np.int32))

    @fs.kernel
    def k():
        for i in x:
            y[idx[i]] += x[i] * x[i]

    return Good({"x": x}, loss, then(k, reduce_squares(y, loss)), reset=lambda: y.fill(0.0))


@good
def gather_by_data_dependent_index():
    x, loss = x_and_loss()
    idx = fs.field(fs.i32, shape=N, name="idx")
    idx.from_numpy(np.array([3, 0, 0, 5, 1, 1], dtype=np.int32))

    @fs.kernel
    def k():
        for i in x:
            loss[None] += x[idx[i]] * fs.exp(x[i])

    return Good({"x": x}, loss, k)


@good
def atomic_max_over_threads():
    x, loss = put(vec("x"), seed=7), scalar("loss")
    m = scalar("m")

    @fs.kernel
    def k():
        for i in x:
            fs.atomic_max(m[None], x[i] * x[i])

    @fs.kernel
    def out():
        loss[None] = 3.0 * m[None]

    want = np.zeros(N)
    want[np.argmax(x.to_numpy())] = 6 * x.to_numpy().max()
    return Good({"x": x}, loss, then(k, out), reset=lambda: m.fill(-1.0), expect={"x": want})


@good
def atomic_min_into_pairs():
    x, loss = put(vec("x"), seed=11), scalar("loss")
    m = vec("m", N // 2)

    @fs.kernel
    def k():
        for i in x:
            fs.atomic_min(m[i // 2], fs.sin(x[i]))

    return Good({"x": x}, loss, then(k, reduce_squares(m, loss)), reset=lambda: m.fill(10.0))


@good
def exclusive_branches_store_once():
    x, loss = x_and_loss(-1.0, 1.0)
    y = vec("y")

    @fs.kernel
    def k():
        for i in x:
            if x[i] > 0.0:
                y[i] = x[i] ** 2
            else:
                y[i] = -x[i] * 3.0
            loss[None] += y[i]

    return Good({"x": x}, loss, k)


@good
def a_func_reads_neighbours():
    x, loss = x_and_loss()

    @fs.func
    def around(i):
        return x[i - 1] + x[i + 1]

    @fs.kernel
    def k():
        for i in range(1, N - 1):
            loss[None] += x[i] * around(i)

    return Good({"x": x}, loss, k)


@good
def static_unroll_to_distinct_elements():
    x, loss = x_and_loss()
    y = vec("y", 2 * N)

    @fs.kernel
    def k():
        for i in x:
            for r in fs.static(range(2)):
                y[2 * i + r] = x[i] * (r + 1)

    return Good({"x": x}, loss, then(k, reduce_squares(y, loss)))


@good
def argument_offsets_disjoint():
    x, loss = x_and_loss()
    y = vec("y", 2 * N)

    @fs.kernel
    def k(a: int, b: int):
        for i in range(4):
            y[i + a] = x[i]
            y[i + b] = x[i] * 2.0

    return Good({"x": x}, loss, then(lambda: k(0, 4), reduce_squares(y, loss)))


@good
def two_top_level_loops_write_then_read():
    x, loss = x_and_loss()
    y = vec("y")

    @fs.kernel
    def k():
        for i in x:
            y[i] = x[i] ** 2
        for i in y:
            loss[None] += y[i] * y[i]

    return Good({"x": x}, loss, k)


@good
def inner_serial_loop_accumulates_a_local():
    x, loss = x_and_loss()
    w, y = put(vec("w")), vec("y")

    @fs.kernel
    def k():
        for i in y:
            s = 0.0
            for j in range(N):
                s += x[j] * w[(i + j) % N]
            y[i] = s

    return Good({"x": x, "w": w}, loss, then(k, reduce_squares(y, loss)))


@good
def while_loop_on_a_local():
    x, loss = x_and_loss()

    @fs.kernel
    def k():
        for i in x:
            acc = x[i]
            j = 0
            while j < 3:
                acc = acc * 0.5 + fs.sin(acc)
                j += 1
            loss[None] += acc

    return Good({"x": x}, loss, k)


@good
def guard_keeps_the_boundary_read_only():
    x, loss = x_and_loss()
    z = vec("z")

    @fs.kernel
    def copy():
        for i in x:
            z[i] = x[i]

    @fs.kernel
    def k():
        for i in z:
            if i >= 1:
                z[i] += z[0] * 0.5  # z[0] is read by every thread but written by none

    return Good({"x": x}, loss, then(copy, k, reduce_squares(z, loss)))


@good
def guards_through_else_not_and_or():
    x, loss = x_and_loss()
    z, w = vec("z"), vec("w")

    @fs.kernel
    def copy():
        for i in x:
            z[i] = x[i]

    @fs.kernel
    def k():
        for i in z:
            if i < 1:
                w[i] = z[i] * 3.0
            elif i < N - 1:
                z[i] += z[0] * 0.5 + z[N - 1]  # 1 <= i < N - 1: z[0], z[N - 1] stay unwritten
            if not (i < 1) and i < N - 1:
                w[i] = z[i] * fs.sin(x[i])
            if i < 1 or i > 4:
                w[i] += z[N - 1] * x[i]

    return Good({"x": x}, loss, then(copy, k, reduce_squares(z, loss), reduce_squares(w, loss)),
                reset=lambda: w.fill(0.0))


@good
def serialized_loop_reads_what_its_first_iteration_wrote():
    x, loss = x_and_loss()
    y = vec("y")

    @fs.kernel
    def k():
        fs.loop_config(serialize=True)
        for i in range(N):
            y[i] = x[i] * 2.0
            loss[None] += y[0] * x[i]  # later iterations write y[1:], never y[0]

    return Good({"x": x}, loss, k)


# ---- plain stores overwriting an element in order (the same thread, a later iteration of a
# serialized or inner loop, or a later task): the store's adjoint takes the element's whole
# gradient and zeroes it, so the overwritten value rightly gets none
def _xy():
    return put(vec("x")), put(vec("y")), scalar("loss")


@good
def double_plain_store():
    x, y, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            y[i] = x[i]
            y[i] = x[i] * 2.0

    return Good({"x": x}, loss, then(k, reduce_squares(y, loss)))


@good
def store_in_serial_inner_loop():
    x, y, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            for j in range(3):
                y[i] = x[i] * j

    return Good({"x": x}, loss, then(k, reduce_squares(y, loss)))


@good
def store_in_while_loop():
    x, y, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            j = 0
            while j < 2:
                y[i] = x[i] * j
                j += 1

    return Good({"x": x}, loss, then(k, reduce_squares(y, loss)))


@good
def store_twice_in_static_unroll():
    x, y, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            for r in fs.static(range(2)):
                y[i] = x[i] * (r + 1)

    return Good({"x": x}, loss, then(k, reduce_squares(y, loss)))


@good
def store_in_branch_then_after_it():
    x, y, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            if x[i] > 0.5:
                y[i] = x[i]
            else:
                y[i] = -x[i]
            y[i] = 3.0 * x[i]

    return Good({"x": x}, loss, then(k, reduce_squares(y, loss)), expect={"x": 18 * x.to_numpy()})


@good
def vector_component_stored_twice():
    x, _, loss = _xy()
    v = fs.Vector.field(2, float, shape=N, needs_grad=True, name="v")

    @fs.kernel
    def k():
        for i in x:
            v[i][0] = x[i]
            v[i][0] = x[i] * 2.0

    @fs.kernel
    def total():
        for i in x:
            loss[None] += v[i].norm_sqr()

    return Good({"x": x}, loss, then(k, total))


@good
def matrix_entry_stored_after_whole_matrix():
    x, _, loss = _xy()
    M = fs.Matrix.field(2, 2, float, shape=N, needs_grad=True, name="M")

    @fs.kernel
    def k():
        for i in x:
            M[i] = fs.Matrix([[x[i], x[i] * 0.5], [0.0, x[i]]])  # [0, 1] carries a gradient
            M[i][0, 1] = x[i] * 3.0

    @fs.kernel
    def total():
        for i in x:
            loss[None] += M[i].norm_sqr()

    return Good({"x": x}, loss, then(k, total))


@good
def loss_reset_after_accumulation():
    x, _, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            loss[None] += x[i]
        loss[None] = x[0] * 2.0

    return Good({"x": x}, loss, k, expect={"x": np.eye(N)[0] * 2.0})


@good
def mixed_radix_index_of_a_block_and_its_cell():
    # `x[b * 3 + k]`, k in [0, 3): the index of a cell of block b (a blocked struct-for's)
    x, loss = x_and_loss()
    y = vec("y")

    @fs.kernel
    def k():
        for b in range(N // 3):
            for c in range(3):
                y[b * 3 + c] = x[b * 3 + c] ** 2
        for i in y:
            loss[None] += y[i] * x[i]

    return Good({"x": x}, loss, k, expect={"x": 3 * x.to_numpy() ** 2})


# ------------------------------------- in-place linear updates after a write, companion reads
@good
def div_assign_after_store():
    # a linear update may follow a store of the element in the same thread
    x, y, loss = put(vec("x")), vec("y"), scalar("loss")

    @fs.kernel
    def k():
        for i in x:
            y[i] = x[i] + 1.0
            y[i] /= 2.0

    return Good({"x": x}, loss, then(k, reduce_squares(y, loss)), expect={"x": (x.to_numpy() + 1.0) / 2})


@good
def serialized_running_sum_in_a_field():
    # `s = s + x[i]` from one thread, in order: each update's adjoint passes s's gradient on
    x, s, loss = put(vec("x")), scalar("s"), scalar("loss")

    @fs.kernel
    def k():
        fs.loop_config(serialize=True)
        for i in range(N):
            s[None] = s[None] + x[i]

    @fs.kernel
    def square():
        loss[None] += s[None] ** 2

    return Good({"x": x}, loss, then(k, square), reset=lambda: s.fill(0.0),
                expect={"x": np.full(N, 2 * x.to_numpy().sum())})


@good
def copy_then_accumulate():
    # the docs' Rule 1 shape with a copy: `y[i] = v[i]` adds y's gradient to v's, using no value
    x, v, y, loss = put(vec("x")), vec("v"), vec("y"), scalar("loss")

    @fs.kernel
    def start():
        for i in x:
            v[i] = x[i] * 1.5

    @fs.kernel
    def k():
        for i in v:
            y[i] = v[i] * 2.0
            v[i] += 1.0

    @fs.kernel
    def both():
        for i in v:
            loss[None] += y[i] ** 2 + fs.sin(v[i])

    return Good({"x": x}, loss, then(start, k, both))


# ------------------------------------------------------- free reads across launches (gh-refused2)
def _move_and_damp():
    x, v, p, loss = put(vec("x")), vec("v"), vec("p"), scalar("loss")

    @fs.kernel
    def start():
        for i in x:
            v[i] = fs.sin(x[i])
            p[i] = x[i] * x[i]

    @fs.kernel
    def move():  # a free read: linear, its factor carries no derivative
        for i in x:
            p[i] += 0.1 * v[i]

    @fs.kernel
    def both():
        for i in v:
            loss[None] += p[i] ** 2 + fs.cos(v[i])

    return x, v, loss, start, move, both


@good
def free_read_then_damped_in_a_later_kernel():
    x, v, loss, start, move, both = _move_and_damp()

    @fs.kernel
    def damp():
        for i in v:
            v[i] *= 0.9

    return Good({"x": x}, loss, then(start, move, damp, move, damp, both))


@good
def free_read_then_overwritten_in_a_later_kernel():
    x, v, loss, start, move, both = _move_and_damp()

    @fs.kernel
    def reset():
        for i in v:
            v[i] = x[i] ** 3

    return Good({"x": x}, loss, then(start, move, reset, move, both))
