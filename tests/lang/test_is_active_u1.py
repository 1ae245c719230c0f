"""`fs.is_active` in a kernel is a one-bit `u1`, as Taichi 1.7.4 types it (like a comparison):
the sum of two active flags wraps to 0, `-flag` and `flag << 3` stay one bit, and mixing a flag
with an `int` gives an `int`. It was an i32 (2, -1, 8). Conditions and counters are unchanged."""
import fieldsim as fs


def test_is_active_is_one_bit():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32)
    blk = fs.root.bitmasked(fs.i, 4)
    blk.place(x)
    out = fs.field(fs.i32, shape=8)

    @fs.kernel
    def k():
        x[1] = 1.0
        for j in range(1, 2):
            out[0] = fs.is_active(blk, [j]) + fs.is_active(blk, [j])
            out[1] = -fs.is_active(blk, [j])
            out[2] = fs.is_active(blk, [j]) << 3
            out[3] = fs.is_active(blk, [j]) * 5
            out[4] = ~fs.is_active(blk, [j])
            out[5] = ~fs.is_active(blk, [j + 1])
        n = 0
        for i in range(4):
            n += fs.is_active(blk, [i])
            if fs.is_active(blk, [i]):
                out[7] = i
        out[6] = n

    k()
    # one bit: 1 + 1 = 0, -1 = 1, 1 << 3 = 0, ~1 = 0, ~0 = 1; with an int: 5; one active cell
    assert out.to_numpy().tolist() == [0, 1, 0, 5, 0, 1, 1, 1]
