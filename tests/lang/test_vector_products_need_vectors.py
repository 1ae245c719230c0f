"""dot/cross/outer_product of a matrix operand: refused at the user's line, as Taichi 1.7.4
refuses them, not read as a flat vector (a 3x3 matrix's first entries made a wrong cross)."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.errors import FieldsimTypeError


def _kernel_of(expr):
    out = fs.Vector.field(3, fs.f32, shape=())

    @fs.kernel
    def k():
        v = fs.Vector([1.0, 2.0, 3.0])
        m = fs.Matrix([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
        if fs.static(expr == "cross"):
            out[None] = fs.math.cross(v, m)
        elif fs.static(expr == "mcross"):
            out[None] = m.cross(v)
        elif fs.static(expr == "dot"):
            out[None][0] = v.dot(m)
        elif fs.static(expr == "tmdot"):
            out[None][0] = fs.math.dot(m, v)
        else:
            out[None][0] = m.outer_product(v)[0, 0]
    return k


@pytest.mark.parametrize("expr, side, what", [
    ("cross", "rhs", "cross"), ("mcross", "lhs", "cross"), ("dot", "rhs", "dot"),
    ("tmdot", "lhs", "dot"), ("outer", "lhs", "outer_product")])
def test_kernel_refuses_matrix_operand(expr, side, what):
    with pytest.raises(FieldsimTypeError, match=f"{side} for {what} is not a vector") as info:
        _kernel_of(expr)()
    assert "test_vector_products_need_vectors.py" in str(info.value)


def test_python_scope_refuses_matrix_operand():
    v = fs.Vector([1.0, 2.0, 3.0])
    m = fs.Matrix(np.eye(3))
    with pytest.raises(FieldsimTypeError, match="rhs for cross is not a vector") as info:
        v.cross(m)
    assert "test_vector_products_need_vectors.py" in str(info.value)
    with pytest.raises(FieldsimTypeError, match="rhs for dot is not a vector"):
        v.dot(m)
    with pytest.raises(FieldsimTypeError, match="lhs for outer_product is not a vector"):
        m.outer_product(v)


def test_vectors_still_multiply():
    out = fs.field(fs.f32, shape=5)

    @fs.kernel
    def k():
        a = fs.Vector([1.0, 2.0, 3.0])
        b = fs.Vector([4.0, -5.0, 0.5])
        c = a.cross(b)
        out[0] = c[0]
        out[1] = c[2]
        out[2] = a.dot(b)
        out[3] = a.outer_product(b)[2, 1]
        out[4] = fs.Vector([1.0, 2.0]).cross(fs.Vector([3.0, 4.0]))

    k()
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, -5.0, 0.5])
    c = np.cross(a, b)
    np.testing.assert_allclose(out.to_numpy(), [c[0], c[2], a @ b, a[2] * b[1], -2.0])
    v = fs.Vector([1.0, 2.0, 3.0])
    np.testing.assert_allclose(v.cross(fs.Vector(b)).to_numpy(), c)
    assert v.dot(fs.Vector(b)) == pytest.approx(a @ b)
