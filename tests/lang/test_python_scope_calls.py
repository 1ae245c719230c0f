"""A field's Python-scope data calls (`to_numpy`, `from_numpy`, `to_torch`, `copy_from`, a struct
field's whole `fill`) and `deactivate_all` / `deactivate_all_snodes` made from a kernel are refused
where they are written, as Taichi refuses them: run once while the kernel compiled, the copy would
be kept and later launches would read stale values (or never copy, fill or deactivate)."""
import numpy as np
import pytest

import fieldsim as fs


@pytest.fixture(autouse=True)
def _init():
    fs.init(arch=fs.cpu)


def _line_of(marker):
    with open(__file__) as f:
        return next(n for n, line in enumerate(f, 1) if marker in line and "_line_of" not in line)


def test_to_numpy_in_a_kernel_is_refused_at_its_line():
    x = fs.field(fs.f32, shape=4)
    y = fs.field(fs.f32, shape=4)

    @fs.kernel
    def snapshot():
        a = x.to_numpy()  # marker: to_numpy in kernel
        y[0] = a[1]

    with pytest.raises(fs.TaichiCompilationError, match=r"to_numpy\(\) cannot be called in a kernel") as info:
        snapshot()
    assert info.value.loc.line == _line_of("marker: to_numpy in kernel")
    assert y.to_numpy().tolist() == [0.0] * 4


def test_from_numpy_in_a_helper_a_kernel_calls_is_refused():
    x = fs.field(fs.f32, shape=3)

    def load():
        x.from_numpy(np.ones(3, np.float32))

    @fs.kernel
    def k():
        load()

    with pytest.raises(fs.TaichiCompilationError, match=r"from_numpy\(\) cannot be called"):
        k()
    assert x.to_numpy().tolist() == [0.0] * 3


def test_python_scope_calls_still_work():
    x = fs.Vector.field(2, fs.f32, shape=3)
    x.from_numpy(np.arange(6, dtype=np.float32).reshape(3, 2))
    assert x.to_numpy().sum() == 15.0


def test_copy_from_in_a_kernel_is_refused_at_its_line():
    # it ran once, while the kernel compiled, before the loop above it wrote `a`: `b` stayed
    # zero launch after launch (Taichi: "copy_from cannot be called in Taichi-scope")
    a = fs.field(fs.i32, shape=4)
    b = fs.field(fs.i32, shape=4)

    @fs.kernel
    def fill_and_copy(n: fs.i32):
        for i in a:
            a[i] = n * 10 + i
        b.copy_from(a)  # marker: copy_from in kernel

    with pytest.raises(fs.TaichiCompilationError, match=r"copy_from\(\) cannot be called in a kernel") as info:
        fill_and_copy(1)
    assert info.value.loc.line == _line_of("marker: copy_from in kernel")
    b.copy_from(a)  # Python scope
    assert b.to_numpy().tolist() == a.to_numpy().tolist()


def test_deactivate_all_in_a_kernel_is_refused():
    # it deactivated once, at compile time, and never again (Taichi: nested kernel launch)
    s = fs.field(fs.i32)
    blk = fs.root.pointer(fs.i, 4)
    blk.place(s)

    @fs.kernel
    def node_reset():
        s[1] = 5
        blk.deactivate_all()  # marker: deactivate_all in kernel

    @fs.kernel
    def all_reset():
        s[2] = 7
        fs.deactivate_all_snodes()

    with pytest.raises(fs.TaichiCompilationError, match=r"deactivate_all\(\) cannot be called") as info:
        node_reset()
    assert info.value.loc.line == _line_of("marker: deactivate_all in kernel")
    with pytest.raises(fs.TaichiCompilationError, match=r"deactivate_all_snodes\(\) cannot be called"):
        all_reset()
    s[1] = 5
    blk.deactivate_all()  # Python scope
    assert s.to_numpy().tolist() == [0] * 4


def test_struct_field_fill_in_a_kernel_is_refused():
    # it filled once, at compile time: a second launch left the values written in between
    # (Taichi: "fill cannot be called in Taichi-scope"); a member's fill stays a kernel loop
    sf = fs.Struct.field({"a": fs.i32, "b": fs.math.vec2}, shape=4)

    @fs.kernel
    def reset():
        sf.fill(0)  # marker: struct fill in kernel

    @fs.kernel
    def reset_member():
        sf.a.fill(0)

    with pytest.raises(fs.TaichiCompilationError, match=r"fill\(\) cannot be called") as info:
        reset()
    assert info.value.loc.line == _line_of("marker: struct fill in kernel")
    for _ in range(2):
        sf.a.fill(9)
        reset_member()
        assert sf.a.to_numpy().tolist() == [0] * 4
