"""`fs.math.popcnt`, `clz` (bit counts in the operand's own width and type, as Taichi's), `vdir`, and the
4x4 rotations `rotation3d`, `rot_by_axis`, `rot_yaw_pitch_roll`, in kernels and Python scope,
against Python's own bit counting and numpy matrices."""
import math

import numpy as np
import pytest

import fieldsim as fs

WIDTHS = [(fs.i8, 8), (fs.u8, 8), (fs.i16, 16), (fs.u16, 16), (fs.i32, 32), (fs.u32, 32),
          (fs.i64, 64), (fs.u64, 64)]


@pytest.mark.parametrize("dtype,bits", WIDTHS)
def test_popcnt_and_clz_count_in_the_operands_width(dtype, bits):
    rng = np.random.default_rng(bits)
    raw = [0, 1, (1 << bits) - 1, 0x70, 1 << (bits - 1)] + \
        [int(v) for v in rng.integers(0, 1 << min(bits, 62), 20)]
    vals = np.array([v & ((1 << bits) - 1) for v in raw], dtype=np.uint64).astype(dtype.np)
    a = fs.field(dtype, shape=len(vals))
    out = fs.field(fs.i32, shape=(2, len(vals)))
    a.from_numpy(vals)

    @fs.kernel
    def k():
        for i in a:
            out[0, i] = fs.math.popcnt(a[i])
            out[1, i] = fs.math.clz(a[i])

    k()
    pattern = [v & ((1 << bits) - 1) for v in raw]
    assert out.to_numpy()[0].tolist() == [bin(p).count("1") for p in pattern]
    assert out.to_numpy()[1].tolist() == [bits - p.bit_length() for p in pattern]


def test_bit_counts_of_vectors_and_python_values():
    @fs.kernel
    def k(x: fs.i32) -> fs.types.vector(4, fs.i32):
        v = fs.Vector([5, x])
        return fs.Vector([fs.math.popcnt(v)[0], fs.math.popcnt(v)[1], fs.math.clz(v)[0],
                          fs.math.clz(fs.u8(x))])

    assert k(-1).to_list() == [2, 32, 29, 0]
    assert fs.math.popcnt(-1) == 32 and fs.math.clz(0) == 32
    assert fs.math.popcnt(np.uint8(0xF0)) == 4 and fs.math.clz(np.int16(1)) == 15


def _yaw_pitch_roll_np(yaw, pitch, roll):
    # Taichi's matrix is roll-only @ pitch-only @ yaw-only, each a plane rotation (row-vector form)
    def plane(i, j, a):
        m = np.eye(4)
        m[i, i] = m[j, j] = math.cos(a)
        m[i, j], m[j, i] = math.sin(a), -math.sin(a)
        return m
    return plane(0, 1, roll) @ plane(1, 2, pitch) @ plane(2, 0, yaw)


def test_rotations_match_their_definitions_in_both_scopes():
    fs.init(arch=fs.cpu, default_fp=fs.f64)
    ypr, axis, ang = (0.3, -0.7, 1.1), np.array([1.0, -2.0, 0.5]), 0.9
    u = axis / np.linalg.norm(axis)
    cross = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    rodrigues = np.eye(4)  # the transpose of the column-vector rotation, as Taichi lays it out
    rodrigues[:3, :3] = (math.cos(ang) * np.eye(3) + math.sin(ang) * cross
                         + (1 - math.cos(ang)) * np.outer(u, u)).T

    @fs.kernel
    def k(y: float, p: float, r: float, a: fs.math.vec3, t: float) -> fs.types.matrix(4, 4, float):
        return fs.math.rot_yaw_pitch_roll(y, p, r) + 10 * fs.math.rot_by_axis(a, t) + \
            100 * fs.math.rotation3d(p, r, y)

    want = _yaw_pitch_roll_np(*ypr) + 10 * rodrigues + 100 * _yaw_pitch_roll_np(*ypr)
    np.testing.assert_allclose(k(*ypr, fs.math.vec3(axis), ang).to_numpy(), want, atol=1e-12)
    np.testing.assert_allclose(fs.math.rot_by_axis(axis, ang).to_numpy(), rodrigues, atol=1e-12)
    np.testing.assert_allclose(fs.math.rotation3d(ypr[1], ypr[2], ypr[0]).to_numpy(),
                               _yaw_pitch_roll_np(*ypr), atol=1e-12)

    @fs.kernel
    def d(t: float) -> fs.math.vec2:
        return fs.math.vdir(t)

    assert d(0.4).to_list() == pytest.approx([math.cos(0.4), math.sin(0.4)])
    assert fs.math.vdir(0.4).to_list() == pytest.approx([math.cos(0.4), math.sin(0.4)])
