"""Behaviour the snippets of Taichi's user documentation rely on: Python-scope printing of
matrices, fields and structs; shift result types; f64 kernel printing; FieldsBuilder trees."""
import numpy as np
import pytest

import fieldsim as fs


def test_python_scope_matrix_prints_as_numpy():
    v = fs.Vector([1.5, 2.0])
    m = fs.Matrix([[1, 2], [3, 4]])
    assert str(v) == str(np.array([1.5, 2.0])) == repr(v)
    assert str(m) == "[[1 2]\n [3 4]]"

    @fs.kernel
    def ret() -> fs.types.vector(3, fs.f32):
        return fs.Vector([0.5, 1.0, -2.0])

    assert str(ret()) == str(np.array([0.5, 1.0, -2.0], np.float32))


def test_print_field_shows_its_values():
    x = fs.field(fs.i32, shape=4)
    x.from_numpy(np.array([3, 1, 4, 1], np.int32))
    assert str(x) == "[3 1 4 1]"
    s = fs.Struct.field({"a": fs.i32, "v": fs.math.vec2}, shape=2)
    s[1].a = 5
    s[1].v = [0.5, 1.0]
    assert str(s[1]) == "{'a': 5, 'v': [0.5, 1.0]}"
    assert "'a': array([0, 5]" in str(s)


def test_struct_value_prints_as_dict():
    vec3 = fs.types.vector(3, float)
    sphere = fs.types.struct(center=vec3, radius=float)
    assert str(sphere(center=vec3(1, 2, 3), radius=0.5)) == \
        "{'center': [1.0, 2.0, 3.0], 'radius': 0.5}"


def test_shift_keeps_left_operand_type():
    out = fs.field(fs.i64, shape=5)

    @fs.kernel
    def k(n: fs.i32):
        out[0] = fs.u8(1) << 9  # u8: the bit leaves the byte
        out[1] = fs.u8(3) << n  # 0b110000000 -> 0b10000000
        out[2] = fs.i16(1) << 20
        out[3] = fs.u8(200) >> 1
        out[4] = fs.i64(1) << 40

    k(7)
    assert out.to_numpy().tolist() == [0, 128, 0, 100, 2 ** 40]


def test_f64_prints_twelve_decimals(capfd):
    @fs.kernel
    def k(a: fs.f64, b: fs.f32):
        print(a, b, fs.Vector([a, 1.0], fs.f64), f"{a:.3f}")

    k(1.0 / 3.0, 0.25)
    assert capfd.readouterr().out == \
        "0.333333333333 0.250000 [0.333333333333, 1.000000000000] 0.333\n"


def test_fields_builder_tree_and_destroy():
    @fs.kernel
    def inc(v: fs.template()):
        for I in fs.grouped(v):
            v[I] += 1

    fb = fs.FieldsBuilder()
    x = fs.field(fs.f32)
    y = fs.field(fs.i32)
    fb.dense(fs.ij, (2, 3)).place(x)
    fb.dense(fs.i, 4).place(y)
    tree = fb.finalize()
    inc(x)
    inc(y)
    assert x.shape == (2, 3) and x.to_numpy().sum() == 6
    assert y.to_numpy().tolist() == [1, 1, 1, 1]
    with pytest.raises(Exception):
        fb.dense(fs.i, 2)  # finalized
    tree.destroy()
    with pytest.raises(Exception, match="destroyed"):
        x.to_numpy()
    z = fs.field(fs.f32, shape=3)  # fs.root's fields are untouched by the tree
    inc(z)
    assert z.to_numpy().tolist() == [1, 1, 1]
