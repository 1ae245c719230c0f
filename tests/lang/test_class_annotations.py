"""A local annotated with the class `fs.Vector` / `fs.Matrix` (pre-1.0 Taichi course programs:
`pos: ti.Vector = origin`): a vector/matrix value keeps its own type; another value is refused
at the user's line. Taichi 1.7.4 fails inside its own frontend on both (a TypeError), so these
tests are fieldsim's behaviour."""
import numpy as np
import pytest

import fieldsim as fs

pytestmark = pytest.mark.fieldsim_specific


def test_vector_and_matrix_class_annotations_keep_the_value():
    out = fs.Vector.field(3, fs.f32, shape=())

    @fs.func
    def shifted(p, s: fs.f32) -> fs.Vector:
        q: fs.Vector = p
        q += fs.Vector([s, s, s])
        return q

    @fs.kernel
    def k():
        r: fs.Matrix = fs.Matrix([[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
        v: fs.Vector = fs.Vector([1.0, 2.0, 3.0])
        out[None] = shifted(r @ v, 0.5)

    k()
    np.testing.assert_allclose(out[None].to_numpy(), [-1.5, 1.5, 3.5])


def test_class_annotation_of_a_scalar_is_refused_at_the_line():
    out = fs.field(fs.f32, shape=())

    @fs.kernel
    def k():
        d: fs.Vector = 1.5
        out[None] = d

    with pytest.raises(fs.FieldsimTypeError, match=r"'d' is annotated ti.Vector.*not a vector") as e:
        k()
    assert "test_class_annotations.py" in str(e.value) and "d: fs.Vector = 1.5" in str(e.value)


def test_matrix_value_under_vector_class_is_refused():
    out = fs.field(fs.f32, shape=())

    @fs.kernel
    def k():
        m: fs.Vector = fs.Matrix([[1.0, 0.0], [0.0, 1.0]])
        out[None] = m[0, 0]

    with pytest.raises(fs.FieldsimTypeError, match="not a vector"):
        k()


def test_a_non_type_annotation_is_refused():
    out = fs.field(fs.f32, shape=())

    @fs.kernel
    def k():
        a: list = 1.0
        out[None] = a

    with pytest.raises(fs.FieldsimTypeError, match="'a' is annotated .*list.*not a Taichi type"):
        k()
