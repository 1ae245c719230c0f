"""Argument packs (`fs.types.argpack`, `fs.ArgPack`) as Taichi 1.7.4 has them: declared, built,
passed to kernels, members read there (scalars, vectors/matrices, structs, ndarrays, nested
packs), handed on to funcs, and refused where Taichi refuses them. Expected values are worked
out by hand from the inputs."""
import numpy as np
import pytest

import fieldsim as fs
from tests.lang.conftest import AS_TAICHI

vec3 = fs.types.vector(3, fs.f32)


@pytest.fixture(autouse=True)
def _cpu():
    fs.init(arch=fs.cpu, cpu_max_num_threads=1)


def test_scalar_vector_members_read_in_a_kernel_and_python_scope():
    pt = fs.types.argpack(a=fs.i32, b=fs.f32, v=vec3)
    p = pt(a=3, b=1.5, v=vec3(1, 2, 3))
    assert isinstance(p, fs.ArgPack) and isinstance(p, pt)
    assert (p.a, p.b, p["a"], len(p)) == (3, 1.5, 3, 3)
    assert p.to_dict() == {"a": 3, "b": 1.5, "v": [1.0, 2.0, 3.0]}
    assert str(p) == "{'a': 3, 'b': 1.5, 'v': [1.0, 2.0, 3.0]}"
    assert p.keys == ["a", "b", "v"]  # Taichi's `keys` is a property
    x = fs.field(fs.f32, shape=4)

    @fs.kernel
    def k(q: pt) -> fs.f32:
        for i in x:
            x[i] = q.a * q.b + q.v[1] + i
        return q.a + q.b + q.v.sum()

    assert k(p) == 10.5
    np.testing.assert_array_equal(x.to_numpy(), [6.5, 7.5, 8.5, 9.5])
    p.a = 10  # a member set in Python scope reaches the next launch
    p["v"] = [4, 5, 6]
    assert k(p) == 26.5 and k(q=p) == 26.5
    # positional construction, in member order; an int for a float member is a float
    assert pt(2, 1, [0, 0, 1]).to_dict() == {"a": 2, "b": 1.0, "v": [0.0, 0.0, 1.0]}


def test_bool_struct_and_matrix_members():
    st = fs.types.struct(x=fs.f32, y=fs.i32)
    pt = fs.types.argpack(s=st, flag=bool, m=fs.types.matrix(2, 2, fs.f32), c=fs.f32)

    @fs.kernel
    def k(q: pt) -> fs.f32:
        r = q.s.x * q.s.y + q.c
        if q.flag:
            r += (q.m @ fs.Vector([1.0, 2.0]))[1]  # row 1: 3*1 + 4*2
        return r

    m = fs.Matrix([[1.0, 2.0], [3.0, 4.0]])
    assert k(pt(s=st(x=1.5, y=2), flag=False, m=m, c=1.0)) == 4.0
    assert k(pt(s=st(x=1.5, y=2), flag=True, m=m, c=1.0)) == 15.0


def test_ndarray_and_nested_pack_members():
    inner = fs.types.argpack(arr=fs.types.ndarray(dtype=fs.f32, ndim=2), k=fs.i32)
    outer = fs.types.argpack(i=inner, scale=fs.f32)
    arr = fs.ndarray(fs.f32, (3, 4))

    @fs.kernel
    def fill(o: outer):
        for i, j in o.i.arr:
            o.i.arr[i, j] = (i * 10 + j + o.i.k) * o.scale

    @fs.kernel
    def shape(o: outer) -> fs.i32:
        return o.i.arr.shape[0] * 100 + o.i.arr.shape[1]

    fill(outer(i=inner(arr=arr, k=2), scale=0.5))
    want = [[(i * 10 + j + 2) * 0.5 for j in range(4)] for i in range(3)]
    np.testing.assert_array_equal(arr.to_numpy(), want)
    assert shape(outer(i=inner(arr=np.zeros((5, 6), np.float32), k=1), scale=1.0)) == 506


def test_pack_handed_to_a_template_func_and_two_packs_of_one_type():
    pt = fs.types.argpack(a=fs.i32, c=fs.f32)

    @fs.func
    def twice(q: fs.template()) -> fs.f32:
        return q.c * 2 + q.a

    @fs.kernel
    def k(p: pt, q: pt) -> fs.f32:
        return twice(p) - q.c

    assert k(pt(1, 5.0), pt(a=7, c=1.5)) == 9.5


