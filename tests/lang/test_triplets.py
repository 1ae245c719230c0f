"""The kernel side of sparse matrix builders (fieldsim/lang/triplets.py): `A[i, j] += v` from a
parallel loop, argument binding, overflow and misuse errors."""
import numpy as np
import pytest

import fieldsim as fs


def _fill_kernel():
    @fs.kernel
    def fill(A: fs.types.sparse_matrix_builder(), n: fs.i32, count: fs.i32):
        for t in range(count):  # many threads hit the same (row, col): duplicates must sum
            r = t % n
            c = (t * 7 + 3) % n
            A[r, c] += 0.25 * (t % 5) + 1.0
            A[c, c] -= 0.5

    return fill


def _expected(n, count):
    dense = np.zeros((n, n))
    t = np.arange(count)
    r, c = t % n, (t * 7 + 3) % n
    np.add.at(dense, (r, c), 0.25 * (t % 5) + 1.0)
    np.add.at(dense, (c, c), -0.5)
    return dense


def test_parallel_duplicates_sum_like_numpy(arch):
    fs.init(arch=arch)
    n, count = 37, 5000
    B = fs.linalg.SparseMatrixBuilder(n, n, max_num_triplets=2 * count)
    fill = _fill_kernel()
    fill(B, n, count)
    A = B.build()
    assert A.shape == (n, n)
    dense = np.array([[A[i, j] for j in range(n)] for i in range(n)])  # Taichi's API only
    np.testing.assert_allclose(dense, _expected(n, count), rtol=1e-6, atol=1e-4)


@pytest.mark.fieldsim_specific  # to_numpy(), num_triplets(), errors Taichi does not raise
def test_build_empties_the_builder_for_the_next_fill():
    fs.init(arch=fs.cpu)
    n, count = 10, 300
    B = fs.linalg.SparseMatrixBuilder(n, n, max_num_triplets=2 * count, dtype=fs.f64)
    fill = _fill_kernel()
    fill(B, n, count)
    first = B.build().to_numpy()
    assert B.num_triplets() == 0
    fill(B, n, count)  # the same kernel again: the same matrix, not twice it
    second = B.build()
    assert second.dtype is fs.f64 and second.to_numpy().dtype == np.float64
    np.testing.assert_array_equal(first, second.to_numpy())
    np.testing.assert_allclose(first, _expected(n, count), rtol=1e-12)


@pytest.mark.fieldsim_specific  # to_numpy(), num_triplets(), errors Taichi does not raise
def test_overflow_names_builder_kernel_and_line():
    fs.init(arch=fs.cpu)
    small = fs.linalg.SparseMatrixBuilder(4, 4, max_num_triplets=6)

    @fs.kernel
    def diag(A: fs.types.sparse_matrix_builder()):
        for i in range(10):
            A[i % 4, i % 4] += 1.0

    with pytest.raises(fs.FieldsimRuntimeError) as info:
        diag(small)
    msg = str(info.value)
    assert "'small'" in msg and "'diag'" in msg and "max_num_triplets=6" in msg
    assert "test_triplets.py" in msg and "A[i % 4, i % 4] += 1.0" in msg
    with pytest.raises(fs.FieldsimRuntimeError, match="max_num_triplets=6"):
        small.build()  # the dropped triplets are not silently missing from a matrix
    small.clear()
    assert small.build().to_numpy().sum() == 0


@pytest.mark.fieldsim_specific  # to_numpy(), num_triplets(), errors Taichi does not raise
def test_builder_reached_as_a_global_or_attribute():
    fs.init(arch=fs.cpu)
    G = fs.linalg.SparseMatrixBuilder(3, 3, max_num_triplets=9)

    @fs.data_oriented
    class Holder:
        def __init__(self):
            self.B = fs.linalg.SparseMatrixBuilder(3, 3, max_num_triplets=9)

        @fs.kernel
        def fill(self):
            for i in range(3):
                self.B[i, 2 - i] += 2.0
                G[i, i] += 1.0

    h = Holder()
    h.fill()
    np.testing.assert_array_equal(h.B.build().to_numpy(), 2.0 * np.eye(3)[::-1])
    np.testing.assert_array_equal(G.build().to_numpy(), np.eye(3))


@pytest.mark.fieldsim_specific  # to_numpy(), num_triplets(), errors Taichi does not raise
def test_misuse_is_a_compile_error():
    fs.init(arch=fs.cpu)
    B = fs.linalg.SparseMatrixBuilder(3, 3, max_num_triplets=9)
    out = fs.field(fs.f32, shape=())

    @fs.kernel
    def store(A: fs.types.sparse_matrix_builder()):
        A[0, 0] = 1.0

    @fs.kernel
    def read(A: fs.types.sparse_matrix_builder()):
        out[None] = A[0, 0]

    @fs.kernel
    def vector_value(A: fs.types.sparse_matrix_builder()):
        A[0, 0] += fs.Vector([1.0, 2.0])

    @fs.kernel
    def float_index(A: fs.types.sparse_matrix_builder()):
        A[0.5, 0] += 1.0

    with pytest.raises(fs.FieldsimSyntaxError, match="can only be accumulated") as info:
        store(B)
    assert "A[0, 0] = 1.0" in str(info.value)
    with pytest.raises(fs.FieldsimSyntaxError, match="can only be accumulated"):
        read(B)
    with pytest.raises(fs.FieldsimTypeError, match="needs a scalar v"):
        vector_value(B)
    with pytest.raises(fs.FieldsimTypeError, match="index must be an integer"):
        float_index(B)
    with pytest.raises(fs.FieldsimTypeError, match="expects a fs.linalg.SparseMatrixBuilder"):
        store(out)


