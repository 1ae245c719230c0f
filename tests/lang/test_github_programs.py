"""Features that Taichi programs found on GitHub use, each checked on a small program of our own."""
import numpy as np
import pytest

import fieldsim as fs


def test_vector_condition_in_ifexp_points_to_select():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(2, fs.f32, shape=2)

    @fs.kernel
    def k():
        for i in v:
            v[i] = 0 if v[i] < 0 else v[i]

    with pytest.raises(fs.FieldsimTypeError, match="ti.select"):
        k()


class _Ray:
    """A plain Python class built inside a kernel from kernel values (as smallpt's Ray)."""

    def __init__(self, origin, direction):
        self.origin = origin
        self.direction = direction

    def at(self, t):
        return self.origin + t * self.direction


def test_python_class_constructed_in_kernel_keeps_kernel_values():
    fs.init(arch=fs.cpu)
    o = fs.Vector.field(3, fs.f32, shape=4)
    out = fs.Vector.field(3, fs.f32, shape=4)

    @fs.func
    def make_ray(i):
        return _Ray(o[i], fs.Vector([1.0, 2.0, 3.0]) * i)

    @fs.kernel
    def k():
        for i in o:
            ray = make_ray(i)
            out[i] = ray.at(0.5) + ray.origin

    o.from_numpy(np.arange(12, dtype=np.float32).reshape(4, 3))
    k()
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    want = 2 * a + 0.5 * np.array([1.0, 2.0, 3.0]) * np.arange(4)[:, None]
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-6)


class _Doubling:
    def __init__(self, v):
        self.v = v * 2  # arithmetic on a kernel value in Python: refused with a clear error


def test_python_class_whose_init_computes_is_refused_clearly():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=2)

    @fs.kernel
    def k():
        for i in x:
            x[i] = _Doubling(x[i]).v

    with pytest.raises(fs.FieldsimTypeError, match="_Doubling"):
        k()


def test_f64_values_print_with_twelve_decimals(capfd):
    fs.init(arch=fs.cpu)

    @fs.kernel
    def k():
        x = fs.f64(0.1)
        print(x, 0.25, fs.Vector([x, x]), f"{x:.3f}")

    k()
    assert capfd.readouterr().out == "0.100000000000 0.250000 [0.100000000000, 0.100000000000] 0.100\n"


def test_and_or_on_vectors_are_element_wise():
    fs.init(arch=fs.cpu)
    p = fs.Vector.field(3, fs.f32, shape=())
    q = fs.Vector.field(3, fs.f32, shape=())
    out = fs.Vector.field(3, fs.i32, shape=())

    @fs.kernel
    def k():
        cond = p[None] < 0 and q[None] < 0 or p[None] > 1 and q[None] > 0
        for j in fs.static(range(3)):
            out[None][j] = 7 if cond[j] else 0

    pa, qa = np.array([-1.0, 2.0, 0.5, ]), np.array([-1.0, 3.0, 3.0])
    p[None], q[None] = pa.tolist(), qa.tolist()
    k()
    want = ((pa < 0) & (qa < 0)) | ((pa > 1) & (qa > 0))
    np.testing.assert_array_equal(out[None].to_numpy(), np.where(want, 7, 0))


def test_numpy_abs_on_kernel_values():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=5)
    out = fs.field(fs.f32, shape=())

    @fs.kernel
    def k():
        m = 0.0
        fs.loop_config(serialize=True)
        for i in range(5):
            if np.abs(x[i]) >= m:
                m = np.abs(x[i])
        out[None] = m

    x.from_numpy(np.array([1.0, -4.5, 2.0, -0.5, 3.0], dtype=np.float32))
    k()
    assert out[None] == 4.5


def test_printing_a_field_in_python_shows_its_values(capsys):
    fs.init(arch=fs.cpu)
    x = fs.field(fs.i32, shape=(2, 3))
    v = fs.Vector.field(2, fs.f32, shape=2)
    x.from_numpy(np.arange(6, dtype=np.int32).reshape(2, 3))
    print(x)
    print(v)
    assert capsys.readouterr().out == f"{np.arange(6).reshape(2, 3)}\n{np.zeros((2, 2), np.float32)}\n"
    assert repr(x).startswith("<fs.field")


