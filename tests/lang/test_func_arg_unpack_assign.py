"""A func argument written through a tuple assignment (`p.a, p.b = ...`, `v[0], v[1] = ...`)
is the func's own copy, as it is when written by `p.a = ...`: the caller's value is unchanged
and the func returns the modified copy. Expected values worked out by hand."""
import fieldsim as fs

S = fs.types.struct(a=fs.i32, b=fs.f32)


def test_struct_argument_members_swapped_by_tuple_assignment():
    fs.init(arch=fs.cpu)

    @fs.func
    def swap(p):
        p.a, p.b = fs.cast(p.b, fs.i32), fs.cast(p.a, fs.f32)
        return p

    @fs.kernel
    def k() -> fs.types.vector(4, fs.f32):
        q = S(a=3, b=7.5)
        r = swap(q)
        r2 = swap(S(a=1, b=2.0))
        return fs.Vector([q.a, r.a, r.b, r2.a])

    assert [float(e) for e in k()] == [3.0, 7.0, 3.0, 2.0]


def test_vector_argument_components_swapped_by_tuple_assignment():
    fs.init(arch=fs.cpu)

    @fs.func
    def flip(v):
        v[0], v[1] = v[1], v[0] + 1.0
        return v

    @fs.kernel
    def k() -> fs.types.vector(4, fs.f32):
        u = fs.math.vec2(1.0, 5.0)
        w = flip(u)
        return fs.Vector([u[0], u[1], w[0], w[1]])

    assert [float(e) for e in k()] == [1.0, 5.0, 5.0, 2.0]


def test_nested_target_lists_and_starred_names():
    # Taichi 1.7.4 refuses a nested target list (TaichiSyntaxError); fieldsim runs it as Python
    fs.init(arch=fs.cpu)

    @fs.func
    def f(p, n):
        (p.a, n), p.b = (n + 1, p.a), 0.5
        return p.a * 10 + n

    @fs.kernel
    def k() -> fs.i32:
        return f(S(a=4, b=1.0), 2)

    assert k() == 34
