"""Python-scope results keep the entries' type, as Taichi 1.7.4's do."""
import numpy as np

import fieldsim as fs


def test_rounding_an_integer_vector_keeps_it_integer():
    assert str(fs.floor(fs.Vector([1, 2]))) == "[1 2]"
    assert str(fs.math.ceil(fs.math.ivec2(1, -2))) == "[ 1 -2]"
    assert fs.round(fs.Vector([1, 2])).to_numpy().dtype.kind == "i"
    assert str(fs.floor(fs.Vector([1.5, -2.5]))) == "[ 1. -3.]"
    assert fs.floor(3) == 3 and np.asarray(fs.floor(3)).dtype.kind == "i"
    assert fs.abs(-3) == 3 and type(fs.abs(-3)) is int


def test_reductions_stay_in_the_entries_type():
    v = fs.math.ivec2(5, -3)
    for r, want in ((v.dot(v), 34), (v.norm_sqr(), 34), (v.sum(), 2)):
        assert type(r) is np.int32 and r == want  # 25 + 9, 5 - 3
    t = fs.Matrix([[1.0, 2], [3, 4]], dt=fs.f32).trace()
    assert type(t) is np.float32 and t == 5.0
    assert type(fs.Matrix([[1, 2], [3, 4]]).trace()) is np.int64
    c = fs.Vector([1.5, 2]).cross(fs.Vector([1, 3]))  # 1.5 * 3 - 2 * 1
    assert type(c) is np.float64 and c == 2.5
    d = fs.Vector([1.5, 2]) @ fs.Vector([1, 3])
    assert type(d) is np.float64 and d == 7.5
    assert repr([fs.Matrix([[1.0, 0], [0, 2]]).trace()]) == "[np.float64(3.0)]"