def test_python_scope_vectors_print_as_taichi_and_build_from_numpy(capsys):
    fs.init(arch=fs.cpu)
    m = fs.math.mat4(np.eye(4, dtype=np.float32) * 2)  # a numpy matrix, not 16 copies of it
    assert m.to_numpy().shape == (4, 4) and m[3, 3] == 2
    print(fs.Vector([1.5, 2.0]), fs.Matrix([[1, 2], [3, 4]]))
    assert capsys.readouterr().out == f"{np.array([1.5, 2.0])} {np.array([[1, 2], [3, 4]])}\n"


def test_dynamic_cell_methods_append_length_deactivate():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.i32)
    fs.root.pointer(fs.i, 4).dynamic(fs.j, 8, chunk_size=4).place(x)
    out = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k():
        for i in range(4):
            for j in range(i + 1):
                x[i].append(j * 10)
        for i in range(4):
            out[i] = x[i].length()
        x[2].deactivate()

    @fs.kernel
    def total() -> fs.i32:
        return x[2].length() + x[3].length()

    k()
    np.testing.assert_array_equal(out.to_numpy(), [1, 2, 3, 4])
    np.testing.assert_array_equal(x.to_numpy()[:, :4], [[0, 0, 0, 0], [0, 10, 0, 0],
                                                       [0, 0, 0, 0], [0, 10, 20, 30]])
    assert total() == 4


def test_ellipsis_statement_is_a_placeholder():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.i32, shape=3)

    @fs.kernel
    def k():
        for i in x:
            ...
            x[i] = i

    k()
    np.testing.assert_array_equal(x.to_numpy(), [0, 1, 2])


def test_python_list_built_in_a_kernel_collects_matrices():
    # `temp = []; temp.append(affine0); ...`: a Python list of kernel values, as in Taichi
    fs.init(arch=fs.cpu)
    x = fs.Vector.field(2, fs.f32, shape=4)
    out = fs.Matrix.field(2, 2, fs.f32, shape=4)
    x.from_numpy(np.arange(8, dtype=np.float32).reshape(4, 2))

    @fs.kernel
    def blend(r: fs.f32):
        for p in x:
            temp = []
            temp.append(x[p].outer_product(x[p]))
            temp.append(fs.Matrix.identity(fs.f32, 2) * x[p].sum())
            out[p] = temp[0] * r + temp[1] * (1.0 - r)

    blend(0.25)
    xs = np.arange(8, dtype=np.float64).reshape(4, 2)
    want = 0.25 * np.einsum("pi,pj->pij", xs, xs) + 0.75 * xs.sum(1)[:, None, None] * np.eye(2)
    np.testing.assert_allclose(out.to_numpy(), want, rtol=1e-6)


def test_range_of_a_zero_d_field_names_the_fix():
    # `for p in range(self.num_particles)` (Taichi 1.7.4 refuses it too: TaichiTypeError)
    fs.init(arch=fs.cpu)
    count = fs.field(fs.i32, shape=())

    @fs.kernel
    def k():
        for i in range(count):
            pass

    with pytest.raises(fs.FieldsimError, match=r"range\(count\[None\]\)"):
        k()


def test_constant_matrix_entries_are_default_fp_in_kernels():
    # `gravity * dt` with a Python-scope ti.Vector([0, -9.8, 0]): Taichi multiplies f32
    # constants (-0.0012250001...), not Python floats rounded once (-0.0012250000...)
    fs.init(arch=fs.cpu)
    out = fs.Vector.field(3, fs.f32, shape=2)
    gravity = fs.Vector([0, -9.8, 0])
    dt = 4e-3 / 32

    @fs.kernel
    def k():
        out[0] = gravity * dt
        out[1] = fs.Vector([1.0, 2.0, 3.0]) @ fs.Matrix([[0.1, 0, 0], [0, 0.2, 0], [0, 0, 0.3]])

    k()
    f = np.float32
    np.testing.assert_array_equal(out.to_numpy()[0], [0, f(-9.8) * f(dt), 0])
    want = [f(1) * f(0.1) + f(2) * f(0) + f(3) * f(0), f(f(1) * f(0) + f(2) * f(0.2)) + f(3) * f(0),
            f(f(1) * f(0) + f(2) * f(0)) + f(3) * f(0.3)]
    np.testing.assert_array_equal(out.to_numpy()[1], np.array(want, np.float32))


