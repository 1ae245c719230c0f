"""Python-scope vector comparisons give NumPy bools, as Taichi 1.7.4's do."""
import numpy as np

import fieldsim as fs


def test_comparisons_print_as_bools_and_combine_as_numpy_bools():
    a, b = fs.Vector([1, 2, 3]), fs.Vector([1.0, 0.5, 3])
    eq = a == b
    assert str(eq) == "[ True False  True]"
    assert eq.to_numpy().dtype == np.bool_
    assert str(~eq) == "[False  True False]"  # logical not (was -2/-1 from an int32 0/1)
    assert ((a == b) * 2).to_list() == [2, 0, 2]
    assert (a < b).any() == False and (a <= b).any() == True and (a >= b).all() == True
    # as Taichi 1.7.4: a false result is NumPy's False (`repr` np.False_), a true one Python's
    assert type((a < b).any()) is np.bool_ and str((a < b).any()) == "False"
    assert (a <= b).any() is True and -(a >= b).all() == -1
    assert str(fs.Matrix([[4, 0.5], [-2.5, 2]]) != 2) == "[[ True  True]\n [ True False]]"


def test_a_comparison_vector_still_feeds_kernels_and_fields():
    fs.init(arch=fs.cpu)
    d = fs.Vector([1, 2, 3]) == fs.Vector([1.0, 0.5, 3])
    out = fs.field(fs.i32, shape=3)
    v = fs.Vector.field(3, fs.i32, shape=())

    @fs.kernel
    def k():
        for i in range(3):
            out[i] = d[i] * 10 + 1

    k()
    v[None] = d
    assert out.to_numpy().tolist() == [11, 1, 11]
    assert v[None].to_list() == [1, 0, 1]
