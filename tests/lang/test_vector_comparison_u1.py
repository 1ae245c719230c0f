"""A vector comparison's entries, `.any()`/`.all()` and `fs.math.isnan/isinf` in a kernel are
one-bit `u1`s, as Taichi 1.7.4 types them (like a scalar comparison): `(v > 1).sum()` of two true
entries wraps to 0, `-(v > 0).any()` is 1, `isnan(x) << 3` is 0. They were i32s (2, -1, 8).
Conditions, `fs.select` and mixing with an `int` or a float are unchanged."""
import fieldsim as fs


def test_vector_comparisons_and_predicates_are_one_bit():
    fs.init(arch=fs.cpu)
    v = fs.Vector.field(3, fs.f32, shape=1)
    f = fs.field(fs.f32, shape=2)
    out = fs.field(fs.i32, shape=(6, 3))
    r = fs.field(fs.f32, shape=3)
    v[0] = [1.0, 2.0, 3.0]
    f[0] = float("nan")
    f[1] = float("inf")

    @fs.kernel
    def k():
        for _ in range(1):
            w = v[0] > 1  # [0, 1, 1]
            out[0, 0] = w[1] + w[2]
            out[0, 1] = -w[2]
            out[0, 2] = w.sum()
            a = (v[0] > 0).any()
            out[1, 0] = a + a
            out[1, 1] = -a
            out[1, 2] = a << 3
            b = (v[0] > 0).all()
            out[2, 0] = b + b
            out[2, 1] = b * 5
            out[2, 2] = 0
            if (v[0] > 2).all():
                out[2, 2] = 1
            c = fs.math.isnan(f[0])
            out[3, 0] = c + c
            out[3, 1] = -c
            out[3, 2] = c << 3
            d = fs.math.isinf(f[1])
            out[4, 0] = d + d
            out[4, 1] = d * 7
            out[4, 2] = fs.math.isinf(f[0]) + 1
            out[5, 0] = (v[0] >= 2).sum() * 1
            s = fs.select(v[0] > 1, v[0], -v[0])
            for j in fs.static(range(3)):
                r[j] = s[j] + (v[0] > 1)[j] * 0.5

    k()
    # one bit: 1 + 1 = 0, -1 = 1, 1 << 3 = 0; with an int: ordinary (5, 7, 1)
    assert out.to_numpy().tolist() == [[0, 1, 0], [0, 1, 0], [0, 5, 0], [0, 1, 0], [0, 7, 1],
                                       [0, 0, 0]]
    assert r.to_numpy().tolist() == [-1.0, 2.5, 3.5]
