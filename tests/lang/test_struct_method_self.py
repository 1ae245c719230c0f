"""A struct method's `self` is the struct it is called on (a field element or a local), so
`self.member = v` in an `@fs.func` method writes it, as in Taichi; other func arguments stay
values. A method's `fs.template()` parameters alias the caller's variables, like a plain
func's. Expected values come from the same steps done in plain Python."""
import numpy as np

import fieldsim as fs

vec3 = fs.types.vector(3, fs.f32)


@fs.dataclass
class Box:
    lo: fs.i32
    hi: fs.i32

    @fs.func
    def grow(self, k):
        self.hi += k

    @fs.func
    def grow_and_read(self, k: fs.i32) -> fs.i32:
        self.hi += k
        return self.hi


@fs.dataclass
class Tri:
    tid: fs.i32
    box: Box
    p: vec3

    @fs.func
    def setup(self, i: fs.i32, v: vec3) -> bool:
        self.tid = i
        ok = False
        if v[0] > 0:
            self.box = Box(lo=i, hi=2 * i)
            self.p = v * 2
            ok = True
        return ok


@fs.func
def bump(b, k):
    b.hi += k  # a plain func's struct argument is a copy


def test_method_writes_the_field_element_it_is_called_on():
    tris = Tri.field(shape=4)
    enq = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k():
        for i in range(4):
            if tris[i].setup(i + 1, vec3(i - 1.5, 1.0, 2.0)):
                enq[i] = 1

    k()
    xs = [i - 1.5 for i in range(4)]
    assert tris.tid.to_numpy().tolist() == [1, 2, 3, 4]
    assert tris.box.lo.to_numpy().tolist() == [i + 1 if x > 0 else 0 for i, x in enumerate(xs)]
    assert tris.box.hi.to_numpy().tolist() == [2 * (i + 1) if x > 0 else 0
                                              for i, x in enumerate(xs)]
    want_p = np.array([[2 * x, 2.0, 4.0] if x > 0 else [0.0, 0.0, 0.0] for x in xs])
    np.testing.assert_allclose(tris.p.to_numpy(), want_p)
    assert enq.to_numpy().tolist() == [int(x > 0) for x in xs]


def test_method_writes_a_struct_local_but_plain_func_arguments_are_copies():
    boxes = Box.field(shape=2)
    out = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k():
        boxes[0].grow(5)
        out[0] = boxes[1].grow_and_read(7)
        loc = Box(lo=1, hi=2)
        loc.grow(10)
        out[1] = loc.hi
        bump(loc, 20)
        out[2] = loc.hi
        Box(lo=0, hi=1).grow(3)  # an rvalue: the method runs on a temporary

    k()
    assert boxes.hi.to_numpy().tolist() == [5, 7]
    assert out.to_numpy().tolist()[:3] == [7, 12, 12]


def test_template_parameter_of_a_method_aliases_the_caller_variable():
    @fs.data_oriented
    class Counter:
        @fs.func
        def inc(self, a: fs.template()):
            a += 1

        @fs.func
        def add(self, q, a: fs.template()):
            a += q

        @fs.kernel
        def run(self) -> fs.i32:
            x = 1
            y = 10
            self.inc(x)
            self.add(5, y)
            return x * 1000 + y

    assert Counter().run() == 2 * 1000 + 15


@fs.func
def grow_copy(b, k):
    b.grow(k)  # the method writes the func's own copy of its argument
    return b.hi


def test_method_on_a_struct_argument_writes_the_funcs_copy_only():
    boxes = Box.field(shape=1)
    out = fs.field(fs.i32, shape=3)

    @fs.kernel
    def k():
        out[0] = grow_copy(boxes[0], 5)
        loc = Box(lo=1, hi=2)
        out[1] = grow_copy(loc, 10)
        out[2] = loc.hi

    k()
    assert boxes.hi.to_numpy().tolist() == [0]
    assert out.to_numpy().tolist() == [5, 12, 2]
