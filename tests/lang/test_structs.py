"""Structs: `fs.types.struct`, `fs.Struct`, `fs.Struct.field`, `@fs.dataclass` in both scopes,
struct locals and func arguments in kernels, numpy transfer, gradients, and misuse errors."""
import numpy as np
import pytest

import fieldsim as fs

vec3 = fs.types.vector(3, fs.f32)
vec2i = fs.types.vector(2, fs.i32)
Line = fs.types.struct(dir=vec3, length=fs.f32)
Body = fs.types.struct(line=Line, id=fs.i32)


def test_struct_field_members_in_kernel_and_python():
    s = fs.Struct.field({"a": fs.f32, "b": fs.i32, "v": vec3}, shape=6)

    @fs.kernel
    def init():
        for i in s:
            s[i].a = i * 0.5
            s[i].b = i * 2
            s[i].v = fs.Vector([i, 1.0, 2.0])

    @fs.kernel
    def derive():
        for i in s:
            s[i].a = s[i].v[0] + s[i].b

    init()
    assert s[3].a == 1.5 and s[3].b == 6
    assert np.allclose(s[3].v.to_numpy(), [3, 1, 2])
    derive()
    assert s[4].a == 4 + 8
    s[2].b = 7.9  # Python scope: a float into an int member truncates, as in Taichi
    assert s[2].b == 7
    assert s.shape == (6,) and s.b.shape == (6,)


def test_struct_whole_element_assignment_and_nesting():
    x = Body.field(shape=4)
    y = Line.field(shape=4)

    @fs.kernel
    def fill():
        for i in y:
            y[i] = Line(dir=vec3(1.0), length=i + 0.5)
        for i in x:
            x[i] = Body(line=y[i], id=i)
            x[i].line.dir[1] = 2.0 * i

    fill()
    for i in range(4):
        assert x[i].id == i and x[i].line.length == i + 0.5
        assert np.allclose(x[i].line.dir.to_numpy(), [1.0, 2.0 * i, 1.0])
    x[1] = fs.Struct({"line": {"dir": vec3(3.0), "length": 9.0}, "id": 11})
    assert x[1].id == 11 and x[1].line.length == 9.0
    x.fill(5)
    assert x[2].id == 5 and np.allclose(x[2].line.dir.to_numpy(), 5.0)


def test_constructor_positional_broadcast_and_casts():
    S = fs.types.struct(a=fs.i32, b=vec2i, c=fs.f32)

    @fs.kernel
    def k() -> fs.f32:
        s = S(2.7, (1.9, -1.9))  # ints truncate; c defaults to 0
        t = S(3)  # one scalar: the first member only, the rest 0
        return s.a * 100 + s.b[0] * 10 + s.b[1] + t.a + t.c

    assert k() == pytest.approx(200 + 10 - 1 + 3)
    p = S(2.7, (1.9, -1.9))
    assert p.a == 2 and list(p.b.to_numpy()) == [1, -1] and p.c == 0.0


def test_struct_local_is_a_copy():
    s = fs.Struct.field({"a": fs.i32, "b": fs.i32}, shape=())
    s[None].a, s[None].b = 2, 3
    out = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k():
        c = s[None]
        c.a = 5
        d = c
        d.b = 9
        out[0], out[1] = c.a, c.b
        out[2], out[3] = s[None].a, d.b

    k()
    assert list(out.to_numpy()) == [5, 3, 2, 9]


def test_struct_locals_inside_loops_and_funcs():
    out = fs.field(fs.f32, shape=5)

    @fs.func
    def scaled(line, k):
        return Line(dir=line.dir * k, length=line.length * k)

    @fs.kernel
    def k():
        for i in out:
            ln = Line(dir=vec3(1.0, 2.0, 3.0), length=1.0)
            ln = scaled(ln, i)
            out[i] = ln.dir[2] + ln.length

    k()
    assert np.allclose(out.to_numpy(), [4.0 * i for i in range(5)])


def test_dataclass_methods_in_both_scopes():
    @fs.dataclass
    class Sphere:
        center: vec3
        radius: fs.f32

        @fs.func
        def volume(self):
            return 4.0 / 3.0 * np.pi * self.radius ** 3

        def diameter(self):
            return 2 * self.radius

    balls = Sphere.field(shape=3)
    balls[1] = Sphere(center=vec3(0.0), radius=2.0)
    assert Sphere(radius=1.5).diameter() == 3.0
    assert Sphere(radius=1.5).volume() == pytest.approx(4 / 3 * np.pi * 1.5 ** 3)

    @fs.kernel
    def v(i: fs.i32) -> fs.f32:
        local = Sphere(vec3(1.0), 3.0)
        return balls[i].volume() + local.volume() * 0.0 + local.center[0]

    assert v(1) == pytest.approx(4 / 3 * np.pi * 8 + 1.0, rel=1e-5)


