"""`to_dict()` of a Python-scope struct gives vector and matrix members as lists, as Taichi's."""
import fieldsim as fs


def test_to_dict_lists_vectors_and_matrices():
    fs.init(arch=fs.cpu)
    S = fs.types.struct(a=fs.f32, b=fs.math.vec2, c=fs.i32)
    d = S(a=2, b=fs.math.vec2(0.5), c=2.9).to_dict()
    assert d == {"a": 2.0, "b": [0.5, 0.5], "c": 2} and type(d["b"]) is list
    assert str(d) == "{'a': 2.0, 'b': [0.5, 0.5], 'c': 2}"  # was 'b': [0.5 0.5]
    N = fs.types.struct(s=S, m=fs.math.mat2)
    assert N(s=S(a=1), m=fs.math.mat2(1)).to_dict() == {
        "s": {"a": 1.0, "b": [0.0, 0.0], "c": 0}, "m": [[1.0, 1.0], [1.0, 1.0]]}
    f = S.field(shape=2)
    f[0].b = [1, 2]
    assert f[0].to_dict()["b"] == [1.0, 2.0] and type(f[0].to_dict()["b"]) is list
    assert fs.Struct(S(a=3, b=[1, 2])).b.to_list() == [1.0, 2.0]  # the copy keeps a vector
