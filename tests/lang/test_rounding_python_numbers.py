"""`ti.floor`/`ti.ceil`/`ti.round` of a Python number in a kernel fold as Taichi 1.7.4 folds them,
with numpy: an integer is welcome (`ti.floor(7)` was refused as "real inputs only"; a static
loop's `ti.floor(ti.max(1e-3, j))` reaches it) and the result is a float, and `ti.round(2.5)`
rounds half to even (2.0), where a kernel value rounds half away from zero."""
import fieldsim as fs


def test_python_numbers_round_with_numpy():
    fs.init(arch=fs.cpu)
    out = fs.field(fs.f32, shape=10)
    v = fs.field(fs.f32, shape=1)
    v[0] = 2.5

    @fs.kernel
    def k():
        out[0] = fs.floor(7) / 2
        out[1] = fs.ceil(-3) / 2
        out[2] = fs.round(5) / 2
        out[3] = fs.round(2.5) / 4
        out[4] = fs.round(-2.5) / 4
        out[5] = fs.ceil(2.5) // 2
        for j in fs.static(range(2)):
            out[6 + j] = fs.floor(fs.max(1e-3, j + 1)) + 0.25
        out[8] = fs.round(2.5, fs.i32)
        out[9] = fs.round(v[0])

    k()
    assert out.to_numpy().tolist() == [3.5, -1.5, 2.5, 0.5, -0.5, 1.0, 1.25, 2.25, 2.0, 3.0]
