"""`SNodeTree.destroy()` makes every kernel compile afresh, as in Taichi: a kernel compiled for
a destroyed tree's fields then sees the fields its names are bound to now (a data-oriented
solver that rebuilds its FieldsBuilder tree for each problem size)."""
import fieldsim as fs


@fs.data_oriented
class _Rebuilt:
    def __init__(self):
        self.a = fs.field(fs.f32)
        self.tree = None

    def reset(self, n):
        if self.tree is not None:
            self.tree.destroy()
            self.a = fs.field(fs.f32)
        fb = fs.FieldsBuilder()
        fb.dense(fs.i, n).place(self.a)
        self.tree = fb.finalize()

    @fs.kernel
    def fill_sum(self) -> fs.f32:
        s = 0.0
        for i in self.a:
            self.a[i] = i
            s += self.a[i]
        return s


def test_data_oriented_kernel_sees_rebuilt_tree():
    s = _Rebuilt()
    for n in (4, 6, 3):
        s.reset(n)
        assert s.fill_sum() == n * (n - 1) / 2
        assert s.a.to_numpy().tolist() == list(range(n))


_g = None


def _place(n):
    global _g
    _g = fs.field(fs.i32)
    fb = fs.FieldsBuilder()
    fb.dense(fs.i, n).place(_g)
    return fb.finalize()


@fs.kernel
def _count(c: fs.i32) -> fs.i32:
    t = 0
    for i in _g:
        _g[i] = c
        t += _g[i]
    return t


def test_scalar_kernel_fast_path_recompiles_after_destroy():
    tree = _place(5)
    assert _count(2) == 10 and _count(3) == 15  # the second launch takes the fast path
    tree.destroy()
    _place(7)
    assert _count(2) == 14
