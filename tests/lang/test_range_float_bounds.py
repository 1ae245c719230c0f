"""`range(200.)` in a kernel, with a Python float or a runtime real bound: as in Taichi 1.7.4 the
bound is cast to i32 (truncated), so the loop runs int(bound) times (a shader-style
`MAX_STEPS = 200.` global was a TypeError)."""
import fieldsim as fs

MAX_STEPS = 7.


def test_float_range_bounds_truncate():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.i32, shape=4)

    @fs.kernel
    def k(x: fs.f32):
        for _ in range(1):
            n = 0
            for i in range(MAX_STEPS):
                n += 1
            out[0] = n
            m = 0
            for i in range(x):
                m += i
            out[1] = m
            c = 0
            for i in range(2.9, x):
                c += 1
            out[2] = c

    k(5.8)
    assert out.to_numpy()[:3].tolist() == [7, 0 + 1 + 2 + 3 + 4, 3]
