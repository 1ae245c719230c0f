"""Taichi builtins fieldsim lacked until now: `ti.math` rotations (`rotation3d`, `rot_by_axis`,
`rot_yaw_pitch_roll`), `vdir`, `popcnt`, `clz`; `ti.solve`, `ti.frexp`, `ti.assume_in_range`;
and the names `ti.x86_64`, `ti.uint1`, `ti.Layout`, `ti.DeviceCapability`. Values are checked
against definitions written here with numpy and Python's integers."""
import math

import numpy as np
import pytest

import fieldsim as fs
from support.backends import flushes_subnormals


def _rx(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[1, 0, 0], [0, c, -s], [0, s, c]])


def _ry(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, 0, s], [0, 1, 0], [-s, 0, c]])


def _rz(a):
    c, s = math.cos(a), math.sin(a)
    return np.array([[c, -s, 0], [s, c, 0], [0, 0, 1]])


def _homogeneous(m3):
    m = np.eye(4)
    m[:3, :3] = m3
    return m


def _rodrigues(axis, ang):
    k = np.asarray(axis, float) / np.linalg.norm(axis)
    cross = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(ang) * cross + (1 - math.cos(ang)) * cross @ cross


def test_rotations_in_kernels_and_python_scope():
    """rot_yaw_pitch_roll is (Ry(yaw) Rx(pitch) Rz(roll))^T, rotation3d(x, y, z) is
    rot_yaw_pitch_roll(z, x, y), rot_by_axis is Rodrigues' rotation transposed (all 4x4, as
    Taichi defines them; the rotation3d value is the example in Taichi's docstring)."""
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    out = fs.Matrix.field(4, 4, fs.f64, shape=3)
    v = fs.Vector.field(2, fs.f64, shape=())

    @fs.kernel
    def k(yaw: fs.f64, pitch: fs.f64, roll: fs.f64, ang: fs.f64):
        out[0] = fs.math.rot_yaw_pitch_roll(yaw, pitch, roll)
        out[1] = fs.math.rotation3d(yaw, pitch, roll)
        out[2] = fs.math.rot_by_axis(fs.math.vec3(1.0, -2.0, 0.5), ang)
        v[None] = fs.math.vdir(ang)

    yaw, pitch, roll, ang = 0.3, -0.4, 0.9, 2.1
    k(yaw, pitch, roll, ang)
    ypr = _homogeneous((_ry(yaw) @ _rx(pitch) @ _rz(roll)).T)
    want = [ypr, _homogeneous((_ry(roll) @ _rx(yaw) @ _rz(pitch)).T),
            _homogeneous(_rodrigues([1.0, -2.0, 0.5], ang).T)]
    np.testing.assert_allclose(out.to_numpy(), np.stack(want), atol=1e-12)
    np.testing.assert_allclose(v[None].to_numpy(), [math.cos(ang), math.sin(ang)], atol=1e-15)
    np.testing.assert_allclose(fs.math.rot_yaw_pitch_roll(yaw, pitch, roll).to_numpy(), ypr,
                               atol=1e-12)
    np.testing.assert_allclose(
        fs.math.rotation3d(0.52, -0.785, 1.046).to_numpy(),
        [[0.05048351, -0.61339645, -0.78816002, 0], [0.65833154, 0.61388511, -0.4355969, 0],
         [0.75103329, -0.49688014, 0.4348093, 0], [0, 0, 0, 1]], atol=1e-7)
    np.testing.assert_allclose(fs.math.rot_by_axis(fs.Vector([0.0, 0.0, 2.0]), ang).to_numpy(),
                               _homogeneous(_rz(-ang)), atol=1e-12)


@pytest.mark.parametrize("dtype, np_dtype", [(fs.i32, np.int32), (fs.u32, np.uint32),
                                             (fs.i64, np.int64), (fs.u8, np.uint8)])
def test_popcnt_and_clz_count_bits_of_the_operands_width(dtype, np_dtype):
    fs.init(arch=fs.cpu)
    bits = 8 * np.dtype(np_dtype).itemsize
    info = np.iinfo(np_dtype)
    rng = np.random.default_rng(bits)
    values = np.concatenate([[0, 1, info.max, info.min, -1 if info.min < 0 else 2],
                             rng.integers(info.min, info.max, 40, endpoint=True)]).astype(np_dtype)
    x = fs.field(dtype, shape=len(values))
    pc = fs.field(dtype, shape=len(values))
    lz = fs.field(dtype, shape=len(values))
    x.from_numpy(values)

    @fs.kernel
    def k():
        for i in x:
            pc[i] = fs.math.popcnt(x[i])
            lz[i] = fs.math.clz(x[i])

    k()
    unsigned = [int(v) & ((1 << bits) - 1) for v in values]
    assert pc.to_numpy().tolist() == [u.bit_count() for u in unsigned]
    assert lz.to_numpy().tolist() == [bits - u.bit_length() for u in unsigned]
    assert fs.math.popcnt(-1) == 32 and fs.math.clz(1) == 31 and fs.math.clz(0) == 32


def test_popcnt_of_a_float_is_a_clear_error():
    fs.init(arch=fs.cpu)

    @fs.kernel
    def k(a: fs.f32) -> fs.i32:
        return fs.math.popcnt(a)

    with pytest.raises(fs.FieldsimTypeError, match="popcnt needs an integer"):
        k(1.0)


