"""A struct-for over a field under a `dynamic` node runs over each cell's list up to its
length, as Taichi does: the cells in parallel, a serial loop per list. It tested every slot of
the dynamic axis (taichi_elements' particle lists, `pointer(ij, 256).dynamic(k, 2**20)`: 29 s
for 100 particles where Taichi takes 23 ms). Expected values are computed in Python."""
import numpy as np
from support.ir_kit import compiled_ir

import fieldsim as fs
from fieldsim.ir.ir import Op, walk


def _inner_loops(kernel, *args):
    return [s for s in walk(compiled_ir(kernel, *args).body) if s.op == Op.FOR and not s.attr.parallel]


def test_lists_under_pointer_cells_are_visited_up_to_their_lengths():
    fs.init(arch=fs.cpu)
    pid = fs.field(fs.i32)
    cells = fs.root.pointer(fs.ij, 64)
    cells.dynamic(fs.k, 1 << 20, chunk_size=1024).place(pid)
    total = fs.field(fs.i64, shape=())
    seen = fs.field(fs.i32, shape=(64, 64, 8))

    @fs.kernel
    def fill(n: fs.i32):
        for p in range(n):
            fs.append(pid.parent(), [p % 5, p % 3], p)

    @fs.kernel
    def visit():
        for I in fs.grouped(pid):
            total[None] += pid[I] * (I[0] + 10 * I[1])
            seen[I] += 1

    fill(37)
    visit()
    lists = {}
    for p in range(37):
        lists.setdefault((p % 5, p % 3), []).append(p)
    assert total[None] == sum(p * (i + 10 * j) for (i, j), ps in lists.items() for p in ps)
    want = np.zeros((64, 64, 8), np.int32)
    for (i, j), ps in lists.items():
        want[i, j, :len(ps)] = 1
    np.testing.assert_array_equal(seen.to_numpy(), want)
    (inner,) = _inner_loops(visit)
    bound = inner.args[1]  # the list's length, at most its capacity
    assert bound.op == Op.MIN and bound.args[0].op == Op.LOAD


def test_a_dense_parent_under_a_pointer_and_deactivated_cells():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32)
    block = fs.root.pointer(fs.i, 4)
    block.dense(fs.i, 2).dynamic(fs.j, 8, chunk_size=4).place(x)
    out = fs.field(fs.f32, shape=(8, 16))

    @fs.kernel
    def fill():
        for i in range(8):
            for k in range(i + 3):  # rows 6 and 7 append past their 8 slots
                fs.append(x.parent(), i, fs.cast(i * 100 + k, fs.f32))

    @fs.kernel
    def copy():
        for i, j in x:
            out[i, j] = x[i, j] + 0.5

    fill()
    fs.deactivate(block, [1])  # pointer cell 1: rows 2 and 3
    copy()
    want = np.zeros((8, 16), np.float32)
    for i in range(8):
        if i in (2, 3):
            continue
        for k in range(min(i + 3, 8)):  # a list's length counts every append, stored or not
            want[i, k] = i * 100 + k + 0.5
    np.testing.assert_array_equal(out.to_numpy(), want)


def test_gradients_through_a_struct_for_over_lists():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, needs_grad=True)
    fs.root.dense(fs.i, 3).dynamic(fs.j, 1 << 16, chunk_size=64).place(x, x.grad)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)

    @fs.kernel
    def fill():
        for i in range(3):
            for k in range(2 * i + 1):
                fs.append(x.parent(), i, 0.25 * (k + 1) + i)

    @fs.kernel
    def energy():
        for i, j in x:
            loss[None] += (i + 1) * x[i, j] ** 2

    fill()
    with fs.ad.Tape(loss=loss):
        energy()
    for i in range(3):
        for k in range(2 * i + 1):
            v = 0.25 * (k + 1) + i
            assert abs(x.grad[i, k] - 2 * (i + 1) * v) < 1e-5
    assert x.grad[0, 1] == 0.0 and x.grad[2, 5] == 0.0


def _row_lengths(field, rows):
    @fs.kernel
    def lengths(i: fs.i32) -> fs.i32:
        return field[i].length()
    return [lengths(i) for i in range(rows)]


