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


def test_real_range_bound_warns_at_the_users_line():
    """Taichi 1.7.4 warns "Casting range_for boundary values from f32 to i32, ..." for a real
    bound (a particle count kept in an f32 field); an integer bound and fs.static stay quiet."""
    import warnings
    fs.init(arch=fs.cpu)
    count = fs.field(fs.f32, shape=())
    out = fs.field(fs.i32, shape=())

    @fs.kernel
    def k():
        for p in range(count[None]):
            out[None] += 1

    @fs.kernel
    def quiet(n: fs.i32):
        for p in range(n):
            out[None] += 1
        for q in fs.static(range(2)):
            out[None] += q

    count[None] = 3.5
    with warnings.catch_warnings(record=True) as got:
        warnings.simplefilter("always")
        k()
        quiet(2)
    assert out[None] == 3 + 2 + 1
    msgs = [(str(w.message), w.filename, w.lineno) for w in got]
    with open(__file__) as f:
        line = 1 + [s.strip() for s in f].index("for p in range(count[None]):")
    text = "Casting range_for boundary values from f32 to i32, which may cause numerical issues"
    assert msgs == [(text, __file__, line)]
