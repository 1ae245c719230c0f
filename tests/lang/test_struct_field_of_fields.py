"""`fs.StructField(field_dict, struct_methods, name)`, Taichi's own constructor: a struct field
over member fields the program already made and places itself (a brick editor from GitHub builds
`ti.StructField({'x': ti.Vector.field(2, float), 'l': ti.field(ti.i32)})` and places it under a
pointer node). It was an internal AttributeError ('dict' object has no attribute 'members')."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def _members():
    return {"x": fs.Vector.field(2, dtype=float, needs_grad=True),
            "m": fs.Matrix.field(2, 2, dtype=float),
            "l": fs.field(dtype=fs.i32)}


@pytest.mark.parametrize("args", [(), ({},), ({}, "bricks")])
def test_struct_field_over_existing_fields(args):
    members = _members()
    bricks = fs.StructField(members, *args)
    node = fs.root.pointer(fs.i, 8)
    node.place(bricks)
    fs.root.lazy_grad()
    assert bricks.get_member_field("x") is members["x"] and bricks.l is members["l"]
    assert bricks.shape == (8,)

    @fs.kernel
    def init():
        bricks[3] = fs.Struct({"x": fs.Vector([0.25, 0.5]), "m": fs.Matrix.identity(float, 2),
                               "l": 7})

    @fs.kernel
    def length(i: fs.i32) -> float:
        return (bricks[i].x * bricks[i].l).norm()

    init()
    assert members["l"][3] == 7 and np.allclose(members["x"][3].to_numpy(), [0.25, 0.5])
    assert np.allclose(bricks.m.to_numpy()[3], np.eye(2))
    assert length(3) == pytest.approx(7 * np.hypot(0.25, 0.5))
    assert bricks[3].l == 7 and bricks.x.grad is members["x"].grad
    node.deactivate_all()
    assert members["l"][3] == 0


def test_struct_methods_reach_python_scope_values():
    def area(self):
        return self.x[0] * self.x[1]

    members = _members()
    bricks = fs.StructField(members, {"area": area}, "bricks")
    fs.root.dense(fs.i, 2).place(bricks)
    members["x"][1] = [2.0, 3.0]
    assert bricks.stype(x=[2.0, 3.0]).area() == pytest.approx(6.0)


@pytest.mark.parametrize("bad, message", [({"x": 1.5}, "member 'x': expected a field"),
                                          ("not methods", "struct_methods must be a dict")])
def test_bad_arguments_are_named(bad, message):
    if isinstance(bad, dict):
        args = (bad,)
    else:
        args = ({"l": fs.field(fs.i32)}, bad)
    with pytest.raises(TypeError, match=message):
        fs.StructField(*args)
