"""`offset=` on a struct field was accepted and silently ignored: `s[-2]` was out of range and a
struct-for yielded 0..n-1. Taichi 1.7.4 refuses every struct field with an offset ("shape
cannot be None when offset is set"), so fieldsim refuses it too, naming the user's line."""
import pytest

import fieldsim as fs
from fieldsim.errors import FieldsimSyntaxError


def test_struct_field_offset_is_refused_at_the_users_line():
    fs.init(arch=fs.cpu)
    S = fs.types.struct(a=fs.f32, v=fs.math.vec3)
    with pytest.raises(FieldsimSyntaxError, match="offset=") as info:
        S.field(shape=3, offset=(-2,))
    assert "test_struct_field_offset.py" in str(info.value)
    with pytest.raises(FieldsimSyntaxError, match="struct field 'p'"):
        fs.Struct.field({"a": fs.f32}, shape=(2, 2), offset=(1, 1), name="p")


def test_struct_field_without_offset_still_works():
    fs.init(arch=fs.cpu)
    s = fs.types.struct(a=fs.f32).field(shape=3, offset=None)
    s[2].a = 1.5
    assert s[2].a == 1.5
