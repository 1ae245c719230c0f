"""`fs.lang.ops.logical_not` (Taichi's `ti.lang.ops.logical_not`): 1 where the value is zero."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def test_python_scope_scalars_and_vectors():
    assert fs.lang.ops.logical_not(0) == 1
    assert fs.lang.ops.logical_not(-4) == 0
    v = fs.lang.ops.logical_not(fs.Vector([0, 7, 0]))
    assert v.to_numpy().tolist() == [1, 0, 1]
    m = fs.lang.ops.logical_not(fs.Matrix([[0.0, 0.5], [2.0, 0.0]]))
    assert m.to_numpy().tolist() == [[1, 0], [0, 1]]


def test_kernel_scope_matches_not():
    out = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k(a: fs.i32, f: fs.f32):
        out[0] = fs.lang.ops.logical_not(a)
        out[1] = fs.lang.ops.logical_not(f)
        w = fs.lang.ops.logical_not(fs.Vector([a, 0]))
        out[2] = w[0]
        out[3] = w[1]

    k(0, 1.5)
    assert out.to_numpy().tolist() == [1, 0, 1, 1]
    k(3, 0.0)
    assert out.to_numpy().tolist() == [0, 1, 0, 1]
    assert np.all(out.to_numpy() >= 0)
