"""A func may return a struct from inside a branch (as Taichi's real funcs do): every return's
members go to the func's result variables, nested structs and vector members included, from a
constructor, a local or a struct field element. Values worked out by hand per branch."""
import numpy as np

import fieldsim as fs

S = fs.types.struct(a=fs.i32, v=fs.math.vec2, w=fs.f64)
Outer = fs.types.struct(s=S, k=fs.f32)


def test_struct_returned_from_branches_keeps_every_member():
    fs.init(arch=fs.cpu)
    n = 6
    out_a = fs.field(fs.i32, shape=n)
    out_v = fs.Vector.field(2, fs.f32, shape=n)
    out_w = fs.field(fs.f64, shape=n)
    out_k = fs.field(fs.f32, shape=n)
    sf = S.field(shape=n)

    @fs.real_func
    def pick(i: fs.i32) -> S:
        s = S(a=i, v=fs.math.vec2(i, 2 * i), w=0.5 * i)
        if i % 3 == 0:
            s.a = -1
            return s  # a local
        s.v *= 2.0
        return s

    @fs.func
    def element_or_constant(i):
        if i % 2 == 0:
            return sf[i]  # a field element
        else:
            return S(a=7, v=fs.math.vec2(1.5, 2.5), w=1.25)

    @fs.func
    def nested(i):
        o = Outer(s=S(a=i, v=fs.math.vec2(0.0, 1.0), w=2.0), k=1.5)
        if i > 2:
            o.k = 3.0
            return o
        return Outer(s=pick(i), k=0.25)

    @fs.kernel
    def run():
        for i in range(n):
            sf[i].a = 10 + i
            sf[i].v = fs.math.vec2(i * 0.5, 1.0)
            sf[i].w = i * 0.25
        for i in range(n):
            s, t, o = pick(i), element_or_constant(i), nested(i)
            out_a[i] = s.a + 100 * t.a + 10000 * o.s.a
            out_v[i] = s.v + t.v + o.s.v
            out_w[i] = s.w + t.w + o.s.w
            out_k[i] = o.k

    run()
    for i in range(n):
        s_a = -1 if i % 3 == 0 else i
        s_v = np.array([i, 2 * i], float) * (1 if i % 3 == 0 else 2)
        t_a, t_v, t_w = (10 + i, [i * 0.5, 1.0], i * 0.25) if i % 2 == 0 else (7, [1.5, 2.5], 1.25)
        o_a, o_v, o_w, o_k = (i, [0.0, 1.0], 2.0, 3.0) if i > 2 else (s_a, s_v, 0.5 * i, 0.25)
        assert out_a[i] == s_a + 100 * t_a + 10000 * o_a
        assert np.allclose(out_v[i].to_numpy(), s_v + np.array(t_v) + np.array(o_v))
        assert out_w[i] == 0.5 * i + t_w + o_w
        assert out_k[i] == o_k
