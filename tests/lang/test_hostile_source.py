"""Kernel source that Python accepts but no kernel can compile gives a located
FieldsimSyntaxError, never a raw internal exception: a constant no float can hold, an expression
nested deeper than the compiler's recursion allows."""
import importlib.util

import pytest

import fieldsim as fs


def _load(tmp_path, name, body):
    path = tmp_path / f"{name}.py"
    path.write_text(f"x = None\n\ndef {name}():\n    x[0] = {body}\n")
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod, str(path)


def test_huge_constant(tmp_path):
    mod, path = _load(tmp_path, "huge", "10**400")
    mod.x = fs.field(fs.f32, shape=1)
    with pytest.raises(fs.FieldsimSyntaxError, match="too large") as e:
        fs.kernel(mod.huge)()
    assert path in str(e.value) and "line 4" in str(e.value)


def test_deep_expression(tmp_path):
    mod, path = _load(tmp_path, "deep", "+".join(["x[1]"] * 900))
    mod.x = fs.field(fs.f32, shape=2)
    with pytest.raises(fs.FieldsimSyntaxError, match="nested too deeply") as e:
        fs.kernel(mod.deep)()
    assert path in str(e.value)
    mod.x[1] = 1.0

    @fs.kernel
    def still_works():
        mod.x[0] = mod.x[1] * 2

    still_works()
    assert mod.x[0] == 2.0
