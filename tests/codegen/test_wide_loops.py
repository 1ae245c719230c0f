"""Loops whose trip count or indices pass 2^31 run every iteration with 64-bit indices (a range
with an i64 bound, a constant ndrange that large); loops known to be small keep 32-bit indices."""
import fieldsim as fs

BIG = 2**31 + 10


def test_range_with_an_i64_bound_runs_every_iteration():
    fs.init(arch=fs.cpu, offline_cache=False)
    c = fs.field(fs.i64, shape=3)

    @fs.kernel
    def count(n: fs.i64):
        for i in range(n):
            c[0] += 1

    @fs.kernel
    def last(n: fs.i64):
        for i in range(n - 3, n):
            fs.atomic_max(c[1], i)
            c[2] += 1

    count(BIG)
    last(BIG)
    assert c.to_numpy().tolist() == [BIG, BIG - 1, 3]


def test_constant_ndrange_past_2_31_runs_every_iteration():
    fs.init(arch=fs.cpu, offline_cache=False)
    c = fs.field(fs.i64, shape=3)

    @fs.kernel
    def count():
        for i, j in fs.ndrange((0, 2), (5, 2**31 + 5)):
            c[0] += 1

    @fs.kernel
    def indices():
        for i, j in fs.ndrange((0, 2), (2**31 + 2, 2**31 + 5)):
            fs.atomic_max(c[1], j)
            c[2] += i

    count()
    indices()
    assert c.to_numpy().tolist() == [2 * 2**31, 2**31 + 4, 3]


def test_small_loops_keep_32_bit_indices():
    fs.init(arch=fs.cpu, offline_cache=False)
    x = fs.field(fs.i32, shape=(4, 5))

    @fs.kernel
    def put(n: fs.i32):
        for i, j in x:
            x[i, j] = i * 10 + j
        for k in range(n):
            x[0, 0] += 0

    put(3)
    loops = [s for s in put._cache[next(iter(put._cache))].ir.body if s.op.name == "FOR"]
    assert loops and all(s.dtype is fs.i32 for s in loops)
    assert x[3, 4] == 34


def test_ndrange_with_empty_dimensions_runs_nothing():
    fs.init(arch=fs.cpu, offline_cache=False)

    @fs.kernel
    def count(i1: fs.i32, i2: fs.i32, j1: fs.i32, j2: fs.i32) -> fs.i32:
        n = 0
        for i, j in fs.ndrange((i1, i2), (j1, j2)):
            n += 1
        return n

    assert count(0, 3, 0, 4) == 12
    assert count(3, 0, 0, 4) == 0
    assert count(0, 3, 4, 0) == 0
    assert count(3, 0, 4, 0) == 0  # (-3) * (-4) must not become 12 iterations


def test_indices_past_2_31_reach_their_element():
    # np.zeros of 2 GiB is lazily mapped: only the pages written here are ever touched
    fs.init(arch=fs.cpu, offline_cache=False)
    n = 2**31 + 16
    x = fs.field(fs.u8, shape=n)

    @fs.kernel
    def put(i: fs.i64):
        x[2**31 + 5] = 7
        x[i] = 9
        for k in range(2**31 + 8, 2**31 + 11):
            x[k] = 3

    put(2**31 + 6)
    assert [x[2**31 + 5], x[2**31 + 6], x[2**31 + 9], x[0], x[5], x[6]] == [7, 9, 3, 0, 0, 0]


def test_debug_sees_a_64_bit_index_untruncated():
    import pytest
    fs.init(arch=fs.cpu, offline_cache=False, debug=True)
    x = fs.field(fs.i32, shape=4)

    @fs.kernel
    def put(i: fs.i64):
        x[i] = 1

    with pytest.raises(fs.FieldsimIndexError, match="4294967297"):
        put(2**32 + 1)  # truncated to i32 this would be index 1, in range
    assert not x.to_numpy().any()


def test_ndrange_refuses_float_and_malformed_bounds():
    import pytest
    fs.init(arch=fs.cpu, offline_cache=False)

    @fs.kernel
    def floats():
        for i in fs.ndrange((1.1, 10.5)):
            pass

    @fs.kernel
    def three():
        for i in fs.ndrange((1, 2, 3)):
            pass

    with pytest.raises(fs.FieldsimTypeError, match="integer scalar"):
        floats()
    with pytest.raises(fs.FieldsimSyntaxError, match=r"like \(begin, end\)"):
        three()
