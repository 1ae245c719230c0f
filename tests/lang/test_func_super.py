"""`super()` without arguments inside a `@ti.func` method of a data-oriented subclass.

Python's zero-argument form needs the method's `__class__` cell, which the frontend now
supplies (Taichi 1.7.4 raises `RuntimeError: super(): __class__ cell not found`; fieldsim
raised the same from deep inside its frontend).
"""
import numpy as np

import fieldsim as fs


def test_zero_arg_super_calls_the_base_func():
    fs.init(arch=fs.cpu)

    @fs.data_oriented
    class Base:
        def __init__(self, k):
            self.k = k
            self.x = fs.field(float, 4)

        @fs.func
        def force(self, i):
            return self.k * i

        @fs.kernel
        def step(self):
            for i in self.x:
                self.x[i] += self.force(i)

    @fs.data_oriented
    class Shifted(Base):
        @fs.func
        def force(self, i):
            return super().force(i) + 0.5

    base, sub = Base(2.0), Shifted(3.0)
    base.step()
    sub.step()
    sub.step()
    i = np.arange(4)
    np.testing.assert_allclose(base.x.to_numpy(), 2.0 * i)
    np.testing.assert_allclose(sub.x.to_numpy(), 2 * (3.0 * i + 0.5))