@pytest.mark.fieldsim_specific  # to_numpy(), num_triplets(), errors Taichi does not raise
def test_entry_outside_the_matrix_is_reported_with_its_line():
    fs.init(arch=fs.cpu)
    B = fs.linalg.SparseMatrixBuilder(3, 3, max_num_triplets=9)

    @fs.kernel
    def bad(A: fs.types.sparse_matrix_builder()):
        for i in range(3):
            A[i, i + 1] += 1.0

    bad(B)
    with pytest.raises(fs.FieldsimRuntimeError, match=r"\(2, 3\), outside the matrix") as info:
        B.build()
    assert "A[i, i + 1] += 1.0" in str(info.value)


def test_print_triplets(capsys):
    fs.init(arch=fs.cpu)
    B = fs.linalg.SparseMatrixBuilder(2, 3, max_num_triplets=4)

    @fs.kernel
    def one(A: fs.types.sparse_matrix_builder()):
        A[1, 2] += 1.5

    one(B)
    B.print_triplets()
    assert capsys.readouterr().out == "n=2, m=3, num_triplets=1 (max=4)\n[1, 2] = 1.5\n"


@pytest.mark.fieldsim_specific  # Taichi's message differs
def test_refused_on_a_tape_allowed_under_no_grad():
    fs.init(arch=fs.cpu)
    x = fs.field(fs.f32, shape=3, needs_grad=True)
    loss = fs.field(fs.f32, shape=(), needs_grad=True)
    B = fs.linalg.SparseMatrixBuilder(3, 3, max_num_triplets=3)

    @fs.kernel
    def fill(A: fs.types.sparse_matrix_builder()):
        for i in range(3):
            A[i, i] += x[i]

    with pytest.raises(fs.FieldsimRuntimeError, match="not differentiable"):
        with fs.ad.Tape(loss):
            fill(B)
    x.fill(2.0)
    with fs.ad.Tape(loss):
        fs.ad.no_grad(fill)(B)
    assert B.build()[2, 2] == 2.0


def test_a_builder_made_per_step_reuses_the_compiled_kernel():
    # Taichi passes builders at run time; fieldsim compiles per builder storage, and a collected
    # builder's storage goes to the next one of the same size and dtype
    import gc

    from fieldsim.lang import runtime
    fs.init(arch=fs.cpu)
    fill = _fill_kernel()
    n, count = 6, 40
    compile_s = []
    for step in range(4):
        B = fs.linalg.SparseMatrixBuilder(n, n, max_num_triplets=2 * count)
        fill(B, n, count)
        if step == 2:  # a builder left unbuilt: its triplets must not reach the next one
            del B
            gc.collect()
            continue
        np.testing.assert_allclose(B.build().to_numpy(), _expected(n, count))
        compile_s.append(runtime.get().stats["compile_s"])
        del B
        gc.collect()
    assert compile_s[1] == compile_s[0] and compile_s[-1] == compile_s[0]  # compiled once
    # a builder of another size or dtype, or one alive at the same time, gets storage of its own
    live = fs.linalg.SparseMatrixBuilder(n, n, max_num_triplets=2 * count)
    other = fs.linalg.SparseMatrixBuilder(n, n, max_num_triplets=2 * count)
    small = fs.linalg.SparseMatrixBuilder(n, n, max_num_triplets=2 * count + 1, dtype=fs.f64)
    assert len({live.uid, other.uid, small.uid}) == 3
    fill(live, n, count)
    fill(other, n, count // 2)
    np.testing.assert_allclose(live.build().to_numpy(), _expected(n, count))
    np.testing.assert_allclose(other.build().to_numpy(), _expected(n, count // 2))
    fill(small, n, count)
    np.testing.assert_allclose(small.build().to_numpy(), _expected(n, count))


def test_subtracting_a_zero_stores_a_negative_zero_as_taichi():
    # Taichi inserts the triplet -v for `A[i, j] -= v`; `0 - v` would turn -= 0.0 into +0.0
    # (seen as H[0, 2] = 0.0 where Taichi prints -0.0 in a swarm solver's Hessian). Without fast
    # math, which would let LLVM fold 0 - v into -v.
    fs.init(arch=fs.cpu, fast_math=False)
    z = fs.field(fs.f32, shape=2)
    z.from_numpy(np.array([0.0, 2.5], np.float32))

    @fs.kernel
    def fill(A: fs.types.sparse_matrix_builder()):
        A[0, 1] -= z[0]
        A[1, 1] -= z[1]
        A[1, 0] -= -z[0]

    B = fs.linalg.SparseMatrixBuilder(2, 2, max_num_triplets=8)
    fill(B)
    A = B.build()
    assert np.signbit(A[0, 1]) and A[0, 1] == 0.0
    assert A[1, 1] == -2.5
    assert not np.signbit(A[1, 0])
