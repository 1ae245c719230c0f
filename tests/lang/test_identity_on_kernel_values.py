"""`is` / `is not` in a kernel: between Python objects (template arguments, captured names,
fields) it is Python's and decides at compile time; on a run-time kernel value it is refused
at the line, where reading it as `==` would silently change what the program says."""
import pytest

import fieldsim as fs


def test_python_objects_compare_by_identity():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=())
    limit = 7

    @fs.func
    def pick(a: fs.template()):
        r = 1
        if fs.static(a is None):
            r = 2
        return r

    @fs.kernel
    def k(dt: fs.template()):
        s = pick(None) * 10 + pick(3)
        if fs.static(dt is fs.f32 and out is not None and limit is not None):
            s += 100
        out[None] = s

    k(fs.f32)
    assert out[None] == 121
    k(fs.i32)
    assert out[None] == 21


def _refused(k, word, line_text):
    with pytest.raises(fs.FieldsimSyntaxError) as err:
        k(0)
    msg = str(err.value)
    assert f'Operator "{word}" in Taichi scope is not supported' in msg
    assert __file__ in msg and line_text in msg


def test_scalar_value_is_refused_at_its_line():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=())

    @fs.kernel
    def k(n: fs.i32):
        a = n + 1
        if a is n:  # would be `==` if read as a comparison
            out[None] = 1

    _refused(k, "is", "if a is n:")
    assert out[None] == 0


def test_vector_value_is_refused_at_its_line():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=())

    @fs.kernel
    def k(n: fs.i32):
        v = fs.Vector([n, n + 1])
        if v is not None:
            out[None] = 1

    _refused(k, "is not", "if v is not None:")
