"""A runtime `a if c else b` whose sides have effects runs both sides, as Taichi 1.7.4 does
(it lowers the expression to a select); sides that only load stay guarded."""
import numpy as np

import fieldsim as ti


def test_func_stores_in_both_sides_of_a_conditional_expression_run():
    c = ti.field(ti.i64, shape=2)

    @ti.func
    def side(v: ti.i32) -> ti.i32:
        c[0] += v
        return v

    @ti.kernel
    def k():
        for i in range(6):
            c[1] += side(11) if i % 3 == 0 else side(13)

    k()
    # every iteration adds 11 + 13 to c[0]; the value taken is 11 for i = 0, 3 and 13 otherwise
    assert c.to_numpy().tolist() == [6 * 24, 2 * 11 + 4 * 13]


def test_atomic_sides_both_run_and_the_value_is_the_chosen_one():
    c = ti.field(ti.i32, shape=3)

    @ti.kernel
    def k() -> ti.i32:
        s = 0
        for i in range(5):
            s += ti.atomic_add(c[0], 1) if i % 2 == 0 else ti.atomic_add(c[1], 10)
        return s

    # both atomics run in each of the 5 iterations; the old values taken: c[0] at i = 0, 2, 4
    # (0, 2, 4) and c[1] at i = 1, 3 (10, 30)
    assert k() == 0 + 2 + 4 + 10 + 30
    assert c.to_numpy().tolist() == [5, 50, 0]


def test_load_only_sides_stay_guarded():
    p = ti.field(ti.f32, shape=4)
    p.from_numpy(np.array([1.0, 2.0, 3.0, 4.0], dtype=np.float32))
    out = ti.field(ti.f32, shape=4)

    @ti.kernel
    def k():
        for i in range(4):
            out[i] = p[i - 1] if i > 0 else -1.0

    k()
    assert out.to_numpy().tolist() == [-1.0, 1.0, 2.0, 3.0]
