"""A Python TypeError met while a kernel compiles (an operator on a whole field, as a notebook's
`half = seed_range / 2` for a 0-D field) is a TaichiTypeError, as in Taichi 1.7.4, and stays a
FieldsimSyntaxError located at the expression."""
import pytest

import fieldsim as fs


@pytest.mark.parametrize("which", ["div", "add", "rsub", "seq"])
def test_an_operator_on_a_whole_field_is_a_taichi_type_error(which):
    x = fs.field(fs.f32, shape=())
    v = fs.Vector.field(2, fs.f32, shape=4)
    out = fs.field(fs.f32, shape=())

    @fs.kernel
    def k():
        if fs.static(which == "div"):
            out[None] = x / 2
        elif fs.static(which == "add"):
            out[None] = x + 1
        elif fs.static(which == "rsub"):
            out[None] = (1 - v)[0]
        else:
            out[None] = ([1, 2] * x)[0]

    with pytest.raises(fs.TaichiTypeError) as e:
        k()
    assert isinstance(e.value, fs.FieldsimSyntaxError) and isinstance(e.value, TypeError)
    assert "unsupported operand" in str(e.value) or "can't multiply" in str(e.value)
    assert __file__ in str(e.value)


def test_other_python_errors_keep_their_class():
    x = fs.field(fs.f32, shape=3)

    @fs.kernel
    def k():
        x[0] = {"a": 1}["b"]

    with pytest.raises(fs.FieldsimSyntaxError) as e:
        k()
    assert not isinstance(e.value, TypeError) and "KeyError" in str(e.value)
