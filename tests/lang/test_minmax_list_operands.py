"""`min`/`max` (Python's and fs.min/fs.max) in a kernel take a list on one side of a vector, as
Taichi makes a vector of it (`min(max(i + d, 0), [N - 1, N - 1])` clamps a grid index)."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu)


def test_python_min_max_clamp_with_a_list():
    out = fs.Vector.field(2, fs.i32, 5)

    @fs.kernel
    def clamp():
        for i in range(5):
            d = fs.Vector([i - 2, i + 1])
            out[i] = min(max(d, 0), [2, 3])

    clamp()
    i = np.arange(5)
    expected = np.minimum(np.maximum(np.stack([i - 2, i + 1], 1), 0), [2, 3])
    np.testing.assert_array_equal(out.to_numpy(), expected)


def test_fs_max_min_with_a_list_first():
    out = fs.Vector.field(3, fs.f32, 2)

    @fs.kernel
    def fold():
        out[0] = fs.max([0.5, 2, -1], fs.Vector([1.0, 1.0, 1.0]))
        out[1] = fs.min((0.25, 3.0, -2.0), fs.Vector([1.0, 1.0, 1.0]), [0.0, 2.0, 5.0])

    fold()
    np.testing.assert_array_equal(out.to_numpy(), [[1.0, 2.0, 1.0], [0.0, 1.0, -2.0]])
