"""Programs that break the global data access rules, written as a user writes them.

Each `@bad(rule, field)` builder runs after `fs.init` and returns a `Bad`: what the Tape records
first (`prefix`) and the launch or Python-scope write the checker must refuse (`offender`),
naming `rule` and `field` (`undecided=True`: data-dependent indices, refused as unproven).
"""
from rules_support import Bad, N, bad, put, scalar, vec

import fieldsim as fs


def _xy():
    return put(vec("x")), put(vec("y")), scalar("loss")


# ------------------------------------------------------------------ within one kernel
@bad(1, "x")
def neighbour_read_then_write():
    x, _, loss = _xy()

    @fs.kernel
    def k():
        for i in range(N - 1):
            x[i] = x[i + 1] * 0.5

    return Bad(loss, k, [x])


@bad(1, "x")
def read_then_atomic_add():
    x, y, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            y[i] = x[i] * x[i]
            x[i] += 1.0

    return Bad(loss, k, [x, y])


@bad(1, "x")
def read_then_subtract():
    x, _, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            s = x[i]
            x[i] -= 0.1 * s * s

    return Bad(loss, k, [x])


@bad(2, "y")
def mul_assign_after_store():
    x, y, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            y[i] = x[i]
            y[i] *= x[i]

    return Bad(loss, k, [x, y])


@bad(1, "x")
def serialized_loop_reads_ahead():
    x, _, loss = _xy()

    @fs.kernel
    def k():
        fs.loop_config(serialize=True)
        for i in range(N - 1):
            x[i] = x[i + 1] * 0.5

    return Bad(loss, k, [x])


@bad(1, "x")
def reversed_index_read_then_write():
    x, _, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            x[N - 1 - i] = x[i] * 0.5

    return Bad(loss, k, [x])


@bad(1, "x")
def guard_does_not_exclude_the_read_element():
    x, _, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            if i >= 1:
                x[i - 1] = x[0] * 2.0  # thread 1 writes the x[0] the others read

    return Bad(loss, k, [x])


@bad(1, "x")
def or_guard_lets_a_thread_write_the_read_element():
    x, _, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            if i < 2 or i > 4:
                x[i] = x[1] * 2.0  # thread 1 writes x[1]

    return Bad(loss, k, [x])


@bad(1, "y")
def serialized_loop_reads_what_a_later_iteration_writes():
    x, y, loss = _xy()

    @fs.kernel
    def k():
        fs.loop_config(serialize=True)
        for i in range(N):
            loss[None] += y[N - 1] * x[i]
            y[i] = x[i] * 2.0

    return Bad(loss, k, [x, y])


@bad(1, "x")
def read_in_branch_write_after_it():
    x, y, loss = _xy()
    z = put(vec("z"), -1.0, 1.0)

    @fs.kernel
    def k():
        for i in x:
            if z[i] > 0.0:
                y[i] = fs.sin(x[i])
            x[i] = 0.5

    return Bad(loss, k, [x, y])


@bad(1, "x")
def write_inside_a_func():
    x, y, loss = _xy()

    @fs.func
    def bump(i):
        x[i] += 1.0

    @fs.kernel
    def k():
        for i in x:
            y[i] = x[i] ** 2
            bump(i)

    return Bad(loss, k, [x, y])


@bad(1, "x")
def neighbour_read_inside_a_func():
    x, _, loss = _xy()

    @fs.func
    def right(i):
        return x[i + 1]

    @fs.kernel
    def k():
        for i in range(N - 1):
            x[i] = right(i) * 2.0

    return Bad(loss, k, [x])


@bad(1, "v")
def vector_read_then_component_added():
    x, y, loss = _xy()
    v = put(fs.Vector.field(2, float, shape=N, needs_grad=True, name="v"))

    @fs.kernel
    def k():
        for i in x:
            a = v[i]
            y[i] = a[0] * a[1]
            v[i][1] += x[i]

    return Bad(loss, k, [y, v])


@bad(2, "c")
def zero_d_stored_from_every_thread():
    x, _, loss = _xy()
    c = scalar("c")

    @fs.kernel
    def k():
        for i in x:
            c[None] = x[i]

    return Bad(loss, k, [x, c])


@bad(1, "c")
def zero_d_read_then_added_by_other_threads():
    x, y, loss = _xy()
    c = put(scalar("c"))

    @fs.kernel
    def k():
        for i in x:
            y[i] = c[None] * x[i]
            c[None] += x[i]

    return Bad(loss, k, [y, c])


@bad(1, "x2")
def neighbour_in_2d():
    x2, loss = put(fs.field(float, shape=(4, 3), needs_grad=True, name="x2")), scalar("loss")

    @fs.kernel
    def k():
        for i, j in fs.ndrange(3, 3):
            x2[i, j] = x2[i + 1, j] * 0.5

    return Bad(loss, k, [x2])


@bad(1, "x3")
def neighbour_in_3d():
    x3, loss = put(fs.field(float, shape=(2, 3, 3), needs_grad=True, name="x3")), scalar("loss")

    @fs.kernel
    def k():
        for i, j, m in fs.ndrange(2, 3, 2):
            x3[i, j, m] = x3[i, j, m + 1] + 1.0

    return Bad(loss, k, [x3])


@bad(1, "x")
def two_top_level_loops_read_then_write():
    x, y, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            y[i] = x[i] * 2.0
        for i in x:
            x[i] = 0.0

    return Bad(loss, k, [x, y])


@bad(2, "y")
def stored_then_atomic_max():
    x, y, loss = _xy()

    @fs.kernel
    def k():
        for i in x:
            y[i] = x[i]
            fs.atomic_max(y[i], 0.5)

    return Bad(loss, k, [x, y])


@bad(2, "m")
def atomic_max_then_atomic_min():
    x, _, loss = _xy()
    m = scalar("m")

    @fs.kernel
    def k():
        for i in x:
            fs.atomic_max(m[None], x[i])
            fs.atomic_min(m[None], x[i] * 0.5)

    return Bad(loss, k, [x, m])


@bad(2, "y")
def argument_offsets_collide():
    x, loss = put(vec("x")), scalar("loss")
    y = vec("y", 2 * N)

    @fs.kernel
    def k(a: int, b: int):
        for i in range(4):
            y[i + a] = x[i]
            y[i + b] = x[i] * 2.0

    return Bad(loss, lambda: k(1, 3), [x, y])


@bad(1, "xt")
def argument_time_slots_collide():
    xt, loss = put(fs.field(float, shape=(4, N), needs_grad=True, name="xt")), scalar("loss")

    @fs.kernel
    def step(t: int, s: int):
        for i in range(1, N):
            xt[s, i] = xt[t, i - 1] * 0.5

    return Bad(loss, lambda: step(2, 2), [xt])


@bad(2, "y")
def mixed_radix_digit_overflows_its_block():
    # `y[b * 2 + c]` with c in [0, 3): block b's last cell is block b + 1's first
    x, loss = put(vec("x")), scalar("loss")
    y = vec("y", 2 * N)

    @fs.kernel
    def k():
        for b in range(N // 3):
            for c in range(3):
                y[b * 2 + c] = x[c] * 2.0

    return Bad(loss, k, [x, y])
