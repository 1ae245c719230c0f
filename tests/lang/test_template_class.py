"""`ti.template` is a class in Taichi 1.7 (`ti.types.annotations.Template`): libraries that
inspect kernel annotations test `isinstance(annotation, ti.template)`, which raised TypeError
here while `fs.template` was a function."""
import numpy as np

import fieldsim as fs


def test_isinstance_of_the_template_annotation():
    ann = fs.template()
    assert isinstance(ann, fs.template)
    assert isinstance(ann, fs.types.template)
    assert not isinstance(fs.f32, fs.template)
    assert fs.types.annotations.Template is fs.template


def test_call_forms_and_the_bare_class_still_bind_at_compile_time():
    fs.init(arch=fs.cpu)
    a = fs.field(fs.i32, shape=3)
    b = fs.field(fs.i32, shape=3)

    @fs.kernel
    def fill(f: fs.template, v: fs.i32):
        for i in f:
            f[i] = v

    @fs.kernel
    def add(f: fs.template(tensor=None, dim=None), g: fs.template()):
        for i in f:
            f[i] += g[i]

    fill(a, 2)
    fill(b, 5)
    add(a, b)
    np.testing.assert_array_equal(a.to_numpy(), [7, 7, 7])
