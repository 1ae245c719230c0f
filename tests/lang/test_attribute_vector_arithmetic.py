"""A Python-scope vector reached through an attribute (`self.g`, `cfg.wind`) combines with
other Python values in Python, in double precision, as in Taichi 1.7.4, whose kernels make a
constant of a Python vector only when a global's name reads it; a PyBD cloth's
`(self.g + self.wind) * self.dt * self.dt` was f32 arithmetic in fieldsim, an ulp off
Taichi's in every particle. Expected values are numpy's f64 results rounded once to f32, or,
for names and `@`, f32 arithmetic step by step."""
import types

import numpy as np

import fieldsim as fs

G = [0.1, -9.81, 0.3]
DT = 1.0 / 60


def test_attribute_vectors_fold_in_double_precision():
    fs.init(arch=fs.cpu, fast_math=False)
    cfg = types.SimpleNamespace(g=fs.Vector(G), dt=DT, wind=fs.Vector([0.0, 0.0, 6.0]),
                                m=fs.Matrix([[0.3, 0.1], [0.7, 1.0 / 3]]), v2=fs.Vector([0.2, 0.9]))
    g_global = fs.Vector(G)
    out = fs.Vector.field(3, fs.f32, 5)
    o2 = fs.Vector.field(2, fs.f32, 1)

    @fs.kernel
    def k(a: fs.f32):
        out[0] = (cfg.g + cfg.wind) * cfg.dt * cfg.dt
        out[1] = -cfg.g * cfg.dt
        out[2] = cfg.g * a * cfg.dt
        out[3] = g_global * cfg.dt * cfg.dt
        out[4] = cfg.g * cfg.dt
        o2[0] = cfg.m @ cfg.v2 * cfg.dt

    k(0.3)
    g64 = np.array(G)
    f32 = np.float32
    got = out.to_numpy()
    np.testing.assert_array_equal(got[0], f32((g64 + [0, 0, 6]) * DT * DT))
    np.testing.assert_array_equal(got[1], f32(-g64 * DT))
    np.testing.assert_array_equal(got[2], f32(g64) * f32(0.3) * f32(DT))  # kernel values from `* a`
    np.testing.assert_array_equal(got[3], f32(g64) * f32(DT) * f32(DT))  # a global's name: constants
    np.testing.assert_array_equal(got[4], f32(g64 * DT))
    m32 = f32([[0.3, 0.1], [0.7, 1.0 / 3]])
    want = np.array([m32[r, 0] * f32(0.2) + m32[r, 1] * f32(0.9) for r in range(2)], f32) * f32(DT)
    np.testing.assert_array_equal(o2.to_numpy()[0], want)


def test_python_scope_typed_vector_keeps_its_type_with_python_numbers():
    fs.init(arch=fs.cpu)
    t = fs.Vector([0.1, 0.2, 0.3], fs.f32)
    u = fs.Vector([200, 100, 7], fs.u8)
    r = t * (1.0 / 60)
    assert r.to_numpy().dtype == np.float32
    np.testing.assert_array_equal(r.to_numpy(), np.float32([0.1, 0.2, 0.3]) * np.float32(1.0 / 60))
    assert (u + 100).to_numpy().tolist() == [44, 200, 107]  # u8 wraps, as numpy's u8 does
    assert (t * 2).to_numpy().dtype == np.float32 and (2.0 - t).to_numpy().dtype == np.float32
    cfg = types.SimpleNamespace(t=t, dt=1.0 / 60)
    out = fs.Vector.field(3, fs.f64, 1)

    @fs.kernel
    def k():
        out[0] = cfg.t * cfg.dt

    k()
    np.testing.assert_array_equal(out.to_numpy()[0], np.float32([0.1, 0.2, 0.3]) * np.float32(1.0 / 60))
