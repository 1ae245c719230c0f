"""`x += v` / `x -= v` (and `ti.atomic_*(x, v)`) on a local is Taichi's atomic operation on the
variable: `v` is cast to the variable's type first, then the operation runs in that type (an f32
sum of f64 values adds f32-rounded terms in f32; an int variable truncates a float term). `*=` and
`/=` compute in the promoted type and round once when stored."""
import numpy as np

import fieldsim as fs


def _f32_sum(values):
    t = np.float32(0)
    for v in values:
        t = np.float32(t + np.float32(v))
    return float(t)


def test_serial_sum_of_f64_into_an_f32_local_adds_in_f32():
    fs.init(arch=fs.cpu)
    vals = np.array([0.1, 0.2, 0.3, 0.7])
    a = fs.field(fs.f64, shape=len(vals))
    out = fs.field(fs.f64, shape=6)
    a.from_numpy(vals)

    @fs.kernel
    def sums():
        for _ in range(1):
            t = 0.0
            k = 0
            while k < len(vals):
                t += a[k]
                k += 1
            out[0] = t
            d = 0.0
            for q in range(len(vals)):
                d -= a[q]
            out[1] = d
            v = fs.Vector([0.0, 0.0])
            for q in range(len(vals)):
                v += fs.Vector([a[q], 2 * a[q]])
            out[2], out[3] = v[0], v[1]
            m = 0.0
            for q in range(len(vals)):
                fs.atomic_add(m, a[q])
            out[4] = m

    sums()
    got = out.to_numpy()
    assert got[0] == _f32_sum(vals)
    assert got[1] == -_f32_sum(vals)
    assert got[2] == _f32_sum(vals) and got[3] == _f32_sum(2 * vals)
    assert got[4] == _f32_sum(vals)
    # the promoted-then-rounded sum differs here, so the test can tell the two apart
    t = np.float32(0)
    for v in vals:
        t = np.float32(np.float64(t) + v)
    assert float(t) != got[0]


def test_int_local_truncates_the_float_term_first():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=4)

    @fs.kernel
    def ints(x: fs.f32):
        i = -3
        i += x  # -3 + int(0.5): still -3 (promoted: trunc(-2.5) = -2)
        j = -3
        j -= x
        n = 5
        n *= x  # promoted: trunc(2.5) = 2
        out[0], out[1], out[2] = i, j, n

    ints(0.5)
    assert out.to_numpy()[:3].tolist() == [-3, -3, 2]
