"""Programs that break the global data access rules across launches, written as a user writes them.

Launches on one Tape, Python-scope writes, `grad_replaced` units and data-dependent indices; the
in-kernel patterns are in rules_cases_bad.py. Same `@bad(rule, field)` registry (rules_support).
"""
import numpy as np
from rules_support import Bad, N, bad, put, scalar, vec

import fieldsim as fs


def _xy():
    return put(vec("x")), put(vec("y")), scalar("loss")


# ------------------------------------------------------------- across kernels on a Tape
def _reader_writer(write_kind="store"):
    x, y, loss = _xy()

    @fs.kernel
    def read_x():
        for i in x:
            y[i] = x[i] * x[i]  # a linear read would be free on the Tape (gh-refused2)

    @fs.kernel
    def write_x():
        for i in x:
            x[i] = 0.5

    @fs.kernel
    def add_x():
        for i in x:
            x[i] += 0.5

    return x, y, loss, read_x, (write_x if write_kind == "store" else add_x)


@bad(1, "x")
def later_kernel_stores_what_earlier_read():
    x, y, loss, read_x, write_x = _reader_writer()
    return Bad(loss, write_x, [x, y], prefix=read_x)


@bad(1, "x")
def later_kernel_adds_to_what_earlier_read():
    x, y, loss, read_x, add_x = _reader_writer("add")
    return Bad(loss, add_x, [x, y], prefix=read_x)


@bad(1, "x")
def later_kernel_writes_one_read_element():
    x, y, loss = _xy()

    @fs.kernel
    def read_some():
        for i in range(3):
            y[i] = x[i] ** 2

    @fs.kernel
    def write_one(j: int):
        x[j] = 0.0

    return Bad(loss, lambda: write_one(2), [x, y], prefix=read_some)


def _time_stepper():
    xt, loss = put(fs.field(float, shape=(4, N), needs_grad=True, name="xt")), scalar("loss")

    @fs.kernel
    def step(t: int):
        for i in range(N):
            xt[t + 1, i] = fs.sin(xt[t, i])

    return xt, loss, step


@bad(1, "xt")
def time_step_launched_again():
    xt, loss, step = _time_stepper()

    def prefix():
        step(0)
        step(1)

    return Bad(loss, lambda: step(0), [xt], prefix=prefix)


@bad(1, "xt")
def time_steps_in_reverse_order():
    xt, loss, step = _time_stepper()
    return Bad(loss, lambda: step(0), [xt], prefix=lambda: step(1))


# ---------------------------------------------------------------------- Python scope
@bad(1, "x")
def python_setitem_after_a_kernel_read():
    x, y, loss, read_x, _ = _reader_writer()

    def offender():
        x[3] = 1.0

    return Bad(loss, offender, [x, y], prefix=read_x)


@bad(1, "x")
def fill_after_a_kernel_read():
    x, y, loss, read_x, _ = _reader_writer()
    return Bad(loss, lambda: x.fill(0.0), [x, y], prefix=read_x)


@bad(1, "x")
def from_numpy_after_a_kernel_read():
    x, y, loss, read_x, _ = _reader_writer()
    return Bad(loss, lambda: x.from_numpy(x.to_numpy() * 0 + 1.0), [x, y], prefix=read_x)


# ---------------------------------------------------------------- grad_replaced units
@bad(1, "x")
def kernel_writes_what_a_unit_read():
    x, y, loss, read_x, write_x = _reader_writer()

    @fs.ad.grad_replaced
    def unit():
        read_x()

    @fs.ad.grad_for(unit)
    def unit_grad():
        read_x.grad()

    return Bad(loss, write_x, [x, y], prefix=unit)


@bad(1, "x")
def unit_writes_what_a_kernel_read():
    x, y, loss, read_x, write_x = _reader_writer()

    @fs.ad.grad_replaced
    def unit():
        write_x()

    @fs.ad.grad_for(unit)
    def unit_grad():
        write_x.grad()

    return Bad(loss, unit, [x, y], prefix=read_x)


# ------------------------------------------------------------ data-dependent indices
def _index_field():
    idx = fs.field(fs.i32, shape=N, name="idx")
    idx.from_numpy(np.array([1, 0, 3, 2, 5, 4], dtype=np.int32))
    return idx


@bad(1, "x", undecided=True)
def gather_then_write():
    x, y, loss = _xy()
    idx = _index_field()

    @fs.kernel
    def k():
        for i in x:
            y[i] = x[idx[i]] ** 2
            x[i] = 0.5

    return Bad(loss, k, [x, y])


@bad(2, "y", undecided=True)
def scatter_plain_stores():
    x, y, loss = _xy()
    idx = _index_field()

    @fs.kernel
    def k():
        for i in x:
            y[idx[i]] = x[i]

    return Bad(loss, k, [x, y])


@bad(1, "x", undecided=True)
def later_kernel_writes_after_a_gather():
    x, y, loss = _xy()
    idx = _index_field()

    @fs.kernel
    def gather():
        for i in x:
            y[i] = x[idx[i]] ** 2

    @fs.kernel
    def write_one():
        x[0] = 0.5  # whether gather read x[0] depends on idx's values

    return Bad(loss, write_one, [x, y], prefix=gather)
