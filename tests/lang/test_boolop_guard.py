"""An `and`/`or` operand that only loads and computes runs only where the operands before it do
not decide the result (as Taichi evaluates such a lazy operand), so a guard such as
`i == 0 or x[i - 1] > 0` neither loads outside the field nor is reported out of range (with
`debug=True`, or by a Tape's index check); operands with effects still always run."""
import numpy as np
import pytest

import fieldsim as fs


def _field():
    fs.init(arch=fs.cpu, debug=True)
    x = fs.field(fs.f32, shape=4)
    x.from_numpy(__import__("numpy").array([1.0, -2.0, 3.0, 4.0], "float32"))
    return x


def test_guarded_neighbour_loads_are_not_out_of_range():
    x = _field()

    @fs.kernel
    def left_or(i: int) -> int:
        return 1 if i == 0 or x[i - 1] > 0 else 0

    @fs.kernel
    def left_and(i: int) -> int:
        r = 0
        if i != 0 and x[i - 1] > 0:
            r = 1
        return r

    @fs.kernel
    def nested(i: int) -> int:  # GeoTaichi's `I[k] == begin or (I[k] < end - 1 and a[I+o] < a[I-o])`
        r = 0
        if i == 0 or (i < 3 and fs.abs(x[i + 1]) < fs.abs(x[i - 1])):
            r = 1
        return r

    assert [left_or(i) for i in range(4)] == [1, 1, 0, 1]
    assert [left_and(i) for i in range(4)] == [0, 1, 0, 1]
    assert [nested(i) for i in range(4)] == [1, 0, 0, 0]


def test_undecided_operand_is_still_checked():
    x = _field()

    @fs.kernel
    def right_needed(i: int) -> int:
        return 1 if i == 5 or x[i - 1] > 0 else 0

    @fs.kernel
    def bitwise(i: int) -> int:
        return (i == 0) | (x[i - 1] > 0)

    for k in (right_needed, bitwise):
        with pytest.raises(IndexError, match="out of range for field"):
            k(0)


def test_operands_with_effects_always_run():
    fs.init(arch=fs.cpu, debug=True)
    c = fs.field(fs.i32, shape=())

    @fs.kernel
    def k(i: int) -> int:
        r = 0
        if i == 0 or fs.atomic_add(c[None], 1) > 5:
            r = 1
        if i == 1 and fs.atomic_add(c[None], 10) > 5:
            r += 2
        return r

    assert k(0) == 1 and c[None] == 11


def test_guarded_load_in_a_taped_kernel_differentiates():
    fs.init(arch=fs.cpu)
    vals = np.array([1.0, -2.0, 3.0, 0.5, -1.0, 2.0])
    x = fs.field(fs.f64, shape=len(vals), needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)

    @fs.kernel
    def k():
        for i in range(len(vals)):
            if i == 0 or x[i - 1] > 0.0:  # was refused: "reads x with index 0 taking -1..4"
                loss[None] += x[i] * x[i] * x[i]

    x.from_numpy(vals)
    with fs.Tape(loss=loss):
        k()
    kept = np.array([True] + list(vals[:-1] > 0))
    assert loss[None] == pytest.approx(float((vals[kept] ** 3).sum()))
    np.testing.assert_allclose(x.grad.to_numpy(), np.where(kept, 3 * vals ** 2, 0.0))
