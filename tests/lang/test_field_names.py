"""Fields are called by the variable the user's code assigns them to (or their `name=`), in
repr, Python-scope errors, kernel errors, the access-rule checker and tape pictures."""
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def test_simple_and_tuple_assignment_and_explicit_name():
    x = fs.field(fs.f32, shape=3)
    a, (b, c) = fs.field(fs.f32, shape=1), (fs.Vector.field(2, fs.f32, shape=2),
                                            fs.Matrix.field(2, 2, fs.f32, shape=2))
    n = fs.field(fs.i32, shape=2, name="counts")
    assert repr(x) == "<fs.field 'x' shape=(3,) dtype=f32>"
    assert (a.ir_name, b.ir_name, c.ir_name, n.ir_name) == ("a", "b", "c", "counts")
    assert "'b'" in repr(b) and "'c'" in repr(c)


def test_attribute_annotated_struct_ndarray_and_type_field():
    class Sim:
        def __init__(self):
            self.pos = fs.Vector.field(2, fs.f32,
                                       shape=4)  # a call over two lines
            self.p = fs.Struct.field({"v": fs.types.vector(2, fs.f32), "m": fs.f32}, shape=3)

    s = Sim()
    vec3 = fs.types.vector(3, fs.f32)
    v: object = vec3.field(shape=2)
    arr = fs.ndarray(fs.f32, shape=3)
    assert s.pos.ir_name == "self.pos"
    assert s.p.ir_name == "self.p" and s.p.v.ir_name == "self.p.v"
    assert v.ir_name == "v" and arr.ir_name == "arr"


def test_unknown_target_falls_back_to_field_number():
    fields = [fs.field(fs.f32, shape=1) for _ in range(2)]
    helper = dict(f=fs.field(fs.f32, shape=1))  # nested in another call: not named after `helper`
    for f in [*fields, helper["f"]]:
        assert f.ir_name.startswith("field") and f.ir_name[5:].isdigit()


def test_grad_twin_and_python_scope_errors_use_the_name():
    temperature = fs.field(fs.f32, shape=3)
    assert temperature.grad.ir_name == "temperature.grad"
    with pytest.raises(IndexError, match="field 'temperature': index 7 is out of range"):
        temperature[7] = 1.0
    with pytest.raises(fs.FieldsimError, match=r"temperature\.grad has not been placed.*"
                                               r"needs_grad=True.*'temperature'"):
        temperature.grad.to_numpy()


def test_checker_and_tape_picture_use_the_name(tmp_path):
    heat, loss = fs.field(fs.f32, shape=4, needs_grad=True), fs.field(fs.f32, shape=(),
                                                                       needs_grad=True)

    @fs.kernel
    def total():
        for i in heat:
            loss[None] += heat[i] ** 2

    @fs.kernel
    def square():  # in place and nonlinear: refused in the kernel (a linear update is not)
        for i in heat:
            heat[i] = heat[i] * heat[i]

    with pytest.raises(fs.FieldsimError) as info:
        with fs.Tape(loss):
            total()
            square()
    msg = str(info.value)
    assert "on field 'heat'" in msg and "reads heat:" in msg and "field0" not in msg

    with fs.Tape(loss) as tape:
        total()
    text = tape.visualize(str(tmp_path / "tape.dot"))
    assert 'label="heat\\n4 f32"' in text and 'label="loss\\n0-D f32"' in text


def test_kernel_errors_use_the_name():
    velocity = fs.field(fs.f32, shape=(4, 4))

    @fs.kernel
    def bad():
        for i in range(4):
            velocity[i] = 1.0

    with pytest.raises(fs.FieldsimError, match="field 'velocity' has 2 dimension"):
        bad()


scalar = lambda: fs.field(dtype=fs.f32)  # DiffTaichi's factories
vec = lambda: fs.Vector.field(2, dtype=fs.f32)


def mat():
    return fs.Matrix.field(2, 2, dtype=fs.f32)


def test_fields_made_by_a_factory_take_the_callers_name():
    x, v = vec(), vec()
    loss = scalar()
    C = mat()

    class Sim:
        def __init__(self):
            self.positions = vec()

    s = Sim()
    fs.root.dense(fs.i, 4).place(x, v, C, s.positions)
    fs.root.place(loss)
    assert (x.ir_name, v.ir_name, loss.ir_name, C.ir_name) == ("x", "v", "loss", "C")
    assert s.positions.ir_name == "self.positions"
    unnamed = {"f": scalar()}  # nested in another expression: the numbered fallback
    assert unnamed["f"].ir_name.startswith("field")