def test_elements_appended_ahead_during_the_loop_are_not_visited():
    # Taichi lists each list's length at launch: rows of 1, 3, 5, 7 elements, each visit
    # appending three to the next row, make 16 visits and each row grows by 3 per visit
    # of the row before it
    fs.init(arch=fs.cpu)
    x = fs.field(fs.i32)
    fs.root.dense(fs.i, 4).dynamic(fs.j, 64, chunk_size=2).place(x)
    seen = fs.field(fs.i32, shape=(4, 64))

    @fs.kernel
    def seed():
        for i in range(4):
            for j in range(2 * i + 1):
                x[i].append(j)

    @fs.kernel
    def visit():
        for i, j in x:
            seen[i, j] += 1
            for q in range(3):
                x[(i + 1) % 4].append(q)

    seed()
    visit()
    launch = [2 * i + 1 for i in range(4)]
    expected = np.zeros((4, 64), np.int32)
    for i, n in enumerate(launch):
        expected[i, :n] = 1
    assert (seen.to_numpy() == expected).all()
    assert _row_lengths(x, 4) == [n + 3 * launch[i - 1] for i, n in enumerate(launch)]


def test_rows_activated_or_cleared_during_the_loop_keep_their_launch_lists():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.i32)
    fs.root.pointer(fs.i, 4).dynamic(fs.j, 32, chunk_size=4).place(x)
    seen = fs.field(fs.i32, shape=(4, 32))

    @fs.kernel
    def seed():
        for h in range(2):
            for j in range(2 * h + 2):
                x[2 * h].append(j)

    @fs.kernel
    def visit():
        for i, j in x:
            seen[i, j] += 1
            x[(i + 1) % 4].append(j)  # activates the inactive rows 1 and 3
            x[i, j + 10] = 3  # a store far along its own row lengthens it

    seed()
    visit()
    assert seen.to_numpy().sum(axis=1).tolist() == [2, 0, 4, 0]

    @fs.kernel
    def clear_ahead():
        for i, j in x:
            seen[i, j] += 1
            if i == 0:
                fs.deactivate(x.parent(), [2])

    seen.fill(0)
    clear_ahead()  # row 2 (14 long at launch) is still visited, as Taichi's listing is
    assert seen.to_numpy().sum(axis=1).tolist() == [12, 2, 14, 4]


def test_an_ordinary_loop_over_lists_makes_no_listing():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32)
    fs.root.dense(fs.i, 8).dynamic(fs.j, 64).place(x)
    s = fs.field(fs.f32, shape=())

    @fs.kernel
    def total():
        for i, j in x:
            s[None] += x[i, j]

    assert not [s for s in walk(compiled_ir(total).body) if s.op == Op.FOR and s.attr.listing]


def _rows_over_the_node(parent):
    """Rows of 2, 3, 4 elements under `parent`, a counter, and kernels whose struct-for runs
    over the dynamic node itself (`for i, j in x.parent()`)."""
    fs.init(arch=fs.cpu)
    x = fs.field(fs.i32)
    getattr(fs.root, parent)(fs.i, 3).dynamic(fs.j, 16, chunk_size=4).place(x)
    visits = fs.field(fs.i32, shape=())

    @fs.kernel
    def fill():
        for i in range(3):
            for k in range(i + 2):
                fs.append(x.parent(), i, k)

    @fs.kernel
    def append_to_next():
        for i, j in x.parent():
            visits[None] += 1
            if i < 2:
                fs.append(x.parent(), i + 1, 100 + j)

    @fs.kernel
    def clear_own_row():
        for i, j in x.parent():
            visits[None] += 1
            if j == 0:
                fs.deactivate(x.parent(), [i])

    @fs.kernel
    def lengths() -> fs.i32:
        s = 0
        for i in range(3):
            s = s * 100 + fs.length(x.parent(), i)
        return s

    fill()
    return visits, append_to_next, clear_own_row, lengths


def test_a_struct_for_over_the_dynamic_node_visits_the_lists_as_listed_at_launch():
    # Taichi 1.7.4 lists a struct-for over the dynamic node as one over its field: each row up
    # to its length at launch (9 visits here; the rows then hold 2, 3 + 2, 4 + 3). fieldsim
    # walked every slot, testing activity as it went: 16 visits, and 3 where rows clear
    for parent in ("dense", "pointer", "bitmasked"):
        visits, append_to_next, _, lengths = _rows_over_the_node(parent)
        append_to_next()
        assert (visits[None], lengths()) == (2 + 3 + 4, 2 * 10000 + 5 * 100 + 7), parent
        visits, _, clear_own_row, lengths = _rows_over_the_node(parent)
        clear_own_row()
        assert (visits[None], lengths()) == (2 + 3 + 4, 0), parent