def test_pack_types_made_twice_with_equal_members_are_interchangeable():
    """A program that makes its pack type per object (a queue's `init`) passes packs of one
    call's type where another's is declared: equal members are the same type."""
    def make(n):
        t = fs.types.argpack(data=fs.types.ndarray(fs.i32, ndim=1),
                             size=fs.types.ndarray(fs.i32, ndim=0))
        p = t(fs.ndarray(fs.i32, n), fs.ndarray(fs.i32, ()))
        p.argtype = t  # a program's own attribute on a pack
        return p

    old, new = make(4), make(8)
    old.data.from_numpy(np.array([5, 6, 7, 8], np.int32))
    old.size[None] = 3
    copy_t = fs.types.argpack(old=old.argtype, new=old.argtype)

    @fs.kernel
    def copy(c: copy_t):
        c.new.size[None] = c.old.size[None]
        for i in range(c.old.size[None]):
            c.new.data[i] = c.old.data[i]

    copy(copy_t(old, new))
    assert new.size[None] == 3
    np.testing.assert_array_equal(new.data.to_numpy(), [5, 6, 7, 0, 0, 0, 0, 0])


def test_gradients_flow_through_fields_of_a_kernel_taking_a_pack():
    x = fs.field(fs.f32, shape=4, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)
    wp = fs.types.argpack(w=fs.f32, s=fs.types.vector(2, fs.f32))

    @fs.kernel
    def f(p: wp):
        for i in x:
            loss[None] += p.w * x[i] ** 2 + p.s[0] * x[i]

    x.from_numpy(np.arange(4, dtype=np.float32))
    with fs.ad.Tape(loss=loss):
        f(wp(w=3.0, s=[0.5, 1.0]))
    # d/dx (3 x^2 + 0.5 x) = 6 x + 0.5
    np.testing.assert_allclose(x.grad.to_numpy(), 6 * np.arange(4) + 0.5)
    assert loss[None] == pytest.approx(3 * 14 + 0.5 * 6)


def test_members_are_read_only_in_a_kernel():
    pt = fs.types.argpack(a=fs.i32)

    @fs.kernel
    def k(q: pt):
        q.a = 3

    with pytest.raises(fs.FieldsimSyntaxError):
        k(pt(a=1))


def test_a_float_for_an_integer_member_is_refused():
    pt = fs.types.argpack(a=fs.i32, b=fs.f32)
    with pytest.raises(Exception, match=r"i32|integer"):
        pt(a=1.7, b=2)


@pytest.mark.fieldsim_specific
def test_bad_packs_say_what_is_wrong():
    pt = fs.types.argpack(a=fs.i32, b=fs.f32)
    with pytest.raises(fs.FieldsimTypeError, match="no value given for member 'b'"):
        pt(a=1)
    p = pt(a=1, b=2.0)
    with pytest.raises(fs.FieldsimTypeError, match="integer member"):
        p.a = 2.5
    assert p.a == 1  # unchanged by the refused assignment
    with pytest.raises(fs.FieldsimTypeError, match="at least one member"):
        fs.types.argpack()
    with pytest.raises(fs.FieldsimTypeError, match="member 'f'"):
        fs.types.argpack(f=fs.template())

    @fs.kernel
    def k(q: pt) -> fs.f32:
        return q.b

    with pytest.raises(fs.FieldsimTypeError, match="argument 'q' expects an argument pack") as e:
        k({"a": 1, "b": 2.0})
    assert e.value.loc is not None and e.value.loc.file == __file__

    @fs.kernel
    def w(q: pt):
        q.b = 1.0

    with pytest.raises(fs.FieldsimSyntaxError, match="read-only"):
        w(p)


@pytest.mark.skipif(AS_TAICHI, reason="Taichi's ti.argpack is its module, checked by name here")
def test_names():
    assert fs.argpack.ArgPack is fs.ArgPack
    assert isinstance(fs.types.argpack(a=fs.f32), fs.argpack.ArgPackType)
    assert str(fs.types.argpack(a=fs.i32, b=bool)) == "<ti.ArgPackType a=i32, b=u1>"
