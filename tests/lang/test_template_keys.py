"""Template arguments key the compiled-kernel cache by value: a new list with other contents
never runs a kernel compiled for an old (dead) list whose id it reuses, and values of different
types that compare equal (1, 1.0, True) are compiled apart."""
import gc

import numpy as np

import fieldsim as fs


def test_lists_are_keyed_by_contents_not_id():
    out = fs.field(fs.i32, shape=3)

    @fs.kernel
    def put(vals: fs.template()):
        for i in fs.static(range(3)):
            out[i] = vals[i]

    wrong = 0
    for n in range(60):  # short-lived lists: CPython reuses their ids at once
        put([n, n + 1, n + 2])
        wrong += int(not np.array_equal(out.to_numpy(), [n, n + 1, n + 2]))
        gc.collect()
    assert wrong == 0
    before = len(put._cache)
    put([500, 501, 502])
    put([500, 501, 502])  # equal contents: one compile
    assert len(put._cache) == before + 1


def test_equal_values_of_different_types_compile_apart():
    out = fs.field(fs.f32, shape=1)

    @fs.kernel
    def half(v: fs.template()):
        out[0] = v / 2 if fs.static(isinstance(v, float)) else v // 2

    half(3)
    assert out[0] == 1
    half(3.0)
    assert out[0] == 1.5



def test_python_scope_vector_changed_in_place_recompiles():
    # Taichi issue #4389: a `fs.Vector` template argument changed in place between two launches
    # ran the kernel compiled for its old entries (keyed by identity), silently
    out = fs.field(fs.f32, shape=3)

    @fs.kernel
    def put(v: fs.template()):
        for i in fs.static(range(3)):
            out[i] = v[i]

    x = fs.Vector([0.0, 1.0, 2.0])
    put(x)
    assert out.to_numpy().tolist() == [0.0, 1.0, 2.0]
    x[0] = 3.0
    put(x)
    assert out.to_numpy().tolist() == [3.0, 1.0, 2.0]
    before = len(put._cache)
    put(fs.Vector([3.0, 1.0, 2.0]))  # equal entries, another object: no new compile
    assert len(put._cache) == before
    put(fs.Vector([3, 1, 2]))  # integer entries compile apart
    assert len(put._cache) == before + 1
