"""A struct-for over a field under several dense levels visits its cells in the layout tree's
order, as Taichi 1.7.4 does on the CPU (level by level from the root, each level's cells
row-major), so atomic counters and f32 sums in the loop match Taichi's on one thread; a field
of one dense level keeps its row-major loop."""
import numpy as np
import pytest

import fieldsim as fs

# (per level, root first: {axis: cells}), the field's number of axes
LAYOUTS = {
    "ij 4.8": ([{0: 4, 1: 4}, {0: 8, 1: 8}], 2),
    "ij 2x3.5x4": ([{0: 2, 1: 3}, {0: 5, 1: 4}], 2),
    "j4.i8": ([{1: 4}, {0: 8}], 2),
    "ij 2.3.4": ([{0: 2, 1: 2}, {0: 3, 1: 3}, {0: 4, 1: 4}], 2),
    "ijk1.l3.ijk4": ([{0: 1, 1: 1, 2: 1}, {3: 3}, {0: 4, 1: 4, 2: 4}], 4),
    "i4.i8": ([{0: 4}, {0: 8}], 1),
}
AXES = {(0,): fs.i, (1,): fs.j, (3,): fs.l, (0, 1): fs.ij, (0, 1, 2): fs.ijk}


def _tree_order(levels, ndim):
    """Per cell, its step in the tree's order (numpy reproduction of Taichi's walk)."""
    digits = [(a, c) for level in levels for a, c in sorted(level.items())]
    shape = [1] * ndim
    for a, c in digits:
        shape[a] *= c
    step = np.empty(shape, np.int64)
    for k, ds in enumerate(np.ndindex(*[c for _, c in digits])):
        pos = [0] * ndim
        for (a, c), d in zip(digits, ds):
            pos[a] = pos[a] * c + d
        step[tuple(pos)] = k
    return step


def _place(levels, x):
    node = fs.root
    for level in levels:
        axes = tuple(sorted(level))
        node = node.dense(AXES[axes], tuple(level[a] for a in axes))
    node.place(x)


@pytest.mark.parametrize("name", list(LAYOUTS))
def test_struct_for_visits_and_sums_in_the_layout_trees_order(name):
    fs.init(arch=fs.cpu, cpu_max_num_threads=1, fast_math=False)
    levels, ndim = LAYOUTS[name]
    x = fs.field(fs.f32)
    _place(levels, x)
    want = _tree_order(levels, ndim)
    rng = np.random.default_rng(3)
    vals = (rng.random(x.shape) * 10.0 ** rng.uniform(-3, 3, x.shape)).astype(np.float32)
    x.from_numpy(vals)
    seen = fs.field(fs.i32, shape=x.shape)
    n = fs.field(fs.i32, shape=())
    s = fs.field(fs.f32, shape=())

    @fs.kernel
    def visit():
        for I in fs.grouped(x):
            seen[I] = fs.atomic_add(n[None], 1)
            s[None] += x[I]

    visit()
    np.testing.assert_array_equal(seen.to_numpy(), want)
    # Taichi on one thread: one running f32 sum in the visiting order
    ordered = np.empty(vals.size, np.float32)
    ordered[want.ravel()] = vals.ravel()
    assert s[None] == np.cumsum(ordered, dtype=np.float32)[-1]


def test_offset_field_and_struct_field_follow_the_tree():
    fs.init(arch=fs.cpu, cpu_max_num_threads=1)
    levels = [{0: 2, 1: 2}, {0: 3, 1: 2}]
    x = fs.field(fs.i32)
    fs.root.dense(fs.ij, 2).dense(fs.ij, (3, 2)).place(x, offset=(-2, 5))
    st = fs.Struct.field({"a": fs.i32, "b": fs.f32})
    fs.root.dense(fs.ij, 2).dense(fs.ij, (3, 2)).place(st)
    z = fs.field(fs.i32)
    mid = fs.root.dense(fs.ij, 2).dense(fs.ij, (3, 2))
    mid.dense(fs.ij, 2).place(z)
    n = fs.field(fs.i32, shape=())

    @fs.kernel
    def visit():
        for i, j in x:
            x[i, j] = fs.atomic_add(n[None], 1)
        for i, j in st:
            st[i, j].a = fs.atomic_add(n[None], 1) - 24
        for i, j in mid:  # a node's loop: its own cells, in the tree's order above it
            z[i * 2, j * 2] = fs.atomic_add(n[None], 1) - 48

    visit()
    want = _tree_order(levels, 2)
    np.testing.assert_array_equal(x.to_numpy(), want)
    np.testing.assert_array_equal(st.a.to_numpy(), want)
    np.testing.assert_array_equal(z.to_numpy()[::2, ::2], want)


def test_gradient_through_a_tree_ordered_struct_for_on_a_tape():
    # the access rules accept the loop's tree-ordered indices as one element per iteration
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f64, needs_grad=True)
    y = fs.field(fs.f64, needs_grad=True)
    fs.root.dense(fs.ij, 4).dense(fs.ij, (8, 4)).place(x, y)
    fs.root.lazy_grad()
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    rng = np.random.default_rng(0)
    vals = rng.random(x.shape)
    x.from_numpy(vals)

    @fs.kernel
    def square():
        for i, j in x:
            y[i, j] = x[i, j] * x[i, j] + fs.sin(x[i, j])

    @fs.kernel
    def total():
        for i, j in y:
            loss[None] += y[i, j] * (i + 2 * j)

    @fs.kernel
    def both():  # a store and a sum in one tree-ordered loop
        for i, j in x:
            y[i, j] = x[i, j] * x[i, j] + fs.sin(x[i, j])
            loss[None] += y[i, j] * (i + 2 * j)

    w = np.add.outer(np.arange(32), 2 * np.arange(16))
    for kernels in ([square, total], [both]):
        with fs.ad.Tape(loss):
            for k in kernels:
                k()
        np.testing.assert_allclose(x.grad.to_numpy(), w * (2 * vals + np.cos(vals)), rtol=1e-12)