def test_dataclass_member_of_dataclass():
    @fs.dataclass
    class A:
        i: int
        j: float

    @fs.dataclass
    class B:
        a1: A
        a2: A

    b = B(A(1, 2.5))
    assert (b.a1.i, b.a1.j, b.a2.i, b.a2.j) == (1, 2.5, 0, 0.0)


def test_to_numpy_and_from_numpy_are_dicts():
    s = fs.Struct.field({"m": fs.f32, "v": vec3}, shape=(2, 3))
    data = {"m": np.arange(6, dtype=np.float32).reshape(2, 3),
            "v": np.ones((2, 3, 3), dtype=np.float32)}
    s.from_numpy(data)
    got = s.to_numpy()
    assert set(got) == {"m", "v"}
    assert np.array_equal(got["m"], data["m"]) and got["v"].shape == (2, 3, 3)
    with pytest.raises(ValueError, match="keys"):
        s.from_numpy({"m": data["m"]})


def test_placed_struct_field():
    s = fs.Struct.field({"a": fs.f32, "b": fs.f32})
    fs.root.dense(fs.i, 8).place(s)

    @fs.kernel
    def k():
        for i in s:
            s[i].b = s[i].a + i

    k()
    assert s.shape == (8,) and s[7].b == 7.0


def test_struct_field_gradient_is_analytic():
    s = fs.Struct.field({"w": fs.f32, "v": vec3}, shape=4, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)
    rng = np.random.default_rng(1)
    w = rng.standard_normal(4).astype(np.float32)
    v = rng.standard_normal((4, 3)).astype(np.float32)
    s.from_numpy({"w": w, "v": v})

    @fs.kernel
    def energy():
        for i in s:
            loss[None] += s[i].w * s[i].v.norm_sqr()

    with fs.ad.Tape(loss=loss):
        energy()
    g = s.grad.to_numpy()
    # d/dw (w |v|^2) = |v|^2, d/dv = 2 w v
    assert np.allclose(g["w"], (v ** 2).sum(1), rtol=1e-5)
    assert np.allclose(g["v"], 2 * w[:, None] * v, rtol=1e-5)


def test_int_members_cannot_have_grad():
    with pytest.raises(RuntimeError, match="member 'n': i32 is not supported .*needs_grad"):
        fs.Struct.field({"w": fs.f32, "n": fs.i32}, shape=2, needs_grad=True)
    with pytest.raises(RuntimeError, match="not supported"):
        fs.types.struct(v=vec2i).field(shape=2, needs_dual=True)
    assert fs.Struct.field({"w": fs.f32}, shape=2).grad is None


def test_unknown_member_in_kernel_names_the_line():
    s = fs.Struct.field({"a": fs.f32}, shape=2)

    @fs.kernel
    def k():
        for i in s:
            s[i].b = 1.0

    with pytest.raises(fs.FieldsimTypeError, match="no member 'b'") as info:
        k()
    assert "test_structs.py" in str(info.value)


def test_mismatched_struct_assignment_is_an_error():
    s = fs.Struct.field({"a": fs.f32, "b": fs.f32}, shape=2)

    @fs.kernel
    def k():
        for i in s:
            s[i] = fs.Struct(a=1.0)

    with pytest.raises(fs.FieldsimTypeError, match="members differ"):
        k()
    with pytest.raises(KeyError, match="members a, b"):
        s[0] = fs.Struct(a=1.0)
    with pytest.raises(AttributeError, match="no member 'c'"):
        s[0].c = 1.0


def test_struct_constructor_errors():
    with pytest.raises(fs.FieldsimTypeError, match="no member"):
        Line(width=1.0)
    with pytest.raises(TypeError, match="unsupported type"):
        fs.types.struct(a="float")


def test_func_modifies_its_own_copy_of_a_struct_argument():
    # as in Taichi: func arguments are values, so the caller's element is left as it was
    s = Line.field(shape=2)
    out = fs.field(fs.f32, shape=2)

    @fs.func
    def grow(line):
        line.length = 2.0
        return line.length

    @fs.kernel
    def k():
        for i in s:
            out[i] = grow(s[i])

    k()
    assert out.to_numpy().tolist() == [2.0, 2.0]
    assert s.length.to_numpy().tolist() == [0.0, 0.0]


def test_func_reassigning_a_struct_argument_works_on_its_copy():
    out = fs.field(fs.f32, shape=2)

    @fs.func
    def longer(line):
        line = Line(dir=line.dir, length=line.length + 1.0)
        return line.length

    @fs.kernel
    def k():
        ln = Line(dir=vec3(0.0), length=1.0)
        out[0] = longer(ln)
        out[1] = ln.length

    k()
    assert list(out.to_numpy()) == [2.0, 1.0]


