"""`fs.ndrange` bounds in kernels: integer values (literals, locals, field reads) run; a float
bound is refused, as in Taichi 1.7.4, with the user's line and the value's type (older Taichi
accepted `ti.ndrange(len, h + 1, len)` with float locals, as some voxel-challenge scenes do)."""
import numpy as np
import pytest

import fieldsim as fs


def test_integer_local_and_tuple_bounds():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=(6, 6))

    @fs.kernel
    def fill(n: fs.i32):
        m = n - 2
        for i, j in fs.ndrange((1, n), m):
            out[i, j] = i * 10 + j

    fill(5)
    expected = np.zeros((6, 6), np.int32)
    for i in range(1, 5):
        for j in range(3):
            expected[i, j] = i * 10 + j
    np.testing.assert_array_equal(out.to_numpy(), expected)


def test_float_bound_names_its_type_and_line():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=8)

    @fs.kernel
    def fill():
        length = 2.0
        for i, j in fs.ndrange(length, 3):
            out[i] = j

    with pytest.raises(fs.FieldsimTypeError, match=r"(?s)test_ndrange_bounds.py.*got a f32 value"):
        fill()


def test_an_ndrange_target_the_body_assigns_is_a_variable():
    # As in Taichi 1.7.4, an ndrange loop's targets are variables set from the loop counter:
    # `di = di - r // 2` shifts that iteration's value (a ring stencil's offsets) and leaves the
    # iteration alone; it was refused as an assignment to a loop index.
    fs.init(arch=fs.cpu)
    s = fs.field(fs.i32, shape=())

    @fs.func
    def ring(r: fs.template()) -> fs.i32:
        t = 0
        for di, dj in fs.ndrange(r, r):
            di = di - r // 2  # noqa: PLW2901
            t += di * di + dj
        return t

    @fs.kernel
    def top():
        for i, j in fs.ndrange(4, 4):
            i = i + 1  # noqa: PLW2901
            j *= 2  # noqa: PLW2901
            s[None] += i * 10 + j

    @fs.kernel
    def grouped():
        for I in fs.grouped(fs.ndrange(2, 2)):
            I = I + 1  # noqa: PLW2901
            s[None] += I[0] * 10 + I[1]

    @fs.kernel
    def in_func() -> fs.i32:
        return ring(3)

    top()
    assert s[None] == sum((i + 1) * 10 + 2 * j for i in range(4) for j in range(4))
    s[None] = 0
    grouped()
    assert s[None] == sum((i + 1) * 10 + j + 1 for i in range(2) for j in range(2))
    assert in_func() == sum((di - 1) ** 2 + dj for di in range(3) for dj in range(3))


def test_a_range_index_stays_unassignable():
    # a range-for index is not a variable (Taichi 1.7.4 fails on an internal assertion there)
    fs.init(arch=fs.cpu)

    @fs.kernel
    def k():
        for i in range(3):
            i = i + 1  # noqa: PLW2901
    with pytest.raises(fs.FieldsimSyntaxError, match="it is a loop index or constant"):
        k()
