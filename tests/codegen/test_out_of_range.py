"""An index one past an axis (Taichi's differential_evolution example writes `best_fit[max_iter]`
and `all_pop[max_iter, i, j]`) is not checked without `debug=True`, as in Taichi; it must land
in the field's guard zone (`cpu.HostStorage`), never in the Python heap, whose corruption killed
the process later. With `debug=True` the same access is an IndexError naming the field."""
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import fieldsim as fs
from fieldsim.codegen.cpu import _guarded_zeros
from fieldsim.codegen.guard_zones import GUARD_BYTES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Many small fields, each written one element / one outermost row past both ends, with Python
# objects allocated in between: before the guard zones this crashed (SIGSEGV) or raised
# MemoryError from a corrupted heap.
_PROGRAM = textwrap.dedent("""
    import gc
    import numpy as np
    import fieldsim as fs

    fs.init(arch=fs.cpu)
    fields = [(fs.field(fs.f32, shape=50), fs.field(fs.f32, shape=(50, 20, 2))) for _ in range(200)]

    @fs.kernel
    def past_end(a: fs.template(), b: fs.template()):
        for _ in range(1):
            for t in range(1, 51):
                a[t] = 7.0
                for i, j in fs.ndrange(20, 2):
                    b[t, i, j] = 7.0
                    if t == 1:
                        b[t - 2, i, j] = 7.0

    junk = []
    for a, b in fields:
        past_end(a, b)
        junk.append({str(i): [i] * 3 for i in range(50)})
    gc.collect()
    ok = all(np.all(a.to_numpy()[1:] == 7) and a.to_numpy()[0] == 0
             and np.all(b.to_numpy()[1:] == 7) and np.all(b.to_numpy()[0] == 0) for a, b in fields)
    print("OK" if ok else "WRONG")
""")


def test_one_past_the_end_does_not_crash(tmp_path):
    program = tmp_path / "past_end.py"  # a file: kernels need their source
    program.write_text(_PROGRAM)
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("OK")


@pytest.mark.parametrize("shape, dtype", [((50,), np.float32), ((50, 20, 2), np.float32),
                                          ((3, 1000), np.float64), ((7,), np.uint8)])
def test_guard_zone_is_a_row_and_aligned(shape, dtype):
    a, _ = _guarded_zeros(shape, dtype)
    assert a.shape == shape and a.flags.c_contiguous and not a.any()
    item = np.dtype(dtype).itemsize
    row = int(np.prod(shape[1:], dtype=np.int64)) * item
    before = (a.ctypes.data - a.base.ctypes.data)
    after = a.base.nbytes - before - a.nbytes
    assert before == after >= max(row, GUARD_BYTES)
    assert before % 64 == 0