def test_dataclass_string_annotations_resolve_in_the_defining_scope():
    vec = fs.types.vector(2, fs.f32)

    @fs.dataclass
    class P:
        x: "vec"  # noqa: F821 - as written under `from __future__ import annotations`
        m: "fs.f32"

    p = P(x=(1, 2), m=3)
    assert list(p.x.to_numpy()) == [1.0, 2.0] and p.m == 3.0
    with pytest.raises(TypeError, match="cannot resolve the annotation 'nope'"):
        @fs.dataclass
        class Q:
            y: "nope"  # noqa: F821


def test_annotated_struct_local_casts_to_its_type():
    @fs.kernel
    def k() -> fs.f32:
        a: Line = fs.Struct(dir=fs.Vector([1, 2, 3]), length=2)
        b: Line = 4.0  # one value: the first member, as for Line(4.0)
        return a.length * 10 + a.dir[2] + b.dir[0] + b.length

    assert k() == pytest.approx(20 + 3 + 4 + 0)


def test_python_scope_component_writes_reach_the_member_field():
    s = Body.field(shape=2)
    s[1].line.dir[2] = 7.0
    assert np.allclose(s.line.dir.to_numpy()[1], [0.0, 0.0, 7.0])
    m = fs.Struct.field({"A": fs.types.matrix(2, 2, fs.i32)}, shape=1)
    m[0].A[1, 0] = 3.9
    assert m.A.to_numpy()[0].tolist() == [[0, 0], [3, 0]]


def test_struct_field_as_template_grouped_loop_and_static_members():
    s = fs.Struct.field({"a": fs.f32, "b": fs.f32}, shape=(2, 3))
    total = fs.field(fs.f32, shape=())

    @fs.kernel
    def fill(t: fs.template()):
        for I in fs.grouped(t):
            t[I].a = I[0]
            t[I].b = I[1] * 10.0

    @fs.kernel
    def add_members(t: fs.template()):
        for i, j in t:
            e = t[i, j]
            for k in fs.static(e.keys):
                total[None] += getattr(e, k)

    fill(s)
    add_members(s)
    assert total[None] == pytest.approx(3 * 1 + 2 * 10 * (0 + 1 + 2))


def test_fill_of_vector_members_and_locals_in_kernels():
    s = fs.Struct.field({"a": fs.f32, "v": vec2i}, shape=3)
    w = fs.Vector.field(3, fs.f32, shape=3)

    @fs.kernel
    def k():
        for i in s:
            s[i].v.fill(i + 0.5)  # cast to the member's int type
            w[i].fill(2.0 * i)
            loc = fs.Vector([1.0, 2.0])
            loc.fill(i)
            s[i].a = loc[0] + loc[1]

    k()
    assert s.v.to_numpy().tolist() == [[0, 0], [1, 1], [2, 2]]
    assert np.allclose(w.to_numpy()[2], 4.0) and s.a.to_numpy().tolist() == [0.0, 2.0, 4.0]


def test_gradient_through_struct_copies_and_func_arguments():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    vec2 = fs.types.vector(2, float)
    P = fs.types.struct(x=vec2, m=float)
    s = P.field(shape=4, needs_grad=True)
    loss = fs.field(float, shape=(), needs_grad=True)
    x, m = np.arange(8.0).reshape(4, 2), np.array([1.0, 2.0, 3.0, 4.0])
    s.from_numpy({"x": x, "m": m})

    @fs.func
    def energy(p):
        return p.m * p.x.norm_sqr()

    @fs.kernel
    def total():
        for i in s:
            p = s[i]
            q = P(x=p.x * 2.0, m=p.m)
            loss[None] += energy(q)

    with fs.ad.Tape(loss=loss):
        total()
    g = s.grad.to_numpy()  # loss = sum m |2x|^2
    assert np.allclose(g["m"], 4 * (x ** 2).sum(1))
    assert np.allclose(g["x"], 8 * m[:, None] * x)


