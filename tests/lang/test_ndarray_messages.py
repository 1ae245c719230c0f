"""Kernel messages about an ndarray argument call it an ndarray, not a field (a notebook's
`operand.unfold(...)` on a `ti.types.ndarray()` argument was reported as "field 'operand'")."""
import numpy as np
import pytest

import fieldsim as fs


def test_an_unknown_attribute_of_an_ndarray_argument_names_an_ndarray():
    @fs.kernel
    def k(operand: fs.types.ndarray(ndim=2)):
        operand.unfold(0, 5, 1)

    for arg in (np.zeros((3, 3), np.float32), fs.ndarray(fs.f32, (3, 3))):
        with pytest.raises(fs.FieldsimNameError, match="ndarray 'operand'.*no attribute 'unfold'"):
            k(arg)


def test_a_field_is_still_called_a_field():
    x = fs.field(fs.f32, shape=3, name="xs")

    @fs.kernel
    def k():
        x.unfold(0, 5, 1)

    with pytest.raises(fs.FieldsimNameError, match="field 'xs'.*no attribute 'unfold'"):
        k()
