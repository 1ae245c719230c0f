"""Atomic operations: `+=` on fields from many threads, fs.atomic_* returning the old value."""
import numpy as np
import pytest

import fieldsim as fs


def test_histogram_int_counts_exact():
    n, bins = 100_000, 17
    data = np.random.default_rng(5).integers(0, bins, n).astype(np.int32)
    x = fs.field(fs.i32, shape=n)
    hist = fs.field(fs.i32, shape=bins)
    x.from_numpy(data)

    @fs.kernel
    def k():
        for i in x:
            hist[x[i]] += 1

    k()
    np.testing.assert_array_equal(hist.to_numpy(), np.bincount(data, minlength=bins))


@pytest.mark.parametrize("dt", [fs.f32, fs.f64], ids=["f32", "f64"])
def test_float_atomic_add_sum(dt):
    n = 50_000
    total = fs.field(dt, shape=())
    sub = fs.field(dt, shape=())

    @fs.kernel
    def k():
        for i in range(n):
            total[None] += 0.5  # exactly representable, so the sum is exact in any order
            sub[None] -= 0.25

    k()
    assert total[None] == n * 0.5
    assert sub[None] == -n * 0.25


def test_atomic_add_into_vector_field_component():
    n = 10_000
    acc = fs.Vector.field(2, fs.i32, shape=4)

    @fs.kernel
    def k():
        for i in range(n):
            acc[i % 4] += fs.Vector([1, i % 3])

    k()
    ref = np.zeros((4, 2), np.int64)
    for i in range(n):
        ref[i % 4] += [1, i % 3]
    np.testing.assert_array_equal(acc.to_numpy(), ref)


def test_atomic_add_returns_old_value_unique_slots():
    n = 20_000
    counter = fs.field(fs.i32, shape=())
    slot = fs.field(fs.i32, shape=n)
    owner = fs.field(fs.i32, shape=n)

    @fs.kernel
    def k():
        for i in range(n):
            if i % 3 != 0:
                s = fs.atomic_add(counter[None], 1)
                slot[i] = s
                owner[s] = i

    k()
    m = sum(1 for i in range(n) if i % 3 != 0)
    assert counter[None] == m
    s = slot.to_numpy()
    mask = np.arange(n) % 3 != 0
    used = s[mask]
    assert len(np.unique(used)) == m  # every allocated slot is distinct
    assert used.min() == 0 and used.max() == m - 1
    # the owner table round-trips
    np.testing.assert_array_equal(owner.to_numpy()[used], np.arange(n)[mask])


def test_atomic_ops_old_values_single_thread():
    r = fs.field(fs.i32, shape=16)
    a = fs.field(fs.i32, shape=8)

    @fs.kernel
    def k():
        a[0] = 10
        r[0] = fs.atomic_add(a[0], 5)
        r[1] = a[0]
        a[1] = 10
        r[2] = fs.atomic_sub(a[1], 3)
        r[3] = a[1]
        a[2] = 10
        r[4] = fs.atomic_min(a[2], 4)
        r[5] = a[2]
        a[3] = 10
        r[6] = fs.atomic_max(a[3], 40)
        r[7] = a[3]
        a[4] = 0b1100
        r[8] = fs.atomic_and(a[4], 0b1010)
        r[9] = a[4]
        a[5] = 0b1100
        r[10] = fs.atomic_or(a[5], 0b1010)
        r[11] = a[5]
        a[6] = 0b1100
        r[12] = fs.atomic_xor(a[6], 0b1010)
        r[13] = a[6]
        a[7] = 3
        r[14] = fs.atomic_max(a[7], -5)  # no change
        r[15] = a[7]

    k()
    np.testing.assert_array_equal(
        r.to_numpy(),
        [10, 15, 10, 7, 10, 4, 10, 40, 0b1100, 0b1000, 0b1100, 0b1110, 0b1100, 0b0110, 3, 3],
    )


def test_atomic_min_max_many_threads():
    n = 50_000
    data = np.random.default_rng(7).standard_normal(n).astype(np.float32)
    x = fs.field(fs.f32, shape=n)
    lo = fs.field(fs.f32, shape=())
    hi = fs.field(fs.f32, shape=())
    ilo = fs.field(fs.i32, shape=())
    x.from_numpy(data)
    lo[None] = 1e30
    hi[None] = -1e30
    ilo[None] = 2**31 - 1

    @fs.kernel
    def k():
        for i in x:
            fs.atomic_min(lo[None], x[i])
            fs.atomic_max(hi[None], x[i])
            fs.atomic_min(ilo[None], (i * 7919) % n)

    k()
    assert lo[None] == data.min()
    assert hi[None] == data.max()
    assert ilo[None] == 0


def test_atomic_bitwise_many_threads():
    n = 31
    orr = fs.field(fs.i32, shape=())
    andr = fs.field(fs.i32, shape=())
    xorr = fs.field(fs.i32, shape=())
    andr[None] = -1

    @fs.kernel
    def k():
        for i in range(n):
            fs.atomic_or(orr[None], 1 << i)
            fs.atomic_and(andr[None], ~(1 << (i % 5)))
            fs.atomic_xor(xorr[None], i * 37)

    k()
    assert orr[None] == (1 << 31) - 1
    assert andr[None] == ~0b11111
    x = 0
    for i in range(n):
        x ^= i * 37
    assert xorr[None] == x


def test_augmented_ops_on_field_elements():
    x = fs.field(fs.i32, shape=6)
    f = fs.field(fs.f32, shape=3)
    x.from_numpy(np.array([5, 5, 5, 5, 0b1100, 0b1100], np.int32))
    f.from_numpy(np.array([2.0, 2.0, 9.0], np.float32))

    @fs.kernel
    def k():
        x[0] += 3
        x[1] -= 7
        x[2] *= 4
        x[3] //= 2
        x[4] &= 0b1010
        x[5] ^= 0b1010
        f[0] *= 1.5
        f[1] /= 8.0
        f[2] -= 0.5

    k()
    np.testing.assert_array_equal(x.to_numpy(), [8, -2, 20, 2, 0b1000, 0b0110])
    np.testing.assert_array_equal(f.to_numpy(), [3.0, 0.25, 8.5])


def test_local_accumulator_inside_thread_is_not_shared():
    out = fs.field(fs.i32, shape=100)

    @fs.kernel
    def k():
        for i in out:
            s = 0
            for j in range(i):
                s += 1
            out[i] = s

    k()
    np.testing.assert_array_equal(out.to_numpy(), np.arange(100))


def test_2d_scatter_add():
    n = 4000
    rng = np.random.default_rng(9)
    ij = rng.integers(0, 8, (n, 2)).astype(np.int32)
    w = rng.integers(1, 5, n).astype(np.float32)
    idx = fs.Vector.field(2, fs.i32, shape=n)
    wt = fs.field(fs.f32, shape=n)
    grid = fs.field(fs.f32, shape=(8, 8))
    idx.from_numpy(ij)
    wt.from_numpy(w)

    @fs.kernel
    def k():
        for p in idx:
            grid[idx[p][0], idx[p][1]] += wt[p]

    k()
    ref = np.zeros((8, 8))
    np.add.at(ref, (ij[:, 0], ij[:, 1]), w)
    np.testing.assert_array_equal(grid.to_numpy(), ref)