@pytest.mark.parametrize("shape", [(128, 64, 64), (1000, 3), (16,)])
def test_guard_zone_spans_a_sixteenth_of_the_rows(shape):
    a, _ = _guarded_zeros(shape, np.int8)
    rows = -(-shape[0] // 16)
    row = int(np.prod(shape[1:], dtype=np.int64))
    before = a.ctypes.data - a.base.ctypes.data
    assert before == a.base.nbytes - before - a.nbytes >= rows * row


# A voxel-challenge scene (a Lorenz attractor) sets voxels up to 3 cells past its 128-cell grid;
# before the guard spanned a sixteenth of the rows this crashed or overwrote another field.
_VOXELS_PAST_THE_GRID = textwrap.dedent("""
    import fieldsim as fs

    fs.init(arch=fs.cpu)
    image = fs.Vector.field(3, fs.f32, shape=(64, 64))
    material = fs.field(fs.i8)
    colour = fs.Vector.field(3, fs.u8)
    fs.root.dense(fs.ijk, 128).place(colour, material, offset=(-64, -64, -64))
    after = fs.field(fs.f32, shape=(64, 64))

    @fs.kernel
    def draw():
        for i, j, k in fs.ndrange((64, 67), 128, 128):
            material[i, j - 64, k - 64] = 1
            colour[i, j - 64, k - 64] = fs.Vector([200, 100, 50])

    draw()
    untouched = [f.to_numpy() for f in (image, after, material, colour)]
    print("OK" if not any(a.any() for a in untouched) else "WRONG")
""")


def test_writes_a_few_rows_past_a_voxel_grid_leave_other_fields_alone(tmp_path):
    program = tmp_path / "voxels_past_the_grid.py"
    program.write_text(_VOXELS_PAST_THE_GRID)
    env = {**os.environ, "PYTHONPATH": ROOT}
    proc = subprocess.run([sys.executable, str(program)], capture_output=True, text=True,
                          env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip().endswith("OK")


def test_empty_field_storage():
    assert _guarded_zeros((0, 4), np.int32)[0].shape == (0, 4)


def test_debug_reports_the_field():
    fs.init(arch=fs.cpu, debug=True)
    best = fs.field(fs.f32, shape=4, name="best_fit")

    @fs.kernel
    def k(n: fs.i32):
        for t in range(1, n + 1):
            best[t] = 1.0

    with pytest.raises(IndexError, match="best_fit"):
        k(4)
    fs.init(arch=fs.cpu)


def test_append_past_a_dynamic_nodes_parent_names_the_fields_it_holds():
    fs.init(arch=fs.cpu, debug=True)
    bucket = fs.field(fs.i32)
    fs.root.dense(fs.i, 4).dynamic(fs.j, 8).place(bucket)

    @fs.kernel
    def put(i: fs.i32):
        bucket[i].append(1)

    put(3)
    assert bucket[3, 0] == 1
    with pytest.raises(fs.FieldsimIndexError, match=r"index 4 is out of range.*dynamic node "
                                                    r"that holds 'bucket'"):
        put(4)
    fs.init(arch=fs.cpu)


def test_guard_zone_sixteenth_is_capped_for_big_fields():
    """diffmpm at full size keeps (512, 6400, 2) f32 fields: a sixteenth of their rows is 1.6 MB
    a side, which huge pages partly committed (15 MB more peak memory); capped, a side is at
    most GUARD_FRACTION_MAX_BYTES or one row, whichever is more."""
    from fieldsim.codegen.guard_zones import GUARD_FRACTION_MAX_BYTES
    for shape in [(512, 6400, 2), (64, 1 << 20)]:
        a, _ = _guarded_zeros(shape, np.float32)
        row = int(np.prod(shape[1:], dtype=np.int64)) * 4
        before = a.ctypes.data - a.base.ctypes.data
        assert before <= max(GUARD_FRACTION_MAX_BYTES, row) + 64
        assert before >= row


def test_an_index_that_can_reach_past_the_guard_zone_is_checked_without_debug():
    # DiffTaichi's cartpole indexes a (2, 256) field as x[t, i] with t up to 255: 255 rows of
    # 256 past the data, far beyond its guard zone; the write killed the process (SIGSEGV).
    # Such an access (indices of known range that could pass the guard) is checked as with
    # debug=True: an error naming the field and line, the process alive
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32)
    fs.root.dense(fs.l, 256).dense(fs.i, 2).place(x)
    fs.root.lazy_grad()
    y = fs.field(fs.f32, shape=(2, 256))

    @fs.kernel
    def clear():
        for t in range(256):
            for i in range(2):
                x.grad[t, i] = 0  # past the guard

    with pytest.raises(fs.errors.KernelIndexRangeError, match=r"(?s)x\.grad\[t, i\].*Out of bound access.*'x\.grad'"):
        clear()

    @fs.kernel
    def guarded():
        for t in range(256):
            for i in range(2):
                if t < 2:
                    y[t, i] = 1.0 + t  # in range whenever it runs: no error

    guarded()
    np.testing.assert_array_equal(y.to_numpy()[:, :2], [[1.0, 1.0], [2.0, 2.0]])

    @fs.kernel
    def stencil() -> fs.f32:
        s = 0.0
        for j in range(256):
            s += y[-1, j] + y[2, j]  # one row past each end: in the guard, zeros, as before
        return s

    assert stencil() == 0.0


def test_a_load_past_the_guard_whose_value_is_discarded_is_no_error():
    # ti.select evaluates both sides: a stencil reading 300 rows ahead (past the 256-row guard
    # of a (4096, 64) field) under `i + 300 < n` runs in Taichi, the far read discarded; only
    # stores and atomics past the guard are reported without debug=True
    fs.init(arch=fs.cpu)
    big = fs.field(fs.f64, shape=(4096, 64))
    big.from_numpy(np.arange(4096 * 64, dtype=np.float64).reshape(4096, 64) % 97)

    @fs.kernel
    def ahead() -> fs.f64:
        t = fs.f64(0.0)
        for i in range(4096):
            for j in range(64):
                t += fs.select(i + 300 < 4096, big[i + 300, j], 0.0)
        return t

    assert ahead() == big.to_numpy()[300:].sum()


def test_a_top_level_ndrange_write_past_the_guard_is_reported():
    # ti.ndrange's indices are `flat // n` and `flat % n` of one flat loop: their ranges are known
    fs.init(arch=fs.cpu)
    g = fs.Vector.field(4, fs.f32, shape=(64, 64))

    @fs.kernel
    def shifted():
        for i, j in fs.ndrange(64, 64):
            g[i + 100, j] += fs.Vector([1.0, 2.0, 3.0, 4.0])  # rows 100..163: past the guard

    with pytest.raises(fs.errors.KernelIndexRangeError, match="Out of bound access.*'g'"):
        shifted()

    @fs.kernel
    def inside():
        for i, j in fs.ndrange(64, 64):
            g[i, j] += fs.Vector([1.0, 2.0, 3.0, 4.0])

    g.fill(0)
    inside()
    assert g.to_numpy().sum() == 64 * 64 * 10.0