def test_members_named_like_field_attributes_shadow_them():
    # a BVH node struct (parent/left), an SDF struct (grad) and members named like other
    # StructField attributes: as in Taichi, `x.parent`, `x.grad`, `x.name` are the member fields,
    # in Python scope and in kernels, and the struct field keeps working (len, loops, numpy);
    # `shape` stays the struct field's (its loops need it): that member by get_member_field
    Node = fs.types.struct(parent=fs.i32, left=fs.i32, grad=vec3, name=fs.f32, shape=fs.i32)
    nodes = Node.field(shape=5)
    nodes.parent.fill(-1)
    nodes.grad.fill(0.5)
    assert nodes.parent.to_numpy().tolist() == [-1] * 5
    assert nodes.grad.to_numpy().shape == (5, 3)

    @fs.kernel
    def link():
        for i in nodes:
            nodes[i].left = nodes.parent[i] + i
            nodes.name[i] = nodes[i].grad.sum() + i
            nodes[i].shape = i * 2

    link()
    assert nodes.left.to_numpy().tolist() == [-1, 0, 1, 2, 3]
    assert np.allclose(nodes.name.to_numpy(), [1.5, 2.5, 3.5, 4.5, 5.5])
    assert nodes.shape == (5,) and len(nodes) == 5
    assert nodes.get_member_field("shape").to_numpy().tolist() == [0, 2, 4, 6, 8]
    assert sorted(nodes.to_numpy()) == ["grad", "left", "name", "parent", "shape"]
    assert nodes.parent.snode.parent() is not None


def test_struct_field_to_and_from_torch():
    # a point-cloud search's result struct returned as torch tensors (`result.to_torch()`)
    torch = pytest.importorskip("torch")
    Hit = fs.types.struct(index=fs.i32, dist=fs.f32, n=vec3, inner=fs.types.struct(w=fs.f64))
    r = Hit.field(shape=4)

    @fs.kernel
    def fill():
        for i in r:
            r[i].index = i * 3
            r[i].dist = i * 0.5
            r[i].n = fs.Vector([i, -i, 1.0])
            r[i].inner.w = i * 0.25

    fill()
    t = r.to_torch()
    assert sorted(t) == ["dist", "index", "inner", "n"]
    assert t["index"].dtype == torch.int32 and t["index"].tolist() == [0, 3, 6, 9]
    assert t["n"].shape == (4, 3) and t["n"][2].tolist() == [2.0, -2.0, 1.0]
    assert t["inner"]["w"].dtype == torch.float64 and t["inner"]["w"][3].item() == 0.75
    r.from_torch({"index": torch.arange(4, dtype=torch.int32) + 10, "dist": torch.ones(4),
                  "n": torch.zeros(4, 3), "inner": {"w": torch.full((4,), 2.0, dtype=torch.float64)}})
    assert r[2].index == 12 and r[1].dist == 1.0 and r[3].inner.w == 2.0
    with pytest.raises(ValueError, match="keys index, dist, n, inner"):
        r.from_torch({"index": torch.zeros(4, dtype=torch.int32)})


def test_struct_repr_is_its_dict_text_as_in_taichi():
    """Taichi prints a struct as its members' dict, also inside containers (a list, an
    argument pack's text), which use repr."""
    fs.init(arch=fs.cpu)
    inner = fs.types.struct(x=fs.f32, y=fs.i32)
    outer = fs.types.struct(p=fs.math.vec2, n=inner)
    s = inner(x=1.5, y=2)
    o = outer(p=fs.math.vec2(1, 2), n=s)
    assert repr(s) == str(s) == "{'x': 1.5, 'y': 2}"
    assert str([s]) == "[{'x': 1.5, 'y': 2}]"
    assert str(o) == "{'p': [1.0, 2.0], 'n': {'x': 1.5, 'y': 2}}"


def test_tuple_assignment_swaps_struct_field_elements_and_locals():
    # Python evaluates `P[1], P[0]` before either store; a struct item must not be read after
    # the first store has changed it (taichi-dev/taichi#4315 in a kernel)
    p = Body.field(shape=2)

    @fs.kernel
    def swap() -> fs.i32:
        p[0].id = 1
        p[0].line.length = 0.5
        p[1].id = 3
        p[1].line.length = 2.5
        p[0], p[1] = p[1], p[0]
        a = Line(dir=vec3(1.0), length=1.0)
        b = Line(dir=vec3(2.0), length=2.0)
        a, b = b, a
        return int(a.length * 10 + b.length)

    assert swap() == 21
    assert (p[0].id, p[1].id) == (3, 1)
    assert (p[0].line.length, p[1].line.length) == (2.5, 0.5)


def test_struct_items_of_a_tuple_or_list_variable_are_copies():
    # `t = (p[0], p[1])` holds the two values of that moment, as a Python tuple would
    p = Body.field(shape=3)

    @fs.kernel
    def rotate():
        for i in range(3):
            p[i].id = i + 1
        t = (p[0], p[1])
        p[0] = t[1]
        p[1] = t[0]
        items = [p[0], p[1], p[2]]
        p[0], p[1], p[2] = items[2], items[0], items[1]

    rotate()
    assert [p[i].id for i in range(3)] == [3, 2, 1]
