"""The error paths of the frontend's assignment targets, for loops, fs.static loops, func returns,
attributes and calls (issue #10 split these functions): each raises a FieldsimError subclass with
its own message, naming this file and the offending line."""
import os

import pytest

import fieldsim as fs

THIS_FILE = os.path.basename(__file__)


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu)


def _raises(kernel, err_type, fragment, *args):
    with pytest.raises(err_type) as info:
        kernel(*args)
    msg = str(info.value)
    assert fragment in msg, msg
    assert THIS_FILE in msg, msg
    assert "Traceback" not in msg, msg


def test_assigning_to_a_loop_index():
    @fs.kernel
    def k():
        for i in range(3):
            i = 1  # noqa: PLW2901
    _raises(k, fs.FieldsimSyntaxError, "it is a loop index or constant")


def test_assigning_through_a_repeated_swizzle():
    @fs.kernel
    def k():
        v = fs.Vector([1.0, 2.0])
        v.xx = fs.Vector([3.0, 4.0])
    _raises(k, fs.FieldsimSyntaxError, "repeats a component")


def test_assigning_to_a_call_result():
    @fs.func
    def f():
        return 1
    @fs.kernel
    def k():
        f().x = 1
    _raises(k, fs.FieldsimSyntaxError, "cannot assign to this expression")


def test_a_scalar_variable_rejects_a_vector():
    @fs.kernel
    def k():
        for _ in range(1):  # a loop's locals are variables (a kernel's top-level ones are not)
            a = 1.0
            a = fs.Vector([1.0, 2.0])  # noqa: F841
    _raises(k, fs.FieldsimTypeError, "to the scalar variable 'a'")


def test_a_vector_variable_rejects_another_shape():
    @fs.kernel
    def k():
        for _ in range(1):
            v = fs.Vector([1.0, 2.0])
            v = fs.Vector([1.0, 2.0, 3.0])  # noqa: F841
    _raises(k, fs.FieldsimTypeError, "to 'v', a vector of shape (2,)")


def test_a_kernel_top_level_variable_is_named_as_a_variable():
    # A kernel's top-level variables live in hidden fields; a bad store names the variable, not
    # the hidden field's internal name ('k.r'), which the user never made.
    @fs.kernel
    def k():
        r = 3.0
        r *= fs.math.vec2([-1, 1])
    _raises(k, fs.FieldsimTypeError, "cannot assign a vector of shape (2,) to the scalar variable 'r'")

    @fs.kernel
    def k2():
        v = fs.Vector([1.0, 2.0])
        v = fs.Vector([1.0, 2.0, 3.0])  # noqa: F841
    _raises(k2, fs.FieldsimTypeError, "to 'v', a vector of shape (2,)")


def test_loop_names_must_match_the_dimensions():
    x = fs.field(fs.f32, shape=(2, 3))
    @fs.kernel
    def k():
        for i in x:
            x[i, 0] = 1.0
    _raises(k, fs.FieldsimSyntaxError, "1 index name(s) but iterates 2 dimension(s)")


def test_ndrange_loop_names_must_match_the_dimensions():
    @fs.kernel
    def k():
        for i in fs.ndrange(2, 3):
            pass
    _raises(k, fs.FieldsimSyntaxError, "not equal to the dimension of the ndrange")


def test_a_stepped_range_needs_a_static_loop():
    @fs.kernel
    def k():
        for i in range(0, 6, 2):
            pass
    _raises(k, fs.FieldsimSyntaxError, "range() with a step")


def test_static_loop_over_a_field():
    x = fs.field(fs.f32, shape=3)
    @fs.kernel
    def k():
        for i in fs.static(x):
            pass
    _raises(k, fs.FieldsimSyntaxError, "cannot unroll a loop over a field")


def test_static_loop_item_that_does_not_unpack():
    @fs.kernel
    def k():
        for a, b in fs.static([(1, 2, 3)]):
            pass
    _raises(k, fs.FieldsimSyntaxError, "cannot unpack the loop item")


def test_static_loop_break_and_tuple_targets_unroll():
    """A static loop binds tuple items name by name and stops unrolling at a static break."""
    out = fs.field(fs.i32, shape=())
    @fs.kernel
    def k():
        for a, b in fs.static([(1, 10), (2, 20), (3, 30)]):
            if fs.static(a == 3):
                break
            out[None] += a * b
    k()
    assert out[None] == 1 * 10 + 2 * 20


def test_func_returns_of_different_kinds():
    @fs.func
    def f(c: fs.i32):
        if c > 0:
            return fs.Vector([1.0, 2.0])
        return 1.0
    @fs.kernel
    def k(c: fs.i32) -> fs.f32:
        return f(c)[0]
    _raises(k, fs.FieldsimTypeError, "must return the same kind of value", 1)


def test_vector_field_swizzle_past_its_end():
    x = fs.Vector.field(2, fs.f32, shape=3)
    @fs.kernel
    def k() -> fs.f32:
        return x[0].z
    _raises(k, fs.FieldsimTypeError, "reaches past the end")


def test_unknown_matrix_attribute():
    @fs.kernel
    def k():
        v = fs.Vector([1.0, 2.0])
        v.frobnicate()
    _raises(k, fs.FieldsimTypeError, "has no attribute or method 'frobnicate'")


def test_a_kernel_calling_a_kernel():
    @fs.kernel
    def inner():
        pass
    @fs.kernel
    def k():
        inner()
    _raises(k, fs.FieldsimSyntaxError, "a kernel cannot call another kernel")


def test_field_fill_takes_one_value():
    x = fs.field(fs.f32, shape=3)
    @fs.kernel
    def k():
        x.fill(1.0, 2.0)
    _raises(k, fs.FieldsimTypeError, "field.fill takes one value")


def test_str_format_with_an_alignment_spec_is_python_formatting():
    """A constant `.format` with a spec Taichi lacks falls back to Python's str.format."""
    out = fs.field(fs.i32, shape=())
    @fs.kernel
    def k():
        out[None] = fs.static(len("{:>4}".format(7)))
    k()
    assert out[None] == 4
