"""A field element passed to a `ti.template()` func parameter is the element itself.

Taichi passes `x[i]`, `v[i]`, `v[i][1]`, `cells[i]` (a struct field element), `cells[i].v` to a template parameter by
reference: `c += 10`, `c[1] = 7`, `c.m += w` and a struct method mutating `self` write the
field. fieldsim passed a copy, and the writes were silently lost.
"""
import numpy as np

import fieldsim as fs


def test_writes_through_template_parameters_reach_the_field():
    fs.init(arch=fs.cpu)

    @fs.dataclass
    class Cell:
        v: fs.math.vec2
        m: float

        @fs.func
        def add(self, w):
            self.m += w
            self.v += fs.math.vec2(w, -w)

    x = fs.field(float, 4)
    v = fs.Vector.field(2, float, 4)
    cells = Cell.field(shape=3)

    @fs.func
    def bump(c: fs.template()):
        c += 10.0

    @fs.func
    def set_and_bump(c: fs.template()):
        c[1] = 7.0
        c += 1.0

    @fs.func
    def grow(c: fs.template(), w):
        c.m += w
        c.add(2 * w)

    @fs.kernel
    def run():
        bump(x[1])
        bump(v[0][1])  # one component
        bump(cells[0].v)  # a member of a struct field element
        for i in range(2, 4):
            bump(x[i])
        set_and_bump(v[2])
        for i in range(3):
            grow(cells[i], i + 1.0)

    run()
    np.testing.assert_array_equal(x.to_numpy(), [0, 10, 10, 10])
    np.testing.assert_array_equal(v.to_numpy(), [[0, 10], [0, 0], [1, 8], [0, 0]])
    w = np.arange(1, 4, dtype=float)
    np.testing.assert_array_equal(cells.m.to_numpy(), 3 * w)
    np.testing.assert_array_equal(cells.v.to_numpy(), np.stack([2 * w, -2 * w], 1) + [[10, 10], [0, 0], [0, 0]])


def test_writes_through_template_parameters_reach_locals():
    # `bump(loc.m)`, `bump(loc.v)`, `bump(vec[1])` of kernel variables: Taichi aliases them too
    fs.init(arch=fs.cpu)

    @fs.dataclass
    class P:
        v: fs.math.vec2
        m: float

    out = fs.field(float, 3)

    @fs.func
    def bump(c: fs.template()):
        c += 1.0

    @fs.kernel
    def run():
        loc = P(v=fs.math.vec2(0.0), m=0.0)
        bump(loc.m)
        bump(loc.v)
        vec = fs.math.vec3(0.0)
        bump(vec[1])
        out[0] = loc.m
        out[1] = loc.v.sum()
        out[2] = vec.sum()

    run()
    np.testing.assert_array_equal(out.to_numpy(), [1.0, 2.0, 1.0])
