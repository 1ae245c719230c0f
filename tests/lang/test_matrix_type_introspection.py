"""Taichi's type introspection that libraries use on `ti.types.vector/matrix` and dataclasses
(fieldsim/lang/matrix.py, fieldsim/lang/types.py): `ti.lang.matrix.VectorType` /
`MatrixType` isinstance checks, `get_shape()`, struct `members` (taichi-splatting's
`struct_size` sums them to size a packed vector type)."""
from math import prod

import fieldsim as fs
from fieldsim.lang import matrix, struct


def test_vector_type_isinstance_and_get_shape():
    vec4, mat23 = fs.types.vector(4, fs.f32), fs.types.matrix(2, 3, fs.f64)
    assert isinstance(vec4, matrix.VectorType) and isinstance(vec4, matrix.MatrixType)
    assert not isinstance(mat23, matrix.VectorType) and isinstance(mat23, matrix.MatrixType)
    assert not isinstance(fs.f32, matrix.VectorType) and not isinstance(4, matrix.VectorType)
    assert vec4.get_shape() == (4,) and mat23.get_shape() == (2, 3)


def _struct_size(t):
    size = 0
    for v in t.members.values():
        if isinstance(v, matrix.VectorType):
            size += prod(v.get_shape())
        elif isinstance(v, struct.StructType):
            size += _struct_size(v)
        else:
            size += 1
    return size


def test_dataclass_members_sized_as_a_packed_vector():
    @fs.dataclass
    class Inner:
        a: fs.math.vec2
        b: fs.f32

    @fs.dataclass
    class Outer:
        p: fs.math.vec3
        q: fs.types.vector(4, fs.f32)
        inner: Inner
        w: fs.f32

    assert _struct_size(Inner) == 3 and _struct_size(Outer) == 3 + 4 + 3 + 1
    packed = fs.types.vector(_struct_size(Outer), fs.f32)

    @fs.kernel
    def pack(o: Outer) -> packed:
        return packed(*o.p, *o.q, *o.inner.a, o.inner.b, o.w)

    got = pack(Outer(p=fs.math.vec3(1, 2, 3), q=fs.math.vec4(4, 5, 6, 7),
                     inner=Inner(a=fs.math.vec2(8, 9), b=10), w=11))
    assert list(got) == list(range(1, 12))


def test_starred_vector_arguments_in_kernel_calls():
    # taichi-splatting's `vec4(*position, 1)`; Taichi 1.7.4 gives the same values
    vec4 = fs.types.vector(4, fs.f32)

    @fs.func
    def mixed(v):
        return vec4(*v.xy, *v.yz)

    @fs.kernel
    def k(a: fs.math.vec3) -> fs.types.matrix(2, 4, fs.f32):
        m = fs.math.mat2(1, 2, 3, 4)
        row0, row1 = fs.math.vec2(*m[0, :]), fs.math.vec2(*m[1, :])
        return fs.Matrix.rows([vec4(*a, 1), mixed(a) + vec4(*row0, *row1)])

    got = k(fs.math.vec3(1, 2, 3)).to_numpy()
    assert got.tolist() == [[1, 2, 3, 1], [2, 4, 5, 7]]


def test_vector_and_matrix_types_built_with_taichis_constructors():
    """`VectorType(n, dtype)` and `MatrixType(n, m, ndim, dtype)` (Taichi's argument order),
    used as dataclass member types (a forward-mode AD dataclass from GitHub)."""
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    vec2 = matrix.VectorType(2, fs.f64)
    mat23 = matrix.MatrixType(2, 3, 2, fs.f32)
    assert (vec2.n, vec2.m, vec2.ndim, vec2.dtype) == (2, 1, 1, fs.f64)
    assert (mat23.n, mat23.m, mat23.ndim, mat23.dtype) == (2, 3, 2, fs.f32)
    assert isinstance(vec2, matrix.VectorType) and not isinstance(mat23, matrix.VectorType)

    @fs.dataclass
    class Dual:
        x: float
        v: vec2

        @fs.func
        def mul(self, other):
            return Dual(self.x * other.x, self.x * other.v + self.v * other.x)

    out = fs.Vector.field(3, fs.f64, shape=())

    @fs.kernel
    def square(a: float):
        d = Dual(a, vec2(1.0, 0.0))
        r = d.mul(d)
        out[None] = fs.Vector([r.x, r.v[0], r.v[1]])

    square(3.0)
    assert out[None].to_numpy().tolist() == [9.0, 6.0, 0.0]  # d(a^2)/da = 2a


def test_a_one_axis_one_column_matrix_type_builds_column_matrices():
    """Taichi 1.7.4 (measured): `MatrixType(3, 1, 1, dt)` (Taichi's base class, one axis) shapes
    fields and arguments as a vector type, yet calling it builds a 3x1 matrix, in Python and in
    kernels, and it is not a VectorType; `fs.types.vector(3)` builds vectors."""
    fs.init(arch=fs.cpu)
    col = matrix.MatrixType(3, 1, 1, fs.f32)
    assert not isinstance(col, matrix.VectorType) and col.get_shape() == (3,)
    value = col(2)
    assert type(value) is matrix.Matrix and value.get_shape() == (3, 1)
    assert value.to_numpy().shape == (3, 1) and value[1, 0] == 2.0
    assert col(1, 2, 3).get_shape() == (3, 1)
    vec = fs.types.vector(3, fs.f32)(1, 2, 3)
    assert type(vec) is matrix.Vector and vec.get_shape() == (3,)
    f = col.field(shape=2)
    assert (f.n, f.m) == (3, 1) and f.to_numpy().shape == (2, 3)
    out = fs.field(fs.f32, shape=2)

    @fs.kernel
    def k():
        b = col(1, 2, 3)
        out[0] = b[1, 0]
        out[1] = b.m

    k()
    assert out.to_numpy().tolist() == [2.0, 1.0]
