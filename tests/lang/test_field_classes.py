"""`isinstance` against Taichi's field classes: `ti.ScalarField` holds for fields of scalars,
`ti.MatrixField` for vector and matrix fields (taichi_extras' `field_like`, and Adam
optimisers built on it, pick `ti.Vector.field` or `ti.field` that way)."""
import fieldsim as fs


def test_scalar_and_matrix_fields_are_told_apart():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=3, needs_grad=True)
    v = fs.Vector.field(2, fs.f32, shape=3)
    m = fs.Matrix.field(2, 3, fs.f64, shape=(2, 2))
    late = fs.field(fs.i32)
    fs.root.dense(fs.i, 4).place(late)
    assert [isinstance(f, fs.ScalarField) for f in (x, x.grad, v, m, late)] == \
        [True, True, False, False, True]
    assert [isinstance(f, fs.MatrixField) for f in (x, x.grad, v, m, late)] == \
        [False, False, True, True, False]
    assert all(isinstance(f, fs.Field) for f in (x, v, m))
    assert not isinstance(3.0, fs.ScalarField) and not isinstance(x, (fs.MatrixField, int))


def test_a_field_like_helper_builds_the_same_kind():
    fs.init(arch=fs.cpu)

    def field_like(f):
        if isinstance(f, fs.MatrixField):
            return fs.Vector.field(f.n, f.dtype, shape=f.shape)
        return fs.field(f.dtype, shape=f.shape)

    x = field_like(fs.field(fs.f32, shape=5))
    v = field_like(fs.Vector.field(3, fs.f32, shape=(2, 2)))
    assert (x.shape, x.n) == ((5,), None)
    assert (v.shape, v.n) == ((2, 2), 3)
