"""A debug-mode out-of-range index in a kernel names the kernel, the index and the field or
ndarray, and carries Taichi's words for it ("Out of bound access"), which programs match."""
import numpy as np
import pytest

import fieldsim as fs


def test_field_and_ndarray_bounds_errors_carry_taichis_words():
    fs.init(arch=fs.cpu, debug=True)
    grid = fs.field(fs.f32, shape=3)

    @fs.kernel
    def read_field(i: fs.i32) -> fs.f32:
        return grid[i]

    @fs.kernel
    def read_array(a: fs.types.ndarray(), i: fs.i32) -> fs.f32:
        return a[i]

    assert read_field(2) == 0.0
    with pytest.raises(AssertionError, match="Out of bound access") as err:
        read_field(3)
    assert "read_field" in str(err.value) and "'grid'" in str(err.value)
    with pytest.raises(AssertionError, match="Out of bound access: index -1 is out of range"):
        read_array(np.zeros(4, np.float32), -1)