@pytest.mark.parametrize("n", [2, 3])
@pytest.mark.parametrize("dt, tol", [(fs.f32, 2e-5), (fs.f64, 1e-12)])
def test_solve_matches_numpy_including_zero_pivots(n, dt, tol):
    fs.init(arch=fs.cpu)
    rng = np.random.default_rng(7 + n)
    cases = 32
    A = rng.normal(size=(cases, n, n)) + 2 * np.eye(n)
    A[::3, 0, 0] = 0.0  # the first pivot must come from another row
    A[1::3] = A[1::3][:, ::-1]  # rows in an order that needs swaps
    B = rng.normal(size=(cases, n))
    a = fs.Matrix.field(n, n, dt, shape=cases)
    b = fs.Vector.field(n, dt, shape=cases)
    x = fs.Vector.field(n, dt, shape=cases)
    a.from_numpy(A)
    b.from_numpy(B)

    @fs.kernel
    def k():
        for i in a:
            x[i] = fs.solve(a[i], b[i], dt)

    k()
    want = np.linalg.solve(a.to_numpy().astype(np.float64),
                           b.to_numpy().astype(np.float64)[..., None])[..., 0]
    np.testing.assert_allclose(x.to_numpy(), want, rtol=tol, atol=tol)
    np.testing.assert_allclose(fs.solve(fs.Matrix(A[0]), fs.Vector(B[0])).to_numpy(),
                               np.linalg.solve(A[0], B[0]), rtol=1e-6)


def test_solve_gradient_matches_central_differences():
    """d(sum(w * x))/dA and /db through the pivoting elimination, against float64 central
    differences (analytically: -x g^T and g, g = A^-T w)."""
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    rng = np.random.default_rng(3)
    A0 = rng.normal(size=(3, 3)) + np.eye(3)
    A0[0, 0] = 0.05  # a swap on the first column
    b0 = rng.normal(size=3)
    w = rng.normal(size=3)
    a = fs.Matrix.field(3, 3, fs.f64, shape=(), needs_grad=True)
    b = fs.Vector.field(3, fs.f64, shape=(), needs_grad=True)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    wf = fs.Vector.field(3, fs.f64, shape=())
    wf.from_numpy(w)

    @fs.kernel
    def f():
        loss[None] = wf[None].dot(fs.solve(a[None], b[None]))

    a.from_numpy(A0)
    b.from_numpy(b0)
    with fs.ad.Tape(loss):
        f()
    g = np.linalg.solve(A0.T, w)
    x = np.linalg.solve(A0, b0)
    np.testing.assert_allclose(a.grad.to_numpy(), -np.outer(g, x), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(b.grad.to_numpy(), g, rtol=1e-9, atol=1e-12)
    h = 1e-6
    E = np.zeros((3, 3))
    E[1, 2] = 1.0
    fd = (w @ np.linalg.solve(A0 + h * E, b0) - w @ np.linalg.solve(A0 - h * E, b0)) / (2 * h)
    assert abs(a.grad.to_numpy()[1, 2] - fd) < 1e-7


def test_frexp_splits_floats_as_c_does():
    fs.init(arch=fs.cpu)
    v32 = np.array([12.5, -12.5, 0.0, -0.0, 1e-40, -3e-45, 1.0, 0.5, 3.4e38, np.inf, -np.inf,
                    np.nan, 1.17549435e-38], np.float32)
    v64 = np.array([12.5, 1e-310, 5e-324, -1.7e308, 0.0, np.inf, np.nan, 2.0 ** -1022])
    fields = []
    for values, dt in ((v32, fs.f32), (v64, fs.f64)):
        x, m = fs.field(dt, shape=len(values)), fs.field(dt, shape=len(values))
        e = fs.field(fs.i32, shape=len(values))
        x.from_numpy(values)
        fields.append((values, x, m, e))
    (_, x32, m32, e32), (_, x64, m64, e64) = fields

    @fs.kernel
    def k():
        for i in x32:
            m32[i], e32[i] = fs.frexp(x32[i])
        for i in x64:
            m64[i], e64[i] = fs.frexp(x64[i])

    k()
    for (values, x, m, e), dt in zip(fields, (fs.f32, fs.f64)):
        # CPU kernels read a subnormal as 0 (flushed, as Taichi's x64 backend): (x, 0) as for
        # 0; CUDA flushes f32 ones under fast-math only (as Taichi's CUDA backend). An f32
        # from_numpy on x86-64 stores them as zeros already, as Taichi's does: split what is stored
        tiny = np.finfo(values.dtype).tiny if flushes_subnormals(dt) else 0.0
        want = [math.frexp(v) if math.isfinite(v) and not 0 < abs(v) < tiny else (v, 0)
                for v in x.to_numpy().tolist()]
        np.testing.assert_array_equal(m.to_numpy(), [w[0] for w in want])
        assert e.to_numpy().tolist() == [w[1] for w in want]
    assert np.signbit(m32.to_numpy()[3])  # -0.0 keeps its sign
    assert fs.frexp(12.5) == (0.78125, 4)


def test_assume_in_range_returns_its_value_and_taichi_names_exist():
    fs.init(arch=fs.cpu)

    @fs.kernel
    def k(a: fs.i32) -> fs.i32:
        return fs.assume_in_range(a, 10, -2, 2) * 3

    assert k(11) == 33 and k(100) == 300  # a hint only: outside the range too
    assert fs.assume_in_range(5, 0, 0, 8) == 5
    assert fs.x86_64 == fs.x64 and fs.uint1 is fs.u1
    assert {fs.Layout.AOS, fs.Layout.SOA} and fs.DeviceCapability.spirv_has_int8
    x = fs.Vector.field(3, fs.f32, shape=4, layout=fs.Layout.SOA)
    x.fill(2.0)
    assert (x.to_numpy() == 2.0).all()
