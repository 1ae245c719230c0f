"""A vector/matrix slice with a runtime bound is refused at its line, in fieldsim's words and
Taichi's ("does not support variables in slice"), so code matching either message works."""
import pytest

import fieldsim as fs


def test_runtime_slice_bound_is_refused_with_both_wordings():
    fs.init(arch=fs.cpu)

    @fs.kernel
    def head(n: fs.i32) -> fs.i32:
        v = fs.Vector([3, 1, 4, 1, 5])
        w = v[:n]
        return w[0]

    with pytest.raises(fs.FieldsimSyntaxError, match="compile-time bounds") as err:
        head(2)
    assert "does not support variables in slice" in str(err.value)
    assert "w = v[:n]" in str(err.value)
