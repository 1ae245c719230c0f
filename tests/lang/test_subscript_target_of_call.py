"""An assignment target `f(...)[i] = v` whose base is a call returning a field.

Taichi evaluates the base (`getattr(self, "b")[i] = v`, a method returning a field) and
stores into the element; fieldsim refused it ("cannot assign to this expression (Call)").
"""
import numpy as np
import pytest

import fieldsim as fs


def test_store_through_a_call_returning_a_field():
    fs.init(arch=fs.cpu)

    @fs.data_oriented
    class Holder:
        def __init__(self):
            self.a = fs.field(float, 5)
            self.b = fs.field(float, 5)
            self.first = "a"

        def pick(self, name):
            return getattr(self, name)

        @fs.kernel
        def fill(self):
            for i in range(5):
                getattr(self, self.first)[i] = i * 2.0
                self.pick("b")[i] = -i
                self.pick("b")[i] += 0.5

    h = Holder()
    h.fill()
    i = np.arange(5)
    np.testing.assert_array_equal(h.a.to_numpy(), 2.0 * i)
    np.testing.assert_array_equal(h.b.to_numpy(), 0.5 - i)


def test_store_into_a_runtime_value_call_is_still_refused():
    fs.init(arch=fs.cpu)
    out = fs.field(float, 2)

    @fs.kernel
    def k():
        fs.Vector([1.0, 2.0]).normalized()[0] = 3.0
        out[0] = 1.0

    with pytest.raises(fs.FieldsimSyntaxError, match="cannot assign to this expression"):
        k()