def test_a_tuple_variable_indexes_a_field_with_its_items():
    # `idx = (idx_side[i].x, idx_center[j].y, idx_center[k].z); grid_v_x[idx] += w`
    fs.init(arch=fs.cpu)
    grid = fs.field(fs.f32, shape=(3, 4, 5))
    vec = fs.Vector.field(2, fs.f32, shape=(3, 4))

    @fs.kernel
    def scatter():
        for i, j in fs.ndrange(3, 4):
            idx = (i, j, (i + j) % 5)
            grid[idx] += 1.0 + i
            ij = (i, j)
            vec[ij] = fs.Vector([grid[idx], 2.0])

    scatter()
    want = np.zeros((3, 4, 5), np.float32)
    for i in range(3):
        for j in range(4):
            want[i, j, (i + j) % 5] += 1 + i
    np.testing.assert_array_equal(grid.to_numpy(), want)
    np.testing.assert_array_equal(vec.to_numpy()[..., 0], want.sum(axis=2))


def test_a_list_indexes_a_field_with_its_items():
    # GeoTaichi's fast sweeping: `self.propagate_update([i, j])` into `if self.valid[I] == -1:`
    fs.init(arch=fs.cpu)
    x = fs.field(fs.i32, shape=(4, 5))
    y = fs.field(fs.i32, shape=(4, 5))

    @fs.func
    def bump(I):
        x[I] += I[0] * 10 + I[1]

    @fs.kernel
    def k():
        for i, j in x:
            bump([i, j])
        t = [1, 2]
        x[t] += 1000
        y[[3, 4]] = 7
        y[[0, 0]] = x[[1, 2]]

    k()
    want = np.add.outer(np.arange(4) * 10, np.arange(5))
    want[1, 2] += 1000
    np.testing.assert_array_equal(x.to_numpy(), want)
    assert y[3, 4] == 7 and y[0, 0] == want[1, 2]


@fs.dataclass
class _Particle:
    mass: fs.f32
    inv_mass: fs.f32
    pos: fs.math.vec2
    prev: fs.math.vec2

    @fs.func
    def init(self):
        self.inv_mass = 1.0 / self.mass if self.mass > 0 else 0
        self.prev = self.pos


def test_struct_method_assignments_reach_the_element_it_is_called_on():
    # `Particles[i].Init()` with `self.InvMass = ...` (a PBD chain program): Taichi writes the
    # field; fieldsim wrote a copy, left InvMass 0 and the solve divided 0 by 0
    fs.init(arch=fs.cpu)
    ps = _Particle.field(shape=3)
    out = fs.field(fs.f32, shape=3)

    @fs.kernel
    def setup():
        for i in ps:
            ps[i] = _Particle(mass=i - 1.0, pos=fs.math.vec2(i, 2 * i))
            ps[i].init()
            local = _Particle(mass=4.0)
            local.init()
            out[i] = local.inv_mass

    setup()
    np.testing.assert_array_equal(ps.inv_mass.to_numpy(), [0, 0, 1])
    np.testing.assert_array_equal(ps.prev.to_numpy(), [[0, 0], [1, 2], [2, 4]])
    np.testing.assert_array_equal(out.to_numpy(), [0.25] * 3)


def test_scalar_times_tuple_is_a_vector():
    # `corner + delta * (dx, dy)` (a PBF program's lattice set-up): Taichi makes a tuple met
    # by a kernel scalar a vector, on either side of the operator
    fs.init(arch=fs.cpu)
    out = fs.Vector.field(2, fs.f32, shape=(3, 4))

    @fs.kernel
    def k(delta: fs.f32):
        corner = fs.Vector([0.5, 1.0])
        for i in range(3):
            dx, dy = i % 2, i // 2
            out[i, 0] = corner + delta * (dx, dy)
            out[i, 1] = (dx, dy) * delta
            out[i, 2] = (dx, 1.0) + delta
            out[i, 3] = delta - [dy, 2]

    k(0.25)
    d = np.float32(0.25)
    ij = np.array([[i % 2, i // 2] for i in range(3)], np.float32)
    want = np.stack([np.float32([0.5, 1.0]) + d * ij, ij * d,
                     np.stack([ij[:, 0], np.ones(3, np.float32)], 1) + d,
                     d - np.stack([ij[:, 1], np.full(3, 2, np.float32)], 1)], 1)
    np.testing.assert_array_equal(out.to_numpy(), want)
