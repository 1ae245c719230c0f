"""A struct-for over a field under pointer/bitmasked nodes tests each block's activity once and
runs an active block's cells (`sparse_kernel.SparseBlocks`): the same cells, values and
gradients as one test per element, in Taichi's block-major order."""
import numpy as np
import pytest

import fieldsim as fs
from fieldsim.lang import sparse_kernel


def _active_mask(shape, block, active_blocks):
    mask = np.zeros(shape, bool)
    for b in active_blocks:
        sl = tuple(slice(i * n, (i + 1) * n) for i, n in zip(b, block))
        mask[sl] = True
    return mask


@pytest.mark.parametrize("kind", ["pointer", "bitmasked"])
@pytest.mark.parametrize("layout", ["one", "two", "odd"])
def test_blocked_struct_for_visits_the_active_blocks_cells(kind, layout):
    x = fs.field(fs.i32)
    y = fs.field(fs.i32, shape=(48, 40))
    if layout == "one":  # 6 x 5 blocks of 8 x 8
        getattr(fs.root, kind)(fs.ij, (6, 5)).dense(fs.ij, 8).place(x, offset=(-7, 3))
        block = (8, 8)
    elif layout == "two":  # a pointer grid of sparse 4 x 4 blocks of 4 x 5 cells
        top = fs.root.pointer(fs.ij, (3, 2))
        getattr(top, kind)(fs.ij, (4, 4)).dense(fs.ij, (4, 5)).place(x, offset=(-7, 3))
        block = (4, 5)
    else:  # blocks of 3 x 10 cells: chunks of a non-power-of-two size
        getattr(fs.root, kind)(fs.ij, (16, 4)).dense(fs.ij, (3, 10)).place(x, offset=(-7, 3))
        block = (3, 10)
    assert sparse_kernel.sparse_blocks(x) is not None
    rng = np.random.default_rng(1)
    cells = rng.integers(0, (48, 40), size=(9, 2))

    @fs.kernel
    def touch(i: fs.i32, j: fs.i32):
        x[i - 7, j + 3] = i * 100 + j + 1

    for i, j in cells:
        touch(int(i), int(j))

    @fs.kernel
    def copy() -> fs.i32:
        n = 0
        for i, j in x:
            y[i + 7, j - 3] = x[i, j] + 1
            n += 1
        return n

    mask = _active_mask((48, 40), block, {(i // block[0], j // block[1]) for i, j in cells})
    assert copy() == mask.sum()
    want = np.zeros((48, 40), np.int32)
    want[mask] = 1
    for i, j in cells:
        want[i, j] = i * 100 + j + 2
    np.testing.assert_array_equal(y.to_numpy(), want)


def test_blocked_struct_for_runs_blocks_in_order_when_serialized():
    x = fs.field(fs.i32)
    fs.root.pointer(fs.ij, 2).dense(fs.ij, 2).place(x)
    order = fs.field(fs.i32, shape=16)
    n = fs.field(fs.i32, shape=())

    @fs.kernel
    def fill_all():
        for i, j in fs.ndrange(4, 4):
            x[i, j] = 1

    @fs.kernel
    def visit():
        fs.loop_config(serialize=True)
        for i, j in x:
            order[n[None]] = i * 4 + j
            n[None] += 1

    fill_all()
    visit()
    # block (0, 0), then (0, 1), (1, 0), (1, 1), each row-major: Taichi's order
    assert order.to_numpy().tolist() == [0, 1, 4, 5, 2, 3, 6, 7, 8, 9, 12, 13, 10, 11, 14, 15]


def test_blocked_struct_for_over_a_3d_field_with_an_axis_the_node_lacks():
    x = fs.Vector.field(2, fs.f32)
    fs.root.pointer(fs.i, 4).dense(fs.ijk, (4, 3, 5)).place(x)
    s = fs.field(fs.f32, shape=())

    @fs.kernel
    def touch():
        x[5, 1, 2] = [1.0, 2.0]
        x[14, 2, 4] = [3.0, 4.0]

    @fs.kernel
    def total() -> fs.i32:
        n = 0
        for I in fs.grouped(x):
            s[None] += x[I].sum() + I[0] * 0.001
            n += 1
        return n

    touch()
    assert total() == 2 * 4 * 3 * 5
    want = 10.0 + 0.001 * 3 * 5 * (sum(range(4, 8)) + sum(range(12, 16)))
    assert abs(s[None] - want) < 1e-4


@pytest.mark.parametrize("layout", ["blocks", "blocks with an offset", "one cell a block"])
def test_gradient_through_a_sparse_struct_for_on_a_tape(layout):
    # the body's stores into a field of the same layout need not activate the cell the loop
    # found active: that activation wrote the mask element the loop read, which the Tape's
    # access rules refused (rule 1), with one cell a block too
    x = fs.field(fs.f64, needs_grad=True)
    y = fs.field(fs.f64, needs_grad=True)
    off = -40 if layout == "blocks with an offset" else 0
    if layout == "one cell a block":
        fs.root.pointer(fs.i, 128).place(x, y)
        assert sparse_kernel.sparse_blocks(x) is None
    else:
        fs.root.pointer(fs.i, 8).dense(fs.i, 16).place(x, y, offset=off)
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    rng = np.random.default_rng(3)
    idx = [3 + off, 17 + off, 18 + off, 100 + off]
    vals = rng.normal(size=len(idx))

    @fs.kernel
    def seed(i: fs.i32, v: fs.f64):
        x[i] = v

    @fs.kernel
    def step():
        for i in x:
            y[i] = fs.sin(x[i]) * x[i]

    @fs.kernel
    def reduce():
        for i in y:
            loss[None] += y[i] ** 2

    for i, v in zip(idx, vals):
        seed(i, float(v))
    with fs.ad.Tape(loss):
        step()
        reduce()
    g = x.grad.to_numpy()
    xs = x.to_numpy()
    f = np.sin(xs) * xs
    want = 2 * f * (np.cos(xs) * xs + np.sin(xs))
    np.testing.assert_allclose(g, want, rtol=1e-12, atol=1e-14)
    assert np.count_nonzero(xs) == len(idx)


def test_a_sum_over_blocks_adds_block_sums_in_block_order():
    # Taichi's order on one thread: each leaf block summed afresh, the block sums added in
    # block order; an f32 sum of values of mixed magnitude shows any other order
    fs.init(arch=fs.cpu, cpu_max_num_threads=1, fast_math=False)
    x = fs.field(fs.f32)
    fs.root.pointer(fs.ij, 8).dense(fs.ij, 4).place(x)
    s = fs.field(fs.f32, shape=())
    rng = np.random.default_rng(0)
    vals = (rng.standard_normal((32, 32)) * 10.0 ** rng.integers(-4, 5, (32, 32))).astype(np.float32)
    blocks = [(bi, bj) for bi in range(8) for bj in range(8) if (bi + bj) % 3 != 0]
    for bi, bj in blocks:
        x[bi * 4, bj * 4] = 0.0  # activates the block

    @fs.kernel
    def fill(a: fs.types.ndarray()):
        for i, j in x:
            x[i, j] = a[i, j]

    @fs.kernel
    def total():
        s[None] = 0
        for i, j in x:
            s[None] += x[i, j]

    fill(vals)
    total()
    f = np.float32
    want = f(0)
    for bi, bj in blocks:
        block = f(0)
        for v in vals[bi * 4:bi * 4 + 4, bj * 4:bj * 4 + 4].ravel():
            block = f(block + v)
        want = f(want + block)
    assert s[None] == want
    flat = f(0)
    for v in vals[x.to_numpy() != 0]:
        flat = f(flat + v)
    assert flat != want  # the values tell the orders apart


def test_a_field_of_other_extents_under_the_same_block_is_still_activated():
    # y's cell of the block node at index i is i // 2, x's i // 4: one index, other cells
    x = fs.field(fs.f32)
    y = fs.field(fs.f32)
    blk = fs.root.pointer(fs.i, 4)
    blk.dense(fs.i, 4).place(x)
    blk.dense(fs.i, 2).place(y)

    @fs.kernel
    def touch():
        x[5] = 1.0

    @fs.kernel
    def spread():
        for i in x:
            if i < 8:  # (y's blocks 2 and 3 are x's too: x may visit them once active)
                y[i] = 5.0  # x's block 1 holds i = 4..7: y's blocks 2 and 3

    touch()
    spread()
    assert [fs.is_active(blk, [b]) for b in range(4)] == [0, 1, 1, 1]
    assert y.to_numpy().tolist() == [0.0, 0.0, 0.0, 0.0, 5.0, 5.0, 5.0, 5.0]
def _visit_in_order(x, side, vals):
    """Writes the nonzero `vals` into the side x side field `x` (activating their cells), then
    a struct-for records the cells it visits, in order, and sums them: (visited cell numbers
    i * side + j, the f32 sum)."""
    seen = fs.field(fs.i32, shape=side * side)
    n = fs.field(fs.i32, shape=())
    s = fs.field(fs.f32, shape=())

    @fs.kernel
    def fill(a: fs.types.ndarray()):
        for i, j in fs.ndrange(side, side):
            if a[i, j] != 0:
                x[i, j] = a[i, j]

    @fs.kernel
    def visit():
        for i, j in x:
            seen[fs.atomic_add(n[None], 1)] = i * side + j
            s[None] += x[i, j]

    fill(vals)
    visit()
    return seen.to_numpy()[:n[None]].tolist(), s[None]


def _taichi_order(levels, leaf):
    """Cells in Taichi's struct-for order: every level's cells row-major, level by level from
    the root (`levels`: each level's per-axis cell counts, the leaf node's last)."""
    order = [(0, 0)]
    for sizes in levels + [leaf]:
        order = [(i * sizes[0] + a, j * sizes[1] + b) for i, j in order
                 for a in range(sizes[0]) for b in range(sizes[1])]
    return order


@pytest.mark.parametrize("layout", ["pointer.pointer.dense", "pointer.bitmasked",
                                    "dense.pointer.dense", "pointer.bitmasked.dense",
                                    "pointer.dense.dense", "pointer.dense"])
def test_struct_for_visits_and_sums_in_taichis_order_under_every_level(layout):
    # Taichi (one thread) walks the layout tree level by level, a container of the leaf node
    # at a time, and starts a thread-local sum afresh every part of a container, a part being
    # at most as many cells as the node above the leaf has a container, and at most 128
    # (measured on Taichi 1.7.4: a 4 x 4 block under a 2 x 2 pointer sums 4 cells at a time)
    fs.init(arch=fs.cpu, cpu_max_num_threads=1, fast_math=False)
    kinds = layout.split(".")
    sizes = {"pointer.pointer.dense": [2, 4, 4], "pointer.bitmasked": [4, 4],
             "dense.pointer.dense": [2, 2, 4], "pointer.bitmasked.dense": [2, 2, 4],
             "pointer.dense.dense": [2, 2, 4], "pointer.dense": [16, 16]}[layout]
    x = fs.field(fs.f32)
    node = fs.root
    for kind, n in zip(kinds, sizes):
        node = getattr(node, kind)(fs.ij, n)
    node.place(x)
    side = int(np.prod(sizes))
    order = _taichi_order([(n, n) for n in sizes[:-1]], (sizes[-1], sizes[-1]))
    rng = np.random.default_rng(5)
    vals = (rng.standard_normal((side, side)) * 10.0 ** rng.integers(-4, 5, (side, side))).astype(np.float32)
    seen, total = _visit_in_order(x, side, vals)
    assert seen == [i * side + j for i, j in order]
    leaf, parent = sizes[-1] ** 2, sizes[-2] ** 2
    part = min(leaf, parent, 128)  # Taichi's parts are at most 128 cells
    f = np.float32
    want = f(0)
    for p in range(0, len(order), part):
        acc = f(0)
        for i, j in order[p:p + part]:
            acc = f(acc + vals[i, j])
        want = f(want + acc)
    assert total == want


def test_a_blocks_parts_run_inside_its_iteration():
    # a mostly inactive 4096^2 grid of 16 x 16 blocks under an 8 x 8 pointer: Taichi's
    # 64-cell parts run as a serial loop inside the block's iteration, so each block's flags are
    # tested once (as parallel iterations of their own, the struct-for took 3.5 ms, Taichi 0.95)
    x = fs.field(fs.f32)
    fs.root.pointer(fs.ij, 32).pointer(fs.ij, 8).dense(fs.ij, 16).place(x)
    blocks = sparse_kernel.sparse_blocks(x)
    assert (blocks.total, blocks.part_count, blocks.inner) == (256 * 256, 4, [4, 16])


@pytest.mark.parametrize("layout, visits", [("pointer.dense", 8), ("pointer.pointer.dense", 8),
                                            ("pointer.bitmasked", 5), ("bitmasked", 61)])
def test_a_struct_for_skips_blocks_its_own_body_activates(layout, visits):
    # Taichi lists the active blocks before the loop runs: a body activating later blocks does
    # not reach them in that launch (a bitmasked leaf's cells are tested as the loop reaches
    # them, so a lone bitmasked node grows through its one container); measured on Taichi
    # 1.7.4 with one thread: 8, 8, 5 and 61 visits, fieldsim visited 64, 64, 61, 61
    fs.init(arch=fs.cpu, cpu_max_num_threads=1)
    x = fs.field(fs.i32)
    node = fs.root
    for kind, n in zip(layout.split("."), {"pointer.dense": [8, 8], "pointer.bitmasked": [8, 8],
                                           "pointer.pointer.dense": [4, 2, 8], "bitmasked": [64]}[layout]):
        node = getattr(node, kind)(fs.i, n)
    node.place(x)
    n = fs.field(fs.i32, shape=())

    @fs.kernel
    def grow():
        for i in x:
            n[None] += 1
            if i + 1 < 64:
                x[i + 1] = 1
            if i + 9 < 64:
                x[i + 9] = 1

    x[3] = 1
    grow()
    assert n[None] == visits
    assert (sparse_kernel.sparse_blocks(x) is None) == (layout == "bitmasked")


def test_a_listing_struct_for_lists_again_in_its_adjoint():
    # the list a launch leaves is the last launch's: the adjoint makes its own before the
    # loop's adjoint (the listing task, stores and all), and the primal's listing task has no
    # adjoint of its own
    from support.ir_kit import compiled_ir

    from fieldsim.ad.reverse import make_adjoint
    from fieldsim.ir.ir import Op, walk

    x = fs.field(fs.f64, needs_grad=True)
    fs.root.pointer(fs.i, 8).dense(fs.i, 8).place(x)

    @fs.kernel
    def grow():
        for i in x:
            if i + 8 < 64:
                x[i + 8] += x[i] * 2.0

    primal = compiled_ir(grow)
    tasks = [s for s in primal.body if s.op == Op.FOR]
    assert [t.attr.listing for t in tasks] == [True, False]
    adjoint = [s for s in make_adjoint(primal).body if s.op == Op.FOR]
    assert [(t.attr.listing, t.attr.parallel) for t in adjoint] == [(True, False), (False, True)]
    stores = [s for s in walk(adjoint[0].body) if s.op == Op.STORE]
    assert {s.field.role for s in stores} == {"listing"} and len(stores) == 3



def test_a_kernel_fill_of_a_blocked_field_writes_its_active_cells():
    v = fs.Vector.field(2, fs.f32)
    fs.root.pointer(fs.ij, (3, 4)).pointer(fs.ij, 2).dense(fs.ij, (2, 3)).place(v, offset=(4, -9))
    for i, j in [(4, -9), (11, 5)]:
        v[i, j] = [7.0, 7.0]  # storage (0, 0) and (7, 14): leaf blocks (0, 0) and (3, 4)
    x = fs.field(fs.f32, shape=())
    x[None] = 1.5

    @fs.kernel
    def fill():
        w = fs.Vector([x[None], -x[None]])
        v.fill(w)

    assert sparse_kernel.sparse_blocks(v) is not None
    fill()
    active = np.zeros((12, 24), bool)
    active[0:2, 0:3] = active[6:8, 12:15] = True
    got = v.to_numpy()
    np.testing.assert_array_equal(got[active], np.tile([1.5, -1.5], (12, 1)))
    assert not got[~active].any()


@pytest.fixture
def skip_top(monkeypatch):
    """Struct-fors over small trees walk their top node's cells too (by default only trees of
    more than LIST_MAX blocks do)."""
    monkeypatch.setattr(sparse_kernel, "LIST_MAX", 0)


@pytest.mark.parametrize("layout, sizes", [("pointer.pointer.dense", [4, 2, 4]),
                                           ("pointer.pointer.dense", [4, 4, 2]),
                                           ("pointer.bitmasked.dense", [2, 2, 4]),
                                           ("pointer.pointer.bitmasked", [2, 2, 4])])
def test_a_walk_of_the_top_nodes_cells_keeps_taichis_order_and_sums(skip_top, layout, sizes):
    # a 4096^3 grid under two pointer levels has 2^30 blocks: the struct-for runs over the
    # top node's cells and tests each once, not each block under it (9.4 s a sum with 3 cells
    # active, Taichi 0.44 s). Visits and part sums stay Taichi's, over the active cells only.
    fs.init(arch=fs.cpu, cpu_max_num_threads=1, fast_math=False)
    kinds = layout.split(".")
    part = min(sizes[-1] ** 2, sizes[-2] ** 2, 128)  # as in the test above
    x = fs.field(fs.f32)
    node = fs.root
    for kind, n in zip(kinds, sizes):
        node = getattr(node, kind)(fs.ij, n)
    node.place(x)
    blocks = sparse_kernel.sparse_blocks(x)
    assert blocks.skip_top and blocks.loop_total == sizes[0] ** 2
    side = int(np.prod(sizes))
    order = _taichi_order([(n, n) for n in sizes[:-1]], (sizes[-1], sizes[-1]))
    top = side // sizes[0]
    rng = np.random.default_rng(7)
    on = rng.random((sizes[0], sizes[0])) < 0.5
    on[0, 1] = True
    on[1, 0] = False
    vals = (rng.standard_normal((side, side)) * 10.0 ** rng.integers(-4, 5, (side, side))).astype(np.float32)
    vals[~np.kron(on, np.ones((top, top), bool))] = 0
    seen, total = _visit_in_order(x, side, vals)
    active = np.zeros((side, side), bool)
    for i, j in zip(*np.nonzero(vals)):
        b = sizes[-1]
        active[i // b * b:(i // b + 1) * b, j // b * b:(j // b + 1) * b] = True  # whole leaf blocks
    if kinds[-1] == "bitmasked":  # a bitmasked leaf's cells are active one by one
        active = vals != 0
    want_order = [(i, j) for i, j in order if active[i, j]]
    assert seen == [i * side + j for i, j in want_order]
    f = np.float32
    want = f(0)
    for block in range(0, len(order), sizes[-1] ** 2):  # parts of each visited block
        cells = [(i, j) for i, j in order[block:block + sizes[-1] ** 2] if active[i, j]]
        for p in range(0, sizes[-1] ** 2, part):
            part_cells = [c for c in order[block + p:block + p + part] if c in set(cells)]
            if not part_cells:
                continue
            acc = f(0)
            for i, j in part_cells:
                acc = f(acc + vals[i, j])
            want = f(want + acc)
    assert total == want


def test_a_walk_of_the_top_nodes_cells_on_a_tape_and_in_a_fill(skip_top):
    x = fs.field(fs.f64, needs_grad=True)
    fs.root.pointer(fs.ij, 4).pointer(fs.ij, 2).dense(fs.ij, 4).place(x, x.grad)
    assert sparse_kernel.sparse_blocks(x).skip_top
    loss = fs.field(fs.f64, shape=(), needs_grad=True)
    pts = [(0, 1), (5, 30), (6, 31), (20, 3)]
    for k, (i, j) in enumerate(pts):
        x[i, j] = 0.5 + k

    @fs.kernel
    def reduce():
        for i, j in x:
            loss[None] += fs.sin(x[i, j]) * x[i, j]

    with fs.ad.Tape(loss):
        reduce()
    xs = x.to_numpy()
    np.testing.assert_allclose(x.grad.to_numpy(), np.cos(xs) * xs + np.sin(xs), rtol=1e-12)

    @fs.kernel
    def refill():
        x.fill(2.0)

    refill()
    got = x.to_numpy()
    live = np.zeros_like(got, bool)
    for i, j in pts:
        live[i // 4 * 4:i // 4 * 4 + 4, j // 4 * 4:j // 4 * 4 + 4] = True
    np.testing.assert_array_equal(got, np.where(live, 2.0, 0.0))
