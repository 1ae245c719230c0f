"""`x + 0` and `x * 1` with a typed constant (an entry of `Matrix.zero`, `Matrix.identity`,
`Matrix.one`) fold to `x`, as Taichi 1.7.4's simplifier folds them and as fieldsim already
folded a Python 0 or 1: a -0.0 entry stays -0.0 (it became +0.0, so a 4x4 `.inverse()` of
`S * 0 + 20 * I` had zeros of the other sign than Taichi's)."""
import math

import fieldsim as fs


def _neg_zero(x):
    return x == 0.0 and math.copysign(1.0, x) == -1.0


def test_typed_zero_and_one_fold():
    fs.init(arch=fs.cpu, default_fp=fs.f64, fast_math=False)
    r = fs.field(fs.f64, shape=6)

    @fs.kernel
    def k(p: fs.i32):
        m = fs.Matrix([[-3.0, 1.0], [2.0, -1.0]]) * (p + 1)  # p = -1: -0, +0, +0, -0
        r[2] = (m + fs.Matrix.identity(fs.f64, 2) * 20)[0, 0]  # -0 + 20
        r[0] = (m + fs.Matrix.zero(fs.f64, 2, 2))[0, 0]
        r[1] = (fs.Matrix.zero(fs.f64, 2, 2) + m)[1, 1]
        r[3] = (m * fs.Matrix.one(fs.f64, 2, 2))[0, 0]
        r[4] = (m - fs.Matrix.zero(fs.f64, 2, 2))[1, 1]
        r[5] = (m + 0.5 * fs.Matrix.zero(fs.f64, 2, 2))[0, 0]  # folded: 0.5 * 0 is a constant 0

    k(-1)
    assert _neg_zero(r[0]) and _neg_zero(r[1])
    assert r[2] == 20.0
    assert _neg_zero(r[3]) and _neg_zero(r[4]) and _neg_zero(r[5])


def test_inverse4_keeps_negative_zero_entries():
    fs.init(arch=fs.cpu, default_fp=fs.f64, fast_math=False)
    r = fs.Matrix.field(4, 4, fs.f64, shape=())

    @fs.kernel
    def k(p: fs.i32):
        s = fs.Matrix([[-3, -3, -3, 6], [-3, 0, 2, 1], [2, 5, 3, 3], [3, 4, -3, 4]], dt=fs.f64) * (p + 1)
        r[None] = (s.cast(fs.f64) + fs.Matrix.identity(fs.f64, 4) * 20).inverse()

    k(-1)
    got = r.to_numpy()
    # the input is 20 I with the signed zeros of -0 * S: off-diagonal entries stay zeros
    for i in range(4):
        for j in range(4):
            assert got[i, j] == (0.05 if i == j else 0.0)
    # these two cofactors sum -0.0 products only (the values checked on Taichi 1.7.4)
    assert _neg_zero(got[1, 3]) and _neg_zero(got[3, 1])
