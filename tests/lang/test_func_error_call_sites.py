"""A compile error located inside a @func also names the user's line that called it (each level
of a call chain, innermost first), as Taichi's traceback does: with a func shared by several
kernels, the func's line alone did not say which call was wrong."""
import pytest

import fieldsim as fs


def _line_of(marker: str) -> int:
    with open(__file__) as source:
        return next(n for n, text in enumerate(source, 1) if marker in text)


def test_an_error_inside_nested_funcs_names_each_call_site():
    fs.init(arch=fs.cpu)

    @fs.func
    def inner(n):
        return fs.math.cross(fs.Vector([1.0, 0.0, 0.0]), n)  # where: inner

    @fs.func
    def outer(m):
        return inner(m)  # where: outer's call

    @fs.kernel
    def k() -> fs.f32:
        v = outer(fs.Matrix.identity(float, 3))  # where: kernel's call
        return v[0]

    with pytest.raises(fs.FieldsimTypeError) as info:
        k()
    text = str(info.value)
    lines = [f'line {_line_of(m)}' for m in ("# where: inner", "# where: outer's call",
                                             "# where: kernel's call")]
    positions = [text.index(line) for line in lines]
    assert positions == sorted(positions), text  # the error's line first, then the callers
    assert text.count("called from") == 2
    assert "rhs for cross is not a vector" in text


def test_an_error_on_the_call_line_itself_is_not_repeated():
    fs.init(arch=fs.cpu)

    @fs.func
    def two(a, b):
        return a + b

    @fs.kernel
    def k() -> fs.f32:
        return two(1.0)  # a missing argument: located at this call already

    with pytest.raises(fs.FieldsimError) as info:
        k()
    assert "called from" not in str(info.value)