def test_a_loop_reading_cells_it_writes_elsewhere_runs_in_the_trees_order():
    # no atomics, but each cell reads its upper right neighbour, written before it row-major
    # but later in the tree's order where that neighbour is in the next block
    fs.init(arch=fs.cpu, cpu_max_num_threads=1)
    levels = [{0: 2, 1: 4}, {0: 4, 1: 2}]
    x = fs.field(fs.f32)
    _place(levels, x)

    @fs.kernel
    def sweep():
        for i, j in x:
            if i > 0 and j < 7:
                x[i, j] = x[i - 1, j + 1] * 0.5 + 1.0

    x.fill(1.0)
    sweep()
    step = _tree_order(levels, 2)
    want = np.ones(x.shape, np.float32)
    for k in range(step.size):
        i, j = np.argwhere(step == k)[0]
        if i > 0 and j < 7:
            want[i, j] = want[i - 1, j + 1] * np.float32(0.5) + np.float32(1.0)
    np.testing.assert_array_equal(x.to_numpy(), want)


def _index_ops(kernel):
    from fieldsim.ir.ir import Op, walk
    ir = next(iter(kernel._cache.values())).ir
    return sorted(s.args[1].attr for s in walk(ir.body)
                  if s.op in (Op.FLOORDIV, Op.MOD) and s.args[1].op == Op.CONST)


@pytest.mark.fieldsim_specific
def test_a_map_over_a_tree_layout_walks_its_row_major_storage():
    # each iteration touches its own cells only: any order gives the same, and row-major
    # streams fieldsim's row-major storage (the tree's order took 4x as long at 1024^2)
    fs.init(arch=fs.cpu)
    flat = fs.field(fs.f32, shape=(64, 32))
    x = fs.Vector.field(2, fs.f32)
    y = fs.field(fs.f32)
    fs.root.dense(fs.ij, (4, 2)).dense(fs.ij, 16).place(x, y, offset=(3, -5))

    @fs.kernel
    def scale_flat():
        for i, j in flat:
            flat[i, j] = flat[i, j] * 2.0 + i

    @fs.kernel
    def scale():
        for i, j in y:
            y[i, j] = y[i, j] * 2.0 + x[i, j][1] + i

    vals = np.arange(64 * 32, dtype=np.float32).reshape(64, 32)
    y.from_numpy(vals)
    x.from_numpy(np.stack([vals, -vals], axis=-1))
    scale()
    scale_flat()
    np.testing.assert_array_equal(y.to_numpy(), vals * 2 - vals + np.arange(3, 67)[:, None])
    assert _index_ops(scale) == _index_ops(scale_flat)


def test_a_fields_order_lays_its_axes_out_as_nested_dense_nodes():
    # Taichi's `order='ji'`: one dense node per axis, j outermost, so a struct-for walks j first
    fs.init(arch=fs.cpu, cpu_max_num_threads=1)
    x = fs.field(fs.i32, shape=(8, 4), order="ji", offset=(1, 0))
    v = fs.Vector.field(2, fs.f32, shape=(8, 4), order="ji")
    m = fs.Matrix.field(2, 2, fs.f32, shape=(8, 4), order="ij")
    n = fs.field(fs.i32, shape=())

    @fs.kernel
    def visit():
        for i, j in x:
            x[i, j] = fs.atomic_add(n[None], 1)
        for i, j in v:
            v[i, j][0] = fs.atomic_add(n[None], 1) - 32
        for i, j in m:
            m[i, j][1, 1] = fs.atomic_add(n[None], 1) - 64

    visit()
    want = _tree_order([{1: 4}, {0: 8}], 2)
    np.testing.assert_array_equal(x.to_numpy(), want)
    np.testing.assert_array_equal(v.to_numpy()[..., 0], want)
    np.testing.assert_array_equal(m.to_numpy()[..., 1, 1], np.arange(32).reshape(8, 4))
    assert x.shape == (8, 4) and x[1, 1] == 8
    for bad in ("jj", "ik", "i"):
        with pytest.raises(fs.FieldsimSyntaxError if hasattr(fs, "FieldsimSyntaxError") else SyntaxError):
            fs.field(fs.f32, shape=(8, 4), order=bad)


@pytest.mark.fieldsim_specific
def test_an_ordered_field_keeps_its_assigned_name():
    fs.init(arch=fs.cpu)
    grid = fs.field(fs.f32, shape=(4, 2), order="ji")
    assert grid.ir_name == "grid"


def test_a_serialized_loop_carrying_a_kernel_variable_keeps_the_tree_order():
    # `h = h * 7 + x` visits in the layout tree's order (Taichi's): the order is the result
    x = fs.field(fs.i32)
    fs.root.dense(fs.ij, 2).dense(fs.ij, 2).place(x)

    @fs.kernel
    def chain() -> fs.i64:
        h = fs.i64(0)
        fs.loop_config(serialize=True)
        for i, j in x:
            h = (h * 7 + x[i, j]) % 1000003
        return h

    x.from_numpy(np.arange(16, dtype=np.int32).reshape(4, 4))
    want = 0
    for bi, bj, i, j in np.ndindex(2, 2, 2, 2):
        want = (want * 7 + (bi * 2 + i) * 4 + bj * 2 + j) % 1000003
    assert chain() == want
