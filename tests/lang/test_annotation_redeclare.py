"""An annotated assignment to a variable that already exists keeps the variable's type: the
same type again is an assignment, another type is refused at the line, as in Taichi."""
import pytest

import fieldsim as fs


def test_same_type_again_assigns():
    fs.init(arch=fs.cpu)

    @fs.kernel
    def k(v: fs.f32) -> fs.f32:
        t: fs.f32 = 1.5
        t: fs.f32 = t * v
        return t

    assert k(4.0) == 6.0


def test_other_type_is_refused_naming_the_variable():
    fs.init(arch=fs.cpu)

    @fs.kernel
    def k() -> fs.i32:
        count: fs.i32 = 3
        count: fs.f64 = 0.5
        return 0

    with pytest.raises(fs.FieldsimCompilationError) as err:
        k()
    assert "count" in str(err.value)


def test_plain_declaration_then_other_annotation_is_refused():
    fs.init(arch=fs.cpu)

    @fs.kernel
    def k(n: fs.i32) -> fs.f32:
        acc = 0
        for i in range(n):
            acc: fs.f32 = acc + 0.5
        return acc

    with pytest.raises(fs.FieldsimCompilationError):
        k(3)
